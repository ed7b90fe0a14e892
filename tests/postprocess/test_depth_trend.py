"""Depth-trend verdicts: known slopes come back with intervals that hold them, and a verdict is
given only where the interval supports it."""
import numpy as np
import pytest

import make_runs as mk
from postprocess import analyze
from postprocess.depth_trend import FLAT_SLOPE, depth_trend

SHAPES = [(16, 1216), (24, 1024), (32, 896), (42, 800)]


def _panel(tmp_path, loss_of_shape, ci_halfwidth=0.002, **kw):
    mk.write_sweep(tmp_path, suite="main400m", designs=["hc"], shapes=SHAPES,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: loss_of_shape(L, d),
                   ci_halfwidth=ci_halfwidth, **kw)
    return analyze(tmp_path).panel("main400m")


def linear(slope):
    return lambda L, d: round(2.8 + slope * np.log(d / L), 12)


@pytest.mark.parametrize("slope, verdict", [(0.02, "improves with depth"),
                                            (-0.02, "worsens with depth"),
                                            (0.0, "flat")])
def test_known_slope_is_recovered_with_the_matching_verdict(tmp_path, slope, verdict):
    t = depth_trend(_panel(tmp_path, linear(slope)), "hc")
    assert t.slope == pytest.approx(slope, abs=1e-9)
    low, high = t.slope_interval
    assert low < slope < high and high - low < 2 * FLAT_SLOPE
    assert t.verdict == verdict and t.method == "intervals"


def test_wide_intervals_give_inconclusive_not_a_trend(tmp_path):
    t = depth_trend(_panel(tmp_path, linear(0.01), ci_halfwidth=0.05), "hc")
    assert t.slope == pytest.approx(0.01)
    assert t.slope_interval[0] < 0 < t.slope_interval[1]
    assert t.verdict == "inconclusive"


def test_interior_optimum_beyond_noise_is_non_monotonic(tmp_path):
    bowl = {16: 2.80, 24: 2.74, 32: 2.75, 42: 2.79}
    assert depth_trend(_panel(tmp_path, lambda L, d: bowl[L]), "hc").verdict == "non-monotonic"


def test_without_intervals_there_is_a_slope_but_no_verdict(tmp_path):
    t = depth_trend(_panel(tmp_path, linear(0.02), ci_halfwidth=None), "hc")
    assert t.slope == pytest.approx(0.02)
    assert t.slope_interval is None and t.verdict == "no interval"


def test_per_window_losses_are_resampled_jointly_across_shapes(tmp_path):
    """Windows shared by all shapes carry a large common noise: each run's own interval is wide,
    but the slope, resampled over the same windows for every shape, is tight."""
    rng = np.random.default_rng(3)
    common = rng.normal(0.0, 0.3, size=256)

    def write(directory, use_windows):
        for L, d in SHAPES:
            windows = 2.8 + 0.01 * np.log(d / L) + common
            mean = float(windows.mean())
            half = 1.96 * windows.std() / np.sqrt(len(windows))
            mk.write_run(directory, suite="main400m", arch="hc", n_layer=L, d_model=d,
                         learning_rate=2e-3, val_loss=mean, ci=(mean - half, mean + half),
                         window_losses=windows if use_windows else None)
        return depth_trend(analyze(directory).panel("main400m"), "hc")

    paired, unpaired = write(tmp_path / "paired", True), write(tmp_path / "unpaired", False)
    assert paired.method == "windows" and unpaired.method == "intervals"
    assert paired.slope == pytest.approx(0.01) == unpaired.slope
    assert paired.verdict == "improves with depth"
    assert unpaired.verdict == "inconclusive"


def test_a_diverged_shape_is_named_never_dropped(tmp_path):
    panel = _panel(tmp_path, lambda L, d: None if L == 42 else linear(0.02)(L, d))
    t = depth_trend(panel, "hc")
    assert len(t.cells) == 3 and t.verdict == "improves with depth"
    assert t.not_ranked_notes() == ["L42 diverged (lr 2e-3)"]
    assert t.summary().endswith("; L42 diverged (lr 2e-3)")
