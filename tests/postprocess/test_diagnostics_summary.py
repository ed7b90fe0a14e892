"""The diagnostics summary of a suite: each value and interval matches one computed here from
the datasets the file holds; absent diagnostics stay empty."""
import csv
import io
import math

import numpy as np
import pytest

import make_runs as mk
from postprocess import load_runs
from postprocess.diagnostics_summary import diagnostics_summary_table


def _rows(table):
    return {r["design"]: r for r in csv.DictReader(io.StringIO(table.to_csv()))}


def _late_share(matrix, threshold):
    n, hits, total = len(matrix), 0, 0
    for i in range(n // 4, n):
        for j in range(i + 1, n):
            if math.isfinite(matrix[i][j]):
                total += 1
                hits += matrix[i][j] > threshold
    return hits / total


def _with_intervals(d, name, spread):
    data = d[name][0]
    d[name + "_ci_low"] = (data - spread, {})
    d[name + "_ci_high"] = (data + spread, {})


@pytest.fixture
def table(tmp_path):
    L = 8
    d = mk.synthetic_diagnostics(L, seed=4)
    d["logitlens_kl"] = (np.array([5.0, 4.0, 4.5, 3.0, 2.0, 2.5, 1.0, 0.5, 0.0]), {})
    d["causal_score"] = (d["causal_score"][0], {})  # no stored share: computed from the matrix
    for name, spread in (("causal_score", 0.1), ("angular_distance", 0.01),
                         ("pruning_loss_delta", 0.05), ("logitlens_kl", 0.2)):
        _with_intervals(d, name, spread)
    mk.write_run(tmp_path, suite="main400m", arch="hc", n_layer=L, d_model=256,
                 learning_rate=2e-3, val_loss=3.0, diagnostics=d)
    # A second run with only one diagnostic: the others are simply absent.
    mk.write_run(tmp_path, suite="main400m", arch="pre_ln", n_layer=L, d_model=256,
                 learning_rate=2e-3, val_loss=3.1,
                 diagnostics={"dead_segment": (np.int64(5), {"layers": np.int64(5)})})
    mk.write_run(tmp_path, suite="demo", arch="hc", n_layer=4, d_model=64, learning_rate=2e-3,
                 val_loss=3.0)
    runs = load_runs(tmp_path).runs
    assert diagnostics_summary_table("demo", runs) is None  # no diagnostics in that suite
    return diagnostics_summary_table("main400m", runs), d


def test_values_and_intervals_match_independent_computations(table):
    table, d = table
    assert table.name == "diagnostics_summary_main400m"
    hc = _rows(table)["HC"]
    causal = d["causal_score"][0]
    assert float(hc["late causal share >0.45"]) == pytest.approx(_late_share(causal, 0.45))
    assert float(hc["late causal share >0.45 ci_low"]) == pytest.approx(
        _late_share(causal - 0.1, 0.45))
    assert float(hc["late causal share >0.45 ci_high"]) == pytest.approx(
        _late_share(causal + 0.1, 0.45))
    assert float(hc["late permutation share >0.15"]) == pytest.approx(
        _late_share(d["permutation_score"][0], 0.15))
    assert "late permutation share >0.15 ci_low" not in hc  # no file has an interval for it
    angular = d["angular_distance"][0]
    adjacent = np.mean([angular[l, l + 1] for l in range(8)])
    assert float(hc["adjacent angular distance"]) == pytest.approx(adjacent)
    assert float(hc["adjacent angular distance ci_high"]) == pytest.approx(adjacent + 0.01)
    pruning = d["pruning_loss_delta"][0]
    assert float(hc["pruning: first block"]) == pytest.approx(pruning[0])
    assert float(hc["pruning: last block ci_low"]) == pytest.approx(pruning[-1] - 0.05)
    assert hc["LogitLens KL monotone"] == "false"
    # Both rises (4.0 -> 4.5, 2.0 -> 2.5) clear the +-0.2 intervals: 4.5 - 0.2 > 4.0 + 0.2.
    assert hc["LogitLens rises beyond noise"] == "2"
    assert float(hc["effective rank"]) == pytest.approx(1.55)
    assert hc["dead segment (layers)"] == "2"


def test_absent_diagnostics_stay_empty(table):
    table, _ = table
    pre = _rows(table)["Pre-LN"]
    assert pre["dead segment (layers)"] == "5" and pre["late causal share >0.45"] == ""


def test_stored_share_attribute_takes_precedence(tmp_path):
    mk.write_run(tmp_path, suite="s", arch="hc", n_layer=8, d_model=256, learning_rate=2e-3,
                 val_loss=3.0, diagnostics=mk.synthetic_diagnostics(8))
    table = diagnostics_summary_table("s", load_runs(tmp_path).runs)
    assert float(_rows(table)["HC"]["late causal share >0.45"]) == 0.25
