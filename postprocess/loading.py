"""Finding and reading run files (doc/hdf5-schema.md).

Every file under a directory is accounted for: a readable run of a supported schema version
becomes a `Run` (whatever its status), anything else becomes a `RejectedFile` with the reason.
Nothing is dropped silently.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from . import names

RUN_SUFFIX = ".h5"
IN_PROGRESS_SUFFIX = ".h5.tmp"

# Outcomes of a run as the postprocess sees it. `incomplete` covers a run still marked
# `running`, a `.h5.tmp` file (in progress or killed) and a completed run without a final loss.
OUTCOME_COMPLETED = "completed"
OUTCOME_DIVERGED = "diverged"
OUTCOME_FAILED = "failed"
OUTCOME_INCOMPLETE = "incomplete"
OUTCOMES = (OUTCOME_COMPLETED, OUTCOME_DIVERGED, OUTCOME_FAILED, OUTCOME_INCOMPLETE)


class NoRunFilesError(RuntimeError):
    """The directory holds no run file at all."""


@dataclass(frozen=True)
class Diagnostic:
    data: np.ndarray
    attrs: dict


BLOCK_IS_FULL_NOTE = ("Block AttnRes with blocks of one sublayer (S = ceil(2L / attnres_blocks) "
                      "= 1, e.g. L <= 4 with the default 8 blocks) is Full AttnRes: these rows "
                      "measure Full AttnRes under Block AttnRes's name")


@dataclass
class Run:
    path: Path
    attrs: dict
    final: dict = field(default_factory=dict)
    curves: dict = field(default_factory=dict)
    diagnostics: dict = field(default_factory=dict)
    in_progress_file: bool = False  # a `.h5.tmp` file
    ignored: list[str] = field(default_factory=list)  # datasets left out, each with the reason
    val_window_losses: np.ndarray | None = None  # final loss of each validation window, if stored

    # Identity and shape -------------------------------------------------------------------
    @property
    def run_name(self) -> str:
        return str(self.attrs.get("run_name") or self.path.name)

    @property
    def suite(self) -> str:
        return str(self.attrs["suite"])

    @property
    def arch(self) -> str:
        return str(self.attrs["arch"])

    @property
    def n_layer(self) -> int:
        return int(self.attrs["n_layer"])

    @property
    def design_options(self) -> dict[str, str]:
        """The `design_options` attribute (`key=value;...`) as a dict."""
        text = str(self.attrs.get("design_options", "") or "")
        pairs = (item.split("=", 1) for item in text.split(";") if "=" in item)
        return {key.strip(): value.strip() for key, value in pairs}

    @property
    def design_note(self) -> str:
        """'' unless the design is in fact another one at this shape: Block AttnRes whose blocks
        hold one sublayer (S = ceil(2L / attnres_blocks) = 1, e.g. L <= 4 with the default 8
        blocks) is Full AttnRes (doc/architectures.md §10)."""
        if self.arch != "attnres_block":
            return ""
        options = self.design_options
        explicit = options.get("attnres_block_size", "")
        try:
            if explicit not in ("", "null"):
                size = int(float(explicit))
            else:
                blocks = int(float(options.get("attnres_blocks", "8") or 8))
                size = -(-2 * self.n_layer // blocks)
        except ValueError:
            return ""
        return BLOCK_IS_FULL_NOTE if size == 1 else ""

    @property
    def d_model(self) -> int:
        return int(self.attrs["d_model"])

    @property
    def seed(self) -> int | None:
        """The training seed (`seed` attribute): one run of a cell's seed axis."""
        value = self.attrs.get("seed")
        try:
            return None if value is None else int(value)
        except (TypeError, ValueError):
            return None

    @property
    def aspect_ratio(self) -> float:
        return float(self.attrs["aspect_ratio"])

    @property
    def learning_rate(self) -> float:
        return float(self.attrs["learning_rate"])

    @property
    def params_total(self) -> int:
        return int(self.attrs["params_total"])

    @property
    def params_backbone(self) -> int | None:
        value = self.attrs.get("params_backbone")
        return None if value is None else int(value)

    @property
    def shape(self) -> tuple[int, int]:
        """(n_layer, d_model): the key of a shape within a suite and scale."""
        return (self.n_layer, self.d_model)

    @property
    def scale(self) -> str | None:
        """The scale group of a multi-scale suite: attribute `scale`, else params_total
        rounded to the nearest 100M; None for other suites (one panel per suite)."""
        if names.SCALE_ATTRIBUTE in self.attrs:
            return str(self.attrs[names.SCALE_ATTRIBUTE])
        if self.suite in names.MULTISCALE_SUITES:
            return format_params(round(self.params_total / names.SCALE_ROUNDING)
                                 * names.SCALE_ROUNDING)
        return None

    # Status and results -------------------------------------------------------------------
    @property
    def status(self) -> str:
        return str(self.attrs["status"])

    @property
    def status_reason(self) -> str:
        return str(self.attrs.get("status_reason", ""))

    @property
    def val_loss(self) -> float | None:
        """The final validation loss; a cross-entropy of 0 or below is no result (it is what a
        run validated on no window records), so it never ranks first."""
        value = _finite_or_none(self.final.get(names.FINAL_VAL_LOSS))
        return value if value is not None and value > 0 else None

    @property
    def val_loss_interval(self) -> tuple[float, float] | None:
        """The 95% interval, when it is finite and holds the loss (otherwise it is unusable)."""
        low = _finite_or_none(self.final.get(names.FINAL_VAL_LOSS_CI_LOW))
        high = _finite_or_none(self.final.get(names.FINAL_VAL_LOSS_CI_HIGH))
        loss = self.val_loss
        if low is None or high is None or loss is None or not low <= loss <= high:
            return None
        return (low, high)

    @property
    def outcome(self) -> str:
        if self.in_progress_file or self.status == names.STATUS_RUNNING:
            return OUTCOME_INCOMPLETE
        if self.status == names.STATUS_DIVERGED:
            return OUTCOME_DIVERGED
        if self.status == names.STATUS_FAILED:
            return OUTCOME_FAILED
        if self.val_loss is None:
            return OUTCOME_INCOMPLETE
        return OUTCOME_COMPLETED

    @property
    def outcome_reason(self) -> str:
        if self.in_progress_file:
            # An interrupted run (signal, full disk) stays .h5.tmp with its reason recorded.
            why = f" ({self.status_reason})" if self.status_reason else ""
            return "a .h5.tmp file: the run is in progress, was interrupted or killed" + why
        if self.status == names.STATUS_RUNNING:
            return "status is 'running'"
        if self.status == names.STATUS_COMPLETED and self.val_loss is None:
            stored = _finite_or_none(self.final.get(names.FINAL_VAL_LOSS))
            if stored is not None:
                return f"completed but /final val_loss = {stored!r} is not a positive loss"
            return "completed but /final has no finite val_loss"
        reason = self.status_reason
        try:
            step = int(self.attrs.get("status_step", -1))
        except (TypeError, ValueError):  # an unreadable step only loses the step, not the run
            step = -1
        if step >= 0 and self.outcome != OUTCOME_COMPLETED:
            reason = f"{reason} (step {step})" if reason else f"at step {step}"
        return reason

    def curve(self, name: str) -> np.ndarray | None:
        return self.curves.get(name)

    def diagnostic(self, name: str) -> Diagnostic | None:
        return self.diagnostics.get(name)

    def domain_nll_tasks(self) -> list[str]:
        prefix = names.DIAG_DOMAIN_NLL_PREFIX
        return sorted(k[len(prefix):] for k in self.diagnostics if k.startswith(prefix))

    def label(self) -> str:
        return (f"{names.design_title(self.arch)} L{self.n_layer} d{self.d_model} "
                f"lr {format_lr(self.learning_rate)}")


@dataclass(frozen=True)
class RejectedFile:
    path: Path
    reason: str


@dataclass
class RunSet:
    directory: Path
    runs: list[Run]
    rejected: list[RejectedFile]

    def with_outcome(self, outcome: str) -> list[Run]:
        return [r for r in self.runs if r.outcome == outcome]

    def completed(self) -> list[Run]:
        return self.with_outcome(OUTCOME_COMPLETED)

    def outcome_counts(self) -> dict[str, int]:
        return {o: len(self.with_outcome(o)) for o in OUTCOMES}

    def suites(self) -> list[str]:
        return sorted({r.suite for r in self.runs})


def load_runs(directory: str | os.PathLike) -> RunSet:
    """Read every `*.h5` (and `*.h5.tmp`) file under `directory`, recursively."""
    root = Path(directory)
    if not root.is_dir():
        raise NoRunFilesError(f"{root}: not a directory")
    paths = sorted(p for p in root.rglob("*")
                   if p.is_file() and (p.name.endswith(RUN_SUFFIX)
                                       or p.name.endswith(IN_PROGRESS_SUFFIX)))
    if not paths:
        raise NoRunFilesError(
            f"{root}: no run files (*{RUN_SUFFIX}) found under this directory or its "
            "subdirectories; point the command at the output directory of a depthbench sweep")
    runs, rejected = [], []
    for path in paths:
        result = read_run(path)
        (runs if isinstance(result, Run) else rejected).append(result)
    return RunSet(root, runs, rejected)


def read_run(path: str | os.PathLike) -> Run | RejectedFile:
    """One run file as a `Run`, or a `RejectedFile` saying why it cannot be used."""
    path = Path(path)
    in_progress = path.name.endswith(IN_PROGRESS_SUFFIX)
    try:
        # locking=False: a `.tmp` file may still be open for writing by a live run.
        with h5py.File(path, "r", locking=False) as f:
            attrs = _attributes(f.attrs)
            problem = _schema_problem(attrs)
            if problem:
                if in_progress:
                    problem = f"a .h5.tmp file (in progress or killed); {problem}"
                return RejectedFile(path, problem)
            ignored: list[str] = []
            final = _attributes(f[names.FINAL_GROUP].attrs) if names.FINAL_GROUP in f else {}
            window_losses = None
            for key, ds in _datasets(f, names.FINAL_GROUP, ignored):
                if key != names.FINAL_VAL_WINDOW_LOSSES:
                    continue
                values = np.asarray(ds[()])
                if values.ndim == 1 and np.issubdtype(values.dtype, np.number) \
                        and np.isfinite(values).all():
                    window_losses = values.astype(float)
                else:
                    ignored.append(f"/{names.FINAL_GROUP}/{key}: not a 1-D finite numeric array")
            curves = {}
            for key, ds in _datasets(f, names.CURVES_GROUP, ignored):
                values = np.asarray(ds[()])
                if values.ndim == 1 and np.issubdtype(values.dtype, np.number):
                    curves[key] = values
                else:
                    ignored.append(f"/{names.CURVES_GROUP}/{key}: not a 1-D numeric series")
            diagnostics = {}
            for key, ds in _datasets(f, names.DIAGNOSTICS_GROUP, ignored):
                diagnostics[key] = Diagnostic(_dataset_array(ds), _attributes(ds.attrs))
    except Exception as error:  # noqa: BLE001 - any failure rejects this one file, never the report
        what = "a .h5.tmp file (in progress or killed) that" if in_progress else "file"
        as_what = "HDF5" if isinstance(error, OSError) else "a run file"
        detail = " ".join(str(error).split()) or type(error).__name__
        return RejectedFile(path, f"{what} cannot be read as {as_what}: {detail}")
    names.learn_design(str(attrs["arch"]), attrs.get(names.ATTR_DESIGN_TITLE),
                       attrs.get(names.ATTR_DESIGN_ORDER))
    return Run(path, attrs, final, curves, diagnostics, in_progress_file=in_progress,
               ignored=ignored, val_window_losses=window_losses)


def _datasets(f: h5py.File, group: str, ignored: list[str]):
    """(name, dataset) pairs of a group; a missing group is simply empty, a malformed one is
    noted in `ignored` (the run's final loss may still be good)."""
    if group not in f:
        return []
    if not isinstance(f[group], h5py.Group):
        ignored.append(f"/{group}: not a group")
        return []
    return [(k, ds) for k, ds in f[group].items() if isinstance(ds, h5py.Dataset)]


def _schema_problem(attrs: dict) -> str:
    version = attrs.get("schema_version")
    if version is None:
        return "no root attribute 'schema_version': not a DepthBench run file"
    try:
        version = int(version)
    except (TypeError, ValueError):
        return f"schema_version {version!r} is not an integer"
    if version not in names.SUPPORTED_SCHEMA_VERSIONS:
        supported = ", ".join(map(str, names.SUPPORTED_SCHEMA_VERSIONS))
        return f"unknown schema_version {version} (this postprocess reads {supported})"
    missing = [a for a in names.REQUIRED_ROOT_ATTRIBUTES if a not in attrs]
    if missing:
        return "missing root attribute(s): " + ", ".join(missing)
    problem = _value_problem(attrs)
    if problem:
        return problem
    if attrs["status"] not in names.KNOWN_STATUSES:
        return f"unknown status {attrs['status']!r}"
    return ""


def _value_problem(attrs: dict) -> str:
    """Why an attribute the rankings compute with cannot be used, else ''. Checked here so
    that one malformed file is rejected instead of failing the whole report later."""
    for key in names.TEXT_ROOT_ATTRIBUTES:
        if not isinstance(attrs[key], str) or not attrs[key]:
            return f"root attribute {key} = {attrs[key]!r} is not a non-empty string"
    for key in names.COUNT_ROOT_ATTRIBUTES:
        if key not in attrs and key not in names.REQUIRED_ROOT_ATTRIBUTES:
            continue
        value = attrs[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value != int(value) or value <= 0:
            return f"root attribute {key} = {value!r} is not a positive integer"
    for key in names.POSITIVE_REAL_ROOT_ATTRIBUTES:
        value = attrs[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value) or value <= 0:
            return f"root attribute {key} = {value!r} is not a finite positive number"
    return ""


def _attributes(attrs) -> dict:
    return {key: _python_value(attrs[key]) for key in attrs.keys()}


def _python_value(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray):
        if value.shape == ():
            return _python_value(value[()])
        return value
    if isinstance(value, np.generic):
        return value.item()
    return value


def _dataset_array(ds: h5py.Dataset) -> np.ndarray:
    value = ds[()]
    if isinstance(value, bytes):
        return np.asarray(value.decode("utf-8", errors="replace"))
    return np.asarray(value)


def _finite_or_none(value) -> float | None:
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def format_params(count: float) -> str:
    """400000000 -> '400M', 1600000000 -> '1.6B'."""
    if count >= 1e9:
        return f"{count / 1e9:.3g}B"
    if count >= 1e6:
        return f"{count / 1e6:.3g}M"
    if count >= 1e3:
        return f"{count / 1e3:.3g}K"
    return f"{count:.0f}"


def format_lr(learning_rate: float) -> str:
    """2e-3 -> '2e-3', 1.5e-3 -> '1.5e-3' (the paper's notation, no padded exponent)."""
    mantissa, exponent = f"{learning_rate:.2e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"
