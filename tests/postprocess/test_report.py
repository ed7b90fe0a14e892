"""The command end to end: rankings on stdout, the report path last, every table and figure
written and shown by index.html; clear failures for an empty directory."""
import subprocess
import sys
from pathlib import Path

import pytest

import make_runs as mk
from postprocess import build_report
from postprocess.released import load_released_models

REPO_ROOT = Path(__file__).resolve().parents[2]
SHAPES = [(16, 1216), (24, 1024), (32, 896)]


def run_command(*args):
    return subprocess.run([sys.executable, "-m", "postprocess", *map(str, args)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """Two suites, one diverged candidate, one unknown schema version, diagnostics on two runs."""
    root = tmp_path_factory.mktemp("runs")
    depth_gain = {"pre_ln": -0.01, "hc": 0.015}
    mk.write_sweep(root / "main", suite="main400m", designs=["pre_ln", "hc"], shapes=SHAPES,
                   learning_rates=[2e-3, 5e-3],
                   loss=lambda a, L, d, lr: None if (a, L, lr) == ("hc", 32, 5e-3) else
                   2.76 - depth_gain[a] * (L - 16) / 8 + (0.03 if lr == 5e-3 else 0.0))
    mk.write_sweep(root / "demo", suite="demo", designs=["pre_ln", "attnres_full"],
                   shapes=[(4, 128), (8, 96)], learning_rates=[2e-3], vocab=257,
                   loss=lambda a, L, d, lr: 3.0 + L / 100, ci_halfwidth=None,
                   tokens_per_second=2000.0)
    for arch in ("pre_ln", "hc"):
        mk.write_run(root / "diag", suite="main400m", arch=arch, n_layer=32, d_model=896,
                     learning_rate=1e-3, val_loss=2.9, diagnostics=mk.synthetic_diagnostics(32))
    mk.write_run(root, suite="main400m", arch="hc", n_layer=16, d_model=1216,
                 learning_rate=2e-3, val_loss=1.0, schema_version=99, file_name="from_future")
    return root


@pytest.fixture(scope="module")
def command(runs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return run_command("report", runs_dir, "--out", out), out


def test_command_prints_each_ranking_and_the_report_path_last(command):
    result, out = command
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[-1] == f"report: {(out / 'report.md').resolve()}"
    assert "### Ranking: Main benchmark (~400M total)" in result.stdout
    assert "### Ranking: Embedded demo suite" in result.stdout
    main = result.stdout.split("### Ranking: Main benchmark")[1]
    # HC improves with depth and wins at L32; Pre-LN is best at its widest shape.
    assert "| 1 | HC | 2.7300 [2.7280, 2.7320] | 28.00 | 32 | 896 | 2e-3 |" in main
    assert "| 2 | Pre-LN | 2.7600 [2.7580, 2.7620] | 76.00 | 16 | 1216 | 2e-3 |" in main
    assert "from_future.h5: unknown schema_version 99" in result.stderr


def test_report_writes_every_table_in_three_formats_and_every_figure(command):
    _, out = command
    for name in ("ranking_main400m", "benchmark_main400m", "trend_main400m",
                 "ranking_by_shape_main400m", "shapes_main400m", "benchmark_demo",
                 "domain_nll_gsm8k_main400m", "diagnostics_summary_main400m", "run_status",
                 "findings", "cross_scale"):
        for suffix in ("md", "csv", "tex"):
            assert (out / "tables" / f"{name}.{suffix}").stat().st_size > 0, (name, suffix)
    for name in ("loss_vs_aspect_ratio", "aspect_ratio_landscape", "throughput_vs_shape",
                 "angular_distance", "causal_score", "permutation_score", "path_weights",
                 "logitlens_kl", "pruning_loss_delta"):
        assert (out / "figures" / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
        assert (out / "figures" / f"{name}.pdf").read_bytes()[:4] == b"%PDF", name
    index = (out / "index.html").read_text()
    for png in (out / "figures").glob("*.png"):
        assert f'src="figures/{png.name}"' in index
    assert "<table>" in index and "Runs not counted" in index


def test_report_lists_diverged_and_rejected_files_with_reasons(command):
    _, out = command
    report = (out / "report.md").read_text()
    assert "1 diverged" in report and "1 rejected" in report
    status = (out / "tables" / "run_status.md").read_text()
    assert "main/main400m__hc__L32_d896__lr5e-03.h5 | main400m | HC | 32 | 896 | 5e-3 | diverged" \
        in status
    assert "from_future.h5" in status and "unknown schema_version 99" in status


def test_empty_directory_fails_with_a_clear_message(tmp_path):
    result = run_command("report", tmp_path, "--out", tmp_path / "out")
    assert result.returncode == 2
    assert "no run files (*.h5) found" in result.stderr
    assert not (tmp_path / "out").exists()


def test_directory_with_no_usable_run_still_reports_why_and_exits_1(tmp_path):
    mk.write_run(tmp_path / "runs", suite="demo", arch="hc", n_layer=4, d_model=64,
                 learning_rate=2e-3, status="diverged", status_reason="grad norm inf")
    result = run_command("rank", tmp_path / "runs")
    assert result.returncode == 1
    assert "no completed run to rank" in result.stderr
    report = build_report(tmp_path / "runs", tmp_path / "out", pdf=False)
    assert "grad norm inf" in report.table("run_status").to_markdown()
    assert "No completed run" in report.report_md.read_text()


def test_released_models_are_public_pre_ln_configs_with_consistent_rows():
    models = {m.name: m for m in load_released_models()}
    assert len(models) >= 15
    assert (models["GPT-2 small"].n_layer, models["GPT-2 small"].d_model) == (12, 768)
    assert models["LLaMA-2 7B"].aspect_ratio == 128.0
    for m in models.values():
        assert m.d_model % 64 == 0 and m.n_layer > 0 and m.params_total > 1e7 and m.source
        # d_model and n_layer must roughly explain the stated size (12·L·d² within 0.2x..2x
        # of the non-embedding part is a loose sanity bound).
        assert 12 * m.n_layer * m.d_model ** 2 < 2 * m.params_total
