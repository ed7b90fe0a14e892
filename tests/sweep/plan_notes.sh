#!/bin/bash
# What plan and sweep say before training: Block AttnRes at L <= 4 (blocks of one sublayer with
# the default 8 blocks) is named as Full AttnRes by both; plan shows each run's disk and the
# suite's total.
source "$(dirname "$0")/common.sh" "$@"
make_suite "$WORK/suite.ini" "designs=pre_ln, attnres_block" "depths=1 2" "train.steps=2" \
  "pre_ln=3e-3"
"$DEPTHBENCH" plan "$WORK/suite.ini" --out "$WORK/out" | tee "$WORK/plan.txt"
grep -q "mem     disk  state" "$WORK/plan.txt" || fail "plan: no disk column"
[ "$(grep -c "note: Block AttnRes at L = [12] has blocks of one sublayer" "$WORK/plan.txt")" -ge 2 ] ||
  fail "plan: no note under the Block AttnRes runs at L = 1, 2"
grep -q "^disk: .* for the suite's kept files" "$WORK/plan.txt" || fail "plan: no suite disk total"
grep -q "Block AttnRes run(s) have blocks of one sublayer and are Full AttnRes" "$WORK/plan.txt" ||
  fail "plan: no count of Block AttnRes runs that are Full AttnRes"
"$DEPTHBENCH" sweep "$WORK/suite.ini" --out "$WORK/out" --quiet | tee "$WORK/sweep.txt"
grep -q "^\[sweep\] warning: tiny__attnres_block__L1_.*is Full AttnRes" "$WORK/sweep.txt" ||
  fail "sweep: no warning for Block AttnRes at L = 1"
echo PASS
