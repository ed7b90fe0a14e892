#!/bin/bash
# A run whose loss explodes is recorded `diverged` (step and reason), a run that throws (unknown
# design) is recorded `failed` with the message, and the sweep completes; missing data is
# refused before any run starts.
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

# Missing data: found before any run starts (doc/sweeps.md, "Inputs checked before the sweep");
# the sweep refuses with the pattern named and records no run.
make_suite "$WORK/nodata.ini" "designs=pre_ln" "depths=1" "pre_ln=3e-3" \
  "data.train_files=$WORK/no/such/train_*.npy"
if "${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/nodata.ini" --out "$WORK/nodata" --quiet \
    >"$WORK/nodata.log" 2>&1; then
  fail "a sweep with missing data started"
fi
grep -q "no file matches .*no/such/train_" "$WORK/nodata.log" || fail "missing-data message: $(cat "$WORK/nodata.log")"
! ls "$WORK"/nodata/*.h5 >/dev/null 2>&1 || fail "a run file was written for missing data"
echo "missing data: refused before any run"

# A malformed suite stops before any run with a message naming the key.
sed 's/^budget = .*/budget = total lots/' "$WORK/suite.ini" >"$WORK/bad.ini"
if "$DEPTHBENCH" sweep "$WORK/bad.ini" --out "$WORK/bad" 2>"$WORK/bad.err"; then fail "malformed suite accepted"; fi
grep -q "suite.budget" "$WORK/bad.err" || fail "message does not name suite.budget: $(cat "$WORK/bad.err")"
echo "malformed suite: $(cat "$WORK/bad.err")"
echo PASS
