"""One bad run file never stops the report: it is rejected with a one-line reason, printed and
listed, and every other file is still ranked. A bad --out is a one-line error, not a traceback."""
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

import make_runs as mk
from postprocess import load_runs

REPO_ROOT = Path(__file__).resolve().parents[2]


def run_command(*args):
    return subprocess.run([sys.executable, "-m", "postprocess", *map(str, args)], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300)


def _good(directory, **kw):
    base = dict(suite="demo", arch="pre_ln", n_layer=4, d_model=128, learning_rate=2e-3,
                val_loss=3.0, ci=(2.99, 3.01), vocab=257)
    base.update(kw)
    return mk.write_run(directory, **base)


def _edit(path, edit):
    with h5py.File(path, "r+") as f:
        edit(f)


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 3])


# name -> (how the file is spoiled, words the rejection reason must contain)
BAD_FILES = {
    "text_d_model": (lambda p: _edit(p, lambda f: f.attrs.__setitem__("d_model", "wide")),
                     "d_model = 'wide' is not a positive integer"),
    "text_learning_rate": (lambda p: _edit(p, lambda f: f.attrs.__setitem__("learning_rate",
                                                                            "fast")),
                           "learning_rate = 'fast' is not a finite positive number"),
    "nan_learning_rate": (lambda p: _edit(p, lambda f: f.attrs.__setitem__("learning_rate",
                                                                           np.nan)),
                          "learning_rate = nan"),
    "fractional_n_layer": (lambda p: _edit(p, lambda f: f.attrs.__setitem__("n_layer", 2.5)),
                           "n_layer = 2.5 is not a positive integer"),
    "array_arch": (lambda p: _edit(p, lambda f: f.attrs.__setitem__("arch", [1, 2])),
                   "root attribute arch"),
    "no_suite": (lambda p: _edit(p, lambda f: f.attrs.__delitem__("suite")),
                 "missing root attribute(s): suite"),
    "truncated": (_truncate, "cannot be read as HDF5"),
    "zero_bytes": (lambda p: p.write_bytes(b""), "cannot be read as HDF5"),
}


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad")
    _good(root, n_layer=4, d_model=128)
    _good(root, n_layer=8, d_model=96, val_loss=2.9, ci=(2.89, 2.91))
    for k, (name, (spoil, _)) in enumerate(BAD_FILES.items()):
        spoil(_good(root, learning_rate=1e-3 * (k + 3), file_name=name))
    return root


def test_each_bad_file_is_rejected_with_its_reason_and_the_good_ones_load(bad_dir):
    runset = load_runs(bad_dir)
    assert len(runset.runs) == 2
    rejected = {r.path.stem: r.reason for r in runset.rejected}
    assert set(rejected) == set(BAD_FILES)
    for name, (_, words) in BAD_FILES.items():
        assert words in rejected[name], (name, rejected[name])
        assert "\n" not in rejected[name]


def test_report_goes_on_past_bad_files_and_lists_each(bad_dir, tmp_path):
    result = run_command("report", bad_dir, "--out", tmp_path / "out", "--no-pdf")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "| 1 | Pre-LN | 2.9000" in result.stdout
    printed = [line for line in result.stderr.splitlines() if "rejected" in line]
    assert len(printed) == len(BAD_FILES)
    status = (tmp_path / "out" / "tables" / "run_status.md").read_text()
    for name in BAD_FILES:
        assert f"{name}.h5 |" in status


def test_a_non_numeric_curve_is_left_out_with_a_note_and_the_run_still_counts(tmp_path):
    path = _good(tmp_path / "runs")
    _edit(path, lambda f: (f["curves"].__delitem__("tokens_per_second"),
                           f["curves"].create_dataset("tokens_per_second",
                                                      data=np.array([b"x", b"y"]))))
    runset = load_runs(tmp_path / "runs")
    assert runset.rejected == [] and len(runset.completed()) == 1
    assert runset.runs[0].ignored == ["/curves/tokens_per_second: not a 1-D numeric series"]
    result = run_command("report", tmp_path / "runs", "--out", tmp_path / "out", "--no-pdf")
    assert result.returncode == 0, result.stderr
    assert "left out /curves/tokens_per_second" in \
        (tmp_path / "out" / "tables" / "run_status.md").read_text()


@pytest.mark.parametrize("where", ["file", "below_a_file"])
def test_out_naming_a_file_is_a_one_line_error(tmp_path, where):
    _good(tmp_path / "runs")
    existing = tmp_path / "report.md"
    existing.write_text("keep me")
    out = existing if where == "file" else existing / "sub"
    result = run_command("report", tmp_path / "runs", "--out", out)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "is not a directory" in result.stderr
    assert existing.read_text() == "keep me"


def test_a_zero_loss_from_no_validation_window_is_never_ranked(tmp_path):
    """A run validated on no window records loss 0 with interval [0, 0]: no result, not a win."""
    _good(tmp_path, n_layer=4, d_model=128, val_loss=3.0)
    _good(tmp_path, n_layer=8, d_model=96, val_loss=0.0, ci=(0.0, 0.0))
    runset = load_runs(tmp_path)
    assert [r.val_loss for r in runset.completed()] == [3.0]
    (zero,) = runset.with_outcome("incomplete")
    assert zero.outcome_reason == "completed but /final val_loss = 0.0 is not a positive loss"


def test_an_interval_that_misses_its_loss_is_not_used(tmp_path):
    _good(tmp_path, val_loss=3.0, ci=(3.1, 3.2))
    assert load_runs(tmp_path).runs[0].val_loss_interval is None


def test_an_unreadable_status_step_loses_only_the_step(tmp_path):
    path = _good(tmp_path, status="diverged", status_reason="loss is NaN", val_loss=None)
    _edit(path, lambda f: f.attrs.__setitem__("status_step", "late"))
    assert load_runs(tmp_path).runs[0].outcome_reason == "loss is NaN"


def test_an_interrupted_run_says_why(tmp_path):
    _good(tmp_path, status="running", in_progress=True, val_loss=None,
          status_reason="No space left on device: x.ckpt.tmp")
    (run,) = load_runs(tmp_path).runs
    assert run.outcome == "incomplete"
    assert run.outcome_reason.endswith("(No space left on device: x.ckpt.tmp)")
