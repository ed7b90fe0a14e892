"""Rankings: best learning rate, depth trends, design rankings and noise verdicts, each checked
against values computed independently here."""
import math

import numpy as np
import pytest

import make_runs as mk
from postprocess import analyze, compare_intervals

SHAPES = [(16, 1216), (24, 1024), (32, 896)]
LRS = [1e-3, 2e-3, 5e-3]
DESIGNS = ["pre_ln", "hc", "attnres_full"]


def _random_losses(seed=3):
    rng = np.random.default_rng(seed)
    return {(a, s, lr): float(2.7 + 0.1 * rng.random()) for a in DESIGNS for s in SHAPES
            for lr in LRS}


def _sweep(tmp_path, losses, suite="main400m", ci=0.002, diverged=()):
    def loss(a, L, d, lr):
        return None if (a, (L, d), lr) in diverged else losses[(a, (L, d), lr)]
    mk.write_sweep(tmp_path, suite=suite, designs=DESIGNS, shapes=SHAPES, learning_rates=LRS,
                   loss=loss, ci_halfwidth=ci)


def test_best_learning_rate_is_the_argmin_over_candidates(tmp_path):
    losses = _random_losses()
    _sweep(tmp_path, losses)
    panel = analyze(tmp_path).panel("main400m")
    for a in DESIGNS:
        for s in SHAPES:
            expected_lr, expected_loss = None, math.inf
            for lr in LRS:
                if losses[(a, s, lr)] < expected_loss:
                    expected_lr, expected_loss = lr, losses[(a, s, lr)]
            cell = panel.cell(a, s)
            assert cell.best_learning_rate == expected_lr
            assert cell.val_loss == pytest.approx(expected_loss, abs=1e-12)
            assert cell.interval == pytest.approx((expected_loss - 0.002, expected_loss + 0.002))


def test_diverged_best_lr_candidate_is_excluded_and_flagged(tmp_path):
    # 5e-3 would be the best rate for HC at L32, but that run diverged.
    losses = {(a, s, lr): 2.8 for a in DESIGNS for s in SHAPES for lr in LRS}
    losses[("hc", (32, 896), 5e-3)] = 2.5
    losses[("hc", (32, 896), 2e-3)] = 2.71
    _sweep(tmp_path, losses, diverged={("hc", (32, 896), 5e-3)})
    cell = analyze(tmp_path).panel("main400m").cell("hc", (32, 896))
    assert cell.best_learning_rate == 2e-3
    assert cell.val_loss == pytest.approx(2.71)
    assert [r.learning_rate for r in cell.excluded] == [5e-3]
    assert any(f.startswith("lr 5e-3 diverged: loss is NaN") for f in cell.flags())


def test_cell_whose_candidates_all_diverged_has_no_best_and_is_unranked(tmp_path):
    losses = {(a, s, lr): 2.8 for a in DESIGNS for s in SHAPES for lr in LRS}
    _sweep(tmp_path, losses, diverged={("hc", (16, 1216), lr) for lr in LRS})
    panel = analyze(tmp_path).panel("main400m")
    cell = panel.cell("hc", (16, 1216))
    assert cell.best is None and "no completed run" in cell.flags()
    assert "hc" not in [e.arch for e in panel.ranking_at((16, 1216))]
    assert [c.arch for c in panel.unranked_at((16, 1216))] == ["hc"]
    assert len(panel.trend("hc").cells) == 2


def test_missing_shapes_leave_gaps_not_errors(tmp_path):
    mk.write_sweep(tmp_path, suite="main400m", designs=["pre_ln"], shapes=SHAPES,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 2.7 + L / 1000)
    mk.write_sweep(tmp_path, suite="main400m", designs=["hc"], shapes=SHAPES[:1],
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 2.6)
    panel = analyze(tmp_path).panel("main400m")
    assert panel.shapes == SHAPES
    assert panel.cell("hc", (24, 1024)) is None
    assert panel.trend("hc").direction == "single shape"
    assert panel.trend("hc").slope_per_log_aspect_ratio is None
    assert [e.arch for e in panel.ranking_at((24, 1024))] == ["pre_ln"]
    overall = panel.overall_ranking()
    assert [(e.arch, e.shapes_ranked) for e in overall] == [("hc", 1), ("pre_ln", 3)]


def test_trend_slope_direction_and_optimum_match_an_independent_fit(tmp_path):
    # Per design: losses at the three shapes, listed shallow-wide -> deep-narrow.
    by_design = {"pre_ln": [2.759, 2.770, 2.782], "hc": [2.729, 2.713, 2.699],
                 "attnres_full": [2.740, 2.715, 2.730]}
    losses = {(a, s, lr): by_design[a][i] + (0 if lr == 2e-3 else 0.05)
              for a in DESIGNS for i, s in enumerate(SHAPES) for lr in LRS}
    _sweep(tmp_path, losses)
    panel = analyze(tmp_path).panel("main400m")
    x = [math.log(d / L) for L, d in SHAPES]
    for a, y in by_design.items():
        mx, my = sum(x) / 3, sum(y) / 3
        slope = sum((xi - mx) * (yi - my) for xi, yi in zip(x, y)) / \
            sum((xi - mx) ** 2 for xi in x)
        trend = panel.trend(a)
        assert trend.slope_per_log_aspect_ratio == pytest.approx(slope, rel=1e-9)
        best = min(range(3), key=lambda i: y[i])
        assert trend.optimal_aspect_ratio == pytest.approx(SHAPES[best][1] / SHAPES[best][0])
    assert panel.trend("pre_ln").direction == "worsens with depth"
    assert panel.trend("hc").direction == "improves with depth"
    assert panel.trend("attnres_full").direction == "non-monotonic"
    assert panel.trend("attnres_full").monotonic is False
    assert panel.trend("hc").slope_per_log_aspect_ratio > 0  # depth helps HC
    assert panel.trend("pre_ln").slope_per_log_aspect_ratio < 0


def test_rankings_at_each_shape_and_overall(tmp_path):
    by_design = {"pre_ln": [2.759, 2.770, 2.782], "hc": [2.729, 2.713, 2.699],
                 "attnres_full": [2.751, 2.7145, 2.718]}
    losses = {(a, s, lr): by_design[a][i] for a in DESIGNS for i, s in enumerate(SHAPES)
              for lr in LRS}
    _sweep(tmp_path, losses, ci=0.001)
    panel = analyze(tmp_path).panel("main400m")
    assert [e.arch for e in panel.ranking_at((16, 1216))] == ["hc", "attnres_full", "pre_ln"]
    at24 = panel.ranking_at((24, 1024))
    assert [e.arch for e in at24] == ["hc", "attnres_full", "pre_ln"]
    # 2.713 +- 0.001 and 2.7145 +- 0.001 overlap; 2.7145 and 2.770 do not.
    assert at24[0].vs_next == "within noise"
    assert at24[1].vs_next == "separated"
    assert at24[2].vs_leader == "separated"
    overall = panel.overall_ranking()
    assert [e.arch for e in overall] == ["hc", "attnres_full", "pre_ln"]
    assert overall[1].mean_rank == pytest.approx(2.0)
    assert overall[0].best_val_loss == pytest.approx(2.699)


def test_noise_verdicts():
    assert compare_intervals((1.0, 2.0), (1.5, 3.0)) == "within noise"
    assert compare_intervals((1.0, 2.0), (2.5, 3.0)) == "separated"
    assert compare_intervals((1.0, 2.0), None) == "no interval"


def test_without_intervals_every_verdict_says_no_interval(tmp_path):
    _sweep(tmp_path, _random_losses(), ci=None)
    panel = analyze(tmp_path).panel("main400m")
    assert {e.vs_next for e in panel.ranking_at((16, 1216))} == {"no interval", ""}
    assert panel.trend("hc").spread_vs_noise == "no interval"


def test_several_suites_in_one_directory_stay_separate(tmp_path):
    losses = _random_losses()
    _sweep(tmp_path / "main", losses, suite="main400m")
    _sweep(tmp_path / "iso", {k: v + 1 for k, v in losses.items()}, suite="isobackbone300m")
    analysis = analyze(tmp_path)
    assert analysis.suites() == ["isobackbone300m", "main400m"]
    main, iso = analysis.panel("main400m"), analysis.panel("isobackbone300m")
    assert len(main.runs()) == len(iso.runs()) == len(DESIGNS) * len(SHAPES) * len(LRS)
    assert iso.cell("hc", (16, 1216)).val_loss == pytest.approx(
        main.cell("hc", (16, 1216)).val_loss + 1)


def test_multiscale_runs_group_by_rounded_params_or_scale_attribute(tmp_path):
    for L, d in [(24, 672), (18, 768), (12, 896), (32, 896), (24, 1024), (16, 1216)]:
        mk.write_run(tmp_path, suite="multiscale", arch="hc", n_layer=L, d_model=d,
                     learning_rate=2e-3, val_loss=3.0 - d / 1e4)
    mk.write_run(tmp_path, suite="multiscale", arch="hc", n_layer=17, d_model=1344,
                 learning_rate=2e-3, val_loss=2.7, extra_attrs={"scale": "500M"})
    analysis = analyze(tmp_path)
    scales = [p.scale for p in analysis.panels_of("multiscale")]
    assert scales == ["200M", "400M", "500M"]
    assert analysis.panel("multiscale", "200M").shapes == [(12, 896), (18, 768), (24, 672)]
