"""Runs that fell back from a fast path (train.validate) get their own section in the report,
with the path, the measured difference, the tolerance and the decision; runs that kept every
path, and CPU runs ("cpu: reference paths"), are not listed."""
import h5py

import make_runs as mk
from postprocess import build_report
from postprocess.path_validation import fell_back_table, read_validation


def _validation(path, summary, checks):
    with h5py.File(path, "a") as f:
        group = f.create_group("validation")
        group.attrs["mode"] = "on"
        group.attrs["summary"] = summary
        group.attrs["fell_back"] = int(any(c["decision"] != "kept" for c in checks))
        for i, check in enumerate(checks):
            g = group.create_group(f"check_{i}")
            for key, value in check.items():
                g.attrs[key] = value


def test_a_run_that_fell_back_is_marked_in_the_report(tmp_path):
    runs = tmp_path / "runs"
    fell = mk.write_run(runs, suite="demo", arch="hc", n_layer=4, d_model=64, learning_rate=1e-3,
                        val_loss=3.0)
    kept = mk.write_run(runs, suite="demo", arch="pre_ln", n_layer=4, d_model=64,
                        learning_rate=1e-3, val_loss=3.1)
    cpu = mk.write_run(runs, suite="demo", arch="mhc", n_layer=4, d_model=64, learning_rate=1e-3,
                       val_loss=3.2)
    _validation(fell, "fell back: attention flash (switched off: using the reference attention)",
                [{"path": "attention flash (B=2 T=32 H=4 H_kv=4 hd=16: flash)", "measured": 0.0101,
                  "tolerance": 0.005, "decision": "switched off: using the reference attention"},
                 {"path": "fused kernels", "measured": 1e-7, "tolerance": 1e-4,
                  "decision": "kept"}])
    _validation(kept, "2 fast paths checked and kept",
                [{"path": "attention cudnn", "measured": 0.002, "tolerance": 0.005,
                  "decision": "kept"}])
    _validation(cpu, "cpu: reference paths", [])
    assert read_validation(cpu)["summary"] == "cpu: reference paths"
    assert read_validation(fell)["checks"][0]["measured"] == 0.0101
    report = build_report(runs, tmp_path / "out", pdf=False)
    text = report.report_md.read_text()
    assert "Runs that fell back from a fast path" in text
    section = text.split("Runs that fell back from a fast path", 1)[1]
    assert "attention flash" in section
    assert "switched off: using the reference attention" in section
    assert mk.run_name("demo", "pre_ln", 4, 64, 1e-3) not in section.split("\n#", 1)[0]


def test_no_section_when_no_run_fell_back(tmp_path):
    runs = tmp_path / "runs"
    path = mk.write_run(runs, suite="demo", arch="hc", n_layer=4, d_model=64, learning_rate=1e-3,
                        val_loss=3.0)
    _validation(path, "cpu: reference paths", [])
    from postprocess.loading import load_runs
    assert fell_back_table(load_runs(runs).runs) is None
    report = build_report(runs, tmp_path / "out", pdf=False)
    assert "fell back from a fast path" not in report.report_md.read_text()
