"""The diagnostics summary of a suite: one row per run with layer diagnostics, each number with
its 95% interval, in the paper's summary forms (doc/diagnostics.md for the datasets)."""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from . import diagnostics as diag
from . import names
from .loading import Run, format_lr
from .tables import Table, Value

Interval = tuple[float, float]


@dataclass(frozen=True)
class Stat:
    value: float
    interval: Interval | None = None


@dataclass
class DiagnosticSummary:
    causal_late_share: Stat | None = None
    permutation_late_share: Stat | None = None
    adjacent_angular_distance: Stat | None = None
    effective_rank: Stat | None = None
    dead_segment_layers: int | None = None
    pruning_first_block: Stat | None = None
    pruning_last_block: Stat | None = None
    logitlens_monotone: bool | None = None
    logitlens_rises_beyond_noise: int | None = None

    @property
    def has_any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


def _finite_interval(low: float, high: float) -> Interval | None:
    return (float(low), float(high)) if np.isfinite(low) and np.isfinite(high) else None


def late_share_stat(run: Run, dataset: str, attribute: str, threshold: float) -> Stat | None:
    """The late-pair share above the threshold; its interval is the share when every score sits
    at the low, then the high end of its own 95% interval (a conservative bracket)."""
    value = diag.matrix_share(run, dataset, attribute, threshold)
    if value is None:
        return None
    bounds = diag.interval_arrays(run, dataset)
    if bounds is None:
        return Stat(value)
    low, high = (diag.late_share(b, threshold) for b in bounds)
    return Stat(value, None if low is None or high is None else (low, high))


def adjacent_angular_distance(run: Run) -> Stat | None:
    """Mean of d(l, l+1) over adjacent depth states: how much each block turns the state."""
    m = diag.matrix(run, names.DIAG_ANGULAR_DISTANCE)
    if m is None or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        return None
    values = np.diagonal(m, offset=1)
    if not np.isfinite(values).any():
        return None
    bounds = diag.interval_arrays(run, names.DIAG_ANGULAR_DISTANCE)
    interval = None
    if bounds is not None:
        interval = _finite_interval(*(np.nanmean(np.diagonal(b, offset=1)) for b in bounds))
    return Stat(float(np.nanmean(values)), interval)


def effective_rank(run: Run) -> Stat | None:
    value = diag.effective_rank_mean(run)
    if value is None:
        return None
    bounds = diag.interval_arrays(run, names.DIAG_EFFECTIVE_RANK)
    interval = None
    if bounds is not None and all(np.isfinite(b).any() for b in bounds):
        interval = _finite_interval(*(np.nanmean(b) for b in bounds))
    return Stat(value, interval)


def pruning_ends(run: Run) -> tuple[Stat | None, Stat | None]:
    """Loss increase when the first, and the last, block is skipped."""
    delta = diag.vector(run, names.DIAG_PRUNING_LOSS_DELTA)
    if delta is None:
        return None, None
    bounds = diag.interval_arrays(run, names.DIAG_PRUNING_LOSS_DELTA)

    def at(i: int) -> Stat | None:
        if not np.isfinite(delta[i]):
            return None
        interval = None if bounds is None else _finite_interval(bounds[0].ravel()[i],
                                                               bounds[1].ravel()[i])
        return Stat(float(delta[i]), interval)
    return at(0), at(len(delta) - 1)


def logitlens(run: Run) -> tuple[bool | None, int | None]:
    """(KL falls at every depth, number of rises beyond noise: the lower bound after a step
    above the upper bound before it)."""
    kl = diag.vector(run, names.DIAG_LOGITLENS_KL)
    if kl is None or kl.size < 2:
        return None, None
    monotone = bool(np.all(np.diff(kl) <= 0))
    bounds = diag.interval_arrays(run, names.DIAG_LOGITLENS_KL)
    if bounds is None:
        return monotone, None
    low, high = (b.ravel() for b in bounds)
    return monotone, int(np.sum(low[1:] > high[:-1]))


def summarize(run: Run) -> DiagnosticSummary:
    s = DiagnosticSummary()
    s.causal_late_share = late_share_stat(run, names.DIAG_CAUSAL_SCORE,
                                          names.ATTR_CAUSAL_LATE_SHARE, names.CAUSAL_THRESHOLD)
    s.permutation_late_share = late_share_stat(run, names.DIAG_PERMUTATION_SCORE,
                                               names.ATTR_PERMUTATION_LATE_SHARE,
                                               names.PERMUTATION_THRESHOLD)
    s.adjacent_angular_distance = adjacent_angular_distance(run)
    s.effective_rank = effective_rank(run)
    s.dead_segment_layers = diag.dead_segment_layers(run)
    s.pruning_first_block, s.pruning_last_block = pruning_ends(run)
    s.logitlens_monotone, s.logitlens_rises_beyond_noise = logitlens(run)
    return s


def _value(stat: Stat | None, digits: int) -> Value:
    return Value(None) if stat is None else Value(stat.value, stat.interval, digits=digits)


COLUMNS = ["design", "L", "d", "d/L", "lr", "late causal share >0.45",
           "late permutation share >0.15", "adjacent angular distance", "effective rank",
           "dead segment (layers)", "pruning: first block", "pruning: last block",
           "LogitLens KL monotone", "LogitLens rises beyond noise"]


def diagnostics_summary_table(suite: str, runs: list[Run]) -> Table | None:
    """One row per run of the suite that has diagnostics; None when no run has any."""
    rows = []
    for r in sorted((r for r in runs if r.suite == suite),
                    key=lambda r: (names.design_sort_key(r.arch), -r.aspect_ratio,
                                   r.learning_rate)):
        s = summarize(r)
        if not s.has_any:
            continue
        rows.append([names.design_title(r.arch), r.n_layer, r.d_model,
                     Value(r.aspect_ratio, digits=2), format_lr(r.learning_rate),
                     _value(s.causal_late_share, 3), _value(s.permutation_late_share, 3),
                     _value(s.adjacent_angular_distance, 3), _value(s.effective_rank, 3),
                     s.dead_segment_layers, _value(s.pruning_first_block, 4),
                     _value(s.pruning_last_block, 4), s.logitlens_monotone,
                     s.logitlens_rises_beyond_noise])
    if not rows:
        return None
    notes = ["Late shares: fraction of block pairs in the last three quarters (first index >= "
             "floor(L/4)) above the paper's thresholds (the file's attribute when present, "
             "else computed from the matrix); the bracket is the share when every score sits at "
             "the low, then the high end of its 95% interval.",
             "Adjacent angular distance: mean of d(l, l+1) over depth states. Effective rank: "
             "mean over spans of the composed stream maps (HC, mHC). Dead segment: leading "
             "Block AttnRes layers that ignore the running sum. Pruning: loss increase when the "
             "first or the last block is skipped. LogitLens: whether KL(p_final || p_l) falls "
             "at every depth, and how many rises are beyond noise (the interval after a step "
             "lies wholly above the one before).",
             "Intervals: 95% bootstrap over the sampled windows, from the file's *_ci_low / "
             "*_ci_high datasets; none shown when the file has none. — : not measured."]
    return Table(f"diagnostics_summary_{suite}", f"Diagnostics summary: "
                 f"{names.suite_title(suite)}", COLUMNS, rows, notes, digits=3)
