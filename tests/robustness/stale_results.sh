#!/usr/bin/env bash
# Results trained with another config are never reused silently: after train.steps changes in
# the recipe, `plan` marks the finished runs stale and names the key, `sweep` refuses to mix old
# and new results, and `--rerun-stale` retrains them, keeping the old files as NAME.h5.stale.
source "$(dirname "$0")/../sweep/common.sh"
cd "$WORK"
make_suite first.ini "designs=pre_ln" "depths=1" "train.steps=6" "train.val_interval=3"
"${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep first.ini --out runs --quiet >first.out 2>&1 ||
  fail "first sweep: $(tail -3 first.out)"
"$DEPTHBENCH" plan first.ini --out runs >plan_same.out
grep -q " completed$" plan_same.out || fail "plan does not show the finished runs completed"

make_suite second.ini "designs=pre_ln" "depths=1" "train.steps=8" "train.val_interval=3"
"$DEPTHBENCH" plan second.ini --out runs >plan_changed.out
grep -q " stale$" plan_changed.out || fail "plan does not mark the changed runs stale"
grep -q "train.steps: 6 -> 8" plan_changed.out || fail "plan does not name the changed key"
rc=0
"${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep second.ini --out runs --quiet >refused.out 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "sweep over stale results: exit $rc, expected 1"
grep -q "trained with another config.*--rerun-stale" refused.out || fail "no stale message: $(cat refused.out)"
"${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep second.ini --out runs --quiet --rerun-stale >rerun.out 2>&1 ||
  fail "sweep --rerun-stale: $(tail -3 rerun.out)"
for f in runs/*.h5; do
  [ "$(h5attr "$f" steps)" = 8 ] || fail "$f was not retrained with 8 steps"
  [ -e "$f.stale" ] || fail "$f: the old result was not kept as $f.stale"
done
echo "stale results: marked by plan with the key, refused by sweep, retrained with --rerun-stale"
