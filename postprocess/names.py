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

# The ten residual designs in the paper's order, with their display names.
DESIGN_ORDER = (
    "pre_ln", "sandwich_ln", "lns", "deepnorm", "keel", "moda",
    "hc", "mhc", "attnres_full", "attnres_block",
)
DESIGN_TITLES = {
    "pre_ln": "Pre-LN", "sandwich_ln": "Sandwich-LN", "lns": "LNS", "deepnorm": "DeepNorm",
    "keel": "KEEL", "moda": "MoDA", "hc": "HC", "mhc": "mHC",
    "attnres_full": "Full AttnRes", "attnres_block": "Block AttnRes",
}


def design_title(arch):
    return DESIGN_TITLES.get(arch, arch)


def suite_title(suite):
    return SUITE_TITLES.get(suite, f"Suite '{suite}'")


def design_sort_key(arch):
    return (DESIGN_ORDER.index(arch), arch) if arch in DESIGN_ORDER else (len(DESIGN_ORDER), arch)
