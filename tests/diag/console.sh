#!/usr/bin/env bash
# What `depthbench diagnose` prints (issue 24, item 7-8): no decile progress lines for short
# diagnostics (at most one line per 10 s); "no GPU visible" once for 2 ranks, not once per rank; a time estimate per
# diagnostic before they start (logitlens with its depth-state readouts); --quiet keeps only the
# final table; --help shows --dead-threshold's default as 0.05.
# Usage: console.sh DEPTHBENCH BINARY_DIR "MPIRUN ..."
set -euo pipefail
depthbench=$1
work=$2/diag_console
IFS=';' read -r -a mpirun <<< "${3// /;}"  # a CMake list (or spaces)
if ! compgen -G '/usr/share/games/fortunes/*' > /dev/null; then
  echo "no fortune files: skipped"; exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$depthbench" tokenize --tokenizer bytes --format fortunes \
  --input /usr/share/games/fortunes/fortunes --val-fraction 0.05 --out data > /dev/null
"$depthbench" train --model.n_layer 2 --model.d_model 16 --model.n_head 2 --train.steps 4 \
  --train.seq_len 32 --train.global_batch 2 --train.micro_batch 2 --train.threads 1 \
  --data.train_files 'data/train_*.npy' --data.val_files 'data/val_*.npy' \
  --output.name tiny --output.dir runs > /dev/null

"$depthbench" diagnose --help > help.txt
grep -q -- "--dead-threshold arg (=0.05)" help.txt || fail "help: $(grep dead-threshold help.txt)"

# 64 windows: 32 passes per rank, which printed a line at each tenth before.
"${mpirun[@]}" -np 2 "$depthbench" diagnose runs/tiny.h5 --only angular_distance,logitlens \
  --angular-windows 64 --logitlens-windows 8 --backend auto --threads 1 > out.txt
cat out.txt
[ "$(grep -c "no GPU visible" out.txt || true)" -le 1 ] || fail "'no GPU visible' once per rank"
grep -q "^estimate before starting (one forward pass of a 32-token window took" out.txt ||
  fail "no time estimate"
grep -q "^  angular_distance  64 passes: ~" out.txt || fail "no estimate for angular_distance"
grep -q "^  logitlens         8 passes + 24 depth-state readouts x .*: ~" out.txt ||
  fail "no estimate for logitlens with its readouts"
grep -q "^  total             ~" out.txt || fail "no total estimate"
progress=$(grep -c "% (" out.txt || true)
[ "$progress" -lt 5 ] || fail "$progress progress lines into a file"
grep -q "^written to runs/tiny.h5" out.txt || fail "no final line"

"$depthbench" diagnose runs/tiny.h5 --only angular_distance --angular-windows 16 --quiet \
  --backend cpu > quiet.txt
grep -q "estimate\|angular_distance: " quiet.txt && fail "--quiet printed: $(cat quiet.txt)"
grep -q "^diagnostic .*forward passes" quiet.txt || fail "--quiet dropped the final table"
echo "diagnose console: ok"
