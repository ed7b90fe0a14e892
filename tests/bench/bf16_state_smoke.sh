#!/usr/bin/env bash
# bench/bf16_state.sh end to end on tiny runs (2 designs, 2 seeds, 3 steps): every run trains,
# and the table has a row of numbers per design. Usage: bf16_state_smoke.sh DEPTHBENCH ROOT WORK
set -euo pipefail
bin=$1 root=$2 work=$3
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin" tokenize --tokenizer bytes --format fortunes --input /usr/share/games/fortunes/fortunes \
  --val-fraction 0.05 --output-format npy --out data > tokenize.log
DEPTHBENCH="$bin" DESIGNS="hc attnres_block" SEEDS="1 2" JOBS=2 \
  "$root/bench/bf16_state.sh" --out "$work/out" -- --model.n_layer 2 --train.steps 3 \
  --train.val_interval 3 --train.val_windows 4 --train.threads 1 \
  --data.train_files "$work/data/train_*.npy" --data.val_files "$work/data/val_*.npy" > table.md
cat table.md
number='[0-9]+\.[0-9]{4}'
for design in hc attnres_block; do
  grep -Eq "^\| $design \| $number \| $number \| $number \| [+-]$number ± $number \| [+-]$number ± $number \| 2 \|$" table.md ||
    { echo "FAIL: no complete row for $design"; exit 1; }
done
[[ $(ls out/*.loss | wc -l) == 12 ]] || { echo "FAIL: expected 12 runs"; exit 1; }
echo "bf16_state.sh: 12 runs, a row per design"
