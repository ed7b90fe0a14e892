#!/bin/bash
# The relaunch loop every job script calls: runs `depthbench sweep` until every run of the suite
# has a final run file. On SIGUSR1/SIGTERM (Slurm's --signal, PBS's pre-emption) the signal is
# forwarded to mpirun, which passes it to every rank: each running run writes a checkpoint and
# stops; the sweep exits 75 and the job asks to be requeued (the next job resumes).
# usage: run_sweep.sh SUITE.ini OUT_DIR RANKS RANKS_PER_RUN [REQUEUE_COMMAND]
set -uo pipefail
suite=$1 out=$2 ranks=$3 ranks_per_run=$4 requeue=${5:-}
depthbench=${DEPTHBENCH:-depthbench}
mpirun_cmd=${MPIRUN:-mpirun}
stopping=0
child=0
forward() { stopping=1; [ "$child" -gt 0 ] && kill -USR1 "$child" 2>/dev/null; }
trap forward USR1 TERM
for attempt in 1 2 3 4 5; do
  $mpirun_cmd -np "$ranks" "$depthbench" sweep "$suite" --ranks-per-run "$ranks_per_run" --out "$out" --quiet &
  child=$!
  wait "$child"; rc=$?
  while kill -0 "$child" 2>/dev/null; do wait "$child"; rc=$?; done  # wait returns early on a trapped signal
  child=0
  [ "$rc" -eq 0 ] && { echo "sweep complete: every run has a final run file"; exit 0; }
  if [ "$stopping" -eq 1 ]; then
    echo "stopped by a signal (checkpoints written); requeueing"
    [ -n "$requeue" ] && $requeue
    exit 0
  fi
  # 75: runs held by another sweep or interrupted; other codes: a crash. Both resume on relaunch.
  echo "sweep exited $rc (attempt $attempt); relaunching in 60 s"
  sleep 60
done
[ -n "$requeue" ] && $requeue
exit 1
