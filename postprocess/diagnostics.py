"""Reading the `/diagnostics` datasets of a run defensively: a missing dataset or attribute
gives None, never an error. Definitions: spec/diagnostics.md; names: names.py."""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

from . import names
from .loading import Run


def late_share(matrix: np.ndarray, threshold: float) -> float | None:
    """Share of pairs (i, j) with floor(L/4) <= i < j < L whose finite score exceeds the
    threshold: the paper's "last three quarters" summary (spec/diagnostics.md, 2 and 3)."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] < 2:
        return None
    n = m.shape[0]
    i, j = np.triu_indices(n, k=1)
    keep = i >= n // 4
    values = m[i[keep], j[keep]]
    values = values[np.isfinite(values)]
    return float(np.mean(values > threshold)) if values.size else None


def _attr_float(attrs: dict, key: str) -> float | None:
    value = attrs.get(key)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _matrix_share(run: Run, dataset: str, attribute: str, threshold: float) -> float | None:
    d = run.diagnostic(dataset)
    if d is None:
        return None
    stored = _attr_float(d.attrs, attribute)
    return stored if stored is not None else late_share(d.data, threshold)


def causal_late_share(run: Run) -> float | None:
    return _matrix_share(run, names.DIAG_CAUSAL_SCORE, names.ATTR_CAUSAL_LATE_SHARE,
                         names.CAUSAL_THRESHOLD)


def permutation_late_share(run: Run) -> float | None:
    return _matrix_share(run, names.DIAG_PERMUTATION_SCORE, names.ATTR_PERMUTATION_LATE_SHARE,
                         names.PERMUTATION_THRESHOLD)


def _scalar(run: Run, dataset: str, attribute: str) -> float | None:
    """The scalar attribute of a dataset, else the dataset's own value when it is one number,
    else the mean of its finite entries."""
    d = run.diagnostic(dataset)
    if d is None:
        return None
    stored = _attr_float(d.attrs, attribute)
    if stored is not None:
        return stored
    try:
        data = np.asarray(d.data, dtype=float)
    except (TypeError, ValueError):
        return None
    data = data[np.isfinite(data)]
    return float(data.mean()) if data.size else None


def effective_rank_mean(run: Run) -> float | None:
    return _scalar(run, names.DIAG_EFFECTIVE_RANK, names.EFFECTIVE_RANK_MEAN)


def dead_segment_layers(run: Run) -> int | None:
    value = _scalar(run, names.DIAG_DEAD_SEGMENT, names.DEAD_SEGMENT_LAYERS)
    return None if value is None else int(round(value))


def vector(run: Run, dataset: str) -> np.ndarray | None:
    d = run.diagnostic(dataset)
    if d is None:
        return None
    try:
        data = np.asarray(d.data, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    return data if data.size else None


def matrix(run: Run, dataset: str) -> np.ndarray | None:
    d = run.diagnostic(dataset)
    if d is None:
        return None
    try:
        data = np.asarray(d.data, dtype=float)
    except (TypeError, ValueError):
        return None
    return data if data.ndim == 2 and data.size else None


def domain_nll(run: Run, task: str) -> tuple[float, tuple[float, float] | None] | None:
    d = run.diagnostic(names.DIAG_DOMAIN_NLL_PREFIX + task)
    if d is None:
        return None
    nll = _attr_float(d.attrs, names.DOMAIN_NLL)
    if nll is None:
        return None
    low = _attr_float(d.attrs, names.DOMAIN_NLL_CI_LOW)
    high = _attr_float(d.attrs, names.DOMAIN_NLL_CI_HIGH)
    return nll, (None if low is None or high is None else (low, high))


@dataclass
class DiagnosticSummary:
    causal_late_share: float | None = None
    permutation_late_share: float | None = None
    pruning_max_delta: float | None = None
    pruning_max_layer: int | None = None
    logitlens_monotone: bool | None = None
    logitlens_increases: int | None = None
    effective_rank_mean: float | None = None
    dead_segment_layers: int | None = None

    @property
    def has_any(self) -> bool:
        return any(getattr(self, f.name) is not None for f in fields(self))


def summarize(run: Run) -> DiagnosticSummary:
    s = DiagnosticSummary(causal_late_share(run), permutation_late_share(run))
    pruning = vector(run, names.DIAG_PRUNING_LOSS_DELTA)
    if pruning is not None and np.isfinite(pruning).any():
        layer = int(np.nanargmax(pruning))
        s.pruning_max_delta, s.pruning_max_layer = float(pruning[layer]), layer
    kl = vector(run, names.DIAG_LOGITLENS_KL)
    if kl is not None and kl.size >= 2:
        increases = int(np.sum(np.diff(kl) > 0))
        s.logitlens_monotone, s.logitlens_increases = increases == 0, increases
    s.effective_rank_mean = effective_rank_mean(run)
    s.dead_segment_layers = dead_segment_layers(run)
    return s
