"""Figures as PNG (and PDF for papers), drawn with matplotlib's Agg canvas directly: no pyplot,
so importing this package never changes the backend of a user's own session."""
from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from . import diagnostics as diag
from . import names
from .loading import Run
from .ranking import Panel
from .released import ReleasedModel

MAX_PANELS_PER_FIGURE = 12
# Throughput is the median over the last half of the logged steps (skips warm-up and start-up).
THROUGHPUT_TAIL_FRACTION = 0.5


@dataclass(frozen=True)
class FigureFile:
    name: str
    title: str
    png: Path
    pdf: Path | None


def design_color(arch: str):
    import matplotlib
    cmap = matplotlib.colormaps["tab10"]
    order = names.design_order(arch)
    # A design of unknown position gets a colour from its name (stable across runs, unlike hash).
    i = order if order is not None else sum(arch.encode())
    return cmap(i % 10)


def new_figure(n_panels: int, panel_size=(4.2, 3.3), max_cols: int = 3, fixed: bool = False):
    """A grid of panels. `fixed` uses plain subplot spacing instead of constrained layout,
    which costs seconds per figure on grids of heatmaps with colorbars."""
    cols = max(1, min(max_cols, n_panels))
    rows = max(1, math.ceil(n_panels / cols))
    fig = Figure(figsize=(panel_size[0] * cols, panel_size[1] * rows),
                 layout=None if fixed else "constrained")
    if fixed:
        height = rows * panel_size[1]
        fig.subplots_adjust(left=0.06, right=0.97, bottom=0.5 / height, top=1 - 0.75 / height,
                            wspace=0.45, hspace=0.6)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(rows, cols, i + 1) for i in range(n_panels)]
    return fig, axes


def save_figure(fig: Figure, directory: Path, name: str, title: str, pdf: bool) -> FigureFile:
    directory.mkdir(parents=True, exist_ok=True)
    png = directory / f"{name}.png"
    fig.savefig(png, dpi=110)
    pdf_path = None
    if pdf:
        pdf_path = directory / f"{name}.pdf"
        fig.savefig(pdf_path)
    return FigureFile(name, title, png, pdf_path)


# Average glyph width of the default sans-serif font, as a fraction of the font size: enough
# to wrap titles so that they stay inside the figure without measuring them.
_GLYPH_WIDTH = 0.6


def wrap_to_width(text: str, width_inches: float, fontsize: float) -> str:
    """Break `text` into lines no wider than `width_inches` at `fontsize` points."""
    chars = max(16, int(width_inches * 72 / (_GLYPH_WIDTH * fontsize)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def fit_suptitle(fig: Figure, text: str, fontsize: float = 9) -> None:
    """A figure title wrapped to the figure's width (a long one-line title would be cut off
    at both ends of a narrow figure)."""
    fig.suptitle(wrap_to_width(text, 0.92 * fig.get_figwidth(), fontsize), fontsize=fontsize)


def fit_title(ax, text: str, width_inches: float, fontsize: float = 8) -> None:
    ax.set_title(wrap_to_width(text, 0.9 * width_inches, fontsize), fontsize=fontsize)


NICE_ASPECT_RATIO_TICKS = (2, 3, 5, 7, 10, 15, 20, 30, 40, 50, 75, 100, 150, 200, 300)


def _aspect_ratio_axis(ax, ratios, tick_ratios=None):
    """Log d/L axis read like the paper: shallow-wide (large d/L) left, deep-narrow right.
    Ticks at the swept ratios (`tick_ratios`) when few, else at round values."""
    from matplotlib.ticker import FixedLocator, NullLocator
    ax.set_xscale("log")
    lo, hi = min(ratios), max(ratios)
    ax.set_xlim(hi * 1.15, lo / 1.15)
    ticks = sorted(set(round(r, 1) for r in (tick_ratios or ratios)))
    if len(ticks) > 8:
        ticks = [t for t in NICE_ASPECT_RATIO_TICKS if lo / 1.15 <= t <= hi * 1.15]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{t:g}" for t in ticks], rotation=45, fontsize=7)
    ax.set_xlabel("d_model / n_layer  (shallow-wide → deep-narrow)")


def loss_vs_aspect_ratio(panels: list[Panel], released: list[ReleasedModel], directory: Path,
                         pdf: bool = True) -> FigureFile | None:
    fig = loss_vs_aspect_ratio_figure(panels, released)
    if fig is None:
        return None
    return save_figure(fig, directory, "loss_vs_aspect_ratio",
                       "Validation loss against aspect ratio", pdf)


# A released model is overlaid on a panel only when its size is within this factor of the
# panel's models: a 7B model's d/L says little about the best shape of a 1M-parameter demo.
COMPARABLE_SCALE = 10.0


def comparable_models(panel: Panel, released: list[ReleasedModel]) -> list[ReleasedModel]:
    runs = panel.runs()
    if not runs:
        return []
    params = float(np.median([r.params_total for r in runs]))
    return [m for m in released
            if 1 / COMPARABLE_SCALE <= m.params_total / params <= COMPARABLE_SCALE]


def loss_vs_aspect_ratio_figure(panels: list[Panel],
                                released: list[ReleasedModel]) -> Figure | None:
    """Validation loss at the best learning rate against d/L, one panel per suite and scale,
    with the d/L of released Pre-LN models marked along the top."""
    panels = [p for p in panels if any(p.trend(a).cells for a in p.designs)]
    if not panels:
        return None
    panel_size = (5.0, 3.8)
    fig, axes = new_figure(len(panels), panel_size=panel_size)
    all_released = released
    for ax, panel in zip(axes, panels):
        ratios = []
        for arch in panel.designs:
            t = panel.trend(arch)
            if not t.cells:
                continue
            x, y = t.aspect_ratios, t.losses
            ratios += list(x)
            err = None
            if all(c.interval for c in t.cells):
                err = np.array([[c.val_loss - c.interval[0], c.interval[1] - c.val_loss]
                                for c in t.cells]).T
            ax.errorbar(x, y, yerr=err, marker="o", ms=4, lw=1.3, capsize=2,
                        color=design_color(arch), label=names.design_title(arch))
            opt = t.optimal
            ax.plot([opt.aspect_ratio], [opt.val_loss], marker="*", ms=11,
                    color=design_color(arch), mec="black", mew=0.5, zorder=5)
        ratios += _mark_unranked(ax, panel)
        released = comparable_models(panel, all_released)
        all_ratios = ratios + [m.aspect_ratio for m in released]
        _aspect_ratio_axis(ax, all_ratios, tick_ratios=ratios)
        ax.axvspan(min(ratios), max(ratios), color="0.92", zorder=0)
        for m in released:
            ax.axvline(m.aspect_ratio, color="0.55", lw=0.6, ls=":", zorder=0)
        if released:
            # One tick per distinct released d/L on the top axis, labelled with its models.
            top = ax.secondary_xaxis("top")
            groups: dict[float, list[str]] = {}
            for m in released:
                groups.setdefault(round(m.aspect_ratio, 1), []).append(m.name)
            top.set_xticks(list(groups))
            top.set_xticklabels([v[0] + (f" (+{len(v) - 1} more)" if len(v) > 1 else "")
                                 for v in groups.values()], fontsize=5, rotation=90)
            from matplotlib.ticker import NullLocator
            top.xaxis.set_minor_locator(NullLocator())
        ax.set_ylabel("validation loss (best lr)")
        fit_title(ax, panel.title, panel_size[0], fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fit_suptitle(fig, "Validation loss against aspect ratio (★ optimum per design; shaded: "
                      "swept range; dotted: released Pre-LN models within 10x of the panel's "
                      "size, named on the top axis, '+N more': N other released models at the "
                      "same d/L)")
    return fig


def _mark_unranked(ax, panel: Panel) -> list[float]:
    """An x along the top of the panel at each shape where a design has no completed run
    (every candidate diverged or failed): shown, never dropped. Returns their d/L."""
    ratios = []
    for arch in panel.designs:
        for cell in panel.unranked_cells(arch):
            ax.plot([cell.aspect_ratio], [0.96], marker="x", ms=7, mew=1.5, ls="none",
                    color=design_color(arch), transform=ax.get_xaxis_transform(), zorder=6)
            ratios.append(cell.aspect_ratio)
    if ratios:
        ax.plot([], [], marker="x", ls="none", color="0.3", label="no completed run")
    return ratios


def aspect_ratio_landscape(panels: list[Panel], released: list[ReleasedModel],
                           directory: Path, pdf: bool = True) -> FigureFile | None:
    """Parameters against d/L: where released Pre-LN models sit, the swept range of each panel
    and each design's optimal d/L there."""
    if not released and not panels:
        return None
    fig, (ax,) = new_figure(1, panel_size=(7.5, 4.8))
    ratios = [m.aspect_ratio for m in released]
    # Models at (almost) the same point share one label, e.g. the many 7B models at d/L 128.
    points: dict[tuple[float, float], list[ReleasedModel]] = {}
    for m in released:
        points.setdefault((round(m.aspect_ratio), round(math.log10(m.params_total), 1)),
                          []).append(m)
    for group in points.values():
        x, y = group[0].aspect_ratio, group[0].params_total
        ax.scatter([x], [y], color="0.35", marker="s", s=14)
        ax.annotate(", ".join(m.name for m in group), (x, y), fontsize=5.5,
                    xytext=(3, 2), textcoords="offset points", color="0.25")
    seen = set()
    labelled_heights: list[float] = []
    for panel in panels:
        runs = panel.runs()
        if not runs:
            continue
        params = float(np.median([r.params_total for r in runs]))
        span = [panel.aspect_ratio(s) for s in panel.shapes]
        ratios += span
        ax.plot([min(span), max(span)], [params, params], color="0.75", lw=6,
                solid_capstyle="butt", zorder=0)
        stacked = sum(1 for h in labelled_heights if abs(math.log10(h / params)) < 0.05)
        labelled_heights.append(params)
        ax.annotate(panel.title, (max(span), params), fontsize=6, xytext=(0, 6 + 8 * stacked),
                    textcoords="offset points")
        for arch in panel.designs:
            opt = panel.trend(arch).optimal
            if opt is None:
                continue
            ax.scatter([opt.aspect_ratio], [params], color=design_color(arch), marker="o",
                       s=22, zorder=3, edgecolor="black", linewidth=0.3,
                       label=None if arch in seen else names.design_title(arch) + " optimum")
            seen.add(arch)
    if not ratios:
        return None
    _aspect_ratio_axis(ax, ratios)
    ax.set_yscale("log")
    ax.set_ylabel("total parameters")
    ax.grid(alpha=0.3, which="both")
    if seen:
        # Outside the axes: inside, it covered the released models' labels and the bars.
        ax.legend(fontsize=6, ncol=1, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                  borderaxespad=0.0)
    fit_title(ax, "Shapes: released Pre-LN models (grey squares, public configs) and the swept "
                  "ranges (bars)", 7.5, fontsize=9)
    return save_figure(fig, directory, "aspect_ratio_landscape",
                       "Released models and swept shapes", pdf)


def _tail_median(values: np.ndarray | None) -> float | None:
    if values is None or len(values) == 0:
        return None
    tail = np.asarray(values, dtype=float)[int(len(values) * THROUGHPUT_TAIL_FRACTION):]
    tail = tail[np.isfinite(tail)]
    return float(np.median(tail)) if tail.size else None


@dataclass(frozen=True)
class Throughput:
    tokens_per_second: float
    gflops_per_second: float | None        # tokens/s x the run's flops_per_token
    fraction_of_gemm_peak: float | None    # when the file records a measured GEMM peak
    mfu: float | None                      # None when absent or zero (the CPU backend)


def _positive_attr(run: Run, key: str) -> float | None:
    try:
        value = float(run.attrs.get(key))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and value > 0 else None


def throughput(run: Run) -> Throughput | None:
    """Medians over the last half of the logged steps; None without a tokens/s curve."""
    tps = _tail_median(run.curve(names.CURVE_TOKENS_PER_SECOND))
    if tps is None:
        return None
    flops = _positive_attr(run, names.ATTR_FLOPS_PER_TOKEN)
    gflops = None if flops is None else tps * flops / 1e9
    peak = _positive_attr(run, names.ATTR_GEMM_PEAK_GFLOPS)
    fraction = None if gflops is None or peak is None else gflops / peak
    mfu = _tail_median(run.curve(names.CURVE_MFU))
    return Throughput(tps, gflops, fraction, mfu if mfu else None)


# (panel label, Throughput field, scale factor) in drawing order; a quantity no run has is
# not drawn, so the CPU backend gets no panel of zero MFU.
THROUGHPUT_QUANTITIES = (("tokens / s (median)", "tokens_per_second", 1.0),
                         ("GFLOP/s (median)", "gflops_per_second", 1.0),
                         ("% of measured GEMM peak", "fraction_of_gemm_peak", 100.0),
                         ("MFU (%)", "mfu", 100.0))


def _throughput_points(panel: Panel) -> dict[str, list[tuple[float, Throughput]]]:
    """Per design: (d/L, throughput) of each shape, from the best run (else any run)."""
    points = {}
    for arch in panel.designs:
        for s in panel.shapes:
            cell = panel.cell(arch, s)
            if cell is None:
                continue
            candidates = ([cell.best] if cell.best else []) + cell.runs
            measured = next((t for t in map(throughput, candidates) if t is not None), None)
            if measured is not None:
                points.setdefault(arch, []).append((cell.aspect_ratio, measured))
    return points


def throughput_vs_shape(panels: list[Panel], directory: Path,
                        pdf: bool = True) -> FigureFile | None:
    fig = throughput_vs_shape_figure(panels)
    if fig is None:
        return None
    return save_figure(fig, directory, "throughput_vs_shape", "Throughput against shape", pdf)


def throughput_vs_shape_figure(panels: list[Panel]) -> Figure | None:
    """Tokens/s, GFLOP/s (and the fraction of a measured GEMM peak or MFU where recorded)
    against d/L per design: the systems cost of depth. One row per suite."""
    data = [(p, _throughput_points(p)) for p in panels]
    data = [(p, pts) for p, pts in data if pts]
    if not data:
        return None
    quantities = [q for q in THROUGHPUT_QUANTITIES
                  if any(getattr(t, q[1]) is not None
                         for _, pts in data for series in pts.values() for _, t in series)]
    panel_size = (4.6, 3.3)
    cols = len(quantities)
    fig = Figure(figsize=(panel_size[0] * cols, panel_size[1] * len(data)), layout="constrained")
    FigureCanvasAgg(fig)
    for row, (panel, pts) in enumerate(data):
        for col, (label, field_name, factor) in enumerate(quantities):
            ax = fig.add_subplot(len(data), cols, row * cols + col + 1)
            ratios = []
            for arch, series in pts.items():
                x = [r for r, _ in series]
                ratios += x
                y = [np.nan if getattr(t, field_name) is None else factor * getattr(t, field_name)
                     for _, t in series]
                ax.plot(x, y, marker="o", ms=4, lw=1.2, color=design_color(arch),
                        label=names.design_title(arch))
            _aspect_ratio_axis(ax, ratios)
            ax.set_ylabel(label)
            fit_title(ax, panel.title, panel_size[0], fontsize=9)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.legend(fontsize=6, ncol=2)
    fit_suptitle(fig, "Training throughput against shape (medians over the last half of the "
                      "logged steps; GFLOP/s = tokens/s x the run's FLOPs per token)")
    return fig


def _runs_with(runs: list[Run], dataset: str, as_matrix: bool) -> list[Run]:
    get = diag.matrix if as_matrix else diag.vector
    chosen = [r for r in runs if get(r, dataset) is not None]
    return sorted(chosen, key=lambda r: (r.suite, names.design_sort_key(r.arch), -r.aspect_ratio,
                                         r.learning_rate))


def matrix_heatmaps(runs: list[Run], dataset: str, title: str, xlabel: str, ylabel: str,
                    directory: Path, pdf: bool = True, cmap: str = "viridis",
                    vmin: float | None = None, vmax: float | None = None,
                    log_scale: bool = False) -> list[FigureFile]:
    """One heatmap per run carrying the dataset, up to 12 per figure file. log_scale: a
    logarithmic colour scale over three decades below the largest value, so that small entries
    beside a dominant row are still visible."""
    chosen = _runs_with(runs, dataset, as_matrix=True)
    out = []
    for part, start in enumerate(range(0, len(chosen), MAX_PANELS_PER_FIGURE)):
        batch = chosen[start:start + MAX_PANELS_PER_FIGURE]
        fig, axes = new_figure(len(batch), panel_size=(3.6, 3.2), max_cols=4, fixed=True)
        for ax, run in zip(axes, batch):
            m = np.ma.masked_invalid(diag.matrix(run, dataset))
            norm = None
            if log_scale:
                positive = m[m > 0] if m.count() else np.array([])
                if positive.size:
                    from matplotlib.colors import LogNorm
                    top = float(positive.max())
                    norm = LogNorm(vmin=max(float(positive.min()), top * 1e-3), vmax=top)
                    m = np.ma.masked_less_equal(m, 0)
            image = ax.imshow(m, origin="upper", cmap=cmap, interpolation="nearest",
                              aspect="auto", **({"norm": norm} if norm is not None
                                                else {"vmin": vmin, "vmax": vmax}))
            fig.colorbar(image, ax=ax, shrink=0.8)
            fit_title(ax, f"{run.suite}: {run.label()}", 3.6, fontsize=7)
            ax.set_xlabel(xlabel, fontsize=7)
            ax.set_ylabel(ylabel, fontsize=7)
            ax.tick_params(labelsize=6)
        fit_suptitle(fig, title)
        name = dataset if part == 0 else f"{dataset}_{part + 1}"
        out.append(save_figure(fig, directory, name, title, pdf))
    return out


def depth_curves(runs: list[Run], dataset: str, title: str, ylabel: str, directory: Path,
                 pdf: bool = True, offset: int = 0) -> FigureFile | None:
    """A per-layer vector against relative depth, one panel per suite, one line per run.
    x = (index + offset) / L so models of different depth share an axis."""
    chosen = _runs_with(runs, dataset, as_matrix=False)
    if not chosen:
        return None
    suites = sorted({r.suite for r in chosen})
    fig, axes = new_figure(len(suites), panel_size=(5.0, 3.6), max_cols=2)
    for ax, suite in zip(axes, suites):
        for run in (r for r in chosen if r.suite == suite):
            y = diag.vector(run, dataset)
            x = (np.arange(len(y)) + offset) / run.n_layer
            ax.plot(x, y, marker=".", ms=3, lw=1.1, color=design_color(run.arch),
                    label=run.label(), alpha=0.9)
        ax.set_xlabel("relative depth l / L")
        ax.set_ylabel(ylabel)
        fit_title(ax, names.suite_title(suite), 5.0, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=5, ncol=1)
    fit_suptitle(fig, title)
    return save_figure(fig, directory, dataset, title, pdf)


def all_figures(panels: list[Panel], runs: list[Run], released: list[ReleasedModel],
                directory: Path, pdf: bool = True) -> list[FigureFile]:
    """Every figure the data supports; a figure whose data is absent is simply not drawn."""
    diag_runs = [r for r in runs if r.diagnostics]
    out = [loss_vs_aspect_ratio(panels, released, directory, pdf),
           aspect_ratio_landscape(panels, released, directory, pdf),
           throughput_vs_shape(panels, directory, pdf)]
    out += matrix_heatmaps(diag_runs, names.DIAG_ANGULAR_DISTANCE,
                           "Angular distance d(i, j) between depth states (0: same direction)",
                           "j (depth state)", "i (depth state)", directory, pdf, vmin=0)
    out += matrix_heatmaps(diag_runs, names.DIAG_CAUSAL_SCORE,
                           "Causal effect C(s, l): skipping block s changes block l's update",
                           "l (later block)", "s (skipped block)", directory, pdf,
                           cmap="magma", vmin=0)
    out += matrix_heatmaps(diag_runs, names.DIAG_PERMUTATION_SCORE,
                           "Permutation score P(i, j): relative loss change when swapping",
                           "j (block)", "i (block)", directory, pdf, cmap="magma", vmin=0)
    out += matrix_heatmaps(diag_runs, names.DIAG_PATH_WEIGHTS,
                           "Residual path weights (source → sublayer input; log colour "
                           "scale: the embedding's row would hide the others)",
                           "sublayer", "source", directory, pdf, cmap="cividis",
                           log_scale=True)
    out.append(depth_curves(diag_runs, names.DIAG_LOGITLENS_KL,
                            "LogitLens: KL(p_final ‖ p_l) at each depth state", "KL (nats)",
                            directory, pdf))
    out.append(depth_curves(diag_runs, names.DIAG_PRUNING_LOSS_DELTA,
                            "Single-layer pruning: loss increase when block l is skipped",
                            "loss delta", directory, pdf))
    return [f for f in out if f is not None]
