#!/bin/bash
# Unit tests of jobs/run_sweep.sh's decisions with a fake mpirun (fake_mpirun.sh) and a fake
# requeue command: a stop signal or exit 75 requeues, a permanent error stops for good with a
# non-zero status, a signal is honoured at any moment (during a sweep, during the relaunch sleep).
# Then checks on the job scripts themselves for what broke on a real cluster (issue 16). Seconds.
# usage: run_sweep_logic.sh SOURCE_DIR WORK_DIR ["MPIRUN..."]  (the real mpirun is optional)
set -uo pipefail
SOURCE_DIR=$1
WORK=$2
mpirun_list=${3:-}
read -r -a REAL_MPIRUN <<<"${mpirun_list//;/ }"  # CMake passes the list ;-separated
RUN_SWEEP=$SOURCE_DIR/jobs/run_sweep.sh
rm -rf "$WORK"
mkdir -p "$WORK"
failures=0

# start_case NAME PLAN_LINE...: a fresh directory, the fake's plan (one line per launch), and the
# environment run_sweep.sh reads, with no relaunch delay unless a case sets one.
start_case() {
  case_name=$1; shift
  dir=$WORK/$case_name
  mkdir -p "$dir"
  printf '%s\n' "$@" >"$dir/plan"
  : >"$dir/launches"
  export FAKE_PLAN=$dir/plan FAKE_LOG=$dir/launches MPIRUN=$SOURCE_DIR/tests/jobs/fake_mpirun.sh
  export DEPTHBENCH=depthbench REQUEUE_COMMAND="touch $dir/requeued" RELAUNCH_DELAY_S=0
  unset PBS_NODEFILE SLURM_JOB_ID
  echo "-- $case_name"
}
start_sweep() { bash "$RUN_SWEEP" suite.ini "$dir/out" 2 1 >"$dir/log" 2>&1 & sweep_pid=$!; }
# wait_until COMMAND...: polls for up to 20 s.
wait_until() {
  local _
  for _ in $(seq 400); do "$@" && return 0; sleep 0.05; done
  return 1
}
not_running() { ! kill -0 "$sweep_pid" 2>/dev/null; }
# finish_sweep: waits for run_sweep.sh (killing it after 20 s, a failure) and sets status.
finish_sweep() {
  wait_until not_running || { kill "$sweep_pid"; check "run_sweep.sh ends within 20 s" false; }
  status=0
  wait "$sweep_pid" || status=$?
}
run_sweep() { start_sweep; finish_sweep; }
# check DESCRIPTION COMMAND...: one assertion; on failure prints run_sweep.sh's output.
check() {
  local what=$1; shift
  if "$@"; then return; fi
  echo "FAIL $case_name: $what"
  sed 's/^/    | /' "$dir/log"
  failures=$((failures + 1))
}
launches() { wc -l <"$dir/launches"; }
requeued() { [ -f "$dir/requeued" ]; }
not() { ! "$@"; }
log_says() { grep -q -- "$1" "$dir/log"; }

start_case completed_sweep_exits_0_without_requeue "exit 0"
run_sweep
check "exit status 0" [ "$status" -eq 0 ]
check "one launch" [ "$(launches)" -eq 1 ]
check "no requeue" not requeued

# USR1: Slurm's warning before the time limit; TERM: PBS's walltime, pre-emption or qdel.
for signal in USR1 TERM; do
  start_case "stop_signal_${signal}_is_forwarded_then_requeues" "until-signal 75"
  start_sweep
  wait_until [ -f "$dir/launches.running" ]
  kill -"$signal" "$sweep_pid"
  finish_sweep
  check "exit status 0 after the requeue" [ "$status" -eq 0 ]
  check "requeue requested" requeued
  check "one launch (no relaunch after a stop)" [ "$(launches)" -eq 1 ]
done

# Ctrl-C at a terminal: SIGINT to the script's process group. mpirun (here the fake) runs in
# its own group, so only the script sees it and forwards it as USR1: exit 75, no requeue.
start_case ctrl_c_stops_cleanly_without_requeue "until-signal 75"
# A background job of this script starts with SIGINT ignored, which bash cannot trap: perl
# restores its default first, as a terminal's foreground job has it.
setsid perl -e '$SIG{INT} = "DEFAULT"; exec @ARGV' bash "$RUN_SWEEP" suite.ini "$dir/out" 2 1 \
  >"$dir/log" 2>&1 &
sweep_pid=$!
wait_until [ -f "$dir/launches.running" ]
kill -INT -- -"$sweep_pid"  # the whole foreground group, as the terminal does
finish_sweep
check "exit status 75 (resumable)" [ "$status" -eq 75 ]
check "no requeue" not requeued
check "says how to resume" log_says "run the same command again to resume"
check "one launch" [ "$(launches)" -eq 1 ]

start_case scancel_under_slurm_stops_without_requeue "until-signal 75"
export SLURM_JOB_ID=4242  # scancel sends SIGTERM; Slurm's time-limit warning is USR1
start_sweep
wait_until [ -f "$dir/launches.running" ]
kill -TERM "$sweep_pid"
finish_sweep
check "exit status 75 (resumable)" [ "$status" -eq 75 ]
check "no requeue" not requeued
check "one launch" [ "$(launches)" -eq 1 ]

start_case stop_without_requeue_command_exits_75 "until-signal 75"
unset REQUEUE_COMMAND
start_sweep
wait_until [ -f "$dir/launches.running" ]
kill -USR1 "$sweep_pid"
finish_sweep
check "exit status 75 (resumable)" [ "$status" -eq 75 ]

start_case failed_requeue_is_an_error "until-signal 75"
export REQUEUE_COMMAND=false
start_sweep
wait_until [ -f "$dir/launches.running" ]
kill -USR1 "$sweep_pid"
finish_sweep
check "exit status 1" [ "$status" -eq 1 ]
check "says to resubmit by hand" log_says "resubmit the job by hand"

start_case stop_that_finds_the_sweep_done_does_not_requeue "until-signal 0"
start_sweep
wait_until [ -f "$dir/launches.running" ]
kill -USR1 "$sweep_pid"
finish_sweep
check "exit status 0" [ "$status" -eq 0 ]
check "no requeue" not requeued

start_case permanent_error_stops_without_requeue "exit 1" "exit 0"
run_sweep
check "exit status 1" [ "$status" -eq 1 ]
check "one launch" [ "$(launches)" -eq 1 ]
check "no requeue" not requeued

start_case crash_stops_without_requeue "exit 139" "exit 0"
run_sweep
check "exit status 139" [ "$status" -eq 139 ]
check "one launch" [ "$(launches)" -eq 1 ]
check "no requeue" not requeued

if [ ${#REAL_MPIRUN[@]} -gt 0 ]; then
  # The issue's reproduction: no depthbench where DEPTHBENCH points, launched by the real mpirun.
  start_case missing_binary_stops_without_requeue
  export MPIRUN="${REAL_MPIRUN[*]}" DEPTHBENCH=$WORK/no/such/depthbench
  run_sweep
  check "non-zero exit status" [ "$status" -ne 0 ]
  check "no requeue" not requeued
fi

start_case exit_75_relaunches_then_succeeds "exit 75" "exit 0"
run_sweep
check "exit status 0" [ "$status" -eq 0 ]
check "two launches" [ "$(launches)" -eq 2 ]
check "no requeue" not requeued

start_case exit_75_five_times_requeues "exit 75" "exit 75" "exit 75" "exit 75" "exit 75" "exit 0"
run_sweep
check "exit status 0 after the requeue" [ "$status" -eq 0 ]
check "five launches" [ "$(launches)" -eq 5 ]
check "requeue requested" requeued

start_case signal_during_relaunch_sleep_is_honoured "exit 75" "exit 0"
export RELAUNCH_DELAY_S=30
start_sweep
wait_until log_says "relaunching in 30 s"
SECONDS=0
kill -USR1 "$sweep_pid"
finish_sweep
check "stops within 5 s, not after the 30 s sleep" [ "$SECONDS" -lt 5 ]
check "no second launch" [ "$(launches)" -eq 1 ]
check "requeue requested" requeued
check "exit status 0" [ "$status" -eq 0 ]

start_case pbs_node_file_is_passed_to_mpirun "exit 0"
export PBS_NODEFILE=$dir/nodes
run_sweep
check "mpirun gets --hostfile \$PBS_NODEFILE" grep -q -- "--hostfile $dir/nodes " "$dir/launches"

# The job scripts: what a fresh clone needs, and no privileged or missing commands.
case_name=job_scripts dir=$WORK/job_scripts
mkdir -p "$dir"
: >"$dir/log"
echo "-- $case_name"
for script in "$SOURCE_DIR"/jobs/slurm/*.sbatch "$SOURCE_DIR"/jobs/pbs/*.pbs; do
  name=${script#"$SOURCE_DIR"/}
  check "$name: bash -n" bash -n "$script"
  suite=$(grep -o 'run_sweep.sh input/[^ ]*\.ini' "$script" | cut -d' ' -f2)
  check "$name: its suite file ${suite:-(none)} exists" [ -n "$suite" -a -f "$SOURCE_DIR/$suite" ]
  output=$(sed -n 's/^#SBATCH --output=//p' "$script")
  # Slurm opens --output before the script runs and creates no directory (issue 16, fix 1).
  if [ -n "$output" ]; then
    check "$name: --output directory $(dirname "$output") is in the repository" \
      [ -d "$SOURCE_DIR/$(dirname "$output")" ]
  fi
  # qrerun needs PBS operator privilege (issue 16, fix 4); a PBS job resubmits itself instead.
  check "$name: does not call qrerun" not grep -q '^[^#]*qrerun' "$script"
  case $name in
    *.pbs) resubmit="qsub -W depend=afterany:\$PBS_JOBID $name" ;;
    *.sbatch) resubmit="scontrol requeue \$SLURM_JOB_ID" ;;
  esac
  check "$name: requeues itself with $resubmit" grep -q -F "$resubmit" "$script"
done

echo "$failures failed"
[ "$failures" -eq 0 ] && echo PASS
[ "$failures" -eq 0 ]
