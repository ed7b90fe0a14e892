"""Reading the `/diagnostics` datasets of a run defensively: a missing dataset or attribute
gives None, never an error. Definitions: spec/diagnostics.md; names: names.py."""
from __future__ import annotations

import math

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


def matrix_share(run: Run, dataset: str, attribute: str, threshold: float) -> float | None:
    d = run.diagnostic(dataset)
    if d is None:
        return None
    stored = _attr_float(d.attrs, attribute)
    return stored if stored is not None else late_share(d.data, threshold)


def causal_late_share(run: Run) -> float | None:
    return matrix_share(run, names.DIAG_CAUSAL_SCORE, names.ATTR_CAUSAL_LATE_SHARE,
                         names.CAUSAL_THRESHOLD)


def permutation_late_share(run: Run) -> float | None:
    return matrix_share(run, names.DIAG_PERMUTATION_SCORE, names.ATTR_PERMUTATION_LATE_SHARE,
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


def interval_arrays(run: Run, dataset: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The dataset's 95% bootstrap bounds (`<name>_ci_low`, `<name>_ci_high`, same shape as
    the dataset), or None when the file has none."""
    low = run.diagnostic(dataset + names.DIAG_CI_LOW_SUFFIX)
    high = run.diagnostic(dataset + names.DIAG_CI_HIGH_SUFFIX)
    main = run.diagnostic(dataset)
    if low is None or high is None or main is None:
        return None
    try:
        low, high = np.asarray(low.data, dtype=float), np.asarray(high.data, dtype=float)
    except (TypeError, ValueError):
        return None
    if low.shape != high.shape or low.shape != np.shape(main.data):
        return None
    return low, high
