"""Loading: every file is a run (with its outcome) or a rejected file (with its reason)."""
import h5py
import pytest

import make_runs as mk
from postprocess import NoRunFilesError, load_runs


def _write(directory, **kw):
    base = dict(suite="main400m", arch="pre_ln", n_layer=16, d_model=1216, learning_rate=2e-3)
    base.update(kw)
    return mk.write_run(directory, **base)


def test_every_file_is_accounted_for_recursively_with_its_outcome(tmp_path):
    _write(tmp_path / "a", val_loss=2.76, ci=(2.75, 2.77))
    _write(tmp_path / "a" / "deeper", learning_rate=5e-3, status="diverged",
           status_reason="loss is NaN", status_step=12)
    _write(tmp_path / "b", learning_rate=1e-3, status="failed", status_reason="out of memory")
    _write(tmp_path / "b", learning_rate=5e-4, status="running")
    _write(tmp_path / "c", learning_rate=2e-2, val_loss=2.9, in_progress=True)
    _write(tmp_path / "c", learning_rate=1e-2, val_loss=None)  # completed without a loss
    _write(tmp_path, learning_rate=3e-3, val_loss=2.7, schema_version=2, file_name="future")
    _write(tmp_path, learning_rate=4e-3, val_loss=2.7, omit_attrs=("arch",), file_name="noarch")
    (tmp_path / "garbage.h5").write_bytes(b"not hdf5 at all")

    runset = load_runs(tmp_path)

    assert runset.outcome_counts() == {"completed": 1, "diverged": 1, "failed": 1,
                                       "incomplete": 3}
    diverged = runset.with_outcome("diverged")[0]
    assert diverged.outcome_reason == "loss is NaN (step 12)"
    assert runset.with_outcome("failed")[0].outcome_reason.startswith("out of memory")
    reasons = sorted(r.outcome_reason for r in runset.with_outcome("incomplete"))
    assert any(".h5.tmp" in r for r in reasons)
    assert "status is 'running'" in reasons
    assert "completed but /final has no finite val_loss" in reasons
    rejected = {r.path.name: r.reason for r in runset.rejected}
    assert set(rejected) == {"future.h5", "noarch.h5", "garbage.h5"}
    assert "unknown schema_version 2" in rejected["future.h5"]
    assert "missing root attribute(s): arch" in rejected["noarch.h5"]
    assert "cannot be read as HDF5" in rejected["garbage.h5"]


def test_completed_run_exposes_schema_fields(tmp_path):
    path = _write(tmp_path, val_loss=2.7591, ci=(2.7581, 2.7601), tokens_per_second=123.0,
                  diagnostics=mk.synthetic_diagnostics(16))
    run = load_runs(tmp_path).runs[0]
    assert run.path == path
    assert (run.suite, run.arch, run.shape) == ("main400m", "pre_ln", (16, 1216))
    assert run.aspect_ratio == pytest.approx(76.0)
    assert run.params_total == mk.param_counts(16, 1216)[2]
    assert run.val_loss == pytest.approx(2.7591)
    assert run.val_loss_interval == pytest.approx((2.7581, 2.7601))
    assert run.curve("tokens_per_second")[0] == 123.0
    assert run.diagnostic("causal_score").data.shape == (16, 16)
    assert run.domain_nll_tasks() == ["gsm8k"]
    assert run.scale is None  # not a multi-scale suite: one panel


def test_run_without_interval_has_none(tmp_path):
    _write(tmp_path, val_loss=2.7)
    assert load_runs(tmp_path).runs[0].val_loss_interval is None


def test_empty_directory_raises_a_clear_message(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "notes.txt").write_text("no runs here")
    with pytest.raises(NoRunFilesError, match="no run files"):
        load_runs(tmp_path)


def test_missing_directory_raises_a_clear_message(tmp_path):
    with pytest.raises(NoRunFilesError, match="not a directory"):
        load_runs(tmp_path / "nope")


def test_file_without_schema_version_is_rejected_as_foreign(tmp_path):
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f.attrs["something"] = 1
    runset = load_runs(tmp_path)
    assert runset.runs == []
    assert "not a DepthBench run file" in runset.rejected[0].reason
