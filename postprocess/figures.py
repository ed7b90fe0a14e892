"""Figures as PNG (and PDF for papers), drawn with matplotlib's Agg canvas directly: no pyplot,
so importing this package never changes the backend of a user's own session."""
from __future__ import annotations

import math
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
    i = names.DESIGN_ORDER.index(arch) if arch in names.DESIGN_ORDER else hash(arch) % 10
    return cmap(i % 10)


def _new_figure(n_panels: int, panel_size=(4.2, 3.3), max_cols: int = 3, fixed: bool = False):
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


def _save(fig: Figure, directory: Path, name: str, title: str, pdf: bool) -> FigureFile:
    directory.mkdir(parents=True, exist_ok=True)
    png = directory / f"{name}.png"
    fig.savefig(png, dpi=110)
    pdf_path = None
    if pdf:
        pdf_path = directory / f"{name}.pdf"
        fig.savefig(pdf_path)
    return FigureFile(name, title, png, pdf_path)


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
    """Validation loss at the best learning rate against d/L, one panel per suite and scale,
    with the d/L of released Pre-LN models marked along the top."""
    panels = [p for p in panels if any(p.trend(a).cells for a in p.designs)]
    if not panels:
        return None
    fig, axes = _new_figure(len(panels), panel_size=(5.0, 3.8))
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
            top.set_xticklabels([v[0] + (f" +{len(v) - 1}" if len(v) > 1 else "")
                                 for v in groups.values()], fontsize=5, rotation=90)
            from matplotlib.ticker import NullLocator
            top.xaxis.set_minor_locator(NullLocator())
        ax.set_ylabel("validation loss (best lr)")
        ax.set_title(panel.title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle("Validation loss against aspect ratio (★ optimum per design; shaded: swept "
                 "range; dotted: released Pre-LN models)", fontsize=9)
    return _save(fig, directory, "loss_vs_aspect_ratio", "Validation loss against aspect ratio",
                 pdf)


def aspect_ratio_landscape(panels: list[Panel], released: list[ReleasedModel],
                           directory: Path, pdf: bool = True) -> FigureFile | None:
    """Parameters against d/L: where released Pre-LN models sit, the swept range of each panel
    and each design's optimal d/L there."""
    if not released and not panels:
        return None
    fig, (ax,) = _new_figure(1, panel_size=(7.5, 4.8))
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
        ax.legend(fontsize=6, ncol=2, loc="lower left")
    ax.set_title("Shapes: released Pre-LN models (grey squares, public configs) and the swept "
                 "ranges (bars)", fontsize=9)
    return _save(fig, directory, "aspect_ratio_landscape", "Released models and swept shapes",
                 pdf)


def _tail_median(values: np.ndarray | None) -> float | None:
    if values is None or len(values) == 0:
        return None
    tail = np.asarray(values, dtype=float)[int(len(values) * THROUGHPUT_TAIL_FRACTION):]
    tail = tail[np.isfinite(tail)]
    return float(np.median(tail)) if tail.size else None


def throughput(run: Run) -> tuple[float | None, float | None]:
    """(tokens per second, MFU): medians over the last half of the logged steps."""
    return (_tail_median(run.curve(names.CURVE_TOKENS_PER_SECOND)),
            _tail_median(run.curve(names.CURVE_MFU)))


def throughput_vs_shape(panels: list[Panel], directory: Path,
                        pdf: bool = True) -> FigureFile | None:
    """Tokens/s and MFU against d/L per design: the systems cost of depth."""
    panels = [p for p in panels if any(throughput(r)[0] is not None for r in p.runs())]
    if not panels:
        return None
    fig, axes = _new_figure(2 * len(panels), panel_size=(4.6, 3.3), max_cols=2)
    for k, panel in enumerate(panels):
        ax_tps, ax_mfu = axes[2 * k], axes[2 * k + 1]
        ratios = []
        for arch in panel.designs:
            points = []
            for s in panel.shapes:
                cell = panel.cell(arch, s)
                if cell is None:
                    continue
                run = cell.best or next((r for r in cell.runs
                                         if throughput(r)[0] is not None), None)
                if run is None:
                    continue
                tps, mfu = throughput(run)
                if tps is not None:
                    points.append((cell.aspect_ratio, tps, mfu))
            if not points:
                continue
            x = [p[0] for p in points]
            ratios += x
            kw = dict(marker="o", ms=4, lw=1.2, color=design_color(arch),
                      label=names.design_title(arch))
            ax_tps.plot(x, [p[1] for p in points], **kw)
            ax_mfu.plot(x, [np.nan if p[2] is None else 100 * p[2] for p in points], **kw)
        for ax, label in ((ax_tps, "tokens / s (median)"), (ax_mfu, "MFU (%)")):
            _aspect_ratio_axis(ax, ratios)
            ax.set_ylabel(label)
            ax.set_title(panel.title, fontsize=9)
            ax.grid(alpha=0.3)
        ax_tps.legend(fontsize=6, ncol=2)
    fig.suptitle("Training throughput against shape (MFU is 0 on the CPU backend)", fontsize=9)
    return _save(fig, directory, "throughput_vs_shape", "Throughput and MFU against shape", pdf)


def _runs_with(runs: list[Run], dataset: str, as_matrix: bool) -> list[Run]:
    get = diag.matrix if as_matrix else diag.vector
    chosen = [r for r in runs if get(r, dataset) is not None]
    return sorted(chosen, key=lambda r: (r.suite, names.design_sort_key(r.arch), -r.aspect_ratio,
                                         r.learning_rate))


def matrix_heatmaps(runs: list[Run], dataset: str, title: str, xlabel: str, ylabel: str,
                    directory: Path, pdf: bool = True, cmap: str = "viridis",
                    vmin: float | None = None, vmax: float | None = None) -> list[FigureFile]:
    """One heatmap per run carrying the dataset, up to 12 per figure file."""
    chosen = _runs_with(runs, dataset, as_matrix=True)
    out = []
    for part, start in enumerate(range(0, len(chosen), MAX_PANELS_PER_FIGURE)):
        batch = chosen[start:start + MAX_PANELS_PER_FIGURE]
        fig, axes = _new_figure(len(batch), panel_size=(3.6, 3.2), max_cols=4, fixed=True)
        for ax, run in zip(axes, batch):
            m = np.ma.masked_invalid(diag.matrix(run, dataset))
            image = ax.imshow(m, origin="upper", cmap=cmap, vmin=vmin, vmax=vmax,
                              interpolation="nearest", aspect="auto")
            fig.colorbar(image, ax=ax, shrink=0.8)
            ax.set_title(f"{run.suite}: {run.label()}", fontsize=7)
            ax.set_xlabel(xlabel, fontsize=7)
            ax.set_ylabel(ylabel, fontsize=7)
            ax.tick_params(labelsize=6)
        fig.suptitle(title, fontsize=9)
        name = dataset if part == 0 else f"{dataset}_{part + 1}"
        out.append(_save(fig, directory, name, title, pdf))
    return out


def depth_curves(runs: list[Run], dataset: str, title: str, ylabel: str, directory: Path,
                 pdf: bool = True, offset: int = 0) -> FigureFile | None:
    """A per-layer vector against relative depth, one panel per suite, one line per run.
    x = (index + offset) / L so models of different depth share an axis."""
    chosen = _runs_with(runs, dataset, as_matrix=False)
    if not chosen:
        return None
    suites = sorted({r.suite for r in chosen})
    fig, axes = _new_figure(len(suites), panel_size=(5.0, 3.6), max_cols=2)
    for ax, suite in zip(axes, suites):
        for run in (r for r in chosen if r.suite == suite):
            y = diag.vector(run, dataset)
            x = (np.arange(len(y)) + offset) / run.n_layer
            ax.plot(x, y, marker=".", ms=3, lw=1.1, color=design_color(run.arch),
                    label=run.label(), alpha=0.9)
        ax.set_xlabel("relative depth l / L")
        ax.set_ylabel(ylabel)
        ax.set_title(names.suite_title(suite), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=5, ncol=1)
    fig.suptitle(title, fontsize=9)
    return _save(fig, directory, dataset, title, pdf)


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
                           "Residual path weights (source → sublayer input)",
                           "sublayer", "source", directory, pdf, cmap="cividis")
    out.append(depth_curves(diag_runs, names.DIAG_LOGITLENS_KL,
                            "LogitLens: KL(p_final ‖ p_l) at each depth state", "KL (nats)",
                            directory, pdf))
    out.append(depth_curves(diag_runs, names.DIAG_PRUNING_LOSS_DELTA,
                            "Single-layer pruning: loss increase when block l is skipped",
                            "loss delta", directory, pdf))
    return [f for f in out if f is not None]
