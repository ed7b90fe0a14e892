"""The evidence a suite's verdicts rest on, shown beside them (doc/postprocess.md, "Evidence"):
how much held-out data validation covers, how long the models trained, how many seeds each cell
has, and the depth question answered directly, as each design's depth slope minus Pre-LN's.

Validation coverage comes from the run files' root attributes `val_tokens`, `val_documents`,
`val_held_out_tokens` and `val_held_out_documents` (doc/hdf5-schema.md); runs written before
they existed show '—'.
"""
from __future__ import annotations

import numpy as np

from . import names
from .depth_trend import slope_difference
from .loading import OUTCOME_COMPLETED
from .ranking import Panel
from .tables import Table, Value

THIN_DOCUMENTS = 20          # fewer validation documents than this is thin
THIN_FRACTION = 0.01         # so is less than this share of the held-out tokens
PAPER_TOKENS_PER_PARAMETER = 20
REFERENCE_DESIGN = "pre_ln"


def _attribute_range(runs, key: str):
    values = []
    for r in runs:
        try:
            values.append(int(r.attrs[key]))
        except (KeyError, TypeError, ValueError):
            pass
    return (min(values), max(values)) if values else None


def _range_text(span, fmt=str) -> str | None:
    if span is None:
        return None
    low, high = span
    return fmt(low) if low == high else f"{fmt(low)}–{fmt(high)}"


def _count(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}K" if n >= 1e4 else str(n)


def panel_evidence(panel: Panel) -> tuple[list, list[str]]:
    """One row of the evidence table and the warnings about this panel."""
    runs = [r for r in panel.runs() if r.outcome == OUTCOME_COMPLETED]
    warnings = []
    tokens = _attribute_range(runs, "val_tokens")
    documents = _attribute_range([r for r in runs if int(r.attrs.get("val_documents", -1)) >= 0],
                                 "val_documents")
    held_tokens = _attribute_range(runs, "val_held_out_tokens")
    held_documents = _attribute_range(
        [r for r in runs if int(r.attrs.get("val_held_out_documents", -1)) >= 0],
        "val_held_out_documents")
    share = None
    if tokens and held_tokens and held_tokens[0] > 0:
        share = tokens[0] / held_tokens[0]
    if documents is not None and documents[0] < THIN_DOCUMENTS:
        warnings.append(f"validation covers only {documents[0]} documents (fewer than "
                        f"{THIN_DOCUMENTS}): a loss difference between designs may be the "
                        "documents', not the designs' (raise train.val_windows)")
    if share is not None and share < THIN_FRACTION:
        warnings.append(f"validation covers {100 * share:.2f}% of the held-out tokens (less "
                        f"than {100 * THIN_FRACTION:.0f}%; raise train.val_windows)")
    if runs and tokens is None:
        warnings.append("the run files do not record their validation coverage (written "
                        "before val_tokens existed, when validation took the first windows of "
                        "the files rather than windows spread over them: do not mix such runs "
                        "with newer ones in one comparison)")
    per_parameter = [float(r.attrs["tokens_planned"]) / r.params_total for r in runs
                     if "tokens_planned" in r.attrs and r.params_total > 0]
    tpp = (min(per_parameter), max(per_parameter)) if per_parameter else None
    if tpp is not None and tpp[1] < PAPER_TOKENS_PER_PARAMETER / 2:
        warnings.append(f"{tpp[1]:.2g} training tokens per parameter at most, against the "
                        f"paper's {PAPER_TOKENS_PER_PARAMETER}: the models are far from "
                        "trained, so rankings say how designs start, not where they end")
    cells = [c for c in panel.cells.values() if c.best is not None]
    seeds = (min(c.seeds for c in cells), max(c.seeds for c in cells)) if cells else None
    if seeds is not None and seeds[1] == 1:
        warnings.append("one training seed per cell: intervals hold the validation windows' "
                        "noise only, not the seed-to-seed spread (add suite.seeds)")
    steps = _attribute_range(runs, "steps")
    row = [panel.title,
           _range_text(tokens, _count),
           _range_text(documents),
           None if held_documents is None else _range_text(held_documents),
           None if share is None else Value(100 * share, digits=2),
           None if tpp is None else (f"{tpp[0]:.3g}" if tpp[0] == tpp[1]
                                     else f"{tpp[0]:.3g}–{tpp[1]:.3g}"),
           _range_text(seeds),
           _range_text(steps)]
    return row, warnings


def evidence_table(panels: list[Panel]) -> tuple[Table, list[str]]:
    rows, warnings = [], []
    for p in panels:
        row, said = panel_evidence(p)
        rows.append(row)
        warnings += [f"{p.title}: {w}." for w in said]
    notes = ["val tokens, val documents: what the validation windows cover (spread evenly over "
             "the held-out files; a document counts when a scored target lies in it); held-out "
             "documents and % held-out tokens: of the whole validation set.",
             "tokens / parameter: training tokens over total parameters (the paper: 20). seeds "
             "per cell: completed seeds at each cell's best learning rate; steps: training "
             "steps."]
    table = Table("evidence", "The evidence the verdicts rest on",
                  ["panel", "val tokens", "val documents", "held-out documents",
                   "% held-out tokens", "tokens / parameter", "seeds per cell", "steps"],
                  rows, notes, digits=2)
    return table, warnings


def depth_vs_reference_table(panel: Panel, reference: str = REFERENCE_DESIGN) -> Table | None:
    """Each design's depth slope minus Pre-LN's, with its interval and verdict."""
    if reference not in panel.designs:
        return None
    rows = []
    for arch in panel.designs:
        if arch == reference:
            continue
        d = slope_difference(panel, arch, reference)
        seeds = [c.seeds for c in panel.trend(arch).cells]
        rows.append([names.design_title(arch), d.shapes,
                     Value(d.difference, d.interval, digits=4), d.verdict,
                     min(seeds) if seeds else None])
    if not rows:
        return None
    title = names.design_title(reference)
    notes = [f"slope minus {title}'s: the least-squares slope of validation loss against "
             f"ln(d/L) of the design, minus {title}'s on the same shapes, with its 95% "
             "bootstrap interval (the validation windows resampled jointly for both designs, "
             "and the seeds where a cell has several). Positive: the design gains more from "
             f"depth than {title}; an interval that contains 0: no difference beyond noise.",
             "seeds: the fewest seeds behind any of the design's cells."]
    return Table(f"depth_vs_{reference}_{panel.key}",
                 f"Depth slope relative to {title}: {panel.title}",
                 ["design", "shapes", f"slope − {title}'s", "verdict", "seeds"], rows, notes)
