#!/bin/bash
# jobs/slurm/demo.sbatch on a real one-node Slurm cluster (Debian's slurmctld, slurmd and munge,
# state in a temporary directory), as a fresh checkout submits it, run as the unprivileged user
# `nobody`, on a tiny suite:
# - a permanent error (no depthbench binary) fails the job at once, without a requeue;
# - a stop signal mid-sweep (scancel --signal=USR1 --batch: what --signal=B:USR1@120 sends)
#   checkpoints every run, the job requeues itself, resumes and completes, and the curves match an
#   uninterrupted sweep bit for bit;
# - a plain scancel mid-sweep ends the job for good (no requeue).
# Root only: it installs the packages when missing and runs the daemons. Under a minute once the
# packages are there.
# usage: slurm_requeue.sh DEPTHBENCH PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
DEPTHBENCH=$1
PYTHON=$2
SOURCE_DIR=$3
WORK=$4
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || skip "needs root: installs Slurm from Debian's packages, runs its daemons"
ls /usr/share/games/fortunes/fortunes >/dev/null 2>&1 || skip "no fortunes corpus"
"$PYTHON" -c "import h5py" 2>/dev/null || skip "h5py missing for $PYTHON"
rm -rf "$WORK"
mkdir -p "$WORK"
# wait_for SECONDS COMMAND...: polls every 0.2 s until COMMAND succeeds or SECONDS have passed.
wait_for() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ "$SECONDS" -lt "$deadline" ] || return 1; sleep 0.2; done
}

have_slurm() {
  local tool
  for tool in slurmctld slurmd sbatch scontrol munged; do
    command -v "$tool" >/dev/null || return 1
  done
}
if ! have_slurm; then
  echo "installing slurmctld slurmd slurm-client munge"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get -o DPkg::Lock::Timeout=120 update &&
    apt-get -o DPkg::Lock::Timeout=120 install -y --no-install-recommends \
      slurmctld slurmd slurm-client munge; } >"$WORK/apt.log" 2>&1 ||
    { tail -5 "$WORK/apt.log"; skip "could not install Slurm (log above)"; }
  have_slurm || skip "Slurm's tools missing after the install"
fi

# The cluster: state, sockets and logs in a temporary directory (short: munge's socket path must
# fit in 108 bytes); two free ports, so that neither a system Slurm (6817/6818) nor a cluster left
# by a killed run is in the way.
CLUSTER=$(mktemp -d /tmp/depthbench-slurm.XXXXXX)
chmod 755 "$CLUSTER"  # munged wants its socket's directory open to all
daemons=()
teardown() {
  # Jobs first: their slurmstepd and ranks outlive slurmd. Then the daemons, always.
  if [ ${#daemons[@]} -ge 2 ]; then
    scancel --full $(squeue -h -o %i 2>/dev/null) 2>/dev/null || true
    wait_for 10 no_jobs_left || true
  fi
  kill "${daemons[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  # Kept for a failure's post-mortem: the daemons' logs and the jobs'.
  cp "$CLUSTER"/*.log "$CLUSTER"/checkout/jobs/logs/*.out "$WORK/" 2>/dev/null || true
  rm -rf "$CLUSTER"
}
trap teardown EXIT
trap 'exit 1' TERM INT  # so that a timeout's SIGTERM still tears the cluster down
no_jobs_left() { [ -z "$(squeue -h 2>/dev/null)" ]; }
host=$(hostname -s)
read -r slurmctld_port slurmd_port < <("$PYTHON" -c "import socket
sockets = [socket.socket() for _ in range(2)]
for s in sockets: s.bind(('127.0.0.1', 0))
print(*[s.getsockname()[1] for s in sockets])")
dd if=/dev/urandom of="$CLUSTER/munge.key" bs=1024 count=1 status=none
chmod 600 "$CLUSTER/munge.key"
mkdir -p "$CLUSTER/state" "$CLUSTER/spool"
# cred_expire: Slurm holds a requeued job cred_expire + 1 s before it may start (default 120 s);
# sched_interval: how often pending jobs are looked at (default 60 s). Both cut for a quick test.
cat >"$CLUSTER/slurm.conf" <<EOF
ClusterName=depthbench-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$slurmctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$CLUSTER/munge.sock,cred_expire=10
SchedulerParameters=sched_interval=1
StateSaveLocation=$CLUSTER/state
SlurmdSpoolDir=$CLUSTER/spool
SlurmctldPidFile=$CLUSTER/slurmctld.pid
SlurmdPidFile=$CLUSTER/slurmd.pid
SlurmctldLogFile=$CLUSTER/slurmctld.log
SlurmdLogFile=$CLUSTER/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$CLUSTER/slurm.conf
munged -F --socket="$CLUSTER/munge.sock" --key-file="$CLUSTER/munge.key" \
  --pid-file="$CLUSTER/munged.pid" --log-file="$CLUSTER/munged.log" \
  --seed-file="$CLUSTER/munged.seed" >"$CLUSTER/munged.out.log" 2>&1 &
daemons+=($!)
wait_for 10 [ -S "$CLUSTER/munge.sock" ] ||
  { cat "$CLUSTER/munged.log"; fail "munged did not start"; }
slurmctld -D >"$CLUSTER/slurmctld.out.log" 2>&1 &
daemons+=($!)
slurmd -D >"$CLUSTER/slurmd.out.log" 2>&1 &
daemons+=($!)
node_idle() { [ "$(timeout 5 sinfo -h -o %T 2>/dev/null)" = idle ]; }
wait_for 30 node_idle || { tail "$CLUSTER"/*.log; fail "the node did not come up"; }
echo "cluster up: $(sinfo -h -o '%P %D %T %c')"

# The submit directory: what a fresh checkout has under jobs/, and input/demo.ini replaced by a
# tiny suite (two runs, one per rank, a few seconds each) on data made here. The jobs run as
# `nobody`, as a user's would (Open MPI, scontrol requeue without privilege): their directory,
# binary and data sit under the cluster's directory, which every user can reach.
TREE=$CLUSTER/checkout
mkdir -p "$TREE/input"
(cd "$SOURCE_DIR" && git ls-files -z jobs | xargs -0 cp --parents -t "$TREE") ||
  cp -r "$SOURCE_DIR/jobs" "$TREE/"  # not a git checkout: everything under jobs/
install -m 755 "$DEPTHBENCH" "$CLUSTER/depthbench"
DEPTHBENCH=$CLUSTER/depthbench
"$DEPTHBENCH" tokenize --tokenizer bytes --format fortunes \
  --input /usr/share/games/fortunes/fortunes --val-fraction 0.05 --out "$CLUSTER/data" >/dev/null
sed -e "s#@DATA@#$CLUSTER/data#" -e 's/^name = tiny/name = demo/' \
  -e 's/^designs = .*/designs = pre_ln/' -e 's/^pre_ln = .*/pre_ln = 3e-3/' \
  -e 's/^train.steps = .*/train.steps = 240/' \
  -e 's/^train.checkpoint_interval = .*/train.checkpoint_interval = 20/' \
  "$SOURCE_DIR/tests/sweep/tiny_suite.ini.in" >"$TREE/input/demo.ini"
chown -R nobody:nogroup "$TREE"
cd "$TREE"
export DEPTHBENCH  # sbatch hands the submitter's environment to the job
submit() { sbatch --parsable --uid=nobody --gid=nogroup jobs/slurm/demo.sbatch; }

# job_field JOB FIELD: one field of `scontrol show job`.
job_field() { scontrol show job "$1" | grep -o "\b$2=[^ ]*" | head -1 | cut -d= -f2; }
job_state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }
restarts_are() { [ "$(job_field "$1" Restarts)" = "$2" ]; }
job_over() { [[ ! "$(job_field "$1" JobState)" =~ ^(PENDING|RUNNING)$ ]]; }
has_checkpoint() { compgen -G "runs/demo/*.ckpt" >/dev/null; }
checkpoint_or_over() { has_checkpoint || job_over "$1"; }
cancelled_or_restarted() { job_state_is "$1" CANCELLED || restarts_are "$1" 1; }
job_log() { echo "jobs/logs/db-demo-$1.out"; }
log_says() { grep -q -- "$2" "$(job_log "$1")"; }
# must JOB WHAT COMMAND...: unless COMMAND succeeds, shows the job (state, log) and fails.
must() {
  local job=$1 what=$2
  shift 2
  "$@" && return
  scontrol show job "$job" | grep -E 'JobState|Restarts|ExitCode'
  cat "$(job_log "$job")" 2>/dev/null
  fail "job $job: $what"
}

start=$SECONDS
echo "-- a permanent error: no depthbench where DEPTHBENCH points"
job=$(DEPTHBENCH=$CLUSTER/no/such/depthbench submit)
must "$job" "did not fail" wait_for 60 job_state_is "$job" FAILED
must "$job" "was requeued" restarts_are "$job" 0
must "$job" "no reason in its log" log_says "$job" "not relaunching, not requeueing"
echo "job $job: FAILED, exit code $(job_field "$job" ExitCode), not requeued"

echo "-- stop signal mid-sweep, requeue, resume"
job=$(submit)
must "$job" "wrote no checkpoint" wait_for 120 checkpoint_or_over "$job"
must "$job" "wrote no checkpoint" has_checkpoint
scancel --signal=USR1 --batch "$job"
must "$job" "was not requeued" wait_for 60 restarts_are "$job" 1
echo "job $job requeued after $((SECONDS - start)) s, reason $(job_field "$job" Reason)"
# The checkpointed curves, kept to prove below that the next job resumed rather than retrained.
mkdir "$WORK/at_stop"
cp runs/demo/*.ckpt.run "$WORK/at_stop/"
must "$job" "did not complete" wait_for 120 job_state_is "$job" COMPLETED
echo "job $job completed after $((SECONDS - start)) s, exit code $(job_field "$job" ExitCode)"
must "$job" "no run was interrupted: make the suite longer" \
  log_says "$job" "interrupted: stop signal, checkpoint written"
# (Slurm's "CANCELLED ... DUE TO JOB REQUEUE" appears only when the kill beats the script's exit.)
must "$job" "no requeue in its log" log_says "$job" "requeueing: scontrol requeue $job"
must "$job" "not one complete sweep" [ "$(grep -c "sweep complete" "$(job_log "$job")")" = 1 ]
must "$job" "did not run as nobody" [ "$(stat -c %U runs/demo)" = nobody ]

# Rows written before the stop keep their step_time_s (a wall-clock time, never reproduced by
# retraining) only if the requeued job resumed from the checkpoint.
"$PYTHON" - "$WORK/at_stop" runs/demo <<'PY'
import glob, os, sys
import h5py
for stopped_path in glob.glob(os.path.join(sys.argv[1], "*.ckpt.run")):
    name = os.path.basename(stopped_path)[:-len(".ckpt.run")]
    stopped = h5py.File(stopped_path, "r")["curves/step_time_s"][:]
    final = h5py.File(os.path.join(sys.argv[2], name + ".h5"), "r")["curves/step_time_s"][:]
    if len(stopped) == 0 or final[:len(stopped)].tobytes() != stopped.tobytes():
        sys.exit(f"{name}: the requeued job did not resume from the checkpoint")
    print(f"{name}: resumed after {len(stopped)} rows")
PY
mpirun --allow-run-as-root --oversubscribe -np 2 "$DEPTHBENCH" sweep input/demo.ini \
  --ranks-per-run 1 --out "$WORK/reference" --quiet >"$WORK/reference.log"
"$PYTHON" "$SOURCE_DIR/tests/sweep/compare_curves.py" --exact "$WORK/reference" runs/demo

echo "-- scancel mid-sweep: the job stops for good"
rm -rf runs/demo
job=$(submit)
must "$job" "wrote no checkpoint" wait_for 120 checkpoint_or_over "$job"
must "$job" "wrote no checkpoint" has_checkpoint
scancel "$job"
must "$job" "did not end" wait_for 60 cancelled_or_restarted "$job"
must "$job" "was requeued after scancel" restarts_are "$job" 0
must "$job" "no reason in its log" log_says "$job" "not requeueing"
echo "job $job: CANCELLED, not requeued"
echo "PASS ($((SECONDS - start)) s from the first submission)"
