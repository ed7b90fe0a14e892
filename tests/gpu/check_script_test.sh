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
#   - a finished check says so in its summary, with its exit status;
#   - the summary's first table has one line per stage (pass / FAIL / skipped, counts, the worst
#     error/bound), then the first error line of each failure with its log's name;
#   - a program cut by the stage's end (not by its own PROGRAM_S) and one that finds no time left
#     are "skipped: stage time spent", not FAIL, and leave the exit status 0;
#   - the graph-capturing programs run without CUDA_LAUNCH_BLOCKING, the others with it;
#   - the hf stage compares in one Python process and writes one row per comparison;
#   - a check killed from outside leaves its running stage "unfinished".
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
stub "$R/bin/depthbench" 'if [ "$1" = selftest ]; then
  echo "verdict: pass — 40 passed, 0 failed, 2 skipped; worst error/tolerance 0.3"; exit 0; fi
echo "depthbench (stub)"'
cp "$R/bin/depthbench" "$R/libexec/depthbench"
stub "$R/bin/mpirun" 'exit 0'
stub "$R/bin/b_pass_test" '[ "$CUDA_LAUNCH_BLOCKING" = 1 ] || { echo "error: CUDA_LAUNCH_BLOCKING unset"; exit 1; }
echo "  loss                                     error 1.000e-03 (bound 1.0e-02)"
echo "*** No errors detected"'
stub "$R/bin/a_hang_test" 'exec sleep 300'
stub "$R/bin/c_fail_test" 'echo "Running 3 test cases..."
echo "c_fail_test.cpp(12): error: in \"x\": a deliberate failure"; exit 1'
stub "$R/bin/cuda_bf16_storage_graphs_test" '[ -z "$CUDA_LAUNCH_BLOCKING" ] || {
  echo "error: capture failed: CUDA_LAUNCH_BLOCKING=1 synchronises after each launch"; exit 1; }
echo "*** No errors detected"'
stub "$R/bin/d_slow_test" 'sleep 6; echo "*** No errors detected"'
stub "$R/bin/e_slow_test" 'sleep 60; echo "*** No errors detected"'
# (A variable: `WORK=... PYTHON=$WORK/...` in one command's prefix would see the new WORK.)
FAKE_PYTHON=$WORK/fakebin/python3
# A python that has torch and transformers: hf_interop.py check answers three comparisons (one
# fails) and notes each call; anything else about python says yes.
stub "$FAKE_PYTHON" 'case "$*" in
  *hf_interop.py*) echo "$*" >>"'"$WORK"'/hf_interop_calls"
    echo "result export -> Llama: hf runs/tiny-hf: LlamaForCausalLM, max relative difference 5.0e-06 (bound 0.0001, error/bound 0.05): pass"
    echo "result eval --hf llama: hf tiny/llama: LlamaForCausalLM, error/bound 0.20: pass"
    echo "result eval --hf qwen3: depthbench eval failed: error: unknown tensor q_norm: FAIL"
    exit 1 ;;
  *) echo 1 ;;
esac'
summary_has() {  # FILE PATTERN
  grep -qE "$2" "$1"
}
# The listing is read whole: grep -q at the end of a pipe can stop reading before tar is done,
# and tar's SIGPIPE fails the pipe under pipefail.
archive_has() {  # ARCHIVE MEMBER
  local members
  members=$(tar -tzf "$1" 2>/dev/null) && grep -qx "$2" <<<"$members"
}

# 1. A hang, a pass, a failure and a graph program: the hang is cut at PROGRAM_S, the others run;
# exit status 1.
echo "a_hang_test b_pass_test c_fail_test cuda_bf16_storage_graphs_test" >"$R/gpu-tests.txt"
OUT1=$WORK/out1
start=$(date +%s)
OUT=$OUT1 WORK=$WORK/check1 STAGES="env ops" BUDGET_S=120 PROGRAM_S=3 PYTHON=$FAKE_PYTHON \
  bash "$SRC/tests/gpu/check.sh" --bundle "$B" >"$WORK/check1.log" 2>&1
rc=$?
took=$(($(date +%s) - start))
check "a node whose nvidia-smi lists several GPUs has a GPU" \
  bash -c "! grep -q 'no GPU' '$OUT1/gpu_check_summary.txt'"
check "exit status 1 when a program fails (got $rc)" test "$rc" = 1
check "the hanging program is stopped after PROGRAM_S (check took ${took}s)" test "$took" -lt 60
# env and ops alone share the 120 s: ops gets most of them, less what env took (else < 60 s).
ops_limit=$(sed -n 's/.*stage ops (limit \([0-9]*\)s).*/\1/p' "$WORK/check1.log")
check "the stages run share the whole budget (ops limit ${ops_limit:-?}s)" test "${ops_limit:-0}" -gt 60
check "the hang is a FAIL row naming the limit" \
  summary_has "$OUT1/gpu_check_summary.txt" "ops a_hang_test +\| FAIL +\| timed out \(at most 3s"
check "the program after the hang ran" summary_has "$OUT1/gpu_check_summary.txt" "ops b_pass_test +\| pass"
check "the failing program is a FAIL row" summary_has "$OUT1/gpu_check_summary.txt" "ops c_fail_test +\| FAIL"
check "the summary says the check finished" \
  summary_has "$OUT1/gpu_check_summary.txt" "^state: finished, exit status 1"
check "the graph program runs without CUDA_LAUNCH_BLOCKING" \
  summary_has "$OUT1/gpu_check_summary.txt" "ops cuda_bf16_storage_graphs_test +\| pass"
check "the selftest row comes first in the ops stage, with its verdict" \
  summary_has "$OUT1/gpu_check_summary.txt" "ops selftest +\| pass +\| verdict: pass — 40 passed"
check "the stage table: ops FAIL, 3 passed, 2 failed, worst error/bound 0.3 (the selftest's)" \
  summary_has "$OUT1/gpu_check_summary.txt" "^ops +\| FAIL +\| 3 / 2 / 0 +\| 0\.3$"
check "the stage table: env pass" summary_has "$OUT1/gpu_check_summary.txt" "^env +\| pass +\| 1 / 0 / 0"
check "the failure list names the failing program's log and its first error line" \
  summary_has "$OUT1/gpu_check_summary.txt" "^  ops c_fail_test: logs/c_fail_test.log: c_fail_test.cpp\(12\): error: .*a deliberate failure"
check "the failure list names the hung program's log and its timeout" \
  summary_has "$OUT1/gpu_check_summary.txt" "^  ops a_hang_test: logs/a_hang_test.log: timed out after 3s"
check "the failure list comes before the rows" \
  bash -c "grep -n -e '^failures' -e '^what ' '$OUT1/gpu_check_summary.txt' | head -1 | grep -q failures"
check "the archive holds every program's log" archive_has "$OUT1/gpu_check_logs.tar.gz" logs/c_fail_test.log
check "no partial files are left in OUT" bash -c "! compgen -G '$OUT1/*.part' >/dev/null"

# 2. Killed with SIGKILL while a program hangs: OUT still holds the rows and logs before it.
echo "b_pass_test a_hang_test" >"$R/gpu-tests.txt"
OUT2=$WORK/out2
OUT=$OUT2 WORK=$WORK/check2 STAGES="env ops" BUDGET_S=300 PROGRAM_S=200 PYTHON=$FAKE_PYTHON \
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
check "after SIGKILL the stage table shows the running stage unfinished" \
  summary_has "$OUT2/gpu_check_summary.txt" "^ops +\| unfinished +\| 2 / 0 / 0"

# 3. The stage's time runs out: the program cut by the stage's end and the one after it (no time
# left) are "skipped: stage time spent", not FAIL; the check passes. The ops stage gets about
# 12 s here (PROGRAM_S is larger, so the stage's end is what stops e_slow_test).
echo "d_slow_test e_slow_test b_pass_test" >"$R/gpu-tests.txt"
OUT3=$WORK/out3
OUT=$OUT3 WORK=$WORK/check3 STAGES="env ops" BUDGET_S=14 PROGRAM_S=100 PYTHON=$FAKE_PYTHON \
  bash "$SRC/tests/gpu/check.sh" --bundle "$B" >"$WORK/check3.log" 2>&1
rc=$?
check "stage time spent leaves the exit status 0 (got $rc)" test "$rc" = 0
check "the program before the stage's end passed" summary_has "$OUT3/gpu_check_summary.txt" "ops d_slow_test +\| pass"
check "the program cut by the stage's end is skipped: stage time spent" \
  summary_has "$OUT3/gpu_check_summary.txt" "ops e_slow_test +\| skipped +\| stage time spent"
check "the program that found no time left is skipped: stage time spent" \
  summary_has "$OUT3/gpu_check_summary.txt" "ops b_pass_test +\| skipped +\| stage time spent"
check "the stage table counts them as skipped" \
  summary_has "$OUT3/gpu_check_summary.txt" "^ops +\| pass +\| 2 / 0 / 2"
check "no failure is listed" bash -c "! grep -q '^failures' '$OUT3/gpu_check_summary.txt'"

# 4. The hf stage: one Python process for every comparison, one row each.
rm -f "$WORK/hf_interop_calls"
OUT4=$WORK/out4
OUT=$OUT4 WORK=$WORK/check4 STAGES="env hf" BUDGET_S=60 PYTHON=$FAKE_PYTHON \
  bash "$SRC/tests/gpu/check.sh" --bundle "$B" >"$WORK/check4.log" 2>&1
rc=$?
check "hf: exit status 1 (one comparison failed; got $rc)" test "$rc" = 1
check "hf: one Python process compares (calls: $(wc -l <"$WORK/hf_interop_calls" 2>/dev/null))" \
  test "$(wc -l <"$WORK/hf_interop_calls" 2>/dev/null)" = 1
check "hf: a row per comparison" bash -c "grep -qE 'hf export -> Llama +\| pass' '$OUT4/gpu_check_summary.txt' &&
  grep -qE 'hf eval --hf llama +\| pass' '$OUT4/gpu_check_summary.txt' &&
  grep -qE 'hf eval --hf qwen3 +\| FAIL' '$OUT4/gpu_check_summary.txt'"
check "hf: the stage table's worst error/bound" summary_has "$OUT4/gpu_check_summary.txt" "^hf +\| FAIL +\| 2 / 1 / 0 +\| 0\.20$"

if ((FAILS)); then
  echo "$FAILS check(s) failed; logs: $WORK/check[1-4].log, summaries: $WORK/out[1-4]/"
  exit 1
fi
echo "all checks passed"
