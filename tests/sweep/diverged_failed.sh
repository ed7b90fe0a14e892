#!/bin/bash
# A run whose loss explodes is recorded `diverged` (step and reason), runs that throw (unknown
# design, missing data file) are recorded `failed` with the message, and the sweep completes.
source "$(dirname "$0")/common.sh" "$@"
make_suite "$WORK/suite.ini" "designs=pre_ln, no_such_design" "depths=1" "pre_ln=3e-3 1e3" \
  "train.steps=60"
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/suite.ini" --out "$WORK/out" --quiet | tee "$WORK/log"
dir=$WORK/out
ok=$dir/tiny__pre_ln__L1_d52__lr3e-03.h5
bad=$dir/tiny__pre_ln__L1_d52__lr1e+03.h5
unknown=$dir/tiny__no_such_design__L1_d52__lr3e-03.h5
[ "$(h5attr "$ok" status)" = completed ] || fail "$ok not completed"
[ "$(h5attr "$bad" status)" = diverged ] || fail "$bad not diverged"
echo "diverged at step $(h5attr "$bad" status_step): $(h5attr "$bad" status_reason)"
[ "$(h5attr "$bad" status_step)" -ge 0 ] || fail "diverged run without a step"
[ "$(h5attr "$unknown" status)" = failed ] || fail "$unknown not failed"
h5attr "$unknown" status_reason | grep -q "unknown architecture 'no_such_design'" || fail "unknown-design message missing"
grep -q "3 runs: 1 completed 1 diverged 1 failed" "$WORK/log" || fail "sweep summary"

# Missing data: every run fails with the file named, the sweep still ends normally (exit 0).
make_suite "$WORK/nodata.ini" "designs=pre_ln" "depths=1" "pre_ln=3e-3" \
  "data.train_files=$WORK/no/such/train_*.npy"
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/nodata.ini" --out "$WORK/nodata" --quiet | tee "$WORK/nodata.log"
f=$WORK/nodata/tiny__pre_ln__L1_d52__lr3e-03.h5
[ "$(h5attr "$f" status)" = failed ] || fail "missing data not failed"
h5attr "$f" status_reason | grep -q "no file matches" || fail "missing-data message"
echo "missing data: $(h5attr "$f" status_reason)"

# A malformed suite stops before any run with a message naming the key.
sed 's/^budget = .*/budget = total lots/' "$WORK/suite.ini" >"$WORK/bad.ini"
if "$DEPTHBENCH" sweep "$WORK/bad.ini" --out "$WORK/bad" 2>"$WORK/bad.err"; then fail "malformed suite accepted"; fi
grep -q "suite.budget" "$WORK/bad.err" || fail "message does not name suite.budget: $(cat "$WORK/bad.err")"
echo "malformed suite: $(cat "$WORK/bad.err")"
echo PASS
