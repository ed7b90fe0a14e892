#!/bin/bash
# Kill -9 a sweep after a checkpoint exists, rerun it, and demand the same curves bit for bit as
# an uninterrupted sweep; a third run must skip everything at once.
source "$(dirname "$0")/common.sh" "$@"
STEPS=600
make_suite "$WORK/suite.ini" "designs=pre_ln" "depths=2" "pre_ln=3e-3" "train.steps=$STEPS" \
  "train.checkpoint_interval=20"
run="tiny__pre_ln__L2_d40__lr3e-03"

"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/suite.ini" --ranks-per-run 2 --out "$WORK/reference" --quiet

# The interrupted sweep: mpirun in the background; kill -9 its ranks and mpirun itself as soon as a
# checkpoint exists and the run's log shows steps after it. Waiting on events, not on a clock,
# keeps the kill mid-run on a fast machine and a loaded one alike.
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/suite.ini" --ranks-per-run 2 --out "$WORK/resumed" \
  >"$WORK/killed.log" 2>&1 &
launcher=$!
# The steps done of the last progress line ("step 25 (26 of 40) loss ...").
last_logged_step() { grep -o "([0-9]* of $STEPS)" "$WORK/resumed/$run.log" 2>/dev/null | tail -1 | tr -dc '0-9 ' | cut -d' ' -f1; }
for _ in $(seq 6000); do
  [ -f "$WORK/resumed/$run.ckpt" ] && [ "$(last_logged_step || true)" -gt 25 ] 2>/dev/null && break
  sleep 0.01
done
[ -f "$WORK/resumed/$run.ckpt" ] || fail "no checkpoint appeared"
ranks=$(pgrep -P "$launcher" || true)
kill -9 $ranks "$launcher" 2>/dev/null || true
wait "$launcher" 2>/dev/null || true
sleep 0.3
[ -f "$WORK/resumed/$run.h5" ] && fail "the run finished before the kill; make it longer"
[ -f "$WORK/resumed/$run.h5.tmp" ] || fail "no unfinished run file after the kill"
echo "killed after step $(last_logged_step) of $STEPS"

"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/suite.ini" --ranks-per-run 2 --out "$WORK/resumed" \
  | tee "$WORK/rerun.log"
grep -q "resuming at step" "$WORK/rerun.log" || fail "the rerun did not resume from the checkpoint"
"$PYTHON" "$SOURCE_DIR/tests/sweep/compare_curves.py" --exact "$WORK/reference" "$WORK/resumed"
# A sweep keeps the initial weights by default; the killed run wrote them before its first step.
"$PYTHON" - "$WORK/reference/$run" "$WORK/resumed/$run" <<'PY' || fail "initial or final weights differ"
import sys, h5py, numpy as np
for suffix in (".init.weights", ".weights"):
    a, b = (h5py.File(stem + suffix, "r")["params"] for stem in sys.argv[1:])
    assert sorted(a) == sorted(b) and all(np.array_equal(a[n][()], b[n][()]) for n in a), suffix
print("initial and final weights: bit-identical,", len(a), "tensors")
PY

start=$(date +%s.%N)
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/suite.ini" --ranks-per-run 2 --out "$WORK/resumed" \
  | tee "$WORK/third.log"
grep -q "$run: skipped" "$WORK/third.log" || fail "a completed run was not skipped"
echo "third run (all skipped): $(echo "$(date +%s.%N) - $start" | bc) s"
echo PASS
