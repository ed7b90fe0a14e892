#!/usr/bin/env bash
# GPU training speed of every design next to PyTorch, in one table per run (doc/performance.md,
# "GPU speed table"). For each shape — L = 24 and L = 70 of input/main400m.ini, and Pre-LN at the
# 1.6B shape of input/validation1p6b.ini (depth DEPTH_1P6B, default 28) — `depthbench bench
# --json` of each design (tokens/s, MFU, step time, peak memory), step time against Pre-LN of the
# same shape and run, and bench/pytorch_reference.py (eager with scaled_dot_product_attention,
# and torch.compile) of the designs it implements ("—" for the others), with the ratio
# depthbench / PyTorch. Then issue 22's levers one at a time: Pre-LN at L = 24 with one lever
# switched off (the table "Pre-LN L = 24, one lever off", against the main table's Pre-LN row,
# every lever at its default), and the per-op time breakdown of one Pre-LN step at L = 24
# (`depthbench bench --breakdown`: CUDA events around every op and every design kernel), taken
# in the cuda_graphs = off run (a timed model runs eagerly), and the same of the designs with
# work of their own (BREAKDOWNS). train.reduce_bucket_mb (lever 5) needs two GPUs or more: it
# has no row in this one-GPU table. Last, the attention paths at two head dims (PADDED_DEPTH):
# Pre-LN on cuDNN (the default) and on our flash kernel at L = 24 (hd 64, which cuDNN reads in
# place) and at a depth whose head dim cuDNN pads (default 28: hd 60, a padded copy of q, k, v, o
# and their gradients around every call), so a run shows whether those copies cost cuDNN its lead.
#
# usage: bench/gpu_speed.sh [--short] [--cpu-smoke] [--out DIR]
#   --short      what tests/gpu/check.sh runs: Pre-LN and HC at L = 24, Pre-LN at L = 70, the
#                levers cuda_graphs = off and activation_dtype = fp32, PyTorch on Pre-LN at
#                L = 24; 2 timed steps; items that do not fit BUDGET_S are listed as skipped.
#   --cpu-smoke  the same script on the CPU backend at tiny shapes (d 64, T 32, V 257), two
#                designs (DESIGNS), 2 timed steps, and PyTorch on the CPU: proves the script and
#                the table format where no GPU is (CTest bench.gpu_speed_cpu_smoke). Its
#                figures mean nothing.
#   --out DIR    gpu_speed.md (the table), gpu_speed.jsonl (every result) and one log per
#                command go there (default: a fresh folder under ${TMPDIR:-/tmp}).
# Environment: DEPTHBENCH (default: build/depthbench of this tree, else depthbench on PATH),
# PYTHON (a python3 with torch; default python3, else /usr/bin/python3), STEPS (timed steps,
# default 5, --short/--cpu-smoke 2), WARMUP (untimed steps, default 3, --cpu-smoke 1), PEAK_TFLOPS (the MFU
# denominator, default 989: dense bf16 of one H100/H200 SXM), PRECISION (default bf16),
# DESIGNS (default all ten), DEPTH_1P6B (28), PADDED_DEPTH (the main400m depth of the
#   attention-path rows, default 28; empty: none; --short none), BUDGET_S (whole run, default 3600; --short 100),
# ITEM_S (one command at most, default 600; --short 60),
# BENCH_ARGS ("--train.KEY VALUE ...": added to every depthbench bench call, --shape-only too,
#   replacing the script's own value of a key; a lever row's own key still wins),
# LEVERS (the lever rows besides cuda_graphs = off, each [DESIGN:]KEY=VALUE, run as
#   --train.KEY VALUE at L = 24, DESIGN default pre_ln; default "attention=reference
#   activation_dtype=fp32 fused_kernels=off recompute=blocks attnres_full:activation_dtype=fp32
#   attnres_full:fused_kernels=off hc:fused_kernels=off attnres_full:state_dtype=bf16" (a lever
#   off by default, switched on), --short
#   "activation_dtype=fp32", --cpu-smoke the first three and hc:activation_dtype=fp32),
# BREAKDOWNS (the designs besides Pre-LN whose L = 24 step is also broken down, in a
#   cuda_graphs = off row of the lever table each; default those of DESIGNS with work of their
#   own: moda (its attention) hc mhc attnres_full attnres_block; --short none, for its time).
# Example: BENCH_ARGS="--train.attention flash --train.micro_batch 4" bench/gpu_speed.sh --short
# Exit status: 0 when the Pre-LN row at L = 24 was measured, 1 otherwise, 2 for bad arguments.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SHORT=0 SMOKE=0 OUT=""
while (($#)); do
  case $1 in
    --short) SHORT=1; shift ;;
    --cpu-smoke) SMOKE=1; shift ;;
    --out) OUT=${2:?--out needs a folder}; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_speed.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z ${DEPTHBENCH:-} ]]; then
  if [[ -x $ROOT/build/depthbench ]]; then DEPTHBENCH=$ROOT/build/depthbench; else DEPTHBENCH=depthbench; fi
fi
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch" 2>/dev/null && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  PYTHON=/usr/bin/python3
fi
FEW=$((SHORT || SMOKE))
STEPS=${STEPS:-$((FEW ? 2 : 5))}
# 3 on a GPU: a micro-batch shape is captured as a CUDA graph at its third micro-batch
# (train.cuda_graphs, doc/cuda.md), so the timed steps are replays (else the cuda_graphs = off
# row would compare eager steps with eager steps and a capture). The CPU has no graphs.
WARMUP=${WARMUP:-$((SMOKE ? 1 : 3))}
PEAK_TFLOPS=${PEAK_TFLOPS:-989}
PRECISION=${PRECISION:-$( ((SMOKE)) && echo fp32 || echo bf16)}
ALL_DESIGNS="pre_ln sandwich_ln lns deepnorm keel moda hc mhc attnres_full attnres_block"
# The smoke test needs one design PyTorch has and one it lacks, not all ten.
DESIGNS=${DESIGNS:-$( ((SMOKE)) && echo "pre_ln hc" || echo "$ALL_DESIGNS")}
DEPTH_1P6B=${DEPTH_1P6B:-28}
PADDED_DEPTH=${PADDED_DEPTH-$( ((SHORT)) || echo 28)}
[[ -z $PADDED_DEPTH || $PADDED_DEPTH =~ ^[0-9]+$ ]] ||
  { echo "gpu_speed.sh: PADDED_DEPTH: '$PADDED_DEPTH' is not a depth" >&2; exit 2; }
# Issue 22's levers, one switched off per row at L = 24 (cuda_graphs = off always: it carries the
# breakdown); a design with its own arithmetic on warps last, then bf16 AttnRes sources (off by
# default: that row switches it on).
if ((SMOKE)); then
  LEVERS=${LEVERS-"attention=reference activation_dtype=fp32 recompute=blocks hc:activation_dtype=fp32"}
elif ((SHORT)); then
  LEVERS=${LEVERS-"activation_dtype=fp32"}
else
  LEVERS=${LEVERS-"attention=reference activation_dtype=fp32 fused_kernels=off recompute=blocks attnres_full:activation_dtype=fp32 attnres_full:fused_kernels=off hc:fused_kernels=off attnres_full:state_dtype=bf16"}
fi
if ((SHORT)); then
  BREAKDOWNS=${BREAKDOWNS-}
else
  own_work=""
  for design in $DESIGNS; do
    [[ " moda hc mhc attnres_full attnres_block " == *" $design "* ]] && own_work+="$design "
  done
  BREAKDOWNS=${BREAKDOWNS-$own_work}
fi
for lever in $LEVERS; do
  [[ $lever =~ ^([a-z_0-9]+:)?[a-z_0-9]+=[^=]+$ ]] ||
    { echo "gpu_speed.sh: LEVERS: '$lever' is not [DESIGN:]KEY=VALUE" >&2; exit 2; }
done
# BENCH_ARGS: "--train.KEY VALUE" pairs for every depthbench bench call.
read -r -a BENCH_OVERRIDES <<<"${BENCH_ARGS:-}"
for ((i = 0; i < ${#BENCH_OVERRIDES[@]}; i += 2)); do
  key=${BENCH_OVERRIDES[i]} value=${BENCH_OVERRIDES[i + 1]:-}
  [[ $key =~ ^--train\.[a-z_0-9]+$ && -n $value && $value != --* ]] ||
    { echo "gpu_speed.sh: BENCH_ARGS takes '--train.KEY VALUE' pairs; '$key${value:+ $value}' is not one" >&2; exit 2; }
done
if ((${#BENCH_OVERRIDES[@]})); then
  # A bad key or value ends the run here, with depthbench's own message, instead of in every row.
  bad=$("$DEPTHBENCH" bench --shape-only "${BENCH_OVERRIDES[@]}" 2>&1 >/dev/null) ||
    { echo "gpu_speed.sh: BENCH_ARGS: ${bad:-$DEPTHBENCH bench --shape-only failed}" >&2; exit 2; }
fi
BUDGET_S=${BUDGET_S:-$((SHORT ? 100 : 3600))}
ITEM_S=${ITEM_S:-$((SHORT ? 60 : 600))}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/gpu_speed.XXXXXX")}
mkdir -p "$OUT" || exit 2
RESULTS=$OUT/gpu_speed.jsonl
: >"$RESULTS"
START=$(date +%s)

SUITE_400M=$ROOT/input/main400m.ini
SUITE_1P6B=$ROOT/input/validation1p6b.ini
if ((SMOKE)); then
  BACKEND=cpu TORCH_DEVICE=cpu
  # Tiny stand-ins for the shapes: the suite's recipe and rule, a shape small enough to time in
  # a second (n_layer 2, 3 and 2; the 1.6B rule's GQA and QK-norm kept; Lpad's head dim 20,
  # which cuDNN would pad to 24).
  tiny="--model.d_model 64 --model.n_head 4 --model.vocab_size 257 --train.seq_len 32"
  tiny+=" --train.micro_batch 2 --train.threads 1"
  declare -A SHAPE_ARGS=([L24]="$tiny --model.n_layer 2 --model.ff 0"
                         [L70]="$tiny --model.n_layer 3 --model.ff 0"
                         [1p6b]="$tiny --model.n_layer 2 --model.n_kv_head 2 --model.ff 192"
                         [Lpad]="$tiny --model.n_layer 2 --model.d_model 80 --model.ff 0")
else
  BACKEND=cuda TORCH_DEVICE=cuda
  declare -A SHAPE_ARGS=([L24]="" [L70]="" [1p6b]="" [Lpad]="")
fi
declare -A SHAPE_SUITE=([L24]=$SUITE_400M [L70]=$SUITE_400M [1p6b]=$SUITE_1P6B [Lpad]=$SUITE_400M)
declare -A SHAPE_DEPTH=([L24]=24 [L70]=70 [1p6b]=$DEPTH_1P6B [Lpad]=$PADDED_DEPTH)

left() { echo $((BUDGET_S - ($(date +%s) - START))); }
# Seconds the next command may take: ITEM_S, or what is left of the budget; 0 when too little.
item_limit() {
  local l
  l=$(left)
  ((l > ITEM_S)) && l=$ITEM_S
  ((l >= 5)) && echo "$l" || echo 0
}
record() { printf '%s\t%s\n' "$1" "$2" >>"$RESULTS"; }  # SHAPE JSON
# skip SHAPE SOURCE ARCH [MODE] [VARIANT]
skip() {
  record "$1" "{\"source\": \"$2\", \"arch\": \"$3\"${4:+, \"mode\": \"$4\"}${5:+, \"variant\": \"$5\"}, \"skipped\": \"time budget spent\"}"
}

# run_args SHAPE [KEY=VALUE]: into ARGS, the --model.* and --train.* pairs of a depthbench
# bench call: the shape's, the script's, BENCH_ARGS and the lever's, a later value of a key
# replacing an earlier one (the parser refuses a key given twice).
run_args() {
  local shape=$1 lever=${2:-} pairs shape_args key i
  local -A at=()  # key -> index of its value in ARGS
  read -r -a shape_args <<<"${SHAPE_ARGS[$shape]}"
  pairs=("${shape_args[@]}" --train.precision "$PRECISION" --train.steps "$STEPS" "${BENCH_OVERRIDES[@]}")
  [[ -n $lever ]] && pairs+=("--train.${lever%%=*}" "${lever#*=}")
  ARGS=()
  for ((i = 0; i < ${#pairs[@]}; i += 2)); do
    key=${pairs[i]}
    if [[ -n ${at[$key]:-} ]]; then
      local index=${at[$key]}
      ARGS[index]=${pairs[i + 1]}
    else
      ARGS+=("$key" "${pairs[i + 1]}")
      at[$key]=$((${#ARGS[@]} - 1))
    fi
  done
}

# ours SHAPE DESIGN [LEVER [FLAG...]]: one depthbench bench, its JSON recorded under SHAPE;
# LEVER (KEY=VALUE, run as --train.KEY VALUE) makes it a row of the lever table.
ours() {
  local shape=$1 design=$2 lever=${3:-} limit log line
  local flags=("${@:4}")
  limit=$(item_limit)
  ((limit > 0)) || { skip "$shape" depthbench "$design" "" "$lever"; return; }
  log=$OUT/depthbench_${shape}_$design${lever:+_$lever}.log
  run_args "$shape" "$lever"
  echo "[gpu_speed +$(($(date +%s) - START))s] depthbench $design $shape${lever:+ $lever} (limit ${limit}s)" >&2
  timeout -k 10 "$limit" "$DEPTHBENCH" bench --json --backend "$BACKEND" \
    --suite "${SHAPE_SUITE[$shape]}" --depth "${SHAPE_DEPTH[$shape]}" --model.arch "$design" "${ARGS[@]}" \
    --warmup "$WARMUP" --peak-tflops "$PEAK_TFLOPS" "${flags[@]}" >"$log" 2>&1
  local rc=$?
  line=$(grep -m1 '^{' "$log")
  # "variant" after "result": tests/gpu/check.sh counts '"source": "depthbench", "result"'.
  if [[ $rc == 0 && -n $line ]]; then
    record "$shape" "{\"source\": \"depthbench\", \"result\": $line${lever:+, \"variant\": \"$lever\"}}"
  else
    local why
    why=$( ((rc == 124 || rc == 137)) && echo "timed out after ${limit}s" ||
      grep -m1 -iE "error|what|fault" "$log" | cut -c1-100 | tr -d '"\\')
    record "$shape" "{\"source\": \"depthbench\", \"arch\": \"$design\"${lever:+, \"variant\": \"$lever\"}, \"failed\": \"${why:-exit $rc}\"}"
  fi
}

# levers: the lever table's rows (LEVERS); each compares with the main table's row of its design
# at L = 24, every lever at its default.
levers() {
  local lever design
  for lever in $LEVERS; do
    design=pre_ln
    [[ $lever == *:* ]] && design=${lever%%:*} lever=${lever#*:}
    ours L24 "$design" "$lever"
  done
}

# attention_paths: Pre-LN on our flash kernel at L = 24 and at PADDED_DEPTH (Lpad), and on the
# default path (cuDNN) at Lpad; the L = 24 default row is the main table's.
attention_paths() {
  [[ -n $PADDED_DEPTH ]] || return 0
  ours L24 pre_ln attention=flash
  ours Lpad pre_ln
  ours Lpad pre_ln attention=flash
}

# The designs bench/pytorch_reference.py implements (asked once; it needs no torch for that).
TORCH_DESIGNS=" $("$PYTHON" "$HERE/pytorch_reference.py" --list-designs 2>/dev/null) "

# theirs SHAPE DESIGN MODE: bench/pytorch_reference.py on the shape depthbench measured.
theirs() {
  local shape=$1 design=$2 mode=$3 limit log shape_json
  if [[ $TORCH_DESIGNS != *" $design "* ]]; then
    record "$shape" "{\"source\": \"pytorch\", \"arch\": \"$design\", \"mode\": \"$mode\", \"unavailable\": \"design $design is not written in the PyTorch reference\"}"
    return
  fi
  limit=$(item_limit)
  ((limit > 0)) || { skip "$shape" pytorch "$design" "$mode"; return; }
  # The shape as depthbench resolves it (without running anything, so PyTorch runs even where
  # our own bench failed).
  run_args "$shape"
  shape_json=$("$DEPTHBENCH" bench --shape-only --suite "${SHAPE_SUITE[$shape]}" --depth "${SHAPE_DEPTH[$shape]}" \
    "${ARGS[@]}" 2>&1 | grep -m1 '^{')
  [[ -n $shape_json ]] || { record "$shape" "{\"source\": \"pytorch\", \"arch\": \"$design\", \"mode\": \"$mode\", \"unavailable\": \"depthbench bench --shape-only gave no shape\"}"; return; }
  log=$OUT/pytorch_${shape}_${design}_$mode.log
  echo "[gpu_speed +$(($(date +%s) - START))s] pytorch $mode $design $shape (limit ${limit}s)" >&2
  timeout -k 10 "$limit" "$PYTHON" "$HERE/pytorch_reference.py" --json --device "$TORCH_DEVICE" \
    --shape-json "$shape_json" --arch "$design" --modes "$mode" --steps "$STEPS" \
    --warmup "$WARMUP" --peak-tflops "$PEAK_TFLOPS" >"$log" 2>&1
  local rc=$? line
  line=$(grep -m1 '^{' "$log")
  if [[ -n $line ]]; then
    record "$shape" "$line"
  else
    local why
    why=$( ((rc == 124 || rc == 137)) && echo "timed out after ${limit}s" || tail -1 "$log" | cut -c1-100 | tr -d '"\\')
    record "$shape" "{\"source\": \"pytorch\", \"arch\": \"$design\", \"mode\": \"$mode\", \"unavailable\": \"${why:-exit $rc}\"}"
  fi
}

# The breakdown goes with cuda_graphs = off: a model whose ops are timed runs eagerly anyway.
if ((SHORT)); then
  ours L24 pre_ln
  ours L24 pre_ln cuda_graphs=off --breakdown
  ours L24 hc
  ours L70 pre_ln
  levers
  theirs L24 pre_ln eager
  theirs L24 pre_ln compile
  for design in $BREAKDOWNS; do ours L24 "$design" cuda_graphs=off --breakdown; done
else
  for shape in L24 L70; do
    for design in $DESIGNS; do
      ours "$shape" "$design"
    done
  done
  ours 1p6b pre_ln
  for design in pre_ln $BREAKDOWNS; do ours L24 "$design" cuda_graphs=off --breakdown; done
  levers
  attention_paths
  for shape in L24 L70; do
    for design in $DESIGNS; do
      for mode in eager compile; do theirs "$shape" "$design" "$mode"; done
    done
  done
  for mode in eager compile; do theirs 1p6b pre_ln "$mode"; done
fi

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || cat "$ROOT/../VERSION" 2>/dev/null || echo unknown)
table_args=(--commit "$commit" --peak-tflops "$PEAK_TFLOPS" --precision "$PRECISION")
[[ -n ${BENCH_ARGS:-} ]] && table_args+=(--bench-args "$BENCH_ARGS")
((SMOKE)) && table_args+=(--cpu-smoke)
"$PYTHON" "$HERE/speed_table.py" "$RESULTS" "${table_args[@]}" >"$OUT/gpu_speed.md"
rc=$?
cat "$OUT/gpu_speed.md"
echo "results: $OUT/gpu_speed.md, $RESULTS, logs in $OUT" >&2
((rc == 0)) || exit 1
grep -P '^L24\t' "$RESULTS" | grep -v '"variant"' | grep -q '"result": {"arch": "pre_ln"' || exit 1
exit 0
