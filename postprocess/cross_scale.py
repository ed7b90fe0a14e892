"""The cross-scale summary: each design's depth trend in every suite of the paper, side by side,
and whether the 400M trend persists at 1.6B (the paper's "validation at scale" question)."""
from __future__ import annotations

from dataclasses import dataclass

from . import names
from .depth_trend import INCONCLUSIVE, NO_INTERVAL_VERDICT, NO_RESULT, DepthTrend, depth_trend
from .ranking import FLAT, IMPROVES_WITH_DEPTH, NON_MONOTONIC, WORSENS_WITH_DEPTH, Panel
from .tables import Table

NOT_RUN = "not run"
DECISIVE = (IMPROVES_WITH_DEPTH, WORSENS_WITH_DEPTH, FLAT, NON_MONOTONIC)


@dataclass(frozen=True)
class Column:
    title: str
    suite: str
    scale: str | None


COLUMNS = (
    Column("400M main", names.SUITE_MAIN, None),
    Column("300M iso-backbone", names.SUITE_ISO_BACKBONE, None),
    Column("ladder 200M", names.SUITE_MULTISCALE, "200M"),
    Column("ladder 300M", names.SUITE_MULTISCALE, "300M"),
    Column("ladder 400M", names.SUITE_MULTISCALE, "400M"),
    Column("ladder 500M", names.SUITE_MULTISCALE, "500M"),
    Column("1.6B", names.SUITE_VALIDATION, None),
)
REFERENCE_COLUMNS = ("400M main", "ladder 400M")  # the 400M trend, main suite first
SCALE_COLUMN = "1.6B"


def find_panel(panels: list[Panel], column: Column) -> Panel | None:
    return next((p for p in panels if p.suite == column.suite and p.scale == column.scale),
                None)


def trend_in(panels: list[Panel], column: Column, arch: str) -> DepthTrend | None:
    """The design's trend in a column, None when the suite or the design was not run there."""
    panel = find_panel(panels, column)
    if panel is None or arch not in panel.designs:
        return None
    return depth_trend(panel, arch)


def persists_at_scale(reference: DepthTrend | None, at_scale: DepthTrend | None) -> str:
    """Compare the 1.6B verdict with the 400M one; only decisive verdicts are compared."""
    if reference is None or reference.verdict == NO_RESULT:
        return "not tested: no 400M trend"
    if at_scale is None or at_scale.verdict == NO_RESULT:
        return "not tested: 1.6B not run"
    if reference.verdict not in DECISIVE:
        return f"not tested: 400M trend {reference.verdict}"
    diverged = "; ".join(at_scale.not_ranked_notes())
    suffix = f" (1.6B: {diverged})" if diverged else ""
    if at_scale.verdict in (INCONCLUSIVE, NO_INTERVAL_VERDICT):
        return f"unclear: 1.6B trend {at_scale.verdict}{suffix}"
    if at_scale.verdict == reference.verdict:
        return "persists" + suffix
    return f"does not persist: 1.6B {at_scale.verdict}{suffix}"


def cross_scale_table(panels: list[Panel]) -> Table | None:
    """Designs x the paper's suites; None when the directory holds none of them."""
    present = [c for c in COLUMNS if find_panel(panels, c) is not None]
    if not present:
        return None
    designs = sorted({a for c in present for a in find_panel(panels, c).designs},
                     key=names.design_sort_key)
    by_title = {c.title: c for c in COLUMNS}
    rows = []
    for arch in designs:
        trends = {c.title: trend_in(panels, c, arch) for c in COLUMNS}
        row = [names.design_title(arch)]
        for c in COLUMNS:
            t = trends[c.title]
            row.append(NOT_RUN if t is None else t.summary())
        reference = next((trends[t] for t in REFERENCE_COLUMNS
                          if trends[t] is not None and trends[t].verdict != NO_RESULT), None)
        row.append(persists_at_scale(reference, trends[by_title[SCALE_COLUMN].title]))
        rows.append(row)
    notes = ["Each cell: the depth-trend verdict, the slope of validation loss (best lr) against "
             "ln(d/L) and its 95% bootstrap interval; a positive slope means deeper-narrower "
             "shapes reach lower loss. A verdict is given only where the interval supports it "
             "(else 'inconclusive'). Shapes whose every candidate diverged or failed are named "
             "after the verdict.",
             "persists at scale: the 1.6B verdict against the 400M one (main suite, else the "
             "ladder's 400M rung). 'not run': the suite or design is absent from the directory."]
    return Table("cross_scale", "Depth trends across scales",
                 ["design"] + [c.title for c in COLUMNS] + ["persists at scale"], rows, notes)
