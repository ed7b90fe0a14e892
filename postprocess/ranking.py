"""Rankings per suite: best learning rate per (design, shape), depth trends, design rankings.

Vocabulary: a *panel* is one suite (one scale of it for the multi-scale suite); a *cell* is one
(design, shape) of a panel with its learning-rate candidates. Shapes are read in the paper's
direction, shallow-wide (large d/L) to deep-narrow (small d/L).

Noise: two results differ beyond noise when their 95% intervals do not overlap (a
conservative check); without an interval on both sides the answer is "no interval".

Seeds: a cell trained with several seeds (the suite's seed axis) is the mean over the seeds
of its best learning rate, the rate whose seed mean is lowest. Its interval combines the two
sources of variation (`seed_interval`): the validation windows, which every seed shares (the
mean half-width of the seeds' window intervals, which does not shrink with more seeds), and the
training seed (Student's t · s / sqrt(n) from the between-seed standard deviation s), added in
quadrature. So "within noise" uses the between-seed spread wherever there is one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import names
from .loading import OUTCOME_COMPLETED, Run, RunSet, format_lr

WITHIN_NOISE = "within noise"
SEPARATED = "separated"
NO_INTERVAL = "no interval"

IMPROVES_WITH_DEPTH = "improves with depth"
WORSENS_WITH_DEPTH = "worsens with depth"
NON_MONOTONIC = "non-monotonic"
FLAT = "flat"
SINGLE_SHAPE = "single shape"


# Student's t 97.5% quantiles for 1 … 30 degrees of freedom (then the normal's 1.96).
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
         2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
         2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(degrees_of_freedom: int) -> float:
    return _T975[degrees_of_freedom - 1] if degrees_of_freedom <= len(_T975) else 1.959964


def seed_interval(runs: list[Run]) -> tuple[float, float] | None:
    """95% interval of the mean loss over seed runs of one cell and learning rate: window and
    seed variation in quadrature, half-width sqrt(w^2 + (t * s / sqrt(n))^2), w the mean
    half-width of the runs' window intervals (0 when none has one), s the between-seed
    standard deviation. One run: its own interval."""
    losses = np.array([r.val_loss for r in runs])
    if len(runs) == 1:
        return runs[0].val_loss_interval
    intervals = [r.val_loss_interval for r in runs if r.val_loss_interval is not None]
    window = float(np.mean([(hi - lo) / 2 for lo, hi in intervals])) if intervals else 0.0
    seed = t975(len(runs) - 1) * float(np.std(losses, ddof=1)) / math.sqrt(len(runs))
    half = math.hypot(window, seed)
    mean = float(losses.mean())
    return (mean - half, mean + half)


def compare_intervals(a: tuple[float, float] | None, b: tuple[float, float] | None) -> str:
    if a is None or b is None:
        return NO_INTERVAL
    return WITHIN_NOISE if a[1] >= b[0] and b[1] >= a[0] else SEPARATED


@dataclass
class Cell:
    """One (design, shape) of a panel: every learning-rate candidate and the best one."""
    arch: str
    n_layer: int
    d_model: int
    runs: list[Run]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n_layer, self.d_model)

    @property
    def aspect_ratio(self) -> float:
        return self.runs[0].aspect_ratio

    @property
    def completed(self) -> list[Run]:
        return [r for r in self.runs if r.outcome == OUTCOME_COMPLETED]

    @property
    def excluded(self) -> list[Run]:
        """Candidates that cannot be ranked (diverged, failed, incomplete), by learning rate."""
        return sorted((r for r in self.runs if r.outcome != OUTCOME_COMPLETED),
                      key=lambda r: r.learning_rate)

    @property
    def best_runs(self) -> list[Run]:
        """The completed seed runs of the best learning rate (the rate whose mean final
        validation loss over its completed seeds is lowest), by seed."""
        by_rate: dict[float, list[Run]] = {}
        for r in self.completed:
            by_rate.setdefault(r.learning_rate, []).append(r)
        if not by_rate:
            return []
        rate = min(by_rate, key=lambda lr: (float(np.mean([r.val_loss for r in by_rate[lr]])),
                                            lr))
        return sorted(by_rate[rate], key=lambda r: (r.seed is None, r.seed or 0, r.run_name))

    @property
    def best(self) -> Run | None:
        """A run of the best learning rate (its first seed): its rate, shape and parameters are
        the cell's; its loss is one seed's (`val_loss` is the mean over the seeds)."""
        runs = self.best_runs
        return runs[0] if runs else None

    @property
    def seeds(self) -> int:
        """How many seeds the cell's result rests on (completed runs at its best rate)."""
        return len(self.best_runs)

    @property
    def val_loss(self) -> float | None:
        runs = self.best_runs
        return float(np.mean([r.val_loss for r in runs])) if runs else None

    @property
    def interval(self) -> tuple[float, float] | None:
        runs = self.best_runs
        return seed_interval(runs) if runs else None

    @property
    def window_losses(self) -> np.ndarray | None:
        """Seeds x windows final per-window losses of the best rate, when every seed run stores
        them with one window count; else None."""
        arrays = [r.val_window_losses for r in self.best_runs]
        if not arrays or any(a is None for a in arrays) or len({len(a) for a in arrays}) != 1:
            return None
        return np.stack([np.asarray(a, dtype=float) for a in arrays])

    @property
    def best_learning_rate(self) -> float | None:
        return None if self.best is None else self.best.learning_rate

    @property
    def learning_rates(self) -> list[float]:
        return sorted({r.learning_rate for r in self.runs})

    def flags(self) -> list[str]:
        """What a reader must know about this cell beyond its number."""
        notes = [f"lr {format_lr(r.learning_rate)} {r.outcome}"
                 + (f": {r.outcome_reason}" if r.outcome_reason else "") for r in self.excluded]
        if any(r.design_note for r in self.runs):
            notes.append("blocks of one sublayer: this is Full AttnRes")
        best = self.best
        if best is None:
            notes.append("no completed run")
        elif len(self.learning_rates) > 1 and best.learning_rate in (self.learning_rates[0],
                                                                     self.learning_rates[-1]):
            notes.append(f"best lr {format_lr(best.learning_rate)} is at the edge of the grid")
        return notes


@dataclass
class Trend:
    """One design's validation loss across the shapes of a panel."""
    arch: str
    cells: list[Cell]  # shapes with a result, shallow-wide -> deep-narrow

    @property
    def aspect_ratios(self) -> np.ndarray:
        return np.array([c.aspect_ratio for c in self.cells])

    @property
    def losses(self) -> np.ndarray:
        return np.array([c.val_loss for c in self.cells])

    @property
    def direction(self) -> str:
        if len(self.cells) < 2:
            return SINGLE_SHAPE
        steps = np.diff(self.losses)  # along decreasing d/L, i.e. going deeper
        if np.all(steps < 0):
            return IMPROVES_WITH_DEPTH
        if np.all(steps > 0):
            return WORSENS_WITH_DEPTH
        if np.all(steps == 0):
            return FLAT
        return NON_MONOTONIC

    @property
    def monotonic(self) -> bool | None:
        if len(self.cells) < 2:
            return None
        return self.direction in (IMPROVES_WITH_DEPTH, WORSENS_WITH_DEPTH, FLAT)

    @property
    def slope_per_log_aspect_ratio(self) -> float | None:
        """Least-squares slope of validation loss against ln(d/L). Positive: wider shapes
        lose more, i.e. depth helps; negative: depth hurts."""
        x = np.log(self.aspect_ratios)
        if len(self.cells) < 2 or np.ptp(x) == 0:
            return None
        return float(np.polyfit(x, self.losses, 1)[0])

    @property
    def optimal(self) -> Cell | None:
        return min(self.cells, key=lambda c: c.val_loss) if self.cells else None

    @property
    def worst(self) -> Cell | None:
        return max(self.cells, key=lambda c: c.val_loss) if self.cells else None

    @property
    def optimal_aspect_ratio(self) -> float | None:
        return None if self.optimal is None else self.optimal.aspect_ratio

    @property
    def spread_vs_noise(self) -> str:
        """Whether the best and worst shapes differ beyond their intervals."""
        if len(self.cells) < 2:
            return NO_INTERVAL
        return compare_intervals(self.optimal.interval, self.worst.interval)


@dataclass
class RankedEntry:
    rank: int
    arch: str
    val_loss: float
    interval: tuple[float, float] | None
    vs_next: str  # noise verdict against the next entry ("" for the last)
    vs_leader: str  # noise verdict against rank 1 ("" for the leader)


@dataclass
class OverallEntry:
    rank: int
    arch: str
    best_val_loss: float
    best_cell: Cell
    mean_rank: float
    shapes_ranked: int
    vs_next: str


@dataclass
class Panel:
    suite: str
    scale: str | None
    cells: dict[tuple[str, tuple[int, int]], Cell] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.suite if self.scale is None else f"{self.suite}-{self.scale}"

    @property
    def title(self) -> str:
        title = names.suite_title(self.suite)
        return title if self.scale is None else f"{title}, {self.scale}"

    @property
    def designs(self) -> list[str]:
        return sorted({arch for arch, _ in self.cells}, key=names.design_sort_key)

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """Every shape of the panel, shallow-wide -> deep-narrow."""
        ratio = {shape: cell.aspect_ratio for (_, shape), cell in self.cells.items()}
        return sorted(ratio, key=lambda s: (-ratio[s], s))

    def aspect_ratio(self, shape: tuple[int, int]) -> float:
        return next(c.aspect_ratio for (_, s), c in self.cells.items() if s == shape)

    def cell(self, arch: str, shape: tuple[int, int]) -> Cell | None:
        return self.cells.get((arch, shape))

    def runs(self) -> list[Run]:
        return [r for c in self.cells.values() for r in c.runs]

    def trend(self, arch: str) -> Trend:
        cells = [self.cells[(arch, s)] for s in self.shapes
                 if (arch, s) in self.cells and self.cells[(arch, s)].best is not None]
        return Trend(arch, cells)

    def ranking_at(self, shape: tuple[int, int]) -> list[RankedEntry]:
        cells = [self.cells[(a, shape)] for a in self.designs if (a, shape) in self.cells]
        cells = sorted((c for c in cells if c.best is not None),
                       key=lambda c: (c.val_loss, names.design_sort_key(c.arch)))
        entries = []
        for i, c in enumerate(cells):
            after = compare_intervals(c.interval, cells[i + 1].interval) if i + 1 < len(cells) \
                else ""
            leader = compare_intervals(c.interval, cells[0].interval) if i else ""
            entries.append(RankedEntry(i + 1, c.arch, c.val_loss, c.interval, after, leader))
        return entries

    def unranked_cells(self, arch: str) -> list[Cell]:
        """The design's shapes that were run but have no completed candidate."""
        return [self.cells[(arch, s)] for s in self.shapes
                if (arch, s) in self.cells and self.cells[(arch, s)].best is None]

    def unranked_at(self, shape: tuple[int, int]) -> list[Cell]:
        return [self.cells[(a, shape)] for a in self.designs
                if (a, shape) in self.cells and self.cells[(a, shape)].best is None]

    def overall_ranking(self) -> list[OverallEntry]:
        """Designs ordered by their best validation loss over the panel's shapes (each design
        at its own best shape and learning rate); the mean of the per-shape ranks is given
        alongside, over the shapes where the design has a result."""
        ranks: dict[str, list[int]] = {}
        for shape in self.shapes:
            for entry in self.ranking_at(shape):
                ranks.setdefault(entry.arch, []).append(entry.rank)
        trends = [self.trend(a) for a in self.designs]
        trends = sorted((t for t in trends if t.optimal is not None),
                        key=lambda t: (t.optimal.val_loss, names.design_sort_key(t.arch)))
        entries = []
        for i, t in enumerate(trends):
            after = (compare_intervals(t.optimal.interval, trends[i + 1].optimal.interval)
                     if i + 1 < len(trends) else "")
            r = ranks[t.arch]
            entries.append(OverallEntry(i + 1, t.arch, t.optimal.val_loss, t.optimal,
                                        float(np.mean(r)), len(r), after))
        return entries


def build_panels(runset: RunSet) -> list[Panel]:
    """Group every run (all outcomes) into panels and cells; panels sorted by suite, scale."""
    panels: dict[tuple[str, str | None], Panel] = {}
    for run in runset.runs:
        key = (run.suite, run.scale)
        panel = panels.setdefault(key, Panel(run.suite, run.scale))
        cell_key = (run.arch, run.shape)
        if cell_key not in panel.cells:
            panel.cells[cell_key] = Cell(run.arch, run.n_layer, run.d_model, [])
        panel.cells[cell_key].runs.append(run)
    return [panels[k] for k in sorted(panels, key=_panel_sort_key)]


def _panel_sort_key(key: tuple[str, str | None]):
    suite, scale = key
    return (suite, _scale_value(scale))


def _scale_value(scale: str | None) -> float:
    """'400M' -> 4e8 so scales sort by size; unparseable labels sort last."""
    if scale is None:
        return 0.0
    units = {"K": 1e3, "M": 1e6, "B": 1e9}
    try:
        if scale[-1:].upper() in units:
            return float(scale[:-1]) * units[scale[-1:].upper()]
        return float(scale)
    except ValueError:
        return math.inf


def scale_value(scale: str | None) -> float:
    return _scale_value(scale)
