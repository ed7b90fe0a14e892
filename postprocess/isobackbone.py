"""The iso-backbone view: loss against backbone and against total parameters for the ~300M
backbone suite. Deeper-narrower shapes there have the same backbone but fewer embedding (so
fewer total) parameters; a design whose loss still falls with depth gains from the shape
itself, not from a larger model."""
from __future__ import annotations

from pathlib import Path

from . import names
from .figures import FigureFile, design_color, fit_suptitle, new_figure, save_figure
from .loading import format_params
from .ranking import Panel, compare_intervals
from .tables import Table, Value


def _params(panel: Panel, shape) -> tuple[int | None, int]:
    run = next(c for (_, s), c in panel.cells.items() if s == shape).runs[0]
    return run.params_backbone, run.params_total


def isobackbone_table(panel: Panel) -> Table:
    shapes = panel.shapes
    columns = ["design"]
    for s in shapes:
        backbone, total = _params(panel, s)
        columns.append(f"L{s[0]} d{s[1]}: backbone "
                       f"{'?' if backbone is None else format_params(backbone)}, total "
                       f"{format_params(total)}")
    columns.append("best shape vs widest")
    rows = []
    for arch in panel.designs:
        row = [names.design_title(arch)]
        for s in shapes:
            cell = panel.cell(arch, s)
            row.append(Value(None) if cell is None else
                       Value(cell.val_loss, cell.interval, cell.best_learning_rate))
        row.append(_best_vs_widest(panel, arch))
        rows.append(row)
    notes = ["Validation loss at the best learning rate. Columns go from shallow-wide to "
             "deep-narrow; their headers give the parameters of the first design at the shape.",
             "best shape vs widest: the loss change from the widest shape to the design's best "
             "one, with the change in total parameters; 'separated' when their 95% intervals "
             "do not overlap. A gain at a smaller total means depth helps by itself."]
    return Table(f"isobackbone_{panel.key}", f"Iso-backbone view: {panel.title}", columns,
                 rows, notes)


def _best_vs_widest(panel: Panel, arch: str) -> str:
    trend = panel.trend(arch)
    if len(trend.cells) < 2:
        return "—"
    widest, best = trend.cells[0], trend.optimal
    if best is widest:
        return "widest shape is best"
    change = best.val_loss - widest.val_loss
    total_widest, total_best = widest.best.params_total, best.best.params_total
    return (f"{change:+.4f} at L{best.n_layer} ({format_params(total_best)} vs "
            f"{format_params(total_widest)} total): "
            f"{compare_intervals(best.interval, widest.interval)}")


def isobackbone_figure(panel: Panel, directory: Path, pdf: bool = True) -> FigureFile | None:
    """Two panels: loss against backbone parameters and against total parameters."""
    trends = [panel.trend(a) for a in panel.designs]
    trends = [t for t in trends if t.cells]
    if not trends:
        return None
    fig, (ax_backbone, ax_total) = new_figure(2, panel_size=(4.8, 3.6), max_cols=2)
    for t in trends:
        runs = [c.best for c in t.cells]
        kw = dict(marker="o", ms=4, lw=1.2, color=design_color(t.arch),
                  label=names.design_title(t.arch))
        if all(r.params_backbone is not None for r in runs):
            # Backbones are equal up to the shape grid, so their order is not the shapes':
            # points only, a line would zigzag.
            ax_backbone.plot([r.params_backbone / 1e6 for r in runs], t.losses,
                             **dict(kw, ls="none"))
        ax_total.plot([r.params_total / 1e6 for r in runs], t.losses, **kw)
    for ax, what in ((ax_backbone, "backbone"), (ax_total, "total")):
        ax.set_xlabel(f"{what} parameters (M)")
        ax.set_ylabel("validation loss (best lr)")
        ax.grid(alpha=0.3)
    ax_total.legend(fontsize=6, ncol=2)
    fit_suptitle(fig, f"{panel.title}: loss against backbone and total parameters "
                      "(deeper shapes have fewer total parameters)")
    return save_figure(fig, directory, f"isobackbone_{panel.key}",
                       f"Iso-backbone view: {panel.title}", pdf)
