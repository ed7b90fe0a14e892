#!/usr/bin/env bash
# tests/gpu/check.sh's own logic in a fake bundle, without a GPU (CTest gpu.check_script, under a
# minute): a fake nvidia-smi that lists four GPUs (a line at a time, as a pipe reader that stops
# early would see them), stub programs in place of depthbench, mpirun and the gpu tests. Checks
# what the first GPU run relies on:
#   - a node with several GPUs is not taken for one without (nvidia-smi -L read whole);
#   - a program that hangs is stopped after PROGRAM_S and the programs after it still run;
#   - the stages of STAGES share BUDGET_S;
#   - the summary and the log archive are in OUT after every row, so a check killed with SIGKILL
#     (a remote call's time limit) still returns the rows and logs of what it did;
#   - a finished check says so in its summary, with its exit status.
# usage: check_script_test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
SRC=${1:?source dir}
WORK=${2:?work dir}
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
FAILS=0
check() {  # DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; FAILS=$((FAILS + 1)); fi
}

# The fake bundle: env.sh, root/{bin,libexec}, gpu-tests.txt, VERSION; a fake nvidia-smi.
B=$WORK/bundle R=$WORK/bundle/root
mkdir -p "$R/bin" "$R/libexec" "$WORK/fakebin"
stub() {  # PATH BODY
  printf '#!/bin/sh\n%s\n' "$2" >"$1" && chmod +x "$1"
}
cat >"$B/env.sh" <<EOF
DB_BUNDLE=$B DB_BUNDLE_ROOT=$R DB_BUNDLE_LD_PATH=$R/lib DB_BUNDLE_SOURCED=$B
export DB_BUNDLE DB_BUNDLE_ROOT DB_BUNDLE_LD_PATH DB_BUNDLE_SOURCED
export PATH=$WORK/fakebin:\$PATH
EOF
echo "fake bundle" >"$R/VERSION"
stub "$WORK/fakebin/nvidia-smi" 'case "$1" in
  -L) for i in 0 1 2 3; do echo "GPU $i: Fake H200 (UUID: GPU-$i)"; sleep 0.2; done ;;
  --query-gpu=*) echo "Fake H200, 143771 MiB, 580.00" ;;
  *) echo "| NVIDIA-SMI 580.00   Driver Version: 580.00   CUDA Version: 13.0 |" ;;
esac'
stub "$R/bin/depthbench" 'echo "depthbench (stub)"'
cp "$R/bin/depthbench" "$R/libexec/depthbench"
stub "$R/bin/mpirun" 'exit 0'
stub "$R/bin/b_pass_test" 'echo "*** No errors detected"'
stub "$R/bin/a_hang_test" 'exec sleep 300'
stub "$R/bin/c_fail_test" 'echo "error: a deliberate failure"; exit 1'

summary_has() {  # FILE PATTERN
  grep -qE "$2" "$1"
}
# The listing is read whole: grep -q at the end of a pipe can stop reading before tar is done,
# and tar's SIGPIPE fails the pipe under pipefail.
archive_has() {  # ARCHIVE MEMBER
  local members
  members=$(tar -tzf "$1" 2>/dev/null) && grep -qx "$2" <<<"$members"
}

# 1. A hang, a pass and a failure: the hang is cut at PROGRAM_S, the others run; exit status 1.
echo "a_hang_test b_pass_test c_fail_test" >"$R/gpu-tests.txt"
OUT1=$WORK/out1
start=$(date +%s)
OUT=$OUT1 WORK=$WORK/check1 STAGES="env ops" BUDGET_S=120 PROGRAM_S=3 \
  bash "$SRC/tests/gpu/check.sh" --bundle "$B" >"$WORK/check1.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
check "a node whose nvidia-smi lists several GPUs has a GPU" \
  bash -c "! grep -q 'no GPU' '$OUT1/gpu_check_summary.txt'"
check "exit status 1 when a program fails (got $rc)" test "$rc" = 1
check "the hanging program is stopped after PROGRAM_S (check took ${took}s)" test "$took" -lt 60
# env and ops alone share the 120 s: ops gets 170/200 of them, less what env took (else 43 s).
ops_limit=$(sed -n 's/.*stage ops (limit \([0-9]*\)s).*/\1/p' "$WORK/check1.log")
check "the stages run share the whole budget (ops limit ${ops_limit:-?}s)" test "${ops_limit:-0}" -gt 60
check "the hang is a FAIL row naming the limit" \
  summary_has "$OUT1/gpu_check_summary.txt" "ops a_hang_test +\| FAIL +\| timed out \(at most 3s"
check "the program after the hang ran" summary_has "$OUT1/gpu_check_summary.txt" "ops b_pass_test +\| pass"
check "the failing program is a FAIL row" summary_has "$OUT1/gpu_check_summary.txt" "ops c_fail_test +\| FAIL"
check "the summary says the check finished" \
  summary_has "$OUT1/gpu_check_summary.txt" "^state: finished, exit status 1"
check "the archive holds every program's log" archive_has "$OUT1/gpu_check_logs.tar.gz" logs/c_fail_test.log
check "no partial files are left in OUT" bash -c "! compgen -G '$OUT1/*.part' >/dev/null"

# 2. Killed with SIGKILL while a program hangs: OUT still holds the rows and logs before it.
echo "b_pass_test a_hang_test" >"$R/gpu-tests.txt"
OUT2=$WORK/out2
OUT=$OUT2 WORK=$WORK/check2 STAGES="env ops" BUDGET_S=300 PROGRAM_S=200 \
  setsid bash "$SRC/tests/gpu/check.sh" --bundle "$B" >"$WORK/check2.log" 2>&1 &
pid=$!
for ((i = 0; i < 120; ++i)); do  # until the row of the program before the hang is in OUT
  [[ -f $OUT2/gpu_check_summary.txt ]] && grep -q "ops b_pass_test" "$OUT2/gpu_check_summary.txt" && break
  sleep 0.5
done
sleep 1  # the hanging program has started
kill -KILL -- -"$pid" 2>/dev/null  # the whole session: check.sh, timeout and the hang
wait "$pid" 2>/dev/null
check "after SIGKILL the summary holds the env row" summary_has "$OUT2/gpu_check_summary.txt" "^env +\| pass"
check "after SIGKILL the summary holds the row before the hang" \
  summary_has "$OUT2/gpu_check_summary.txt" "ops b_pass_test +\| pass"
check "after SIGKILL the summary says the check did not finish" \
  summary_has "$OUT2/gpu_check_summary.txt" "^state: unfinished"
check "after SIGKILL the archive holds the logs written before it" \
  archive_has "$OUT2/gpu_check_logs.tar.gz" logs/b_pass_test.log

if ((FAILS)); then
  echo "$FAILS check(s) failed; logs: $WORK/check1.log, $WORK/check2.log"
  exit 1
fi
echo "all checks passed"
