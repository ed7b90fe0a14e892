#!/bin/bash
# Issue 20 §2.4 on the CPU: 2 ranks in two groups of one (--ranks-per-run 1), four runs of
# different lengths (depths 1..4), one of them finished before the sweep starts. The groups
# then run different lists of runs (one skips the finished run and trains one run more), so any
# collective on the whole job from inside a run would deadlock here; CTest's timeout turns that
# into a failure. Every run file records the gradient reduction path that ran.
source "$(dirname "$0")/common.sh" "$@"
# 68.7K: at the tiny suite's 60K the L = 3 shape would be 5.7% below the budget (refused).
make_suite "$WORK/one.ini" "designs=pre_ln" "depths=1" "budget=total 68.7K" "pre_ln=3e-3" "train.steps=8" "train.val_interval=4"
make_suite "$WORK/four.ini" "designs=pre_ln" "depths=1 2 3 4" "budget=total 68.7K" "pre_ln=3e-3" "train.steps=8" "train.val_interval=4"
"${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep "$WORK/one.ini" --out "$WORK/out" --quiet >"$WORK/first.log"
grep -q "1 runs: 1 completed" "$WORK/first.log" || fail "the first run did not complete"
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/four.ini" --ranks-per-run 1 --out "$WORK/out" --quiet \
  >"$WORK/sweep.log"
cat "$WORK/sweep.log"
[ "$(grep -c ': skipped' "$WORK/sweep.log")" -eq 1 ] || fail "the finished run was not skipped once"
grep -q "4 runs: 4 completed" "$WORK/sweep.log" || fail "not every run completed"
for f in "$WORK"/out/*.h5; do
  path=$(h5attr "$f" gradient_reduction)
  [ "$path" = "none (one rank)" ] || fail "$f: gradient_reduction '$path'"
done
echo PASS
