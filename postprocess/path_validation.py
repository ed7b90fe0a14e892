"""Runs that fell back from a fast path (the run file's `validation` group, doc/hdf5-schema.md).

Before its first step a GPU run checks the fast paths it is about to use against the reference
paths on its first micro-batch (`train.validate`, doc/cuda.md); a path out of tolerance is
switched off for that run. Such a run computed on slower, proven paths: its numbers are valid,
but its speed is not that of the fast path, and the node's fast path needs a look. This module
lists them for the report, apart from the loss tables.
"""
from __future__ import annotations

from pathlib import Path

import h5py

from . import tables

GROUP = "validation"


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_validation(path: str | Path) -> dict | None:
    """The `validation` group of one run file: its attributes and its checks, or None."""
    with h5py.File(path, "r", locking=False) as f:
        if GROUP not in f:
            return None
        group = f[GROUP]
        result = {key: _text(value) if not hasattr(value, "dtype") or value.dtype.kind in "OSU"
                  else value.item() for key, value in group.attrs.items()}
        result["checks"] = [
            {key: _text(v) if isinstance(v, (bytes, str)) else float(v)
             for key, v in group[name].attrs.items()}
            for name in sorted(group, key=lambda n: int(n.rsplit("_", 1)[-1]))]
    return result


def fell_back_table(runs) -> tables.Table | None:
    """One row per run whose validation switched a fast path off; None when none did."""
    rows = []
    for run in runs:
        validation = read_validation(run.path)
        if not validation or not int(validation.get("fell_back", 0)):
            continue
        for check in validation["checks"]:
            if check.get("decision", "kept") == "kept":
                continue
            rows.append([run.run_name, check["path"], float(check["measured"]),
                         float(check["tolerance"]), check["decision"]])
    if not rows:
        return None
    return tables.Table(
        "fast_path_fallbacks", "Runs that fell back from a fast path",
        ["run", "path", "measured difference", "tolerance", "decision"], rows,
        notes=["checked against the reference paths on the run's first micro-batch "
               "(train.validate); these runs ran on the paths named in `decision`"],
        digits=4)
