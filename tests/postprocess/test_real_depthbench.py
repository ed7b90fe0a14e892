"""The postprocess on run files written by the real `depthbench`: a tiny sweep made here.

Runs only when DEPTHBENCH_BIN points at the executable (CTest sets it; see tests.cmake)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from postprocess import analyze, load_runs

REPO_ROOT = Path(__file__).resolve().parents[2]
DEPTHBENCH_BIN = os.environ.get("DEPTHBENCH_BIN", "")

pytestmark = pytest.mark.skipif(
    not (DEPTHBENCH_BIN and os.access(DEPTHBENCH_BIN, os.X_OK)),
    reason="DEPTHBENCH_BIN is not set to an executable depthbench (run through CTest, or "
           "export DEPTHBENCH_BIN=build/depthbench)")


# 68.7K: at 60K the L = 4 shape would be 9.9% below the budget, refused as not iso-parameter.
TINY_SUITE = """
[suite]
name = tinydemo
designs = pre_ln, hc, attnres_full
budget = total 68.7K
depths = 1 2 4
shape_rule = sub1b
heads = 2

[learning_rates]
default = 3e-3 1e-2

[recipe]
model.vocab_size = 257
train.steps = 20
train.seq_len = 32
train.global_batch = 4
train.micro_batch = 4
train.val_interval = 10
train.val_windows = 8
train.threads = 1
data.train_files = {data}/train_*.npy
data.val_files = {data}/val_*.npy
"""


def run_tiny_sweep(out_dir: Path) -> None:
    """The one place that knows how to ask depthbench for a tiny sweep: byte-level tokens of one
    fortunes file, three designs at three shapes and two learning rates, 20 steps each."""
    work = out_dir.parent
    data = work / "data"
    subprocess.run([DEPTHBENCH_BIN, "tokenize", "--tokenizer", "bytes", "--format", "fortunes",
                    "--input", "/usr/share/games/fortunes/fortunes", "--val-fraction", "0.1",
                    "--out", str(data)], check=True, capture_output=True, timeout=300)
    suite = work / "tiny.ini"
    suite.write_text(TINY_SUITE.format(data=data))
    command = [DEPTHBENCH_BIN, "sweep", str(suite), "--out", str(out_dir), "--quiet"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}\n{result.stderr}"


def test_report_on_a_real_tiny_sweep(tmp_path):
    runs = tmp_path / "runs"
    run_tiny_sweep(runs)
    runset = load_runs(runs)
    assert runset.rejected == [], [f"{r.path}: {r.reason}" for r in runset.rejected]
    assert runset.runs, "depthbench wrote no run file"
    for run in runset.runs:
        # Schema fields the postprocess relies on, as the writer fills them.
        assert run.aspect_ratio == pytest.approx(run.d_model / run.n_layer)
        assert run.outcome != "incomplete", f"{run.path}: {run.outcome_reason}"
        if run.outcome == "completed":
            assert run.val_loss is not None and run.val_loss > 0
            assert run.curve("step") is not None and len(run.curve("step")) > 0
    analysis = analyze(runs)
    for panel in analysis.panels:
        for (arch, shape), cell in panel.cells.items():
            if cell.best is not None:
                expected = min(r.val_loss for r in cell.completed)
                assert cell.val_loss == expected
    result = subprocess.run([sys.executable, "-m", "postprocess", "report", str(runs), "--out",
                             str(tmp_path / "report"), "--no-pdf"], cwd=REPO_ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("report: ")
    assert (tmp_path / "report" / "index.html").exists()
    # A tiny sweep tests none of the paper's findings: the report says so in one line, after
    # the sweep's own results.
    report = (tmp_path / "report" / "report.md").read_text()
    assert "## Findings" in report
    assert "findings of the paper need suites not in this directory" in report
    assert report.index("## Findings") > report.index("### Ranking")
    findings = (tmp_path / "report" / "tables" / "findings.md").read_text()
    assert "| agree |" not in findings
