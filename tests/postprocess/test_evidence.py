"""Issue 40: the evidence behind the verdicts. Seeds are averaged and their spread widens the
intervals (so 'within noise' sees it); each design's depth slope is given minus Pre-LN's with
an interval; the evidence table and its warnings say how much validation and training the
rankings rest on."""
import math

import numpy as np
import pytest

import make_runs as mk
from postprocess import analyze, build_report, evidence
from postprocess.depth_trend import slope_difference
from postprocess.ranking import SEPARATED, WITHIN_NOISE, compare_intervals, t975

SHAPES = [(16, 1216), (24, 1024), (32, 896), (42, 800)]


def _seed_runs(tmp_path, arch, losses, halfwidth=0.001, shape=(24, 1024), **kw):
    for seed, loss in enumerate(losses, start=1):
        mk.write_run(tmp_path, suite="mine", arch=arch, n_layer=shape[0], d_model=shape[1],
                     learning_rate=2e-3, val_loss=loss, ci=(loss - halfwidth, loss + halfwidth),
                     extra_attrs={"seed": np.int64(seed)},
                     file_name=mk.run_name("mine", arch, *shape, 2e-3) + f"__s{seed}", **kw)


def test_a_cell_averages_its_seeds_and_its_interval_adds_their_spread(tmp_path):
    _seed_runs(tmp_path, "hc", [3.0, 3.1, 3.2])
    cell = analyze(tmp_path).panel("mine").cell("hc", (24, 1024))
    assert cell.seeds == 3
    assert cell.val_loss == pytest.approx(3.1)
    half = math.hypot(0.001, t975(2) * 0.1 / math.sqrt(3))
    assert cell.interval == pytest.approx((3.1 - half, 3.1 + half))


def test_within_noise_uses_the_between_seed_spread(tmp_path):
    # Windows alone (±0.001) would separate 3.00 from 3.05; seeds spread by ±0.1 do not.
    _seed_runs(tmp_path, "hc", [2.9, 3.0, 3.1])
    _seed_runs(tmp_path, "pre_ln", [2.95, 3.05, 3.15])
    panel = analyze(tmp_path).panel("mine")
    a, b = panel.cell("hc", (24, 1024)), panel.cell("pre_ln", (24, 1024))
    assert compare_intervals(a.best.val_loss_interval, b.best.val_loss_interval) == SEPARATED
    assert compare_intervals(a.interval, b.interval) == WITHIN_NOISE
    assert panel.ranking_at((24, 1024))[0].vs_next == WITHIN_NOISE


def test_the_best_rate_is_the_one_with_the_lowest_seed_mean(tmp_path):
    for seed, (good, bad) in enumerate([(3.0, 2.9), (3.0, 3.3)], start=1):
        for lr, loss in ((1e-3, good), (2e-3, bad)):
            mk.write_run(tmp_path, suite="mine", arch="hc", n_layer=24, d_model=1024,
                         learning_rate=lr, val_loss=loss, ci=(loss - 0.01, loss + 0.01),
                         extra_attrs={"seed": np.int64(seed)},
                         file_name=mk.run_name("mine", "hc", 24, 1024, lr) + f"__s{seed}")
    cell = analyze(tmp_path).panel("mine").cell("hc", (24, 1024))
    assert cell.best_learning_rate == 1e-3  # one seed at 2e-3 is lower, its mean is not
    assert cell.val_loss == pytest.approx(3.0)


def _linear_windows(slope, base, n_windows=64, seed=0):
    """Per-window losses whose mean is linear in ln(d/L), with window noise shared by shapes."""
    noise = np.random.default_rng(seed).normal(0, 0.3, n_windows)
    return lambda L, d: base + slope * np.log(d / L) + noise


@pytest.mark.parametrize("slope_hc, verdict", [(0.06, "gains more from depth"),
                                               (0.02, "same as the reference within noise")])
def test_depth_slope_minus_pre_ln_has_an_interval_and_a_verdict(tmp_path, slope_hc, verdict):
    for arch, slope in (("pre_ln", 0.02), ("hc", slope_hc)):
        windows = _linear_windows(slope, 3.0)
        for L, d in SHAPES:
            w = windows(L, d)
            mk.write_run(tmp_path, suite="mine", arch=arch, n_layer=L, d_model=d,
                         learning_rate=2e-3, val_loss=float(w.mean()),
                         ci=(float(w.mean()) - 0.05, float(w.mean()) + 0.05), window_losses=w)
    panel = analyze(tmp_path).panel("mine")
    d = slope_difference(panel, "hc")
    assert d.shapes == 4 and d.method == "windows"
    assert d.difference == pytest.approx(slope_hc - 0.02, abs=1e-9)
    low, high = d.interval
    assert low <= d.difference <= high
    assert d.verdict == verdict
    table = evidence.depth_vs_reference_table(panel)
    assert table.rows[0][0] == "HC" and table.rows[0][3] == verdict


def test_evidence_table_warns_where_the_evidence_is_thin(tmp_path):
    thin = {"val_tokens": np.int64(2048), "val_documents": np.int64(2),
            "val_held_out_tokens": np.int64(500000), "val_held_out_documents": np.int64(23)}
    for L, d in SHAPES[:2]:
        mk.write_run(tmp_path, suite="mine", arch="pre_ln", n_layer=L, d_model=d,
                     learning_rate=2e-3, val_loss=3.0, ci=(2.99, 3.01), extra_attrs=thin)
    table, warnings = evidence.evidence_table(analyze(tmp_path).panels)
    row = table.rows[0]
    assert row[1] == "2048" and row[2] == "2" and row[3] == "23"
    assert row[6] == "1"  # seeds per cell
    text = " ".join(warnings)
    assert "only 2 documents" in text
    assert "0.41% of the held-out tokens" in text
    assert "one training seed per cell" in text
    # A suite with enough documents, tokens, seeds and training gets no warning.
    plenty = {"val_tokens": np.int64(200000), "val_documents": np.int64(400),
              "val_held_out_tokens": np.int64(1000000), "val_held_out_documents": np.int64(900)}
    other = tmp_path / "plenty"
    for seed in (1, 2):
        mk.write_run(other, suite="mine", arch="pre_ln", n_layer=24, d_model=1024,
                     learning_rate=2e-3, val_loss=3.0 + 0.01 * seed, ci=(2.9, 3.1), steps=20,
                     params_total=1000, extra_attrs={**plenty, "seed": np.int64(seed)},
                     file_name=f"plenty__s{seed}")
    table, warnings = evidence.evidence_table(analyze(other).panels)
    assert warnings == [], warnings
    assert table.rows[0][6] == "2"


def test_the_report_shows_the_evidence_section(tmp_path):
    runs = tmp_path / "runs"
    mk.write_sweep(runs, suite="mine", designs=["pre_ln", "hc"], shapes=SHAPES,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 3.0 + 0.01 * np.log(d / L))
    report = build_report(runs, tmp_path / "report", pdf=False)
    text = report.report_md.read_text()
    assert "## Evidence" in text
    assert "The evidence the verdicts rest on" in text
    assert "Depth slope relative to Pre-LN" in text
    assert "do not record their validation coverage" in text
    assert (tmp_path / "report" / "tables" / "evidence.csv").exists()
