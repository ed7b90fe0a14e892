"""Every name this package reads from a run file, in one place (doc/hdf5-schema.md).

When the C++ writer renames a dataset or attribute, this is the only module to edit.
"""

SUPPORTED_SCHEMA_VERSIONS = (1,)

# Root attributes that a run file must carry for the postprocess to place it in a sweep.
REQUIRED_ROOT_ATTRIBUTES = (
    "schema_version", "run_name", "suite", "arch", "d_model", "n_layer", "aspect_ratio",
    "params_total", "learning_rate", "status",
)

# Required attributes by kind: checked on load so a malformed value rejects its file.
TEXT_ROOT_ATTRIBUTES = ("run_name", "suite", "arch", "status")
COUNT_ROOT_ATTRIBUTES = ("d_model", "n_layer", "params_total", "params_backbone")
POSITIVE_REAL_ROOT_ATTRIBUTES = ("aspect_ratio", "learning_rate")

# Root attributes for throughput: FLOPs per token (always written) and, optionally, a measured
# GEMM peak of the machine in GFLOP/s (not written by depthbench yet; drawn when present).
ATTR_FLOPS_PER_TOKEN = "flops_per_token"
ATTR_GEMM_PEAK_GFLOPS = "gemm_peak_gflops"

# Run status values (root attribute `status`).
STATUS_RUNNING = "running"
STATUS_COMPLETED = "completed"
STATUS_DIVERGED = "diverged"
STATUS_FAILED = "failed"
KNOWN_STATUSES = (STATUS_RUNNING, STATUS_COMPLETED, STATUS_DIVERGED, STATUS_FAILED)

# Groups.
CURVES_GROUP = "curves"
FINAL_GROUP = "final"
DIAGNOSTICS_GROUP = "diagnostics"

# /curves datasets.
CURVE_STEP = "step"
CURVE_TOKENS = "tokens"
CURVE_TRAIN_LOSS = "train_loss"
CURVE_TOKENS_PER_SECOND = "tokens_per_second"
CURVE_MFU = "mfu"
CURVE_STEP_TIME = "step_time_s"
CURVE_VAL_STEP = "val_step"
CURVE_VAL_LOSS = "val_loss"

# /final attributes.
FINAL_VAL_LOSS = "val_loss"
FINAL_VAL_LOSS_CI_LOW = "val_loss_ci_low"
FINAL_VAL_LOSS_CI_HIGH = "val_loss_ci_high"
FINAL_BEST_VAL_LOSS = "best_val_loss"
FINAL_BEST_STEP = "best_step"
# Dataset under /final: the final loss of each validation window, in window order (every run
# writes it, doc/hdf5-schema.md); with it depth trends resample windows jointly, older files
# without it are still read.
FINAL_VAL_WINDOW_LOSSES = "val_window_losses"

# /diagnostics datasets, as src/diag writes them (doc/diagnostics.md); keep every name here.
DIAG_ANGULAR_DISTANCE = "angular_distance"      # (L+1)x(L+1), NaN below the diagonal
DIAG_CAUSAL_SCORE = "causal_score"              # LxL, NaN where l <= s
DIAG_PERMUTATION_SCORE = "permutation_score"    # LxL, pairs i < j
DIAG_PRUNING_LOSS_DELTA = "pruning_loss_delta"  # [L]
DIAG_LOGITLENS_KL = "logitlens_kl"              # [L+1]
DIAG_PATH_WEIGHTS = "path_weights"              # sources x sublayers
DIAG_EFFECTIVE_RANK = "effective_rank"          # attribute EFFECTIVE_RANK_MEAN
DIAG_DEAD_SEGMENT = "dead_segment"              # attribute DEAD_SEGMENT_LAYERS
DIAG_DOMAIN_NLL_PREFIX = "domain_nll_"          # domain_nll_<task>, attributes below

# Per-layer statistics carry their 95% bootstrap bounds as sibling datasets of the same shape.
DIAG_CI_LOW_SUFFIX = "_ci_low"
DIAG_CI_HIGH_SUFFIX = "_ci_high"

ATTR_CAUSAL_LATE_SHARE = "late_share_above_0.45"
ATTR_PERMUTATION_LATE_SHARE = "late_share_above_0.15"
EFFECTIVE_RANK_MEAN = "mean"
DEAD_SEGMENT_LAYERS = "layers"
DOMAIN_NLL = "nll"
DOMAIN_NLL_CI_LOW = "ci_low"
DOMAIN_NLL_CI_HIGH = "ci_high"

# The paper's thresholds (spec/diagnostics.md sections 2 and 3), used when a file lacks the
# precomputed share attribute.
CAUSAL_THRESHOLD = 0.45
PERMUTATION_THRESHOLD = 0.15

# Suites (root attribute `suite`) with a role in the tables; any other name gets the generic
# benchmark treatment.
SUITE_MAIN = "main400m"
SUITE_ISO_BACKBONE = "isobackbone300m"
SUITE_MULTISCALE = "multiscale"
SUITE_VALIDATION = "validation1p6b"
SUITE_TITLES = {
    SUITE_MAIN: "Main benchmark (~400M total)",
    SUITE_ISO_BACKBONE: "Iso-backbone control (~300M backbone)",
    SUITE_MULTISCALE: "Multi-scale ladder (200M-500M)",
    SUITE_VALIDATION: "Validation at scale (~1.6B)",
    "demo": "Embedded demo suite",
    "single": "Single runs (depthbench train)",
}
# Suites whose runs are split into scales (root attribute `scale`, else params_total rounded).
MULTISCALE_SUITES = (SUITE_MULTISCALE,)
SCALE_ATTRIBUTE = "scale"
SCALE_ROUNDING = 100_000_000

# Residual designs: their display names and order are DepthBench's design registry, never a
# table here (doc/postprocess.md). Per design, the first source that knows it wins:
#  1. a catalog given explicitly: the output of `depthbench designs --json`, passed with
#     `--designs FILE` or the environment variable DEPTHBENCH_DESIGNS=FILE (use_design_catalog);
#  2. the run files: each stores the registry's display name and position as the root
#     attributes below, learned as files are loaded (learn_design);
#  3. the name itself, after every design known from 1 or 2.
ATTR_DESIGN_TITLE = "design_title"
ATTR_DESIGN_ORDER = "design_order"
DESIGNS_ENVIRONMENT_VARIABLE = "DEPTHBENCH_DESIGNS"


class DesignCatalog:
    """Display name and registry position of every design met so far."""

    def __init__(self):
        self.titles: dict[str, str] = {}
        self.orders: dict[str, int] = {}
        self.explicit: set[str] = set()  # known from a catalog: run files do not override them

    def add(self, arch: str, title, order, explicit: bool = False):
        if arch in self.explicit and not explicit:
            return
        if title:
            self.titles[arch] = str(title)
        if order is not None:
            self.orders[arch] = int(order)
        if explicit:
            self.explicit.add(arch)


_catalog = DesignCatalog()
_environment_read = False


def parse_design_catalog(text: str) -> list[dict]:
    """The designs of `depthbench designs --json` output; ValueError when it is not that."""
    import json
    data = json.loads(text)
    designs = data.get("designs") if isinstance(data, dict) else None
    if not isinstance(designs, list) or not all(
            isinstance(d, dict) and isinstance(d.get("name"), str) and d["name"]
            and isinstance(d.get("title"), str) and isinstance(d.get("order"), int)
            for d in designs):
        raise ValueError("not the output of `depthbench designs --json` "
                         "(expected {\"designs\": [{\"name\", \"title\", \"order\"}, ...]})")
    return designs


def use_design_catalog(text: str) -> None:
    """Takes display names and order from `depthbench designs --json` output."""
    for d in parse_design_catalog(text):
        _catalog.add(d["name"], d["title"], d["order"], explicit=True)


def use_design_catalog_file(path) -> None:
    from pathlib import Path
    try:
        use_design_catalog(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"design catalog {path}: {error}") from error


def learn_design(arch: str, title, order) -> None:
    """A run file's own record of its design (attributes ATTR_DESIGN_TITLE, _ORDER)."""
    _catalog.add(arch, title, order)


def reset_design_catalog() -> None:
    """Forgets every design (tests)."""
    global _catalog, _environment_read
    _catalog = DesignCatalog()
    _environment_read = False


def _known() -> DesignCatalog:
    global _environment_read
    if not _environment_read:
        _environment_read = True
        import os
        path = os.environ.get(DESIGNS_ENVIRONMENT_VARIABLE)
        if path:
            use_design_catalog_file(path)
    return _catalog


def design_title(arch):
    return _known().titles.get(arch, arch)


def design_order(arch):
    """The design's registry position, or None when no source knows it."""
    return _known().orders.get(arch)


def suite_title(suite):
    return SUITE_TITLES.get(suite, f"Suite '{suite}'")


def design_sort_key(arch):
    order = design_order(arch)
    return (0, order, arch) if order is not None else (1, 0, arch)
