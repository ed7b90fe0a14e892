"""Tables: the numbers in CSV, Markdown and LaTeX match values computed independently here."""
import csv
import io

import numpy as np
import pytest

import make_runs as mk
from postprocess import analyze, tables

SHAPES = [(16, 1216), (24, 1024), (32, 896)]
LRS = [1e-3, 2e-3]
DESIGNS = ["pre_ln", "hc"]


def _losses(seed=11):
    rng = np.random.default_rng(seed)
    return {(a, s, lr): round(float(2.7 + 0.1 * rng.random()), 6) for a in DESIGNS
            for s in SHAPES for lr in LRS}


def _rows(table):
    return list(csv.DictReader(io.StringIO(table.to_csv())))


def test_benchmark_csv_holds_the_best_loss_interval_and_lr_of_every_cell(tmp_path):
    losses = _losses()
    mk.write_sweep(tmp_path, suite="main400m", designs=DESIGNS, shapes=SHAPES,
                   learning_rates=LRS, loss=lambda a, L, d, lr: losses[(a, (L, d), lr)],
                   ci_halfwidth=0.003)
    table = tables.benchmark_table(analyze(tmp_path).panel("main400m"))
    rows = {r["design"]: r for r in _rows(table)}
    assert set(rows) == {"Pre-LN", "HC"}
    for a, title in (("pre_ln", "Pre-LN"), ("hc", "HC")):
        for L, d in SHAPES:
            best_lr = min(LRS, key=lambda lr: losses[(a, (L, d), lr)])
            best = losses[(a, (L, d), best_lr)]
            column = f"d/L {d / L:.1f} (L{L} d{d})"
            assert float(rows[title][column]) == pytest.approx(best, abs=1e-12)
            assert float(rows[title][column + " ci_low"]) == pytest.approx(best - 0.003)
            assert float(rows[title][column + " ci_high"]) == pytest.approx(best + 0.003)
            assert float(rows[title][column + " lr"]) == best_lr
    markdown = table.to_markdown()
    # The leader at each shape is bold in Markdown and LaTeX.
    leader = min(DESIGNS, key=lambda a: min(losses[(a, SHAPES[0], lr)] for lr in LRS))
    value = min(losses[(leader, SHAPES[0], lr)] for lr in LRS)
    assert f"**{value:.4f} [" in markdown
    latex = table.to_latex()
    assert "\\begin{tabular}{lrrr}" in latex and f"\\textbf{{{value:.4f}" in latex


def test_table_with_a_missing_shape_shows_a_dash_and_an_empty_csv_cell(tmp_path):
    mk.write_sweep(tmp_path, suite="demo", designs=["pre_ln"], shapes=SHAPES,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 3.0)
    mk.write_sweep(tmp_path, suite="demo", designs=["hc"], shapes=SHAPES[:2],
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 3.1)
    table = tables.benchmark_table(analyze(tmp_path).panel("demo"))
    hc = [r for r in _rows(table) if r["design"] == "HC"][0]
    assert hc["d/L 28.0 (L32 d896)"] == ""
    assert "| HC | 3.1000" in table.to_markdown() and "— |" in table.to_markdown()


def test_diverged_candidate_is_footnoted_in_the_benchmark_table(tmp_path):
    mk.write_sweep(tmp_path, suite="main400m", designs=["hc"], shapes=SHAPES[:1],
                   learning_rates=LRS,
                   loss=lambda a, L, d, lr: None if lr == 2e-3 else 2.8)
    markdown = tables.benchmark_table(analyze(tmp_path).panel("main400m")).to_markdown()
    assert "2.8000 [2.7980, 2.8020] @1e-3 [1]" in markdown
    assert "[1] HC at d/L 76.0 (L16 d1216): lr 2e-3 diverged: loss is NaN (step 7)" in markdown


def test_trend_and_ranking_tables_match_an_independent_computation(tmp_path):
    losses = _losses(5)
    mk.write_sweep(tmp_path, suite="main400m", designs=DESIGNS, shapes=SHAPES,
                   learning_rates=LRS, loss=lambda a, L, d, lr: losses[(a, (L, d), lr)],
                   ci_halfwidth=None)
    panel = analyze(tmp_path).panel("main400m")
    trend = {r["design"]: r for r in _rows(tables.trend_table(panel))}
    ranking = _rows(tables.ranking_table(panel))
    best = {}
    for a in DESIGNS:
        y = [min(losses[(a, s, lr)] for lr in LRS) for s in SHAPES]
        x = np.log([d / L for L, d in SHAPES])
        slope = np.sum((x - x.mean()) * (np.array(y) - np.mean(y))) / np.sum((x - x.mean()) ** 2)
        row = trend["Pre-LN" if a == "pre_ln" else "HC"]
        assert float(row["slope dloss/dln(d/L)"]) == pytest.approx(slope, rel=1e-9)
        i = int(np.argmin(y))
        assert float(row["optimal d/L"]) == pytest.approx(SHAPES[i][1] / SHAPES[i][0])
        best[a] = min(y)
    order = sorted(DESIGNS, key=lambda a: best[a])
    assert [r["design"] for r in ranking] == ["Pre-LN" if a == "pre_ln" else "HC" for a in order]
    assert float(ranking[0]["best val loss"]) == pytest.approx(best[order[0]])
    assert ranking[0]["vs next"] == "no interval"


def test_multiscale_table_groups_similar_aspect_ratios_across_scales(tmp_path):
    ladder = {"200M": [(12, 896), (18, 768), (24, 672)],
              "400M": [(16, 1216), (24, 1024), (32, 896)]}
    for shapes in ladder.values():
        for L, d in shapes:
            mk.write_run(tmp_path, suite="multiscale", arch="attnres_full", n_layer=L,
                         d_model=d, learning_rate=2e-3, val_loss=2.5 + L / 1000 + d / 1e5)
    panels = analyze(tmp_path).panels_of("multiscale")
    table = tables.multiscale_table(panels)
    assert table.columns == ["design", "scale", "d/L ≈75", "d/L ≈43", "d/L ≈28"]
    rows = _rows(table)
    assert [(r["design"], r["scale"]) for r in rows] == [("Full AttnRes", "200M"),
                                                        ("Full AttnRes", "400M")]
    for row, scale in zip(rows, ladder):
        shapes = sorted(ladder[scale], key=lambda s: -s[1] / s[0])
        for column, (L, d) in zip(table.columns[2:], shapes):
            assert float(row[column]) == pytest.approx(2.5 + L / 1000 + d / 1e5)


def test_domain_nll_table_reads_the_best_lr_run(tmp_path):
    for lr, loss, nll in ((1e-3, 2.9, 9.0), (2e-3, 2.8, 1.25)):
        mk.write_run(tmp_path, suite="main400m", arch="hc", n_layer=16, d_model=1216,
                     learning_rate=lr, val_loss=loss,
                     diagnostics={"domain_nll_math500": (np.float64(nll), {
                         "nll": nll, "ci_low": nll - 0.1, "ci_high": nll + 0.1})})
    (table,) = tables.domain_nll_tables(analyze(tmp_path).panel("main400m"))
    row = _rows(table)[0]
    column = "d/L 76.0 (L16 d1216)"
    assert float(row[column]) == 1.25
    assert float(row[column + " ci_low"]) == pytest.approx(1.15)
    assert float(row[column + " lr"]) == 2e-3


def test_latex_escapes_and_markdown_escapes_pipes():
    t = tables.Table("x", "A_b & 50%", ["a|b", "c"], [["x_y", tables.Value(1.5, (1.0, 2.0))]])
    latex = t.to_latex()
    assert "A\\_b \\& 50\\%" in latex and "x\\_y & 1.5000 [1.0000, 2.0000]" in latex
    assert "a\\|b" in t.to_markdown()
    assert t.to_csv().splitlines() == ["a|b,c,c ci_low,c ci_high", "x_y,1.5,1.0,2.0"]


def test_a_footnote_shared_by_many_cells_is_said_once(tmp_path):
    # Every shape of HC diverged the same way: one footnote per reason, naming every cell.
    mk.write_sweep(tmp_path, suite="main400m", designs=["hc", "pre_ln"], shapes=SHAPES,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: None if a == "hc" else 2.8)
    table = tables.benchmark_table(analyze(tmp_path).panel("main400m"))
    notes = "\n".join(table.notes)
    assert notes.count("no completed run") == 1, notes
    assert notes.count("lr 2e-3 diverged: loss is NaN (step 7)") == 1, notes
    assert all(f"(L{L} d{d})" in notes for L, d in SHAPES)
    hc = [r for r in table.rows if r[0] == "HC"][0]
    assert all(cell.mark == " [1]" for cell in hc[1:]), [c.mark for c in hc[1:]]
