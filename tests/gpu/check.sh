#!/usr/bin/env bash
# The GPU check (doc/cuda.md "The GPU check"): everything the first minutes on a GPU node must
# tell us, most informative stage first, within one time budget (BUDGET_S, default 470 s, at most
# 8 minutes on one H200):
#   1. env    GPU, driver, CUDA, which cuBLAS/NCCL/cuDNN, Python packages; the programs start
#             and mpirun starts 2 ranks. Without a GPU the check stops here ("no GPU", exit 3).
#   2. ops    `depthbench selftest --backend cuda` (every design and attention path against the
#             CPU in double), then the gpu test programs (ops and every design's model against the CPU backend, the
#             cuDNN attention against the reference kernel: cudnn_attention_test; MoDA on
#             cuDNN and flash against the MoDA kernel: moda_fast_attention_test) with
#             CUDA_LAUNCH_BLOCKING=1, so that a kernel fault names its kernel (not the programs
#             that capture CUDA graphs: it makes every capture fail); SANITIZE=1 then
#             runs the op tests under compute-sanitizer memcheck, racecheck and synccheck.
#   3. scale  the 400M L = 24 shape of input/main400m.ini (d 1024, T 2048, micro-batch 8):
#             step-0 loss within 1% of ln V + s²/2 (s² = variance of the reference's logits:
#             uninformed logits), and loss + gradient norm of one micro-batch against
#             the independent PyTorch reference given the same weights (our safetensors
#             export), fp32 within 1e-4, bf16 within 2e-2: Pre-LN, HC, mHC, Full AttnRes, MoDA.
#   4. sweep  2 ranks, --ranks-per-run 1: four tiny runs of different sizes, one finished
#             before, complete (two groups that run different runs must not deadlock).
#   5. hf     with transformers: our HF export of a trained Pre-LN run loads as
#             LlamaForCausalLM and gives eval's losses, an HC run loads through its shipped
#             modelling code (trust_remote_code) and does too; a tiny LLaMA and Qwen3 written by
#             save_pretrained give transformers' losses under `depthbench eval --hf` (all
#             compared in one Python process).
#   6. speed  bench/gpu_speed.sh --short: depthbench bench (bf16) of Pre-LN and HC at 400M
#             L = 24 and Pre-LN at L = 70, PyTorch eager and compiled on the same shape, Pre-LN
#             at L = 24 with cuda_graphs = off and with activation_dtype = fp32 (the lever
#             table), the per-op breakdown of one Pre-LN step: tokens/s, MFU, memory, ratios.
# Each stage has its own time limit (the limits of the stages run add up to BUDGET_S) and prints
# pass/FAIL/skipped and why: FAIL is a program that failed or hung on its own limit; a program
# cut by the stage's end, or that finds no time left, is "skipped: stage time spent". The
# summary opens with one line per stage (result, counts, worst error/bound) and the first error
# line of each failure with its log's name; the rows follow. After every row and at the end: $OUT/gpu_check_summary.txt and ONE
# archive of every log, $OUT/gpu_check_logs.tar.gz (OUT unset: in WORK), so that a check killed
# from outside still leaves what it found.
#
# usage: tests/gpu/check.sh [--bundle DIR]
#   --bundle DIR  run the programs of a bundle made by tests/gpu/bundle.sh (nothing is built);
#                 without it, configure and build BUILD (default <repo>/build-gpu) first (the
#                 build's own limit BUILD_S, default 900 s, is outside the budget).
# Environment: BUDGET_S, WORK (scratch, default /tmp/depthbench-gpu-check; large files of the
# scale stage go there), OUT, SANITIZE=1, STEPS (timed bench steps, default 3), PROGRAM_S (one
# gpu test program of a bundle's ops stage at most, default 90), PYTHON (a python3
# with torch; default python3, else /usr/bin/python3), STAGES (e.g. "env sweep"; default all),
# CHECK_BACKEND (backend of the sweep and hf stages, default cuda; cpu tries them without a GPU,
# and the speed stage as gpu_speed.sh --cpu-smoke), CHECK_PREBUILT=1 (BUILD is built: no build),
# DEPTHBENCH_EMULATED_DEVICE=1 (a build for the emulated device: its GPU is not nvidia-smi's).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUNDLE=""
while (($#)); do
  case $1 in
    --bundle) BUNDLE=$(cd "${2:?--bundle needs a folder}" && pwd) || exit 2; shift 2 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
BUDGET_S=${BUDGET_S:-470}
WORK=${WORK:-${TMPDIR:-/tmp}/depthbench-gpu-check}
RESULTS=${OUT:-$WORK}
STEPS=${STEPS:-3}
PROGRAM_S=${PROGRAM_S:-90}
BACKEND=${CHECK_BACKEND:-cuda}
STAGES=${STAGES:-env ops scale sweep hf speed}
LOGS=$WORK/logs
rm -rf "$WORK" && mkdir -p "$LOGS" "$RESULTS" || exit 2
START=$(date +%s)
exec 3>&1  # progress lines go to the terminal also while a stage's output goes to its log

# Stage limits in seconds, shares of BUDGET_S: scaled together so that those of the stages that
# run (STAGES) add up to it; STAGES=scale alone gets the whole budget. SANITIZE=1 takes its time
# from the scale and speed stages. Each is what the stage was measured or counted to need, with
# a margin (doc/cuda.md, "The stage limits"): env ≈ 8 s (4 s measured without a GPU); ops
# ≈ 150 s (the selftest ≈ 15 s; 18 programs: ≈ 3 s of process, context and library start each, the cuDNN plans of
# ≈ 30 shapes at 1–2 s, one build per process and shape); sweep ≈ 15 s (5 s measured with
# CHECK_BACKEND=cpu, 3 mpirun starts with a CUDA context per rank); hf ≈ 25 s (6 s of CPU time
# measured for train, export and eval, one Python process with torch and transformers); scale
# and speed take what they are given (the scale stage needs ≈ 50 s a design, the speed stage
# lists what it has no time for).
declare -A LIMIT=([env]=20 [ops]=200 [sanitize]=0 [scale]=100 [sweep]=30 [hf]=45 [speed]=75)
if [[ ${SANITIZE:-0} == 1 ]]; then LIMIT[sanitize]=100; LIMIT[scale]=80; LIMIT[ops]=120; LIMIT[speed]=50; fi
ORDER=(env ops sanitize scale sweep hf speed)
selected() { [[ " $STAGES " == *" $1 "* || ($1 == sanitize && " $STAGES " == *" ops "*) ]]; }
total=0
for s in "${ORDER[@]}"; do selected "$s" && total=$((total + LIMIT[$s])); done
if ((total > 0)); then
  for s in "${ORDER[@]}"; do LIMIT[$s]=$((LIMIT[$s] * BUDGET_S / total)); done
fi

ROWS=()        # summary rows: what | result | detail
FAILURES=()    # one line per FAIL row: what, its log, the log's first error line
SPEED_TABLE=""  # bench/gpu_speed.sh's table (Markdown)
FAILED=0
NO_GPU=""
STAGE=build    # the stage whose rows row() writes now
STAGES_SEEN=() # stages in the order they wrote rows or started
declare -A STAGE_STATE STAGE_COUNTS STAGE_WORST
elapsed() { echo $(($(date +%s) - START)); }
say() { echo "[check +$(elapsed)s] $*" | tee -a "$LOGS/progress.log" >&3; }
# The first line of LOG that says what went wrong (the error, a failed assertion, a timeout).
first_error() {  # LOG
  grep -m1 -iE "error|fail|fault|what\(\)|assert|abort|terminate|timed out|no time left" "$1" 2>/dev/null |
    grep -viE "no errors detected|0 failures" | cut -c1-150
}
# row WHAT RESULT DETAIL [LOG]: RESULT is pass, FAIL or skipped; a FAIL row with a LOG adds that
# log's first error line to the summary's failure list. A ratio written "error/bound R" in DETAIL
# counts towards the stage's worst ratio against its tolerance.
row() {
  ROWS+=("$(printf '%-34s | %-7s | %s' "$1" "$2" "$3")")
  [[ $2 == FAIL ]] && FAILED=1
  note_stage "$STAGE"
  local counts=${STAGE_COUNTS[$STAGE]:-0 0 0} pass fail skip
  read -r pass fail skip <<<"$counts"
  case $2 in
    pass) pass=$((pass + 1)) ;;
    FAIL) fail=$((fail + 1)) ;;
    *) skip=$((skip + 1)) ;;
  esac
  STAGE_COUNTS[$STAGE]="$pass $fail $skip"
  local ratio
  for ratio in $(grep -oE "error/bound [0-9.]+" <<<"$3" | cut -d' ' -f2); do
    awk -v r="$ratio" -v w="${STAGE_WORST[$STAGE]:-0}" 'BEGIN { exit !(r > w) }' && STAGE_WORST[$STAGE]=$ratio
  done
  if [[ $2 == FAIL ]]; then
    local line="$1: ${4:+logs/${4##*/}: }"
    if [[ -n ${4:-} && -s $4 ]]; then line+=$(first_error "$4"); fi
    [[ $line == *": " ]] && line+=$(cut -c1-150 <<<"$3")
    FAILURES+=("$line")
  fi
  say "$1: $2${3:+ — $3}"
  write_results "unfinished (written after its last row: a check killed from outside ends here)"
}
note_stage() {  # STAGE: listed in the stage table from its first row or its start on
  [[ " ${STAGES_SEEN[*]} " == *" $1 "* ]] || STAGES_SEEN+=("$1")
}
# The stage's line of the summary's first table: FAIL when a row failed, pass when one passed
# and none failed, skipped when every row was skipped; "unfinished" while it runs (a check killed
# from outside leaves it so).
stage_result() {  # STAGE
  local pass fail skip
  read -r pass fail skip <<<"${STAGE_COUNTS[$1]:-0 0 0}"
  if [[ ${STAGE_STATE[$1]:-} == running ]]; then echo unfinished
  elif ((fail)); then echo FAIL
  elif ((pass)); then echo pass
  else echo skipped
  fi
}
# t CMD...: CMD under the time left to the current stage (STAGE_END), at most CAP_S seconds when
# set (CAP_S=60 t CMD); 124 when no time is left. T_STAGE_END=1 after it when the stage's end was
# the limit (or had come), so that a timeout then reads "skipped: stage time spent", not a hang.
# T_NO_TIME=1 when it did not start at all.
T_STAGE_END=0 T_NO_TIME=0
t() {
  local left=$((STAGE_END - $(date +%s)))
  T_STAGE_END=1 T_NO_TIME=0
  ((left > 0)) || { echo "(no time left in this stage for: $*)"; T_NO_TIME=1; return 124; }
  [[ -n ${CAP_S:-} ]] && ((CAP_S < left)) && { left=$CAP_S; T_STAGE_END=0; }
  timeout -k 10 "$left" "$@"
}
timed_out() { [[ $1 == 124 || $1 == 137 ]]; }
stage_time_spent() { timed_out "$1" && ((T_STAGE_END)); }

VERSION="unknown version"
# ---- summary and archive: after every row, so that a check killed from outside (a remote call's
# time limit: SIGKILL, no trap runs) still leaves the rows and logs of what it did, and on exit ---
write_results() {  # STATE: a line saying whether the check finished
  {
    echo "DepthBench GPU check — $(date -u +%Y-%m-%dT%H:%MZ), $(elapsed)s of ${BUDGET_S}s budget"
    echo "state: $1"
    echo "$VERSION"
    echo "GPU: ${GPU_LINE:-none}"
    echo
    printf '%-10s | %-10s | %-22s | %s\n' stage result "pass / FAIL / skipped" "worst error/bound"
    printf '%s\n' "-----------+------------+------------------------+------------------"
    local s pass fail skip
    for s in "${STAGES_SEEN[@]}"; do
      read -r pass fail skip <<<"${STAGE_COUNTS[$s]:-0 0 0}"
      printf '%-10s | %-10s | %-22s | %s\n' "$s" "$(stage_result "$s")" "$pass / $fail / $skip" \
        "${STAGE_WORST[$s]:--}"
    done
    if ((${#FAILURES[@]})); then
      echo
      echo "failures (first error line of each log):"
      printf '  %s\n' "${FAILURES[@]}"
    fi
    echo
    printf '%-34s | %-7s | %s\n' "what" result detail
    printf '%s\n' "-----------------------------------+---------+-----------------------------------------"
    printf '%s\n' "${ROWS[@]}"
    if [[ -n $SPEED_TABLE ]]; then
      echo
      echo "$SPEED_TABLE"
    fi
    echo
    echo "logs: gpu_check_logs.tar.gz (one log per stage and program)"
  } >"$RESULTS/gpu_check_summary.txt.part"
  cp "$RESULTS/gpu_check_summary.txt.part" "$LOGS/summary.txt"
  mv -f "$RESULTS/gpu_check_summary.txt.part" "$RESULTS/gpu_check_summary.txt"
  # 1: a log changed while read (the running stage's own): the archive is still good.
  tar -czf "$RESULTS/gpu_check_logs.tar.gz.part" -C "$WORK" logs 2>/dev/null
  (($? <= 1)) && mv -f "$RESULTS/gpu_check_logs.tar.gz.part" "$RESULTS/gpu_check_logs.tar.gz"
}
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if ((rc == 0)); then
    if ((FAILED)); then rc=1; elif [[ -n $NO_GPU ]]; then rc=3; fi
  fi
  write_results "finished, exit status $rc"
  cat "$RESULTS/gpu_check_summary.txt" >&3
  say "wrote $RESULTS/gpu_check_summary.txt and $RESULTS/gpu_check_logs.tar.gz"
  exit "$rc"
}
trap finish EXIT
trap 'row interrupted FAIL "signal after $(elapsed)s"; exit 130' INT TERM

# ---- programs: the bundle's, or a build -------------------------------------------------------
if [[ -n $BUNDLE ]]; then
  # shellcheck disable=SC1091
  source "$BUNDLE/env.sh" 2>"$LOGS/bundle_env.log" || {
    cat "$LOGS/bundle_env.log" >&2
    echo "check.sh: sourcing $BUNDLE/env.sh failed" >&2
    exit 2
  }
  [[ ${DB_BUNDLE_SOURCED:-} == "$BUNDLE" ]] || cat "$LOGS/bundle_env.log" >&3  # once on screen
  BIN=$DB_BUNDLE_ROOT/bin
  DEPTHBENCH=$BIN/depthbench
  TESTS=$(cat "$DB_BUNDLE_ROOT/gpu-tests.txt")
  MPIRUN=("$BIN/mpirun")
  VERSION="bundle $(cat "$DB_BUNDLE_ROOT/VERSION")"
else
  BUILD=${BUILD:-$ROOT/build-gpu}
  VERSION="commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown), build $BUILD"
  STAGE_END=$(($(date +%s) + ${BUILD_S:-900}))
  if [[ -n ${CHECK_PREBUILT:-} ]]; then  # BUILD is built already (e.g. for the emulated device)
    row build pass "$BUILD (prebuilt)"
  else
    say "build: configuring and building $BUILD (DEPTHBENCH_CUDA=ON, sm_90; limit ${BUILD_S:-900}s, outside the budget)"
    if t cmake -S "$ROOT" -B "$BUILD" -DDEPTHBENCH_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CUDA_ARCHITECTURES=90 >"$LOGS/build.log" 2>&1 &&
       t cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target depthbench \
         $(cd "$HERE" && ls *_test.cpp | sed 's/\.cpp$//') >>"$LOGS/build.log" 2>&1; then
      row build pass "$BUILD"
    else
      row build FAIL "see logs/build.log: $(grep -m1 -E 'error|Error' "$LOGS/build.log" | cut -c1-100)"
      exit 1
    fi
  fi
  START=$(date +%s)  # the budget counts from here
  DEPTHBENCH=$BUILD/depthbench
  read -r -a MPIRUN <<<"${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}"
fi
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import torch" 2>/dev/null && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  PYTHON=/usr/bin/python3
fi
HAVE_TORCH=$("$PYTHON" -c "import torch, h5py, numpy; print(1)" 2>/dev/null || echo 0)

# Runs stage NAME (function stage_NAME) with its limit, its output in logs/NAME.log.
run_stage() {
  local name=$1
  selected "$name" || return 0
  ((LIMIT[$name] > 0)) || return 0
  STAGE=$name
  if [[ -n $NO_GPU && $name != env && ! ($BACKEND == cpu && ($name == sweep || $name == hf || $name == speed)) ]]; then
    row "$name" skipped "no GPU"
    return 0
  fi
  local left=$((BUDGET_S - $(elapsed)))
  local limit=$((LIMIT[$name] < left ? LIMIT[$name] : left))
  if ((limit < 5)); then
    row "$name" skipped "check time spent (budget ${BUDGET_S}s)"
    return 0
  fi
  STAGE_END=$(($(date +%s) + limit))
  STAGE=$name
  note_stage "$name"
  STAGE_STATE[$name]=running
  say "stage $name (limit ${limit}s)"
  write_results "unfinished (written after its last row: a check killed from outside ends here)"
  "stage_$name" >>"$LOGS/$name.log" 2>&1
  STAGE_STATE[$name]=done
}

# ---- 1. environment -----------------------------------------------------------------------------
stage_env() {
  echo "== $VERSION"
  GPU_LINE=$(t nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)
  t nvidia-smi 2>&1 | head -20
  local cuda_version
  cuda_version=$(t nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -1)
  command -v nvcc && nvcc --version | tail -2
  echo "== CUDA libraries the programs load"
  local prog=$DEPTHBENCH libs
  if [[ -n $BUNDLE ]]; then
    prog=$DB_BUNDLE_ROOT/libexec/depthbench
    libs=$(LD_LIBRARY_PATH=$DB_BUNDLE_LD_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$prog")
  else
    libs=$(ldd "$prog")
  fi
  echo "$libs"
  local cuda_libs missing
  cuda_libs=$(echo "$libs" | awk '/cublas|nccl|cudnn|cudart/ && $3 != "not" {print $3}' | xargs -r -n1 readlink -f | tr '\n' ' ')
  missing=$(echo "$libs" | awk '$3 == "not" {print $1}' | tr '\n' ' ')
  echo "== depthbench --help"
  local ok=1
  t "$DEPTHBENCH" --help >"$LOGS/depthbench_help.txt" 2>&1 || ok=0
  head -5 "$LOGS/depthbench_help.txt"
  echo "== mpirun -np 2"
  t "${MPIRUN[@]}" -np 2 "$DEPTHBENCH" --help >"$LOGS/mpirun_help.txt" 2>&1 || ok=0
  tail -5 "$LOGS/mpirun_help.txt"
  echo "== python: $PYTHON"
  t "$PYTHON" - <<'PY' 2>&1
import importlib, sys
print("python", sys.version.split()[0])
for name in ("torch", "transformers", "safetensors", "h5py", "numpy"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "torch":
            extra = f" (CUDA {m.version.cuda}, GPU visible: {m.cuda.is_available()}" + \
                    (f", {m.cuda.get_device_name(0)}" if m.cuda.is_available() else "") + ")"
        print(f"{name} {getattr(m, '__version__', '?')}{extra}")
    except Exception as e:
        print(f"{name}: not available ({type(e).__name__})")
PY
  local python_line
  python_line=$(grep -E "^(python|torch|transformers) " "$LOGS/env.log" | cut -d' ' -f1,2 | tr '\n' ' ')
  if [[ -n $missing ]]; then
    row env FAIL "libraries not found: $missing"
  elif ((ok == 0)); then
    row env FAIL "depthbench or mpirun -np 2 does not start (logs/depthbench_help.txt, mpirun_help.txt)"
  else
    row env pass "driver CUDA ${cuda_version:-?}; ${cuda_libs:-no CUDA libraries}; ${python_line:-no python3}"
  fi
  # grep reads the whole list: with -q it could exit at the first GPU's line, and nvidia-smi's
  # SIGPIPE on the next would fail the pipe (pipefail) and call a multi-GPU node GPU-less.
  if [[ -z ${DEPTHBENCH_EMULATED_DEVICE:-} ]] && ! nvidia-smi -L 2>/dev/null | grep '^GPU' >/dev/null; then
    NO_GPU=1
    say "no GPU: nvidia-smi lists none; the GPU stages are skipped"
  fi
}

# ---- 2. the gpu test programs -------------------------------------------------------------------
worst_ratio() {  # the largest error/bound printed by the parity tests in a log
  grep -hE "error [0-9.e+-]+ \(bound" "$@" 2>/dev/null |
    awk '{for(i=1;i<=NF;i++) if($i=="error"){e=$(i+1); b=$(i+3); gsub(/\)/,"",b); if(b>0 && e/b>m){m=e/b}}} END{if(m>0) printf "worst error/bound %.3g", m}'
}
# The gpu test programs, those that tell most first (whole models, bf16 storage, the fast
# attention paths), the others after them in their order: the stage may run out of time.
most_informative_first() {
  local test first=" cuda_model_parity_test cuda_bf16_storage_test cuda_ops_test cudnn_attention_test"
  first+=" flash_attention_test moda_fast_attention_test cuda_graphs_test cuda_bf16_head_test "
  for test in $first; do [[ " $* " == *" $test "* ]] && echo "$test"; done
  for test in "$@"; do [[ $first == *" $test "* ]] || echo "$test"; done
}

# The programs that capture CUDA graphs: CUDA_LAUNCH_BLOCKING=1 makes every capture fail (the
# synchronisation after each launch), so they run without it (doc/cuda.md, "CUDA graphs").
GRAPH_PROGRAMS=" cuda_graphs_test cuda_bf16_storage_graphs_test cuda_bf16_weight_copy_test "
# depthbench selftest (doc/cuda.md): every design and attention path against the CPU in double,
# from the installed program alone; its verdict line gives the row and the worst ratio.
ops_selftest() {
  CAP_S=$PROGRAM_S t "$DEPTHBENCH" selftest --backend cuda >"$LOGS/selftest.log" 2>&1
  local rc=$? verdict
  tail -3 "$LOGS/selftest.log"
  verdict=$(grep -m1 "^verdict:" "$LOGS/selftest.log" | sed 's/worst error\/tolerance/error\/bound/')
  if stage_time_spent $rc; then
    row "ops selftest" skipped "stage time spent (logs/selftest.log)"
  elif timed_out $rc; then
    echo "timed out after ${PROGRAM_S}s (PROGRAM_S): a hang?" >>"$LOGS/selftest.log"
    row "ops selftest" FAIL "timed out (at most ${PROGRAM_S}s; a hang?)" "$LOGS/selftest.log"
  else
    row "ops selftest" "$( ((rc == 0)) && echo pass || echo FAIL)" "${verdict:-no verdict (rc $rc)}" \
      "$LOGS/selftest.log"
  fi
}

stage_ops() {
  export CUDA_LAUNCH_BLOCKING=1
  ops_selftest
  if [[ -n $BUNDLE ]]; then
    local test rc blocking
    for test in $(most_informative_first $TESTS); do
      echo "== $test"
      blocking=(env CUDA_LAUNCH_BLOCKING=1)
      [[ $GRAPH_PROGRAMS == *" $test "* ]] && blocking=(env -u CUDA_LAUNCH_BLOCKING)
      # At most PROGRAM_S each: a program that hangs leaves the stage's time to the others.
      CAP_S=$PROGRAM_S t "${blocking[@]}" "$BIN/$test" --log_level=test_suite --report_level=short \
        >"$LOGS/$test.log" 2>&1
      rc=$?
      tail -3 "$LOGS/$test.log"
      if stage_time_spent $rc; then
        row "ops $test" skipped "stage time spent (logs/$test.log)"
      elif timed_out $rc; then
        echo "timed out after ${PROGRAM_S}s (PROGRAM_S): a hang?" >>"$LOGS/$test.log"
        row "ops $test" FAIL "timed out (at most ${PROGRAM_S}s a program; a hang?)" "$LOGS/$test.log"
      elif grep -q "no GPU: skipped" "$LOGS/$test.log"; then
        row "ops $test" FAIL "the CUDA runtime sees no GPU although nvidia-smi does" "$LOGS/$test.log"
      else
        row "ops $test" "$( ((rc == 0)) && echo pass || echo FAIL)" \
          "$(grep -m1 -E "has (passed|failed)|No errors detected|failure|error:" "$LOGS/$test.log" | cut -c1-80) $(grep -m1 -E "test cases? out of" "$LOGS/$test.log" | xargs); $(worst_ratio "$LOGS/$test.log")" \
          "$LOGS/$test.log"
      fi
    done
  else
    # The Boost gpu programs, as in a bundle; train_on_gpu.sh (every design's curve) needs more
    # time than this stage has.
    t ctest --test-dir "$BUILD" -L gpu -E gpu.train_on_gpu --output-on-failure -V >"$LOGS/ctest.log" 2>&1
    local rc=$?
    tail -5 "$LOGS/ctest.log"
    row "ops ctest -L gpu" "$( ((rc == 0)) && echo pass || echo FAIL)" \
      "$(grep -E "tests passed|tests failed" "$LOGS/ctest.log" | tail -1); $(worst_ratio "$LOGS/ctest.log")" \
      "$LOGS/ctest.log"
  fi
  unset CUDA_LAUNCH_BLOCKING
}

stage_sanitize() {
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer 2>/dev/null)
  if [[ -z $sanitizer ]]; then
    row sanitize skipped "compute-sanitizer not found"
    return
  fi
  local test tool rc prog
  # flash_attention_test: its tile-edge shapes only (T ≤ 129); the full sweep takes minutes
  # under memcheck. moda_fast_attention_test: the depth-merge kernels (small shapes).
  # cuda_packed_kernels_test: the QK-norm kernels (warps sharing rows in shared memory).
  local -A args=([flash_attention_test]="--run_test=flash_matches_reference_at_tile_edges"
    [moda_fast_attention_test]="--run_test=merge_kernels_match_the_moda_kernel_in_fp32"
    [cuda_packed_kernels_test]="--run_test=qk_norm*")
  for test in cuda_ops_test cuda_new_ops_test cuda_attention_test flash_attention_test \
    moda_fast_attention_test cuda_packed_kernels_test; do
    for tool in memcheck racecheck synccheck; do
      if [[ -n $BUNDLE ]]; then
        prog=(env "LD_LIBRARY_PATH=$DB_BUNDLE_LD_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$DB_BUNDLE_ROOT/libexec/$test")
      else
        prog=("$BUILD/tests/$test")
      fi
      # shellcheck disable=SC2206
      prog+=(${args[$test]:-})
      t "$sanitizer" --tool "$tool" --error-exitcode 9 "${prog[@]}" >"$LOGS/sanitize_${tool}_$test.log" 2>&1
      rc=$?
      if timed_out $rc; then
        row "$tool $test" skipped "stage time spent (logs/sanitize_${tool}_$test.log)"
      else
        row "$tool $test" "$( ((rc == 0)) && echo pass || echo FAIL)" \
          "$(grep -m1 -E "ERROR SUMMARY|RACECHECK SUMMARY|error" "$LOGS/sanitize_${tool}_$test.log" | cut -c1-70)" \
          "$LOGS/sanitize_${tool}_$test.log"
      fi
    done
  done
}

# ---- 3. correctness at the 400M L = 24 shape ----------------------------------------------------
V=50280 T=2048 MICRO=8
SHAPE24=(--model.n_layer 24 --model.d_model 1024 --model.n_head 16 --model.vocab_size $V)
stage_scale() {
  if [[ $HAVE_TORCH != 1 ]]; then
    row scale skipped "no python3 with torch, h5py, numpy"
    return
  fi
  local dir=$WORK/scale design precision rc
  mkdir -p "$dir" && cd "$dir" || return
  t "$PYTHON" "$HERE/scale_parity.py" tokens --out data --vocab $V --seq $T --windows $MICRO
  for design in pre_ln hc mhc attnres_full moda; do
    local runs=() ok=1
    for precision in fp32 bf16; do
      local name=${design}_$precision
      echo "== $name"
      t "$DEPTHBENCH" train "${SHAPE24[@]}" --model.arch "$design" --train.backend cuda \
        --train.precision "$precision" --train.seq_len $T --train.global_batch $MICRO \
        --train.micro_batch $MICRO --train.steps 1 --train.log_interval 1 --train.val_windows 1 \
        --train.checkpoint_interval 0 --train.save_initial_weights true \
        --data.train_files data/train_0.npy --data.val_files data/val_0.npy \
        --output.dir runs --output.name "$name" >"$LOGS/scale_$name.log" 2>&1
      rc=$?
      tail -3 "$LOGS/scale_$name.log"
      if ((rc != 0)); then
        ok=0
        row "scale $name" "$(timed_out $rc && echo skipped || echo FAIL)" \
          "$(timed_out $rc && echo "stage time spent" || grep -m1 -iE "error|fault|what" "$LOGS/scale_$name.log" | cut -c1-90)" \
          "$LOGS/scale_$name.log"
        continue
      fi
      t "$DEPTHBENCH" export "runs/$name.init.weights" --format safetensors --out "runs/$name-st" \
        >>"$LOGS/scale_$name.log" 2>&1 || { ok=0; row "scale $name" FAIL "export failed" "$LOGS/scale_$name.log"; continue; }
      runs+=(--run "$precision=runs/$name.h5,runs/$name-st")
    done
    if ((${#runs[@]})); then
      t "$PYTHON" "$HERE/scale_parity.py" compare --design "$design" --tokens data/train_0.npy \
        --seq $T "${runs[@]}" >"$LOGS/scale_parity_$design.log" 2>&1
      rc=$?
      cat "$LOGS/scale_parity_$design.log"
      while read -r line; do
        row "scale ${line#parity }" "$([[ $line == *": pass" ]] && echo pass || echo FAIL)" \
          "$(sed -E 's/^parity [a-z_]+ [a-z0-9]+: //; s/: (pass|FAIL)$//' <<<"$line" | cut -c1-230)" \
          "$LOGS/scale_parity_$design.log"
      done < <(grep "^parity " "$LOGS/scale_parity_$design.log")
      if ((rc != 0)) && ! grep -q "^parity " "$LOGS/scale_parity_$design.log"; then
        row "scale $design" "$(timed_out $rc && echo skipped || echo FAIL)" \
          "$(timed_out $rc && echo "stage time spent; ")reference: $(tail -1 "$LOGS/scale_parity_$design.log" | cut -c1-100)" \
          "$LOGS/scale_parity_$design.log"
      fi
    fi
    rm -rf runs  # 400M weights: several GiB per design
  done
}

# ---- tiny byte-level data for the sweep and hf stages --------------------------------------------
bytes_data() {  # DIR: tokenized once from the bundle's corpus (else README + doc/*.md)
  [[ -d $WORK/bytes ]] && { ln -sfn "$WORK/bytes" "$1"; return; }
  local corpus=$ROOT/data/corpus.txt
  if [[ ! -f $corpus ]]; then
    corpus=$WORK/corpus.txt
    cat "$ROOT/README.md" "$ROOT"/doc/*.md >"$corpus"
  fi
  t "$DEPTHBENCH" tokenize --tokenizer bytes --format text --doc-separator blank-line --input "$corpus" --val-fraction 0.1 \
    --out "$WORK/bytes" && ln -sfn "$WORK/bytes" "$1"
}

# ---- 4. a sweep of two groups -----------------------------------------------------------------
stage_sweep() {
  local dir=$WORK/sweep rc
  mkdir -p "$dir" && cd "$dir" || return
  bytes_data data || { row sweep FAIL "tokenize failed"; return; }
  suite() {  # DEPTHS LRS
    cat <<EOF
[suite]
name = gpucheck
designs = pre_ln
budget = total 60K
depths = $1
shape_rule = sub1b
heads = 2
diagnostics = none
[learning_rates]
default = $2
[recipe]
model.vocab_size = 257
train.steps = 30
train.seq_len = 32
train.global_batch = 8
train.micro_batch = 2
train.log_interval = 1
train.val_interval = 10
train.val_windows = 4
train.checkpoint_interval = 10
train.threads = 1
train.backend = $BACKEND
data.train_files = $dir/data/train_*.npy
data.val_files = $dir/data/val_*.npy
EOF
  }
  suite "1" "3e-3" >one.ini
  suite "1 2" "3e-3 1e-2" >four.ini
  echo "== one run first (it is then finished when the two groups start)"
  t "${MPIRUN[@]}" -np 1 "$DEPTHBENCH" sweep one.ini --out runs >"$LOGS/sweep_one.log" 2>&1
  rc=$?
  cat "$LOGS/sweep_one.log"
  if ((T_NO_TIME)); then
    row sweep skipped "stage time spent (the one-run sweep)"
    return
  elif ((rc != 0)); then
    row sweep FAIL "the first one-run sweep failed (rc $rc)" "$LOGS/sweep_one.log"
    return
  fi
  echo "== 2 ranks, --ranks-per-run 1: two groups, four runs, one finished"
  t "${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep four.ini --ranks-per-run 1 --out runs >"$LOGS/sweep_two_groups.log" 2>&1
  rc=$?
  cat "$LOGS/sweep_two_groups.log"
  local done
  done=$(ls runs/*.h5 2>/dev/null | wc -l)
  # The stage's limit is this sweep's cap: measured ≈ 4x what it takes, so a timeout is a hang.
  if timed_out $rc; then
    row sweep FAIL "two groups did not finish within the limit (a hang?); $done of 4 run files" \
      "$LOGS/sweep_two_groups.log"
  elif ((rc != 0 || done != 4)); then
    row sweep FAIL "rc $rc, $done of 4 run files" "$LOGS/sweep_two_groups.log"
  else
    row sweep pass "2 groups, one run finished before; $(grep -E '^\[sweep\] [0-9]+ runs:' "$LOGS/sweep_two_groups.log" | tail -1 | cut -c9-80)"
  fi
}

# A tiny trained run of ARCH (runs/NAME) exported to HF (runs/NAME-hf), with our loss of every
# validation window in ours_NAME.csv; its output goes to logs/hf_NAME.log. Uses the hf stage's
# val, seq and windows.
hf_trained_export() {
  local arch=$1 name=$2 log=$LOGS/hf_$2.log
  t "$DEPTHBENCH" train --model.arch "$arch" --model.n_layer 2 --model.d_model 64 --model.n_head 4 \
    --model.n_kv_head 2 --model.vocab_size 257 --train.backend "$BACKEND" --train.steps 30 \
    --train.seq_len "$seq" --train.global_batch 8 --train.micro_batch 8 --train.learning_rate 3e-3 \
    --train.val_windows 4 --data.train_files 'data/train_*.npy' --data.val_files "$val" \
    --output.dir runs --output.name "$name" >"$log" 2>&1 &&
    t "$DEPTHBENCH" export "runs/$name.h5" --format hf --out "runs/$name-hf" >>"$log" 2>&1 &&
    t "$DEPTHBENCH" eval --weights "runs/$name.weights" --data "$val" --windows "$windows" \
      --seq-len "$seq" --backend "$BACKEND" --windows-csv "ours_$name.csv" >>"$log" 2>&1
}

# ---- 5. Hugging Face interop with the real transformers -----------------------------------------
# One Python process compares all three (hf_interop.py check: torch and transformers imported
# once; it runs `depthbench eval --hf` on the tiny models it writes).
stage_hf() {
  if [[ $HAVE_TORCH != 1 ]] || ! "$PYTHON" -c "import transformers" 2>/dev/null; then
    row hf skipped "no transformers for $PYTHON"
    return
  fi
  local dir=$WORK/hf val seq=64 windows=4 exported=() rc
  mkdir -p "$dir" && cd "$dir" || return
  bytes_data data || { row hf FAIL "tokenize failed"; return; }
  val=$(ls data/val_*.npy | head -1)
  echo "== a trained Pre-LN run, exported to HF"
  if hf_trained_export pre_ln tiny; then
    exported=(--exported runs/tiny-hf=ours_tiny.csv)
  elif stage_time_spent $?; then
    row "hf export -> Llama" skipped "stage time spent (logs/hf_tiny.log)"
  else
    row "hf export -> Llama" FAIL "train/export/eval failed" "$LOGS/hf_tiny.log"
  fi
  echo "== a trained HC run, exported to HF with its modelling code (trust_remote_code)"
  if hf_trained_export hc hc; then
    exported+=(--exported runs/hc-hf=ours_hc.csv)
  elif stage_time_spent $?; then
    row "hf export -> remote code (hc)" skipped "stage time spent (logs/hf_hc.log)"
  else
    row "hf export -> remote code (hc)" FAIL "train/export/eval failed" "$LOGS/hf_hc.log"
  fi
  echo "== the export, and a tiny LLaMA and Qwen3 from save_pretrained under depthbench eval --hf"
  t "$PYTHON" "$HERE/hf_interop.py" check --depthbench "$DEPTHBENCH" --backend "$BACKEND" \
    --data "$val" --seq $seq --windows $windows --tiny tiny --vocab 257 "${exported[@]}" \
    >"$LOGS/hf_compare.log" 2>&1
  rc=$?
  cat "$LOGS/hf_compare.log"
  local line name
  while read -r line; do
    name=${line#result }
    name=${name%%: *}
    row "hf $name" "$([[ $line == *": pass" ]] && echo pass || echo FAIL)" \
      "$(sed -E 's/^result [^:]+: //; s/: (pass|FAIL)$//' <<<"$line" | cut -c1-150)" "$LOGS/hf_compare.log"
  done < <(grep "^result " "$LOGS/hf_compare.log")
  if ((rc != 0)) && ! grep -q "^result .*: FAIL$" "$LOGS/hf_compare.log"; then
    if stage_time_spent $rc; then
      row "hf compare" skipped "stage time spent (logs/hf_compare.log)"
    else
      row "hf compare" FAIL "hf_interop.py check stopped (rc $rc)" "$LOGS/hf_compare.log"
    fi
  fi
}

# ---- 6. speed -----------------------------------------------------------------------------------
# bench/gpu_speed.sh --short (doc/performance.md): Pre-LN and HC at 400M L = 24, Pre-LN at
# L = 70, Pre-LN at L = 24 with cuda_graphs = off (and the per-op breakdown of one step) and with
# activation_dtype = fp32, PyTorch eager and compiled on Pre-LN at L = 24, within what is left of
# this stage. Its tables go into the summary.
stage_speed() {
  local left=$((STAGE_END - $(date +%s))) dir=$LOGS/speed rc
  local mode=--short
  [[ $BACKEND == cpu ]] && mode=--cpu-smoke  # the script and its table without a GPU
  # 15 s kept back: gpu_speed.sh stops a command up to 10 s after its limit (timeout -k 10), and
  # it writes the table only after its last command.
  t env DEPTHBENCH="$DEPTHBENCH" PYTHON="$PYTHON" BUDGET_S=$((left - 15)) ITEM_S=60 STEPS="$STEPS" \
    bash "$ROOT/bench/gpu_speed.sh" $mode --out "$dir" >"$LOGS/speed_table.log" 2>&1
  rc=$?
  cat "$LOGS/speed_table.log"
  [[ -f $dir/gpu_speed.md ]] && SPEED_TABLE=$(cat "$dir/gpu_speed.md")
  local measured
  measured=$(grep -c '"source": "depthbench", "result"' "$dir/gpu_speed.jsonl" 2>/dev/null)
  if timed_out $rc; then
    row speed FAIL "gpu_speed.sh did not finish within the stage (logs/speed_table.log); ${measured:-0} measured"
  else
    row speed "$( ((rc == 0)) && echo pass || echo FAIL)" \
      "${measured:-0} depthbench rows measured (table below; logs/speed/)"
  fi
}

say "DepthBench GPU check: $VERSION; budget ${BUDGET_S}s; work $WORK; results $RESULTS"
for stage in "${ORDER[@]}"; do run_stage "$stage"; done
