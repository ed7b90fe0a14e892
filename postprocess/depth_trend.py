"""Depth-trend statistics: the slope of validation loss against ln(d/L) with a bootstrap
interval, and a verdict only where that interval supports one.

Each shape's loss is the cell's final validation loss at its best learning rate (the mean over
its seeds when the suite has a seed axis). Resampling:
- when every shape's best runs store their per-window validation losses
  (`/final/val_window_losses`, same window count everywhere), windows are resampled jointly
  across the shapes: the shapes share their validation windows, so their errors move together;
  with several seeds the seeds are resampled too, independently per shape (two-level bootstrap);
- otherwise each shape's loss is drawn from a normal whose 95% range is the run's stored
  interval, independently across shapes. That ignores the shared windows and so widens the
  slope's interval: verdicts err towards "inconclusive", never towards a false trend.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .loading import OUTCOME_COMPLETED, format_lr
from .ranking import (FLAT, IMPROVES_WITH_DEPTH, NON_MONOTONIC, SINGLE_SHAPE, WORSENS_WITH_DEPTH,
                      Cell, Panel)

INCONCLUSIVE = "inconclusive"
NO_INTERVAL_VERDICT = "no interval"
NO_RESULT = "no completed run"

RESAMPLES = 2000
SEED = 20240601
# |slope| below this (loss per e-fold of d/L) counts as flat: a change under ~0.01 in loss
# across the paper's 8x range of d/L (ln 8 ~ 2.1) is below what the paper discusses.
FLAT_SLOPE = 0.005
Z_95 = 1.959964


@dataclass
class DepthTrend:
    """One design in one panel: the slope, its interval, the verdict and what is missing."""
    arch: str
    cells: list[Cell]            # shapes with a completed run, shallow-wide -> deep-narrow
    not_ranked: list[Cell]       # shapes run but without a completed candidate (diverged, ...)
    slope: float | None
    slope_interval: tuple[float, float] | None
    verdict: str
    method: str                  # "windows", "intervals" or ""

    @property
    def optimal(self) -> Cell | None:
        return min(self.cells, key=lambda c: c.val_loss) if self.cells else None

    def not_ranked_notes(self) -> list[str]:
        """'L70 diverged' for each shape whose candidates all failed to complete."""
        notes = []
        for cell in self.not_ranked:
            outcomes = sorted({r.outcome for r in cell.runs if r.outcome != OUTCOME_COMPLETED})
            lrs = ", ".join(format_lr(r.learning_rate) for r in cell.excluded)
            notes.append(f"L{cell.n_layer} {'/'.join(outcomes)} (lr {lrs})")
        return notes

    def summary(self) -> str:
        """One cell of text: verdict, slope and interval, then shapes without a result."""
        if not self.cells and self.not_ranked:
            text = "; ".join(self.not_ranked_notes())
            return text
        text = self.verdict
        if self.slope is not None:
            text += f" {_signed(self.slope)}"
            if self.slope_interval is not None:
                low, high = self.slope_interval
                text += f" [{_signed(low)}, {_signed(high)}]"
        if self.not_ranked:
            text += "; " + "; ".join(self.not_ranked_notes())
        return text


def _signed(x: float) -> str:
    """+0.0123; a value that rounds to zero prints as +0.0000, never -0.0000."""
    return f"{round(x, 4) + 0.0:+.4f}"


def depth_trend(panel: Panel, arch: str, resamples: int = RESAMPLES,
                seed: int = SEED) -> DepthTrend:
    cells = panel.trend(arch).cells
    not_ranked = panel.unranked_cells(arch)
    if not cells:
        return DepthTrend(arch, cells, not_ranked, None, None, NO_RESULT, "")
    x = np.log([c.aspect_ratio for c in cells])
    losses = np.array([c.val_loss for c in cells])
    if len(cells) < 2 or np.ptp(x) == 0:
        return DepthTrend(arch, cells, not_ranked, None, None, SINGLE_SHAPE, "")
    weights = (x - x.mean()) / np.sum((x - x.mean()) ** 2)  # least-squares slope = w . y
    slope = float(weights @ losses)
    samples, method = loss_samples(cells, resamples, seed)
    if samples is None:
        return DepthTrend(arch, cells, not_ranked, slope, None, NO_INTERVAL_VERDICT, "")
    slopes = samples @ weights
    interval = (float(np.percentile(slopes, 2.5)), float(np.percentile(slopes, 97.5)))
    return DepthTrend(arch, cells, not_ranked, slope, interval, verdict(samples, interval),
                      method)


def verdict(samples: np.ndarray, slope_interval: tuple[float, float]) -> str:
    """samples: resamples x shapes (shallow-wide first). An interior optimum or worst shape
    that beats both ends beyond noise makes the trend non-monotonic; else the slope's interval
    decides: above zero improves with depth, below worsens, inside +-FLAT_SLOPE flat."""
    if samples.shape[1] >= 3:
        ends, inner = samples[:, [0, -1]], samples[:, 1:-1]
        dip = ends.min(axis=1) - inner.min(axis=1)     # > 0: an interior shape is best
        hump = inner.max(axis=1) - ends.max(axis=1)    # > 0: an interior shape is worst
        if np.percentile(dip, 2.5) > 0 or np.percentile(hump, 2.5) > 0:
            return NON_MONOTONIC
    low, high = slope_interval
    if low > 0:
        return IMPROVES_WITH_DEPTH
    if high < 0:
        return WORSENS_WITH_DEPTH
    if -FLAT_SLOPE <= low and high <= FLAT_SLOPE:
        return FLAT
    return INCONCLUSIVE


def loss_samples(cells: list[Cell], resamples: int, seed: int):
    """(resamples x shapes array of bootstrap losses, method) or (None, '') without data."""
    rng = np.random.default_rng(seed)
    windows = [c.window_losses for c in cells]  # each seeds x windows
    if all(w is not None for w in windows) and len({w.shape[1] for w in windows}) == 1 \
            and windows[0].shape[1] >= 2:
        n = windows[0].shape[1]
        picks = rng.integers(0, n, size=(resamples, n))  # one draw of windows for all shapes
        columns = []
        for w in windows:
            per_seed = w[:, picks].mean(axis=2)  # seeds x resamples
            if w.shape[0] == 1:
                columns.append(per_seed[0])
                continue
            # Seeds resampled too, independently per shape (a seed's runs at two shapes are
            # different models): two-level bootstrap, windows shared, seeds not.
            chosen = rng.integers(0, w.shape[0], size=(resamples, w.shape[0]))
            columns.append(per_seed[chosen, np.arange(resamples)[:, None]].mean(axis=1))
        return np.stack(columns, axis=1), "windows"
    if any(c.interval is None for c in cells):
        return None, ""
    means = np.array([c.val_loss for c in cells])
    sigmas = np.array([(c.interval[1] - c.interval[0]) / (2 * Z_95) for c in cells])
    return means + sigmas * rng.standard_normal((resamples, len(cells))), "intervals"


@dataclass
class SlopeDifference:
    """A design's depth slope minus the reference design's (Pre-LN), on the shapes both have:
    does the design gain more from depth than the baseline does?"""
    arch: str
    reference: str
    shapes: int
    difference: float | None
    interval: tuple[float, float] | None
    method: str  # "windows", "intervals" or ""

    @property
    def verdict(self) -> str:
        if self.difference is None:
            return SINGLE_SHAPE if self.shapes < 2 else NO_RESULT
        if self.interval is None:
            return NO_INTERVAL_VERDICT
        low, high = self.interval
        if low > 0:
            return "gains more from depth"
        if high < 0:
            return "gains less from depth"
        return "same as the reference within noise"


def slope_difference(panel: Panel, arch: str, reference: str = "pre_ln",
                     resamples: int = RESAMPLES, seed: int = SEED) -> SlopeDifference:
    """slope(arch) − slope(reference) on their common shapes, with a 95% bootstrap interval
    drawn as the slopes are (loss_samples on both designs' cells at once, so the two share each
    draw of the validation windows and the windows' difficulty cancels in the difference)."""
    mine = {c.shape: c for c in panel.trend(arch).cells}
    theirs = {c.shape: c for c in panel.trend(reference).cells}
    shapes = [s for s in panel.shapes if s in mine and s in theirs]
    if len(shapes) < 2:
        return SlopeDifference(arch, reference, len(shapes), None, None, "")
    x = np.log([mine[s].aspect_ratio for s in shapes])
    if np.ptp(x) == 0:
        return SlopeDifference(arch, reference, len(shapes), None, None, "")
    weights = (x - x.mean()) / np.sum((x - x.mean()) ** 2)
    cells = [mine[s] for s in shapes] + [theirs[s] for s in shapes]
    losses = np.array([c.val_loss for c in cells])
    k = len(shapes)
    difference = float(weights @ losses[:k] - weights @ losses[k:])
    samples, method = loss_samples(cells, resamples, seed)
    if samples is None:
        return SlopeDifference(arch, reference, k, difference, None, "")
    diffs = samples[:, :k] @ weights - samples[:, k:] @ weights
    interval = (float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5)))
    return SlopeDifference(arch, reference, k, difference, interval, method)
