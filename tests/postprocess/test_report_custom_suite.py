"""The report on a user's own suite: their results first, findings of absent suites in one
line, Block AttnRes rows that are in fact Full AttnRes marked, trend notes that explain a
verdict beside 'within noise', and figure legends and labels that explain themselves."""
import numpy as np

import make_runs as mk
from postprocess import analyze, build_report, findings
from postprocess import figures as figs
from postprocess.released import load_released_models
from postprocess.tables import ranking_table, trend_table

SHAPES = [(2, 128), (4, 96), (8, 64)]


def _custom_sweep(directory):
    """A suite no finding of the paper refers to, with Block AttnRes at L = 2, 4 and 8."""
    for arch in ("pre_ln", "attnres_block"):
        for L, d in SHAPES:
            mk.write_run(directory, suite="mycorpus", arch=arch, n_layer=L, d_model=d,
                         learning_rate=3e-3, val_loss=3.0 + L / 100 - (0.05 if arch != "pre_ln"
                                                                       else 0),
                         ci=(2.99 + L / 100, 3.01 + L / 100), vocab=257,
                         extra_attrs={"design_options": "attnres_blocks=8;attnres_block_size="
                                      if arch == "attnres_block" else ""})


def test_a_custom_suite_leads_with_its_results_and_collapses_absent_findings(tmp_path):
    _custom_sweep(tmp_path / "runs")
    report = build_report(tmp_path / "runs", tmp_path / "out", pdf=False)
    titles = [s.title for s in report.sections]
    # The evidence behind the user's results first (issue 40), then the results themselves.
    assert titles[0] == "Evidence" and titles[1].endswith("(`mycorpus`)"), titles
    assert titles.index("Findings") > titles.index(titles[1])
    section = report.sections[titles.index("Findings")]
    absent = [line for line in section.text if "need suites not in this directory" in line]
    assert len(absent) == 1 and "not listed" in absent[0]
    assert report.table("findings").rows == []  # no row per absent suite's finding
    markdown = report.report_md.read_text()
    assert markdown.index("(`mycorpus`)") < markdown.index("## Findings")


def test_findings_of_present_suites_still_lead(tmp_path):
    mk.write_sweep(tmp_path / "runs", suite="main400m", designs=["pre_ln", "hc"],
                   shapes=[(16, 1216), (24, 1024), (32, 896)], learning_rates=[2e-3],
                   loss=lambda a, L, d, lr: 2.8 - (0.01 if a == "hc" else 0) * L / 8)
    report = build_report(tmp_path / "runs", tmp_path / "out", pdf=False)
    assert report.sections[0].title == "Findings"
    results = findings.check_all(report.analysis.panels)
    assert findings.any_tested(results)
    assert len(report.table("findings").rows) == sum(
        not findings.needs_absent_suite(r) for r in results)


def test_block_attnres_with_one_sublayer_blocks_is_marked_full_attnres(tmp_path):
    _custom_sweep(tmp_path / "runs")
    analysis = analyze(tmp_path / "runs")
    runs = {(r.arch, r.n_layer): r for r in analysis.runset.runs}
    assert runs[("attnres_block", 2)].design_note and runs[("attnres_block", 4)].design_note
    assert not runs[("attnres_block", 8)].design_note  # S = 2
    assert not runs[("pre_ln", 2)].design_note
    panel = analysis.panel("mycorpus")
    ranking = ranking_table(panel).to_markdown()
    assert "Block AttnRes ‡" in ranking and "is Full AttnRes" in ranking
    report = build_report(tmp_path / "runs", tmp_path / "out", pdf=False)
    benchmark = report.table("benchmark_mycorpus").to_markdown()
    # One footnote for both cells (L = 2 and L = 4), said once and naming each.
    assert benchmark.count("this is Full AttnRes") == 1
    assert "Block AttnRes at d/L 64.0 (L2 d128); Block AttnRes at d/L 24.0 (L4 d96)" in benchmark


def test_explicit_block_size_decides(tmp_path):
    mk.write_run(tmp_path, suite="s", arch="attnres_block", n_layer=8, d_model=64,
                 learning_rate=1e-3, val_loss=3.0,
                 extra_attrs={"design_options": "attnres_blocks=8;attnres_block_size=1"})
    (run,) = analyze(tmp_path).runset.runs
    assert run.design_note


def test_a_paired_trend_beside_overlapping_intervals_is_explained(tmp_path):
    """Shared window noise: each shape's interval is wide and overlaps the others, but the
    slope over the same windows is clearly negative."""
    rng = np.random.default_rng(5)
    common = rng.normal(0.0, 0.3, size=256)
    for L, d in [(16, 1216), (24, 1024), (32, 896), (42, 800)]:
        windows = 2.8 - 0.01 * np.log(d / L) + common
        mean = float(windows.mean())
        half = 1.96 * windows.std() / np.sqrt(len(windows))
        mk.write_run(tmp_path, suite="mine", arch="hc", n_layer=L, d_model=d,
                     learning_rate=2e-3, val_loss=mean, ci=(mean - half, mean + half),
                     window_losses=windows)
    table = trend_table(analyze(tmp_path).panel("mine"))
    (row,) = table.rows
    assert row[3] == "worsens with depth" and row[7] == "within noise"
    note = " ".join(table.notes)
    assert "not a contradiction" in note and "paired" in note


def _capture_figures(monkeypatch):
    captured = {}
    original = figs.save_figure

    def keep(fig, directory, name, title, pdf):
        captured[name] = fig
        return original(fig, directory, name, title, pdf)
    monkeypatch.setattr(figs, "save_figure", keep)
    return captured


def test_landscape_legend_sits_outside_the_data(tmp_path, monkeypatch):
    mk.write_sweep(tmp_path / "runs", suite="main400m", designs=["pre_ln", "hc"],
                   shapes=[(16, 1216), (24, 1024), (32, 896)], learning_rates=[2e-3],
                   loss=lambda a, L, d, lr: 2.8 - (0.01 if a == "hc" else 0) * L / 8)
    captured = _capture_figures(monkeypatch)
    analysis = analyze(tmp_path / "runs")
    figs.aspect_ratio_landscape(analysis.panels, load_released_models(), tmp_path / "f", False)
    fig = captured["aspect_ratio_landscape"]
    fig.canvas.draw()
    (ax,) = fig.axes
    legend = ax.get_legend().get_window_extent()
    assert not legend.overlaps(ax.get_window_extent())


def test_released_model_labels_say_how_many_more_share_the_ratio(tmp_path, monkeypatch):
    mk.write_sweep(tmp_path / "runs", suite="main400m", designs=["pre_ln"],
                   shapes=[(16, 1216), (24, 1024), (32, 896)], learning_rates=[2e-3],
                   loss=lambda a, L, d, lr: 2.8)
    captured = _capture_figures(monkeypatch)
    analysis = analyze(tmp_path / "runs")
    figs.loss_vs_aspect_ratio(analysis.panels, load_released_models(), tmp_path / "f", False)
    fig = captured["loss_vs_aspect_ratio"]
    fig.canvas.draw()
    labels = [t.get_text() for ax in fig.axes for top in ax.child_axes  # the secondary axis
              for t in top.get_xticklabels()]
    assert any("more)" in label for label in labels), labels
    assert "'+N more': N other released models" in fig._suptitle.get_text().replace("\n", " ")
