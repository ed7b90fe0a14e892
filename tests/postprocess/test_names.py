"""Design display names and order come from the registry (`depthbench designs --json`), from
the run files' own record of it, or fall back to the design's name (postprocess/names.py)."""
import json
import os
import subprocess

import pytest

from make_runs import DESIGNS_JSON, write_run
from postprocess import __main__ as cli
from postprocess import names
from postprocess.loading import read_run

DEPTHBENCH_BIN = os.environ.get("DEPTHBENCH_BIN", "")
needs_binary = pytest.mark.skipif(
    not (DEPTHBENCH_BIN and os.access(DEPTHBENCH_BIN, os.X_OK)),
    reason="DEPTHBENCH_BIN is not set to an executable depthbench (run through CTest)")


@pytest.fixture(autouse=True)
def fresh_catalog(monkeypatch):
    monkeypatch.delenv(names.DESIGNS_ENVIRONMENT_VARIABLE, raising=False)
    names.reset_design_catalog()
    yield
    names.reset_design_catalog()


def registry_json() -> str:
    return subprocess.run([DEPTHBENCH_BIN, "designs", "--json"], check=True,
                          capture_output=True, text=True).stdout


def summary(text: str) -> list:
    return [(d["name"], d["title"], d["order"]) for d in names.parse_design_catalog(text)]


@needs_binary
def test_titles_and_order_are_the_executables_registry():
    text = registry_json()
    names.use_design_catalog(text)
    designs = json.loads(text)["designs"]
    assert len(designs) >= 10
    for d in designs:
        assert names.design_title(d["name"]) == d["title"]
    ordered = sorted((d["name"] for d in designs), key=names.design_sort_key)
    assert ordered == [d["name"] for d in designs]
    assert names.design_title("attnres_block") == "Block AttnRes"


@needs_binary
def test_the_fixture_copy_of_the_registry_matches_the_executable():
    # make_runs.py writes titles from this copy; regenerate it with
    # `build/depthbench designs --json > tests/postprocess/designs.json` when a design changes.
    assert summary(DESIGNS_JSON.read_text(encoding="utf-8")) == summary(registry_json())


def test_run_files_supply_titles_and_order_without_a_catalog(tmp_path):
    path = write_run(tmp_path, suite="s", arch="newdesign", n_layer=2, d_model=64,
                     learning_rate=1e-3, val_loss=3.0,
                     extra_attrs={"design_title": "New Design", "design_order": 3})
    assert names.design_title("newdesign") == "newdesign"  # nothing known yet
    read_run(path)
    assert names.design_title("newdesign") == "New Design"
    assert names.design_order("newdesign") == 3
    assert names.design_sort_key("newdesign") < names.design_sort_key("zz_unknown")


def test_an_explicit_catalog_wins_over_run_files(tmp_path):
    names.use_design_catalog(json.dumps(
        {"designs": [{"name": "hc", "title": "Hyper-Connections", "order": 6}]}))
    read_run(write_run(tmp_path, suite="s", arch="hc", n_layer=2, d_model=64,
                       learning_rate=1e-3, val_loss=3.0))
    assert names.design_title("hc") == "Hyper-Connections"


def test_unknown_designs_keep_their_names_and_sort_after_known_ones():
    names.use_design_catalog(DESIGNS_JSON.read_text(encoding="utf-8"))
    assert names.design_title("my_design") == "my_design"
    assert sorted(["my_design", "pre_ln", "a_design"], key=names.design_sort_key) == \
        ["pre_ln", "a_design", "my_design"]


def test_the_environment_variable_names_a_catalog_file(tmp_path, monkeypatch):
    catalog = tmp_path / "designs.json"
    catalog.write_text(json.dumps({"designs": [{"name": "x", "title": "Ex", "order": 0}]}))
    monkeypatch.setenv(names.DESIGNS_ENVIRONMENT_VARIABLE, str(catalog))
    assert names.design_title("x") == "Ex"


def test_a_file_that_is_not_a_catalog_is_a_usage_error(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"designs": [{"name": "x"}]}')
    with pytest.raises(ValueError):
        names.use_design_catalog_file(bad)
    write_run(tmp_path / "runs", suite="s", arch="pre_ln", n_layer=2, d_model=64,
              learning_rate=1e-3, val_loss=3.0)
    assert cli.main(["rank", str(tmp_path / "runs"), "--designs", str(bad)]) == 2
    assert "--designs" in capsys.readouterr().err


@needs_binary
def test_every_diagnostics_name_read_here_is_one_the_executable_declares():
    # names.py's DIAG_* constants against `depthbench diagnose --list --json`: a dataset renamed
    # in src/diag fails here instead of silently vanishing from the tables.
    listing = json.loads(subprocess.run([DEPTHBENCH_BIN, "diagnose", "--list", "--json"],
                                        check=True, capture_output=True, text=True).stdout)
    declared = {name for d in listing["diagnostics"] for name in d["datasets"]}
    assert listing["interval_suffixes"] == [names.DIAG_CI_LOW_SUFFIX, names.DIAG_CI_HIGH_SUFFIX]
    for constant in (c for c in dir(names) if c.startswith("DIAG_") and "SUFFIX" not in c):
        value = getattr(names, constant)
        if value.endswith("_"):  # a prefix, e.g. domain_nll_<task>
            assert any(name.startswith(value) for name in declared), constant
        else:
            assert value in declared, constant
