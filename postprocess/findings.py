"""Our numbers beside the paper's: each finding of data/paper_findings.csv checked against a run
directory, with the verdict agree / differ / inconclusive / not run.

Absolute losses depend on the data, tokenizer and recipe, so a loss finding is checked by the
direction of the change (and whether it is beyond noise), never by the loss values themselves;
diagnostics are checked by value, within the tolerance the data file gives.
"""
from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from . import names
from .cross_scale import persists_at_scale
from .depth_trend import INCONCLUSIVE, NO_INTERVAL_VERDICT, NO_RESULT, depth_trend
from .diagnostics_summary import summarize
from .loading import OUTCOME_COMPLETED, OUTCOME_DIVERGED, Run, format_lr
from .ranking import SEPARATED, Cell, Panel, compare_intervals
from .tables import Table

PAPER_FINDINGS_CSV = Path(__file__).parent / "data" / "paper_findings.csv"

AGREE, DIFFER, UNDECIDED, NOT_RUN = "agree", "differ", "inconclusive", "not run"
MAX_IDS_LISTED = 6  # beyond this the untested summary gives a count, the table the rows


@dataclass(frozen=True)
class PaperFinding:
    id: str
    kind: str
    suite: str
    scale: str
    arch: str
    quantity: str
    n_layer: int | None
    n_layer_to: int | None
    paper_value: str
    paper_value_to: str
    tolerance: float | None
    learning_rate: float | None
    source: str

    def paper_text(self) -> str:
        where = f"L{self.n_layer}" if self.n_layer else ""
        if self.kind == "loss_change":
            return f"{self.paper_value} (L{self.n_layer}) → {self.paper_value_to} " \
                   f"(L{self.n_layer_to})"
        if self.paper_value_to:
            return f"{self.paper_value}–{self.paper_value_to}"
        return f"{self.paper_value}" + (f" at {where}" if where else "")

    def title(self) -> str:
        scale = f" {self.scale.replace(';', ', ')}" if self.scale else ""
        return f"{names.design_title(self.arch)}, {self.suite}{scale}: " \
               f"{self.quantity.replace('_', ' ')}"  # diagnostics are named by their key


@dataclass(frozen=True)
class FindingResult:
    finding: PaperFinding
    ours: str
    verdict: str
    missing: str = ""  # for 'not run': what this directory lacks


def load_findings(path: str | Path = PAPER_FINDINGS_CSV) -> list[PaperFinding]:
    with open(path, encoding="utf-8", newline="") as f:
        lines = [line for line in f if line.strip() and not line.lstrip().startswith("#")]

    def number(text: str, kind=float):
        return kind(text) if text.strip() else None
    return [PaperFinding(r["id"], r["kind"], r["suite"], r["scale"], r["arch"], r["quantity"],
                         number(r["n_layer"], int), number(r["n_layer_to"], int),
                         r["paper_value"], r["paper_value_to"], number(r["tolerance"]),
                         number(r["learning_rate"]), r["source"])
            for r in csv.DictReader(lines)]


def _panel(panels: list[Panel], suite: str, scale: str | None) -> Panel | None:
    return next((p for p in panels if p.suite == suite and p.scale == (scale or None)), None)


def _cell_at_depth(panel: Panel, arch: str, n_layer: int) -> Cell | None:
    return next((c for (a, (L, _)), c in panel.cells.items() if a == arch and L == n_layer),
                None)


def check(finding: PaperFinding, panels: list[Panel]) -> FindingResult:
    check_kind = {"loss_change": _loss_change, "trend": _trend, "persists": _persists,
                  "diverges": _diverges, "diagnostic": _diagnostic, "best_lr": _best_lr}
    ours, verdict = check_kind[finding.kind](finding, panels)
    return FindingResult(finding, ours, verdict,
                         _missing(finding, panels) if verdict == NOT_RUN else "")


def _missing(f: PaperFinding, panels: list[Panel]) -> str:
    """What the directory lacks for a finding it could not test."""
    scales = f.scale.split(";") if f.scale else [""]
    absent_scales = [s for s in scales if _panel(panels, f.suite, s) is None]
    absent = []
    if absent_scales:
        rungs = ", ".join(s for s in absent_scales if s)
        absent.append(f"`{f.suite}`" + (f" ({rungs})" if rungs else ""))
    if f.kind == "persists" and _panel(panels, names.SUITE_MAIN, None) is None \
            and _panel(panels, names.SUITE_MULTISCALE, "400M") is None:
        absent.append(f"`{names.SUITE_MAIN}`")
    if absent:
        return "suite not in this directory: " + " and ".join(absent)
    if f.kind == "diagnostic":
        return "no run with this diagnostic"
    if not any(f.arch in p.designs for p in panels if p.suite == f.suite):
        return "design not in the suite's runs"
    return "the design has no finished run there"


def _loss_change(f: PaperFinding, panels):
    panel = _panel(panels, f.suite, f.scale)
    cells = [None if panel is None else _cell_at_depth(panel, f.arch, L)
             for L in (f.n_layer, f.n_layer_to)]
    if any(c is None or c.val_loss is None for c in cells):
        return "—", NOT_RUN
    a, b = cells
    ours = f"{a.val_loss:.4f} (L{a.n_layer}) → {b.val_loss:.4f} (L{b.n_layer})"
    paper_up = float(f.paper_value_to) > float(f.paper_value)
    ours_up = b.val_loss > a.val_loss
    noise = compare_intervals(a.interval, b.interval)
    if noise != SEPARATED:
        return f"{ours}, {noise}", UNDECIDED
    return ours, AGREE if paper_up == ours_up else DIFFER


def _trend(f: PaperFinding, panels):
    """Every scale the finding names that was run must show the paper's verdict; scales not run
    are listed in our text (all of them missing: not run)."""
    verdicts, absent = [], []
    for scale in f.scale.split(";") if f.scale else [""]:
        panel = _panel(panels, f.suite, scale)
        t = None if panel is None or f.arch not in panel.designs else depth_trend(panel, f.arch)
        if t is None or t.verdict == NO_RESULT:
            absent.append(scale)
        else:
            verdicts.append((scale, t))
    if not verdicts:
        return "—", NOT_RUN
    ours = "; ".join((f"{s}: " if s else "") + t.summary() for s, t in verdicts)
    if absent:
        ours += f"; {', '.join(absent)}: not run"
    if any(t.verdict != f.paper_value and t.verdict not in (INCONCLUSIVE, NO_INTERVAL_VERDICT)
           for _, t in verdicts):
        return ours, DIFFER
    if all(t.verdict == f.paper_value for _, t in verdicts):
        return ours, AGREE
    return ours, UNDECIDED


def _persists(f: PaperFinding, panels):
    at_scale = _panel(panels, f.suite, f.scale)
    reference = _panel(panels, names.SUITE_MAIN, None) or _panel(panels, names.SUITE_MULTISCALE,
                                                                 "400M")
    if at_scale is None or reference is None or f.arch not in at_scale.designs \
            or f.arch not in reference.designs:
        return "—", NOT_RUN
    text = persists_at_scale(depth_trend(reference, f.arch), depth_trend(at_scale, f.arch))
    if text.startswith("not tested: 400M trend"):
        return text, UNDECIDED
    if text.startswith("not tested"):
        return text, NOT_RUN
    if text.startswith("unclear"):
        # The paper's "no clean trend at scale" is what an unclear 1.6B trend shows.
        return text, AGREE if f.paper_value == "no" else UNDECIDED
    persists = text.startswith("persists")
    return text, AGREE if persists == (f.paper_value == "yes") else DIFFER


def _diverges(f: PaperFinding, panels):
    """The design's cell at the panel's largest d/L: did any candidate diverge?"""
    panel = _panel(panels, f.suite, f.scale)
    if panel is None or not panel.shapes:
        return "—", NOT_RUN
    cell = panel.cell(f.arch, panel.shapes[0])
    if cell is None:
        return "—", NOT_RUN
    diverged = [r for r in cell.runs if r.outcome == OUTCOME_DIVERGED]
    done = [r for r in cell.runs if r.outcome == OUTCOME_COMPLETED]
    where = f"L{cell.n_layer} d{cell.d_model}"
    if diverged:
        lrs = ", ".join(format_lr(r.learning_rate) for r in diverged)
        return f"{where}: diverged at lr {lrs}", AGREE if f.paper_value == "yes" else DIFFER
    if done:
        return f"{where}: {len(done)} run(s) completed, none diverged", \
            DIFFER if f.paper_value == "yes" else AGREE
    return f"{where}: no finished run", NOT_RUN


def _diagnostic_runs(f: PaperFinding, panel: Panel) -> list[Run]:
    """One run per depth (the finding's depth, or every depth): the paper's learning rate
    when there is such a run with diagnostics, else the best one that has them."""
    chosen = []
    for (arch, (L, _)), cell in panel.cells.items():
        if arch != f.arch or (f.n_layer is not None and L != f.n_layer):
            continue
        runs = sorted((r for r in cell.completed if _quantity(f, r) is not None),
                      key=lambda r: (f.learning_rate is None
                                     or abs(r.learning_rate - f.learning_rate) > 1e-12,
                                     r.val_loss))
        if runs:
            chosen.append(runs[0])
    return chosen


def _quantity(f: PaperFinding, run: Run):
    s = summarize(run)
    if f.quantity == "dead_segment":
        return None if s.dead_segment_layers is None else (float(s.dead_segment_layers), None)
    stat = getattr(s, f.quantity)
    return None if stat is None else (stat.value, stat.interval)


def _diagnostic(f: PaperFinding, panels):
    panel = _panel(panels, f.suite, f.scale)
    runs = [] if panel is None else _diagnostic_runs(f, panel)
    if not runs:
        return "—", NOT_RUN
    low = float(f.paper_value)
    high = float(f.paper_value_to) if f.paper_value_to else low
    tolerance = f.tolerance or 0.0
    texts, agree = [], []
    for run in sorted(runs, key=lambda r: r.n_layer):
        value, interval = _quantity(f, run)
        text = f"{value:.3g}" + (f" [{interval[0]:.3g}, {interval[1]:.3g}]" if interval else "")
        texts.append(text + (f" at L{run.n_layer}" if f.n_layer is None else "")
                     + f" (lr {format_lr(run.learning_rate)})")
        covers = interval is not None and interval[0] <= high and low <= interval[1]
        agree.append(low - tolerance <= value <= high + tolerance or covers)
    return "; ".join(texts), AGREE if all(agree) else DIFFER


def _best_lr(f: PaperFinding, panels):
    panel = _panel(panels, f.suite, f.scale)
    if panel is None or f.arch not in panel.designs:
        return "—", NOT_RUN
    best = [c.best_learning_rate for c in panel.trend(f.arch).cells]
    if not best:
        return "—", NOT_RUN
    counts = Counter(best).most_common()
    common = counts[0][0]
    grid = sorted({lr for c in panel.trend(f.arch).cells for lr in c.learning_rates})
    ours = f"{format_lr(common)} at {counts[0][1]} of {len(best)} shapes " \
           f"(grid {', '.join(map(format_lr, grid))})"
    if len(counts) > 1 and counts[1][1] == counts[0][1]:
        return ours + "; tied", UNDECIDED
    if float(f.paper_value) not in grid:
        return ours + "; paper's rate not swept", UNDECIDED
    return ours, AGREE if abs(common - float(f.paper_value)) < 1e-12 else DIFFER


def check_all(panels: list[Panel], findings: list[PaperFinding] | None = None
              ) -> list[FindingResult]:
    return [check(f, panels) for f in (load_findings() if findings is None else findings)]


def any_tested(results: list[FindingResult]) -> bool:
    return any(r.verdict != NOT_RUN for r in results)


def findings_table(results: list[FindingResult]) -> Table:
    """Every finding whose suite is in the directory; the others are one line of the summary."""
    rows = [[r.finding.title(), r.finding.paper_text(), r.ours, r.verdict, r.finding.source]
            for r in results if not needs_absent_suite(r)]
    counts = Counter(r.verdict for r in results)
    summary = ", ".join(f"{counts[v]} {v}" for v in (AGREE, DIFFER, UNDECIDED, NOT_RUN))
    notes = [f"{len(results)} findings: {summary}.",
             "Losses are compared by the direction of the change between the two depths and "
             "only when the two 95% intervals do not overlap (absolute losses depend on data "
             "and recipe); trends by the bootstrap verdict; diagnostics by value, within the "
             "tolerance of postprocess/data/paper_findings.csv or when the paper's value lies "
             "inside our interval. 'inconclusive': run, but the noise does not decide."]
    return Table("findings", "Findings: the paper's numbers and ours",
                 ["finding", "paper", "ours", "verdict", "source"], rows, notes)


SUITE_ABSENT = "suite not in this directory"


def needs_absent_suite(result: FindingResult) -> bool:
    return result.verdict == NOT_RUN and result.missing.startswith(SUITE_ABSENT)


def absent_suites_line(results: list[FindingResult]) -> str | None:
    """One sentence for every finding whose suite this directory does not hold (a custom suite's
    directory holds none of them): they are not listed one by one."""
    absent = [r for r in results if needs_absent_suite(r)]
    if not absent:
        return None
    suites = sorted({r.finding.suite for r in absent})
    return (f"{len(absent)} of {len(results)} findings of the paper need suites not in this "
            f"directory ({', '.join(f'`{s}`' for s in suites)}): not run, not listed; the full "
            "list is postprocess/data/paper_findings.csv.")


def untested_summary(results: list[FindingResult]) -> list[str]:
    """Plain sentences on what this directory could not test, by missing suite."""
    missing: dict[str, list[str]] = {}
    for r in results:
        if r.verdict == NOT_RUN and not needs_absent_suite(r):
            missing.setdefault(r.missing, []).append(r.finding.id)
    absent = absent_suites_line(results)
    if not missing:
        return [absent or "Every finding of the paper could be tested on this directory."]
    lines = [f"{sum(map(len, missing.values()))} of {len(results)} findings could not be "
             "tested on this directory although their suite is here:"]
    for why, ids in missing.items():
        which = ", ".join(ids) if len(ids) <= MAX_IDS_LISTED else "see the table"
        lines.append(f"{why[0].upper()}{why[1:]}: {len(ids)} finding(s) ({which}).")
    if absent:
        lines.append(absent)
    return lines
