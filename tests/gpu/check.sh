#!/usr/bin/env bash
# One-shot GPU check (doc/cuda.md): configure with -DDEPTHBENCH_CUDA=ON into build-gpu, build
# the binary and the gpu tests, run `ctest -L gpu` (CUDA ops and every design's model against
# the CPU backend, 20 training steps of every design against the CPU curve, resume, a GPU
# checkpoint resumed on the CPU), benchmark the real model of Pre-LN, HC and Full AttnRes at the
# 400M L = 24 shape (d = 1024, T = 2048) in bf16 and Pre-LN in fp32, run the PyTorch reference
# on the same shape, and print one summary table (also written to $OUT/gpu_check_summary.txt
# when OUT is set). Designed to finish in under 8 minutes on one H200: every stage has a
# timeout, and stages are skipped (and say so) once the budget is spent.
#
# Environment: BUILD (build folder, default <repo>/build-gpu), JOBS (build parallelism),
# BATCH (sequences per step, default 8), STEPS (timed steps, default 5), BUDGET_S (default 450),
# SANITIZE=1 (run the gpu Boost tests under compute-sanitizer's memcheck instead).
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
BATCH=${BATCH:-8}
STEPS=${STEPS:-5}
BUDGET_S=${BUDGET_S:-450}
LOGS=${OUT:-$BUILD}/gpu_check_logs
mkdir -p "$LOGS"
START=$(date +%s)
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET_S - $(elapsed) )); }
ROWS=()
row() { ROWS+=("$(printf '%-34s | %-12s | %s' "$1" "$2" "$3")"); }

# Runs "$@" with a timeout no longer than the budget left; logs to $LOGS/$name.log.
stage() {
  local name=$1 limit=$2
  shift 2
  local remaining
  remaining=$(left)
  if (( remaining < 20 )); then
    echo "[check] $name: skipped (time budget spent)"
    return 124
  fi
  (( limit > remaining )) && limit=$remaining
  echo "[check] $name (limit ${limit}s, elapsed $(elapsed)s)"
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 5 "$LOGS/$name.log"
  return $rc
}

gpu=$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader 2>/dev/null | head -1)
echo "[check] GPU: ${gpu:-none visible}"
row "GPU" "${gpu:+found}${gpu:-NONE}" "${gpu:-no GPU: the gpu tests skip, the CUDA benchmark fails}"

# 1. Configure and build.
build_status=failed
if stage configure 120 cmake -S "$ROOT" -B "$BUILD" -DDEPTHBENCH_CUDA=ON -DCMAKE_BUILD_TYPE=Release &&
   stage build 300 cmake --build "$BUILD" -j "$JOBS" --target depthbench \
     $(cd "$ROOT/tests/gpu" && ls *_test.cpp | sed 's/\.cpp$//'); then
  build_status=ok
fi
row "build (DEPTHBENCH_CUDA=ON, sm_90)" "$build_status" "$(elapsed)s elapsed"

# 2. Parity tests.
if [[ $build_status == ok ]]; then
  if [[ ${SANITIZE:-0} == 1 ]]; then
    for t in "$ROOT"/tests/gpu/*_test.cpp; do
      t=$(basename "$t" .cpp)
      stage "sanitize_$t" 120 compute-sanitizer --tool memcheck --error-exitcode 9 "$BUILD/tests/$t"
      row "memcheck $t" "$([[ $? == 0 ]] && echo pass || echo FAIL)" "compute-sanitizer"
    done
  fi
  stage ctest 240 ctest --test-dir "$BUILD" -L gpu --output-on-failure -V
  rc=$?
  summary=$(grep -E "tests passed|tests failed" "$LOGS/ctest.log" | tail -1)
  row "ctest -L gpu" "$([[ $rc == 0 ]] && echo pass || echo FAIL)" "${summary:-no summary (rc $rc)}"
  worst=$(grep -E "error [0-9.e+-]+ \(bound" "$LOGS/ctest.log" |
          awk '{for(i=1;i<=NF;i++) if($i=="error"){e=$(i+1); b=$(i+3); gsub(/\)/,"",b); r=e/b; if(r>m){m=r; l=$0}}} END{if(m>0) printf "worst error/bound %.2f", m}')
  row "parity errors" "-" "${worst:-n/a}"
fi

# 3. Benchmarks: the real model of several designs, and PyTorch on the same shape.
bench_design() {  # tag arch precision L d
  local tag=$1 arch=$2 precision=$3 L=$4 d=$5
  [[ $build_status == ok ]] || return
  stage "bench_$tag" 120 "$BUILD/depthbench" bench --backend cuda --model.arch "$arch" \
    --model.n_layer "$L" --model.d_model "$d" --model.vocab_size 50304 --train.seq_len 2048 \
    --train.micro_batch "$BATCH" --train.steps "$STEPS" --train.precision "$precision"
  local line tps mfu mem
  line=$(grep -E "^tokens_per_second=" "$LOGS/bench_$tag.log" | tail -1)
  tps=$(sed -nE 's/.*tokens_per_second=([0-9.]+).*/\1/p' <<<"$line")
  mfu=$(sed -nE 's/.*mfu=([0-9.]+%).*/\1/p' <<<"$line")
  mem=$(sed -nE 's/.*device_memory_gib=([0-9.]+).*/\1/p' <<<"$line")
  row "depthbench $tag" "${tps:-FAIL}" "tokens/s, MFU ${mfu:-?}, ${mem:-?} GiB on the GPU"
  eval "DB_TPS_$tag=${tps:-0}"
}
bench_design pre_ln_bf16 pre_ln bf16 24 1024
bench_design pre_ln_fp32 pre_ln fp32 24 1024
bench_design hc_bf16 hc bf16 24 1024
bench_design attnres_full_bf16 attnres_full bf16 24 1024
for tag in pre_ln_fp32 hc_bf16 attnres_full_bf16; do
  ratio=$(awk -v a="$(eval "echo \${DB_TPS_$tag:-0}")" -v b="${DB_TPS_pre_ln_bf16:-0}" \
    'BEGIN{if(b>0) printf "%.2f", a/b; else print "?"}')
  row "ratio $tag / pre_ln_bf16" "$ratio" "tokens/s, same run"
done
for mode in eager compile; do
  stage "pytorch_$mode" 150 python3 "$ROOT/bench/pytorch_reference.py" --modes "$mode" \
    --n_layer 24 --d_model 1024 --seq_len 2048 --batch "$BATCH" --steps "$STEPS"
  pline=$(grep -E "^pytorch mode=" "$LOGS/pytorch_$mode.log" | tail -1)
  ptps=$(sed -nE 's/.*tokens_per_second=([0-9.]+).*/\1/p' <<<"$pline")
  if [[ -z $ptps ]]; then
    row "pytorch $mode pre_ln" "n/a" "$(grep -m1 -E "unavailable|Error|error" "$LOGS/pytorch_$mode.log" | cut -c1-60)"
  else
    ratio=$(awk -v a="${DB_TPS_pre_ln_bf16:-0}" -v b="$ptps" 'BEGIN{if(b>0) printf "%.2f", a/b; else print "?"}')
    row "pytorch $mode pre_ln" "$ptps" "tokens/s; depthbench bf16 / pytorch = $ratio"
  fi
done

# 4. Summary.
{
  echo
  echo "DepthBench GPU check — $(date -u +%Y-%m-%dT%H:%MZ), $(elapsed)s, batch $BATCH x T 2048, $STEPS timed steps"
  printf '%-34s | %-12s | %s\n' "stage" "result" "detail"
  printf '%s\n' "-----------------------------------+--------------+------------------------------------------"
  printf '%s\n' "${ROWS[@]}"
  echo "MFU = achieved FLOP/s (6N + 12·L·d·T per token) / 989 TFLOP/s dense bf16 (H100/H200 SXM)."
  echo "logs: $LOGS"
} | tee "$LOGS/summary.txt"
if [[ -n ${OUT:-} ]]; then cp "$LOGS/summary.txt" "$OUT/gpu_check_summary.txt"; fi
[[ $build_status == ok ]] && ! grep -q FAIL "$LOGS/summary.txt"
