#!/bin/bash
# plan's estimates: a CPU suite's hours come from this machine's `depthbench bench` measurement
# once there is one (else the stated default, or the suite's own figure), an unreadable cache is
# named; the suite's diagnostics are estimated from the same cost functions `diagnose` uses.
source "$(dirname "$0")/common.sh" "$@"
export DEPTHBENCH_CACHE_DIR=$WORK/cache
make_suite "$WORK/suite.ini" "designs=pre_ln" "depths=2" "pre_ln=3e-3" \
  "diagnostics=path_weights logitlens"

"$DEPTHBENCH" plan "$WORK/suite.ini" --out "$WORK/out" >"$WORK/plan0.txt"
grep -q "^CPU throughput: 35.0 GFLOP/s per rank for 1 run(s), the default" "$WORK/plan0.txt" ||
  fail "plan without a measurement: $(grep throughput "$WORK/plan0.txt")"

# A real measurement of the suite's shape goes to the cache, then plan uses it.
"$DEPTHBENCH" bench --suite "$WORK/suite.ini" --depth 2 --train.steps 2 --warmup 0 \
  2>"$WORK/bench.err" >/dev/null
grep -q "GFLOP/s per rank recorded in $WORK/cache/cpu-throughput.json" "$WORK/bench.err" ||
  fail "bench did not record: $(cat "$WORK/bench.err")"
"$DEPTHBENCH" plan "$WORK/suite.ini" --out "$WORK/out" >"$WORK/plan1.txt"
grep -q "^CPU throughput: .* measured by \`depthbench bench\` on this machine" "$WORK/plan1.txt" ||
  fail "plan did not use the measurement: $(grep throughput "$WORK/plan1.txt")"
"$PYTHON" - "$WORK/plan1.txt" "$WORK/cache/cpu-throughput.json" <<'PY'
import json, re, sys
plan = open(sys.argv[1]).read()
m = json.load(open(sys.argv[2]))["measurements"][-1]
gflops = m["flops_per_token"] * m["tokens_per_second"] / 1e9
row = next(l.split() for l in plan.splitlines() if re.match(r"\s+1\s+pre_ln\s", l))
flops, hours = float(row[14]), float(row[15])
want = flops / (gflops * 1e9) / 3600
assert abs(hours / want - 1) < 0.01, (hours, want)
assert f"{gflops:.1f} GFLOP/s per rank" in plan, gflops
# The diagnostics: path_weights reads 32 windows and the logit lens 128 (+ L+1 = 3 readouts of
# each through the LM head), T_d = the run's seq_len (32 < 512); a forward pass is a third of
# training's FLOPs per token.
T, V, d = 32, 257, int(row[3])
tokens = int(row[11]) * 8 * T  # steps x train.global_batch x seq_len
want_diag = T * ((32 + 128) * flops / tokens / 3 + 128 * 3 * 2 * V * d)
got = float(re.search(r"^diagnostics \(path_weights logitlens\) .*?: ([0-9.e+]+) FLOPs in all",
                      plan, re.M).group(1))
assert abs(got / want_diag - 1) < 0.01, (got, want_diag)
print(f"plan: {hours:.3g} h at {gflops:.1f} GFLOP/s; diagnostics {got:.3e} FLOPs")
PY

# An unreadable cache is named and not used; the next bench replaces it.
echo '{"measurements": [' >"$WORK/cache/cpu-throughput.json"
"$DEPTHBENCH" plan "$WORK/suite.ini" --out "$WORK/out" >"$WORK/plan2.txt"
grep -q "^throughput cache unreadable, not used: $WORK/cache/cpu-throughput.json: JSON" \
  "$WORK/plan2.txt" || fail "no word of the unreadable cache"
grep -q "^CPU throughput: 35.0 GFLOP/s per rank .* the default" "$WORK/plan2.txt" ||
  fail "unreadable cache: not the default"
"$DEPTHBENCH" bench --suite "$WORK/suite.ini" --depth 2 --train.steps 1 --warmup 0 >/dev/null 2>&1
"$PYTHON" -c "import json,sys; assert len(json.load(open(sys.argv[1]))['measurements']) == 1" \
  "$WORK/cache/cpu-throughput.json" || fail "bench did not replace the unreadable cache"

# The suite's own figure wins over a measurement.
printf '\n[estimate]\ncpu_gflops_per_rank = 7\n' >>"$WORK/suite.ini"
"$DEPTHBENCH" plan "$WORK/suite.ini" --out "$WORK/out" >"$WORK/plan3.txt"
grep -q "^CPU throughput: 7.0 GFLOP/s per rank for 1 run(s), the suite's" "$WORK/plan3.txt" ||
  fail "the suite's figure was not used: $(grep throughput "$WORK/plan3.txt")"
echo PASS
