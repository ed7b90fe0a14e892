#!/usr/bin/env bash
# A user's interrupt, with real signals and real mpirun ranks (doc/sweeps.md "Signals"):
#  1. SIGUSR1 to `mpirun -np 2 depthbench sweep`: the runs checkpoint, exit 75, the last line says
#     how many runs were checkpointed and to rerun; the rerun resumes and completes;
#  2. Ctrl-C (SIGINT) to a `depthbench sweep` without mpirun: the same, exit 75;
#  3. Ctrl-C to jobs/run_sweep.sh's process group (a terminal's Ctrl-C) with the real mpirun:
#     mpirun never sees it, the script forwards it as SIGUSR1 and exits 75;
#  4. SIGINT to mpirun itself: Open MPI aborts the job and exits 1 whatever the ranks return
#     (documented); given time to (odls_base_sigkill_timeout), the ranks still checkpoint.
source "$(dirname "$0")/../sweep/common.sh"
cd "$WORK"
make_suite suite.ini "designs=pre_ln" "depths=1" "pre_ln=3e-3" "train.steps=100000" \
  "train.checkpoint_interval=0" "train.val_interval=100000"
run_of() { basename "$(ls "$1"/*.log)" .log; }  # the suite's one run

# started DIR: the first curve row of the run is in its log (training has begun).
started() { grep -qs "step " "$1"/*.log; }
wait_until() {
  local what=$1; shift
  for _ in $(seq 600); do "$@" && return 0; sleep 0.1; done
  fail "$what did not happen within 60 s"
}
last_line() { grep -v '^$' "$1" | tail -1; }

# 1. SIGUSR1 to mpirun, then the same command resumes.
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep suite.ini --ranks-per-run 2 --out usr1 --quiet \
  >usr1.out 2>usr1.err &
job=$!
wait_until "training on 2 ranks" started usr1
run=$(run_of usr1)
kill -USR1 $job
rc=0; wait $job || rc=$?
[ "$rc" -eq 75 ] || fail "SIGUSR1 to mpirun: exit $rc, expected 75: $(tail -3 usr1.err)"
[ -f "usr1/$run.ckpt" ] || fail "SIGUSR1 to mpirun: no checkpoint"
[ "$(last_line usr1.out)" = "[sweep] stopped by a signal: 1 run checkpointed; rerun the same command to resume" ] ||
  fail "SIGUSR1 to mpirun: last line '$(last_line usr1.out)'"
echo "SIGUSR1 to mpirun: checkpoint, exit 75, last line: $(last_line usr1.out)"
grep -q "Primary job  terminated normally" usr1.err &&
  echo "  (Open MPI's boxes for a non-zero rank status, documented: $(grep -c . usr1.err) stderr lines)"
# The same command again resumes from that checkpoint (then is stopped the same way).
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep suite.ini --ranks-per-run 2 --out usr1 --quiet \
  >rerun.out 2>&1 &
job=$!
wait_until "the rerun resuming" grep -q "resuming at step" "usr1/$run.log"
kill -USR1 $job
rc=0; wait $job || rc=$?
[ "$rc" -eq 75 ] || fail "the resumed sweep, stopped again: exit $rc"
echo "the same command resumed: $(grep -o 'resuming at step [0-9]*' "usr1/$run.log" | tail -1)"

# 2. Ctrl-C to depthbench sweep without mpirun: checkpoint, exit 75, the last line.
"$DEPTHBENCH" sweep suite.ini --out int_alone --quiet >int_alone.out 2>int_alone.err &
job=$!
wait_until "training without mpirun" started int_alone
kill -INT $job
rc=0; wait $job || rc=$?
[ "$rc" -eq 75 ] || fail "Ctrl-C without mpirun: exit $rc, expected 75: $(tail -3 int_alone.err)"
[ -f "int_alone/$run.ckpt" ] || fail "Ctrl-C without mpirun: no checkpoint"
last_line int_alone.out | grep -q "1 run checkpointed; rerun the same command to resume" ||
  fail "Ctrl-C without mpirun: last line '$(last_line int_alone.out)'"
echo "Ctrl-C without mpirun: checkpoint, exit 75"

# 3. A terminal's Ctrl-C to jobs/run_sweep.sh (SIGINT to its whole process group). perl restores
# SIGINT's default, which this script's background jobs start without.
RELAUNCH_DELAY_S=0 DEPTHBENCH=$DEPTHBENCH MPIRUN="${MPIRUN[*]}" setsid perl -e \
  '$SIG{INT} = "DEFAULT"; exec @ARGV' bash "$SOURCE_DIR/jobs/run_sweep.sh" suite.ini script 2 2 \
  >script.out 2>&1 &
job=$!
wait_until "training under run_sweep.sh" started script
kill -INT -- -$job
rc=0; wait $job || rc=$?
[ "$rc" -eq 75 ] || fail "Ctrl-C to run_sweep.sh: exit $rc, expected 75: $(tail -5 script.out)"
[ -f "script/$run.ckpt" ] || fail "Ctrl-C to run_sweep.sh: no checkpoint"
grep -q "1 run checkpointed" script.out || fail "Ctrl-C to run_sweep.sh: no checkpoint line"
echo "Ctrl-C to run_sweep.sh: checkpoint, exit 75: $(last_line script.out)"

# 4. SIGINT to mpirun itself, with time for the ranks to checkpoint: Open MPI's exit 1.
"${MPIRUN[@]}" --mca odls_base_sigkill_timeout 60 -np 2 "$DEPTHBENCH" sweep suite.ini \
  --ranks-per-run 2 --out int_mpirun --quiet >int_mpirun.out 2>int_mpirun.err &
job=$!
wait_until "training on 2 ranks" started int_mpirun
kill -INT $job
rc=0; wait $job || rc=$?
[ "$rc" -eq 1 ] || fail "SIGINT to mpirun: exit $rc; doc/sweeps.md says Open MPI exits 1"
[ -f "int_mpirun/$run.ckpt" ] || fail "SIGINT to mpirun with a 60 s kill timeout: no checkpoint"
grep -q "1 run checkpointed" int_mpirun.out || fail "SIGINT to mpirun: no checkpoint line"
echo "SIGINT to mpirun: ranks checkpoint (given the time), mpirun exits 1 as documented"
echo PASS
