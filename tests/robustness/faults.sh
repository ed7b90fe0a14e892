#!/usr/bin/env bash
# Faults of the machine during training, on real mpirun ranks:
#  1. a disk that fills up during a two-rank run (rank 0 writes the files): both ranks stop within
#     seconds with exit 74 and "No space left on device", the run stays resumable, and once space
#     is back the same command resumes it from its last checkpoint to completion;
#  2. the same on one rank (no crash in HDF5's exit cleanup);
#  2b. a disk too small for the run, filled by its own files, under `sweep` on 2 ranks with
#     --ranks-per-run 1 and 2 and on 1 rank, and under `train` on 2 and 1 ranks: exit 74 with the
#     one clear line and no rank killed by a signal (a failed close of an HDF5 file crashed
#     HDF5's shutdown: SIGSEGV, status 139);
#  3. a rank killed with SIGKILL mid-run: the job ends in seconds, a rerun resumes and completes;
#  4. SIGTERM to mpirun: the ranks checkpoint and the job exits 75.
# The full-disk cases need a tmpfs mount, so root; elsewhere they are skipped with a message.
# Their mounts live in a private mount namespace, so they vanish with the test even when CTest
# kills it at its timeout (an EXIT trap does not run then).
if [ "$(id -u)" -eq 0 ] && [ -z "${DB_FAULTS_NAMESPACE:-}" ] &&
  unshare --mount --propagation private true 2>/dev/null; then
  DB_FAULTS_NAMESPACE=1 exec unshare --mount --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/../sweep/common.sh"
source "$(dirname "$0")/probe_run.sh"
cd "$WORK"
probe_ini long.ini --train.steps=4000 --train.micro_batch=1 --train.val_interval=500 \
  --train.checkpoint_interval=20
sed -i '/^dir = runs$/d' long.ini  # each case names its own --output.dir

# wait_for FILE SECONDS: until FILE exists.
wait_for() {
  for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done
  fail "$1 did not appear within $2 s"
}

# The full-disk case on NP ranks: fill the disk after the first checkpoint, expect exit 74, free
# the space, rerun, expect a completed run that resumed.
full_disk() {
  local np=$1 dir=$WORK/small_$1
  mkdir -p "$dir"
  mount -t tmpfs -o size=4m tmpfs "$dir"
  mounted+=("$dir")
  local rc=0
  timeout 120 "${MPIRUN[@]}" -np "$np" "$DEPTHBENCH" train --config long.ini --output.dir "$dir" \
    >"disk$np.out" 2>"disk$np.err" &
  local job=$!
  wait_for "$dir/probe.ckpt" 60
  dd if=/dev/zero of="$dir/filler" bs=4k 2>/dev/null || true  # fills the disk to the last byte
  wait $job || rc=$?
  [ "$rc" -eq 74 ] || fail "full disk on $np rank(s): exit $rc, expected 74: $(tail -3 "disk$np.err")"
  grep -q "No space left on device: $dir/probe" "disk$np.err" ||
    fail "full disk on $np rank(s): no 'No space left on device' naming the file: $(cat "disk$np.err")"
  [ ! -e "$dir/probe.h5" ] || fail "full disk on $np rank(s): the run was published"
  rm -f "$dir/filler"
  timeout 300 "${MPIRUN[@]}" -np "$np" "$DEPTHBENCH" train --config long.ini --output.dir "$dir" \
    >"resume$np.out" 2>&1 || fail "resume after the full disk failed: $(tail -3 "resume$np.out")"
  grep -q "resuming at step" "resume$np.out" || fail "the rerun did not resume from the checkpoint"
  [ "$(h5attr "$dir/probe.h5" status)" = completed ] || fail "resumed run not completed"
  echo "full disk on $np rank(s): exit 74 with the reason, resumed to completion"
}

# A disk too small for the run, filled by the run's own files (as a 600 kB or 2 MB file system
# is): the failing write may hit the run file, a checkpoint or its copy, and closing an HDF5 file
# whose metadata cannot be written used to crash HDF5's shutdown (SIGSEGV, status 139, on main
# before issue 23 in every case below). Expects exit 74, CLEAR_LINE exactly once on stderr, no
# rank killed by a signal, a run reason naming a file on the disk, and no run published.
# usage: small_disk NAME SIZE NP CLEAR_LINE COMMAND...  (the mount point is appended to COMMAND)
small_disk() {
  local name=$1 size=$2 np=$3 clear_line=$4
  shift 4
  local dir=$WORK/$name rc=0
  mkdir -p "$dir"
  mount -t tmpfs -o size="$size" tmpfs "$dir"
  mounted+=("$dir")
  timeout 120 "${MPIRUN[@]}" -np "$np" "$DEPTHBENCH" "$@" "$dir" >"$name.out" 2>"$name.err" || rc=$?
  ! grep -qE "Signal:|Segmentation fault|core dumped" "$name.out" "$name.err" ||
    fail "$name: a rank died by a signal (exit $rc): $(grep -hE -A6 "Signal:" "$name.err")"
  [ "$rc" -eq 74 ] || fail "$name: exit $rc, expected 74: $(tail -5 "$name.err")"
  [ "$(grep -c "$clear_line" "$name.err")" -eq 1 ] ||
    fail "$name: not one '$clear_line' line: $(cat "$name.err")"
  grep -q "interrupted.*: $dir/" "$name.out" "$name.err" ||
    fail "$name: no reason naming a file in $dir: $(cat "$name.out" "$name.err")"
  ! ls "$dir"/*.h5 >/dev/null 2>&1 || fail "$name: a run was published: $(ls "$dir")"
  echo "$name: $size disk filled by the run on $np rank(s): exit 74, one clear line, no signal"
}

# The sweep on that disk: 2 ranks with --ranks-per-run 1 (two runs fill it at once) and 2, and
# 1 rank; the tiny suite's two runs, long enough to be running when the disk is full.
small_disks() {
  make_suite sweep_small.ini "designs=pre_ln" "pre_ln=3e-3" "train.steps=4000" \
    "train.checkpoint_interval=20" "train.val_interval=500"
  local stopped="depthbench sweep: stopped by a fault of the machine"
  small_disk sweep_np2_g1 600k 2 "$stopped" sweep sweep_small.ini --ranks-per-run 1 --out
  small_disk sweep_np2_g2 600k 2 "$stopped" sweep sweep_small.ini --ranks-per-run 2 --out
  small_disk sweep_np1_g1 600k 1 "$stopped" sweep sweep_small.ini --out
  local interrupted="depthbench train: run probe interrupted at step"
  small_disk train_np2 200k 2 "$interrupted" train --config long.ini --output.dir
  small_disk train_np1 200k 1 "$interrupted" train --config long.ini --output.dir
}

mounted=()
cleanup() { for m in "${mounted[@]}"; do umount -l "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
mkdir -p mount_probe
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=1m tmpfs mount_probe 2>/dev/null &&
  umount mount_probe; then
  full_disk 2
  full_disk 1
  small_disks
else
  echo "full-disk cases skipped: they need root to mount a small tmpfs"
fi

# A rank killed with SIGKILL: Open MPI ends the job; nothing is left waiting.
rc=0
timeout 120 "${MPIRUN[@]}" -np 2 "$DEPTHBENCH" train --config long.ini --output.dir killed \
  >killed.out 2>&1 &
job=$!
wait_for killed/probe.ckpt 60
start=$SECONDS
pkill -KILL -n -P "$(pgrep -P $job)" -f depthbench  # job = timeout, its child = mpirun
wait $job || rc=$?
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "killed rank: job exit $rc"
[ $((SECONDS - start)) -lt 60 ] || fail "killed rank: the job took $((SECONDS - start)) s to end"
timeout 300 "${MPIRUN[@]}" -np 2 "$DEPTHBENCH" train --config long.ini --output.dir killed \
  >killed_resume.out 2>&1 || fail "rerun after a killed rank failed: $(tail -3 killed_resume.out)"
grep -q "resuming at step" killed_resume.out || fail "the rerun after a killed rank did not resume"
echo "killed rank: the job ended $((SECONDS - start)) s after the kill, a rerun resumed"

# A stop signal, as the job scripts send it (SIGUSR1 to mpirun, which forwards it) or as a
# scheduler's time limit does (SIGTERM to every rank): checkpoint, then the documented exit 75.
# (SIGTERM to mpirun itself makes Open MPI abort the job with exit 1: doc/sweeps.md.)
stop_case() {
  local name=$1 rc=0
  "${MPIRUN[@]}" -np 2 "$DEPTHBENCH" train --config long.ini --output.dir "$name" >"$name.out" 2>&1 &
  local job=$!
  wait_for "$name/probe.ckpt" 60
  case $name in
    usr1_to_mpirun) kill -USR1 $job ;;
    term_to_ranks) pkill -TERM -P $job -f depthbench ;;
  esac
  wait $job || rc=$?
  [ "$rc" -eq 75 ] || fail "$name: exit $rc, expected 75: $(tail -5 "$name.out")"
  grep -q "interrupted at step .*: stop signal, checkpoint written" "$name.out" ||
    fail "$name: no checkpoint on the stop signal"
  echo "$name: checkpoint written, exit 75"
}
stop_case usr1_to_mpirun
stop_case term_to_ranks
