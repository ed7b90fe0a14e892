"""The cross-scale table, the findings rows and the compare command on a synthetic directory
with known trends: main suite, ladder rungs 400M and 500M (HC diverges at 500M's widest shape),
the 1.6B suite; no iso-backbone suite."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import make_runs as mk
from postprocess import analyze, build_report
from postprocess.cross_scale import cross_scale_table
from postprocess.findings import check_all, untested_summary

REPO_ROOT = Path(__file__).resolve().parents[2]
DESIGNS = ["pre_ln", "hc", "attnres_full", "attnres_block"]
# Slope of loss against ln(d/L): positive means deeper-narrower is better.
SLOPES = {"pre_ln": -0.02, "hc": 0.02, "attnres_full": 0.03, "attnres_block": 0.01}
MAIN_SHAPES = [(16, 1216), (20, 1120), (24, 1024), (32, 896)]
LADDER = {"400M": [(32, 896), (24, 1024), (16, 1216)], "500M": [(34, 992), (26, 1120),
                                                               (17, 1344)]}
SCALE_SHAPES = [(28, 2048), (40, 1728), (54, 1504)]


def loss(slopes, diverged=()):
    def f(arch, L, d, lr):
        if (arch, L) in diverged:
            return None
        return round(2.8 + slopes[arch] * np.log(d / L) + (0.02 if lr == 1e-3 else 0.0), 10)
    return f


def write_paper_like(root):
    mk.write_sweep(root / "main400m", suite="main400m", designs=DESIGNS, shapes=MAIN_SHAPES,
                   learning_rates=[1e-3, 2e-3], loss=loss(SLOPES))
    for scale, shapes in LADDER.items():
        mk.write_sweep(root / "multiscale", suite="multiscale", designs=DESIGNS, shapes=shapes,
                       learning_rates=[2e-3], loss=loss(SLOPES, diverged={("hc", 17)}),
                       extra_attrs={"scale": scale})
    at_scale = dict(SLOPES, hc=0.0)  # HC's gain does not carry to 1.6B
    mk.write_sweep(root / "validation1p6b", suite="validation1p6b", designs=DESIGNS,
                   shapes=SCALE_SHAPES, learning_rates=[5e-4], loss=loss(at_scale))
    # Diagnostics at L = 32, lr 2e-3: HC near the paper's 7% late causal share, Pre-LN far off.
    for arch, share in (("hc", 0.08), ("pre_ln", 0.30)):
        causal = np.full((32, 32), np.nan)
        mk.write_run(root / "main400m", suite="main400m", arch=arch, n_layer=32, d_model=896,
                     learning_rate=2e-3, val_loss=loss(SLOPES)(arch, 32, 896, 2e-3),
                     ci=(loss(SLOPES)(arch, 32, 896, 2e-3) - 0.002,
                         loss(SLOPES)(arch, 32, 896, 2e-3) + 0.002),
                     diagnostics={"causal_score": (causal, {"late_share_above_0.45": share})})


@pytest.fixture(scope="module")
def paper_like(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper_like")
    write_paper_like(root)
    return root


@pytest.fixture(scope="module")
def results(paper_like):
    return {r.finding.id: r for r in check_all(analyze(paper_like).panels)}


def _row(table, design):
    return dict(zip(table.columns, next(r for r in table.rows if r[0] == design)))


def test_cross_scale_cells_show_verdicts_slopes_diverged_rungs_and_missing_suites(paper_like):
    table = cross_scale_table(analyze(paper_like).panels)
    hc = _row(table, "HC")
    assert hc["400M main"].startswith("improves with depth +0.0200 [")
    assert hc["300M iso-backbone"] == "not run" and hc["ladder 200M"] == "not run"
    assert hc["ladder 500M"].endswith("; L17 diverged (lr 2e-3)")
    assert hc["1.6B"].startswith("flat +0.0000")
    assert hc["persists at scale"] == "does not persist: 1.6B flat"
    full = _row(table, "Full AttnRes")
    assert full["ladder 400M"].startswith("improves with depth +0.0300")
    assert full["persists at scale"] == "persists"
    assert _row(table, "Pre-LN")["400M main"].startswith("worsens with depth -0.0200")


def test_findings_rows_agree_differ_or_say_not_run(results):
    expected = {
        "preln_loss_16_32": "agree", "hc_loss_16_32": "agree", "preln_trend": "agree",
        "hc_trend": "agree",
        # Our Block AttnRes improves monotonically; the paper's peaks at L = 20.
        "attnres_block_trend": "differ", "attnres_block_loss_20_32": "differ",
        "attnres_full_ladder_trend": "agree", "hc_500m_diverges": "agree",
        "attnres_full_persists": "agree", "hc_persists": "agree",
        "hc_causal_share": "agree", "preln_causal_share": "differ",
        "hc_isobackbone_trend": "not run", "attnres_full_causal_share": "not run",
        "hc_best_lr": "agree", "lns_best_lr": "not run",
    }
    assert {k: results[k].verdict for k in expected} == expected
    assert results["attnres_full_ladder_trend"].ours.endswith("200M, 300M: not run")
    assert results["hc_causal_share"].ours == "0.08 (lr 2e-3)"
    assert results["hc_500m_diverges"].ours == "L17 d1344: diverged at lr 2e-3"
    assert results["hc_isobackbone_trend"].missing == \
        "suite not in this directory: `isobackbone300m`"
    assert results["attnres_full_causal_share"].missing == "no run with this diagnostic"


def test_untested_findings_are_named_by_what_is_missing(results):
    lines = untested_summary(list(results.values()))
    assert lines[0].endswith("findings could not be tested on this directory although their "
                             "suite is here:")
    assert any(line.startswith("No run with this diagnostic: ") for line in lines)
    # Findings of absent suites are one line, not one per suite or finding.
    absent = [line for line in lines if "need suites not in this directory" in line]
    assert len(absent) == 1 and "`isobackbone300m`" in absent[0]


def test_report_has_findings_and_cross_scale_sections_and_prints_both(paper_like, tmp_path):
    result = subprocess.run([sys.executable, "-m", "postprocess", "report", paper_like,
                             "--out", tmp_path / "out", "--no-pdf"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "### Depth trends across scales" in result.stdout
    assert "### Findings: the paper's numbers and ours (tested here)" in result.stdout
    assert re.search(r"^Findings: \d+ of \d+ findings could not be tested", result.stdout,
                     re.MULTILINE)
    report = (tmp_path / "out" / "report.md").read_text()
    assert report.index("## Findings") < report.index("## Depth trends across scales") \
        < report.index("## Main benchmark")
    assert (tmp_path / "out" / "tables" / "findings.csv").exists()


def test_a_partial_directory_says_which_findings_it_could_not_test(tmp_path):
    mk.write_sweep(tmp_path / "runs", suite="demo", designs=["pre_ln"],
                   shapes=[(2, 128), (4, 96)], learning_rates=[3e-3], vocab=257,
                   loss=lambda a, L, d, lr: 3.0)
    report = build_report(tmp_path / "runs", tmp_path / "out", pdf=False)
    findings = report.table("findings")
    assert findings.rows == []  # every finding needs a suite this directory lacks: one line
    text = report.report_md.read_text()
    assert re.search(r"(\d+) of \1 findings of the paper need suites not in this directory", text)
    assert "`main400m`" in text and "`validation1p6b`" in text
    # The user's own results come first.
    assert text.index("(`demo`)") < text.index("## Findings")


def test_compare_shows_differences_and_whether_they_exceed_noise(tmp_path):
    shapes = [(16, 1216), (32, 896)]
    mk.write_sweep(tmp_path / "a", suite="main400m", designs=["hc"], shapes=shapes,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 2.80)
    shifted = {16: 2.801, 32: 2.75}  # within noise at L16, beyond it at L32
    mk.write_sweep(tmp_path / "b", suite="main400m", designs=["hc", "pre_ln"], shapes=shapes,
                   learning_rates=[2e-3],
                   loss=lambda a, L, d, lr: None if a == "pre_ln" and L == 32 else shifted[L])
    result = subprocess.run([sys.executable, "-m", "postprocess", "compare", tmp_path / "a",
                             tmp_path / "b", "--out", tmp_path / "cmp"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    row = {tuple(c.strip() for c in line.split("|")[2:5]): line for line in lines
           if line.startswith("| main400m")}
    assert "| 0.0010 | within noise |" in row[("HC", "16", "1216")]
    assert "| -0.0500 | separated |" in row[("HC", "32", "896")]
    assert "| not run | diverged | — | only in B |" in row[("Pre-LN", "32", "896")]
    assert (tmp_path / "cmp" / "compare.csv").exists()
