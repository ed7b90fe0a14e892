#!/usr/bin/env bash
# What bf16 state would do to training (doc/performance.md, "bf16 state, measured first"): the
# same short runs of each design with its own state (HC/mHC streams, AttnRes sources) kept in
# fp32 and rounded to bf16 (train.state_dtype), both under bf16 activation storage, over several
# seeds; fp32 activations too, so that the table shows the state's effect next to the one the
# GPU default already accepts. Prints a Markdown table of final validation losses.
#
#   bench/bf16_state.sh [--out DIR] [-- --train.KEY VALUE ...]
#
# DESIGNS (default "hc mhc attnres_full"), SEEDS ("1 2 3"), JOBS (runs at once, default 2),
# CONFIG (input/train_demo.ini) and the keys after -- (default: 12 layers, 400 steps, 256
# validation windows, one thread per run) choose the runs; DEPTHBENCH the binary.
set -euo pipefail
cd "$(dirname "$0")/.."

out=""
extra=()
while (($#)); do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "bf16_state.sh: unknown argument '$1' (usage: [--out DIR] [-- --train.KEY VALUE ...])" >&2; exit 2 ;;
  esac
done
out="${out:-$(mktemp -d /tmp/bf16-state.XXXXXX)}"
mkdir -p "$out"
DEPTHBENCH="${DEPTHBENCH:-build/depthbench}"
DESIGNS="${DESIGNS:-hc mhc attnres_full}"
SEEDS="${SEEDS:-1 2 3}"
JOBS="${JOBS:-2}"
CONFIG="${CONFIG:-input/train_demo.ini}"
((${#extra[@]})) || extra=(--model.n_layer 12 --train.steps 400 --train.val_interval 400
                           --train.val_windows 256 --train.threads 1)
[[ -x "$DEPTHBENCH" ]] || { echo "bf16_state.sh: no binary at $DEPTHBENCH (DEPTHBENCH=)" >&2; exit 2; }

# One run: design seed activation_dtype state_dtype → "$out/NAME.loss" (its final validation
# loss, empty if it failed). It runs in the shells xargs starts: the keys come in EXTRA.
run_one() {
  local design=$1 seed=$2 act=$3 state=$4 name="$1-s$2-a$3-s$4" extra
  read -ra extra <<<"$EXTRA"
  "$DEPTHBENCH" train --config "$CONFIG" --model.arch "$design" --train.seed "$seed" \
    --train.activation_dtype "$act" --train.state_dtype "$state" --output.dir "$out/$name" \
    --output.name "$name" "${extra[@]}" >"$out/$name.log" 2>&1 || true
  sed -n 's/.*final validation loss \([0-9.eE+-]*\).*/\1/p' "$out/$name.log" >"$out/$name.loss"
}
export -f run_one
export DEPTHBENCH CONFIG out EXTRA="${extra[*]}"

for design in $DESIGNS; do
  for seed in $SEEDS; do
    for setting in "fp32 fp32" "bf16 fp32" "bf16 bf16"; do echo "$design $seed $setting"; done
  done
done | xargs -P "$JOBS" -L 1 bash -c 'run_one "$@"' _

# Per design: the mean final validation loss of each setting over the seeds, and the paired
# differences (same seed) with their spread: activations (bf16 − fp32, state fp32) and state
# (bf16 − fp32, activations bf16).
{
  echo "| design | fp32 | bf16 activations | + bf16 state | Δ activations (mean ± sd) | Δ state (mean ± sd) | seeds |"
  echo "|---|---|---|---|---|---|---|"
  for design in $DESIGNS; do
    for seed in $SEEDS; do
      printf '%s %s %s %s\n' "$seed" "$(cat "$out/$design-s$seed-afp32-sfp32.loss")" \
        "$(cat "$out/$design-s$seed-abf16-sfp32.loss")" "$(cat "$out/$design-s$seed-abf16-sbf16.loss")"
    done | awk -v d="$design" '
      NF == 4 { n++; a += $2; b += $3; c += $4; x = $3 - $2; y = $4 - $3
                sx += x; sxx += x * x; sy += y; syy += y * y }
      END {
        if (n == 0) { printf "| %s | failed (logs in the output folder) | | | | | 0 |\n", d; exit }
        mx = sx / n; my = sy / n
        vx = n > 1 ? (sxx - n * mx * mx) / (n - 1) : 0; vy = n > 1 ? (syy - n * my * my) / (n - 1) : 0
        printf "| %s | %.4f | %.4f | %.4f | %+.4f ± %.4f | %+.4f ± %.4f | %d |\n", d, a / n, b / n,
               c / n, mx, sqrt(vx > 0 ? vx : 0), my, sqrt(vy > 0 ? vy : 0), n }'
  done
} | tee "$out/bf16_state.md"
echo "runs and logs: $out"
