#!/bin/bash
# The relaunch loop every job script calls: runs `depthbench sweep` until every run of the suite
# has a final run file. On SIGUSR1/SIGTERM (Slurm's --signal, PBS's walltime or pre-emption) the
# signal is forwarded to mpirun, which passes it to every rank: each running run writes a
# checkpoint and stops; the sweep exits 75 and the job asks to be requeued (the next job resumes).
# Run by hand, a Ctrl-C (SIGINT) is the same clean stop without a requeue: the script exits 75.
# usage: run_sweep.sh SUITE.ini OUT_DIR RANKS RANKS_PER_RUN [REQUEUE_COMMAND]
# Exit status: 0 done or requeued; 75 stopped and not requeued (no requeue command, or scancel);
# otherwise the failing sweep's status (a permanent error: a bad suite file, a missing binary).
# Environment: DEPTHBENCH, MPIRUN (default mpirun), REQUEUE_COMMAND (overrides the fifth
# argument; tests inject a fake), RELAUNCH_DELAY_S (default 60).
set -uo pipefail
suite=$1 out=$2 ranks=$3 ranks_per_run=$4
requeue=${REQUEUE_COMMAND:-${5:-}}
depthbench=${DEPTHBENCH:-depthbench}
mpirun_cmd=${MPIRUN:-mpirun}
relaunch_delay_s=${RELAUNCH_DELAY_S:-60}
# Under PBS, hand mpirun the node file: Debian's Open MPI has no PBS (TM) support to find it.
hostfile=()
[ -n "${PBS_NODEFILE:-}" ] && hostfile=(--hostfile "$PBS_NODEFILE")

# mpirun runs in a process group of its own (job control), so that a Ctrl-C at the terminal
# reaches only this script, which forwards it as SIGUSR1: given SIGINT itself, Open MPI would
# abort the job (SIGTERM to the ranks, SIGKILL a second later) and exit 1.
set -m

# Every stop signal is forwarded (checkpoint and stop). USR1 (Slurm's --signal warning, or
# `scancel --signal=USR1 --batch`) then asks for a requeue; so does TERM under PBS, which sends
# nothing else (walltime, pre-emption, qdel). Under Slurm a TERM alone is `scancel` (or Slurm's
# own requeue or pre-emption, which need no help): the job stops for good.
# A Ctrl-C (INT) is the user's: stop, never requeue.
stopping=0
stop_signal=
requeue_wanted=0
child=0
forward() {
  stopping=1
  stop_signal=$1
  if [ "$1" = USR1 ] || { [ "$1" = TERM ] && [ -z "${SLURM_JOB_ID:-}" ]; }; then
    requeue_wanted=1
  fi
  [ "$child" -gt 0 ] && kill -USR1 "$child" 2>/dev/null
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM
trap 'forward INT' INT

# run_and_wait CMD...: starts CMD and waits for it; a trapped signal interrupts `wait`, so
# the loop waits again until CMD has really exited. Sets rc to CMD's exit status.
run_and_wait() {
  # stdin from /dev/null: in its own process group, mpirun reading the terminal would be stopped.
  "$@" </dev/null &
  child=$!
  # A signal between `&` and `child=$!` found no child to forward to: forward it now.
  [ "$stopping" -eq 1 ] && kill -USR1 "$child" 2>/dev/null
  wait "$child"; rc=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done
  child=0
}

requeue_and_exit() {
  if [ -z "$requeue" ]; then
    echo "no requeue command: run this script again to resume"
    exit 75
  fi
  echo "requeueing: $requeue"
  $requeue || { echo "requeue failed (status $?): resubmit the job by hand to resume" >&2; exit 1; }
  exit 0
}
stop_and_exit() {
  if [ "$requeue_wanted" -eq 0 ] && [ "$stop_signal" = INT ]; then
    echo "stopped by Ctrl-C (SIGINT): runs checkpointed; run the same command again to resume"
    exit 75
  fi
  if [ "$requeue_wanted" -eq 0 ]; then
    echo "stopped by SIGTERM under Slurm (scancel): not requeueing; submit again to resume"
    exit 75
  fi
  requeue_and_exit
}

for attempt in 1 2 3 4 5; do
  # A signal during the relaunch sleep (or before the first launch) means stop, not start again.
  if [ "$stopping" -eq 1 ]; then
    echo "stop signal received between sweeps"
    stop_and_exit
  fi
  run_and_wait $mpirun_cmd -np "$ranks" "${hostfile[@]}" "$depthbench" sweep "$suite" \
    --ranks-per-run "$ranks_per_run" --out "$out" --quiet
  if [ "$rc" -eq 0 ]; then
    echo "sweep complete: every run has a final run file"
    exit 0
  fi
  if [ "$stopping" -eq 1 ]; then
    echo "stopped by a signal: runs resume from their last checkpoint"
    stop_and_exit
  fi
  if [ "$rc" -ne 75 ]; then
    # 1 is depthbench's permanent error; 127 a missing binary; anything else a crash that a
    # relaunch would most likely repeat. Requeueing would hold the allocation for ever.
    echo "sweep failed with status $rc: not relaunching, not requeueing" >&2
    exit "$rc"
  fi
  # 75 without a signal: some runs are held by another sweep on the same directory; wait.
  echo "sweep exited 75 (attempt $attempt): runs unfinished; relaunching in $relaunch_delay_s s"
  # In the background so that the trap runs as soon as a signal arrives, not after the sleep.
  run_and_wait sleep "$relaunch_delay_s"
done
requeue_and_exit
