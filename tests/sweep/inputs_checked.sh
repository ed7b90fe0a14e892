#!/usr/bin/env bash
# Issue 40: a suite's inputs are checked before any run starts. A wrong glob, a vocabulary too
# small for the tokenizer or a wrong format is listed by `plan` and refused by `sweep` (exit 1, no
# run file); a sweep whose runs all failed exits non-zero, a rerun that skips failed runs says
# so with --retry-failed, and each failed run's .log holds its own error. The run files record
# what validation covers, and plan warns when it is thin.
source "$(dirname "$0")/common.sh"
cd "$WORK"
export DEPTHBENCH_CACHE_DIR=$WORK/cache  # no measurement: plan states its default

expect_refused() {  # NAME NEEDLE SUITE_LINES...: plan lists the problem, sweep refuses
  local name=$1 needle=$2; shift 2
  make_suite "$name.ini" "$@"
  "$DEPTHBENCH" plan "$name.ini" --out "runs_$name" >"$name.plan" 2>&1 ||
    fail "$name: plan exited non-zero: $(cat "$name.plan")"
  grep -q "^input problem: .*$needle" "$name.plan" || fail "$name: plan lacks '$needle': $(cat "$name.plan")"
  if "${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep "$name.ini" --out "runs_$name" >"$name.sweep" 2>&1; then
    fail "$name: sweep started with bad inputs"
  fi
  grep -q "no run was started" "$name.sweep" || fail "$name: $(cat "$name.sweep")"
  grep -q -- "$needle" "$name.sweep" || fail "$name: sweep lacks '$needle': $(cat "$name.sweep")"
  ! ls "runs_$name"/*.h5 >/dev/null 2>&1 || fail "$name: a run file was written"
}
expect_refused glob "data.train_files: no file matches .*/nowhere/train_" \
  "data.train_files=$DATA/nowhere/train_*.npy"
expect_refused vocab "says vocab_size 257, but the run has model.vocab_size = 256" \
  "model.vocab_size=256"
expect_refused format "says output_format npy, but the run has data.format = olmo" \
  "train.threads=1\ndata.format = olmo"

# Good inputs: plan reports what validation covers, and warns that 4 windows of 32 tokens are thin.
make_suite good.ini
"$DEPTHBENCH" plan good.ini --out runs >good.plan
grep -q "^inputs: ok .* validation: 4 windows = 128 tokens" good.plan || fail "$(head -5 good.plan)"
grep -q "^warning: validation covers 4 windows" good.plan || fail "no thin warning: $(head -5 good.plan)"

# Cost estimates for a CPU suite: hours from the stated CPU throughput (no measurement in this
# test's cache; sweep.estimates measures one), memory in MiB below a GiB, the diagnostics'
# cost, a warning when the embedding and head are most of the parameters.
grep -q "^total: .* CPU runs " good.plan || fail "no CPU estimate: $(tail -5 good.plan)"
grep -q "^CPU throughput: 35.0 GFLOP/s per rank .* the default" good.plan ||
  fail "no stated throughput: $(tail -5 good.plan)"
grep -q " MiB " good.plan || fail "memory not in MiB: $(grep pending good.plan | head -2)"
make_suite costly.ini "model.vocab_size=20000" "budget=total 2M" "diagnostics=angular_distance" \
  "heads=2\nbudget_tolerance = 0.5"
"$DEPTHBENCH" plan costly.ini --out runs_costly >costly.plan 2>&1 || fail "$(cat costly.plan)"
grep -q "^diagnostics (angular_distance) on every run .* FLOPs in all" costly.plan ||
  fail "$(tail -6 costly.plan)"
grep -q "^warning: .* most of their parameters in the embedding and LM head" costly.plan ||
  fail "no embedding warning: $(tail -6 costly.plan)"

# Every run fails (a design no build registers): exit 1, the reason in each run's log.
make_suite failing.ini "designs=no_such_design"
sed -i '/^pre_ln = /d' failing.ini
if "${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep failing.ini --out failing >failing.out 2>&1; then
  fail "a sweep whose runs all failed exited 0: $(cat failing.out)"
fi
grep -q "every run failed" failing.out || fail "$(cat failing.out)"
for log in failing/*.log; do
  grep -q "failed: .*unknown architecture" "$log" || fail "$log lacks the error: $(cat "$log")"
done
# Rerun: the failed runs are skipped, and the sweep says how to train them again.
"${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep failing.ini --out failing >rerun.out 2>&1 || true
grep -q "recorded failed by an earlier sweep were skipped; --retry-failed" rerun.out ||
  fail "no --retry-failed hint: $(cat rerun.out)"

# A good sweep records the coverage of its validation windows.
"${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep good.ini --out runs >good.out 2>&1 || fail "$(cat good.out)"
"$PYTHON" - runs <<'PY'
import glob, sys, h5py
files = [f for f in glob.glob(sys.argv[1] + "/*.h5") if "pre_ln" in f]
assert files
for path in files:
    a = h5py.File(path, "r").attrs
    assert a["val_tokens"] == 4 * 32, (path, a["val_tokens"])
    assert 0 < a["val_documents"] < a["val_held_out_documents"], dict(a)
    assert a["val_held_out_tokens"] > a["val_tokens"]
PY
echo "inputs checked: bad globs, vocabularies and dtypes refused before any run; failures said"
