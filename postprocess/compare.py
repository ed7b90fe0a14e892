"""Two run directories side by side (two recipes, or CPU and GPU runs of one suite): each
(panel, design, shape) with both results at their best learning rate, the difference and
whether it exceeds noise."""
from __future__ import annotations

import os
from collections import Counter

from . import names
from .ranking import NO_INTERVAL, SEPARATED, Cell, Panel, compare_intervals
from .report import analyze
from .tables import Table, Value


def _result(cell: Cell | None) -> Value:
    """The cell's best result, or what happened to it when nothing completed."""
    if cell is None:
        return Value("not run")
    if cell.best is None:
        return Value("/".join(sorted({r.outcome for r in cell.runs})))
    return Value(cell.val_loss, cell.interval, cell.best_learning_rate)


def _keys(panels: list[Panel]) -> dict:
    return {(p.key, arch, shape): (p, cell) for p in panels
            for (arch, shape), cell in p.cells.items()}


def compare_table(dir_a: str | os.PathLike, dir_b: str | os.PathLike) -> Table:
    a, b = _keys(analyze(dir_a).panels), _keys(analyze(dir_b).panels)

    def order(key):
        panel_key, arch, shape = key
        panel = (a.get(key) or b.get(key))[0]
        return (panel_key, names.design_sort_key(arch), -panel.aspect_ratio(shape), shape)
    rows, verdicts = [], Counter()
    for key in sorted(set(a) | set(b), key=order):
        panel_key, arch, (n_layer, d_model) = key
        cell_a, cell_b = (a[key][1] if key in a else None), (b[key][1] if key in b else None)
        value_a, value_b = _result(cell_a), _result(cell_b)
        difference, verdict = None, ""
        if isinstance(value_a.value, float) and isinstance(value_b.value, float):
            difference = value_b.value - value_a.value
            verdict = compare_intervals(cell_a.interval, cell_b.interval)
        elif cell_a is None or cell_b is None:
            verdict = "only in A" if cell_b is None else "only in B"
        else:
            verdict = "not comparable"
        verdicts[verdict] += 1
        rows.append([panel_key, names.design_title(arch), n_layer, d_model, value_a, value_b,
                     Value(difference, digits=4), verdict])
    counted = ", ".join(f"{n} {v}" for v, n in verdicts.most_common())
    notes = [f"A = {dir_a}, B = {dir_b}. {len(rows)} (panel, design, shape) cells: {counted}.",
             "Each side at its own best learning rate (@lr) with its 95% interval; B − A is "
             f"the difference. '{SEPARATED}': the intervals do not overlap, the difference "
             f"exceeds noise; '{NO_INTERVAL}': a side has no interval. A side with no "
             "completed run shows what happened to its candidates."]
    return Table("compare", "Comparison of two run directories",
                 ["panel", "design", "L", "d", "A", "B", "B − A", "noise"], rows, notes)
