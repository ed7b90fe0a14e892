#!/usr/bin/env bash
# bench/gpu_speed.sh --cpu-smoke end to end on the CPU (no GPU here): every shape row, the
# PyTorch columns ("—" for a design the reference lacks and for torch.compile where torch has
# none), the ratios against Pre-LN, the lever table (one lever off per row, what each row ran;
# BENCH_ARGS sets bf16 activations on every command, so activation_dtype=fp32 really changes
# the computation), the per-op breakdowns (Pre-LN; HC with its kernels by functor), the attention
# paths at an unpadded and a padded head dim (cuDNN's default against our flash kernel); a bad
# BENCH_ARGS stops the script with status 2; a depthbench that fails gives "failed" rows, the
# reason, and exit status 1; the lever table's GPU cells (attention fallback, failed capture,
# skipped row) from a made-up results file.
# usage: gpu_speed_smoke.sh DEPTHBENCH PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
depthbench=$1 python=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

DEPTHBENCH=$depthbench PYTHON=$python BENCH_ARGS="--train.activation_dtype bf16" \
  bash "$root/bench/gpu_speed.sh" --cpu-smoke --out "$work/ok" \
  >"$work/ok.txt" 2>"$work/ok.err" || { cat "$work/ok.txt" "$work/ok.err"; fail "exit status $?"; }
table=$work/ok/gpu_speed.md
cat "$table"
cmp -s "$table" "$work/ok.txt" || fail "stdout is not the table written to gpu_speed.md"
grep -q '^| shape | design | tokens/s | MFU | step ms | peak GiB | vs Pre-LN | PyTorch eager tokens/s | compiled tokens/s | ours / eager | ours / compiled |$' "$table" ||
  fail "header row"
rows=$(grep -cE '^\| (main400m|validation1p6b)[^|]*\| (pre_ln|hc) \|' "$table")
((rows == 6)) || fail "$rows design rows, expected 6 (pre_ln and hc at two 400M shapes, pre_ln at 1.6B and at the padded head dim)"
# Pre-LN rows: figures, 1.00× against themselves, a PyTorch eager figure and its ratio.
while read -r line; do
  [[ $line =~ \|\ pre_ln\ \|\ [0-9\ ]+\ \|\ [0-9.]+%\ \|\ [0-9.]+\ \|\ [0-9.]+\ \|\ 1\.00×\ \|\ [0-9\ ]+\ \|\ —\ \|\ [0-9.]+×\ \|\ —\ \|$ ]] ||
    fail "pre_ln row: $line"
done < <(grep -E '^\| (main400m L|validation1p6b).*\| pre_ln \|' "$table")
# The padded-head-dim shape has no PyTorch run: its own row, no PyTorch figure.
grep -qE '^\| main400m, padded head dim \(d 80, L 2\) \| pre_ln \| [0-9 ]+ \| [0-9.]+% \| [0-9.]+ \| [0-9.]+ \| 1\.00× \| — \| — \| — \| — \|$' "$table" ||
  fail "padded head dim row in the main table"
# HC: measured, a ratio against Pre-LN, no PyTorch twin.
grep -E '^\| (main400m|validation1p6b).*\| hc \|' "$table" | while read -r line; do
  [[ $line =~ \|\ hc\ \|\ [0-9\ ]+\ \|.*\|\ [0-9.]+×\ \|\ —\ \|\ —\ \|\ —\ \|\ —\ \|$ ]] || fail "hc row: $line"
done
grep -q "the reference implements pre_ln, sandwich_ln, lns, deepnorm and keel only" "$table" || fail "why hc has no PyTorch figure"
grep -q "MFU = (6·N_non-embedding + 12·L·d·T + design extras) FLOP per token × tokens/s / 989 TFLOP/s" "$table" ||
  fail "the MFU definition and its assumed peak"
grep -q "^Every depthbench command had \`--train.activation_dtype bf16\` (BENCH_ARGS)." "$table" || fail "BENCH_ARGS line"
# The lever table: all levers on (the main table's row, not run again), then one lever off.
grep -q '^### Pre-LN L = 24, one lever off$' "$table" || fail "lever table title"
grep -q '^| design | variant | tokens/s | step ms | step vs all on | peak GiB | peak vs all on | attention | activations | CUDA graphs |$' "$table" ||
  fail "lever table header"
lever_row() {  # DESIGN VARIANT STEP_RATIO ACTIVATIONS GRAPHS
  grep -qE "^\| $1 \| $2 \| [0-9 ]+ \| [0-9.]+ \| $3 \| [0-9.]+ \| [0-9.]+× \| cpu \| $4 \| $5 \|$" "$table" ||
    fail "lever row $1 $2: $(grep -E "^\| $1 \| $2 \|" "$table")"
}
cpu_graphs="not applicable \(cpu\)"
lever_row pre_ln "all levers on \(defaults\)" "1\.00×" bf16 "$cpu_graphs"
lever_row pre_ln cuda_graphs=off "[0-9.]+×" bf16 "off \(ops timed\)"
lever_row pre_ln attention=reference "[0-9.]+×" bf16 "$cpu_graphs"
lever_row pre_ln activation_dtype=fp32 "[0-9.]+×" fp32 "$cpu_graphs"
lever_row pre_ln recompute=blocks "[0-9.]+×" bf16 "$cpu_graphs"
lever_row hc "all levers on \(defaults\)" "1\.00×" bf16 "$cpu_graphs"
lever_row hc activation_dtype=fp32 "[0-9.]+×" fp32 "$cpu_graphs"
grep -q '"variant": "recompute=blocks"' "$work/ok/gpu_speed.jsonl" || fail "the variant field in gpu_speed.jsonl"
grep '"variant": "recompute=blocks"' "$work/ok/gpu_speed.jsonl" | grep -q '"recompute": "blocks"' ||
  fail "the recompute=blocks row did not run with recompute = blocks"
# The breakdown (of the cuda_graphs=off row): the cores' products through the timed bf16 storage.
grep -q "^### One pre_ln step op by op" "$table" || fail "breakdown title"
grep -qE '^\| linear_forward \| 14 \| [0-9.]+ \| [0-9.]+% \|$' "$table" || fail "breakdown: 7 products × 2 blocks"
grep -qE '^\| bf16_narrow \| [0-9]+ \|' "$table" || fail "breakdown: the bf16 roundings"
grep -q '^| other: host work, gaps |' "$table" || fail "breakdown: the rest of the step"
# HC's too (BREAKDOWNS defaults to the designs with work of their own): its stream kernels,
# timed by functor, and its cuda_graphs=off row in the lever table.
grep -q "^### One hc step op by op" "$table" || fail "hc breakdown title"
grep -qE '^\| stream_kernels::MixGrads \| 4 \| [0-9.]+ \| [0-9.]+% \|$' "$table" ||
  fail "hc breakdown: the mix backward, by functor, once per sublayer (2 blocks)"
lever_row hc cuda_graphs=off "[0-9.]+×" bf16 "off \(ops timed\)"
# The attention paths: the default and flash at L = 24 (hd 16) and at the padded shape (hd 20).
grep -q '^### Attention paths: cuDNN and our flash kernel, unpadded and padded head dim$' "$table" ||
  fail "attention path table title"
path_row() {  # SHAPE HEAD_DIM VARIANT RATIO
  grep -qE "^\| $1 \| $2 \| $3 \| cpu \| [0-9 ]+ \| [0-9.]+ \| $4 \| [0-9.]+ \|$" "$table" ||
    fail "attention path row $1 $3: $(grep -E "^\| $1 \|" "$table")"
}
path_row "main400m L = 24 \(d 64, L 2\)" 16 default —
path_row "main400m L = 24 \(d 64, L 2\)" 16 attention=flash "[0-9.]+×"
path_row "main400m, padded head dim \(d 80, L 2\)" 20 default —
path_row "main400m, padded head dim \(d 80, L 2\)" 20 attention=flash "[0-9.]+×"
lever_row pre_ln attention=flash "[0-9.]+×" bf16 "$cpu_graphs"
(($(wc -l <"$work/ok/gpu_speed.jsonl") == 24)) ||
  fail "gpu_speed.jsonl: 6 depthbench + 8 lever + 10 PyTorch lines (2 modes each) expected"

# BENCH_ARGS that is not "--train.KEY VALUE" pairs, or that depthbench refuses: status 2, nothing run.
for bad in "--model.d_model 32" "--train.attention" "--train.attention bogus"; do
  status=0
  DEPTHBENCH=$depthbench PYTHON=$python BENCH_ARGS=$bad bash "$root/bench/gpu_speed.sh" --cpu-smoke \
    --out "$work/bad_args" >"$work/bad_args.txt" 2>&1 || status=$?
  ((status == 2)) || fail "BENCH_ARGS='$bad': exit status $status, expected 2"
  grep -q "^gpu_speed.sh: BENCH_ARGS" "$work/bad_args.txt" || fail "BENCH_ARGS='$bad': no message"
done
grep -q "unknown attention path 'bogus'" "$work/bad_args.txt" || fail "depthbench's own reason for a bad value"

# A depthbench that cannot run: every row says failed, the reason is listed, status 1.
fake=$work/fake-depthbench
printf '#!/bin/sh\necho "depthbench bench: error: out of device memory" >&2\nexit 1\n' >"$fake"
chmod +x "$fake"
status=0
DEPTHBENCH=$fake PYTHON=$python DESIGNS=pre_ln bash "$root/bench/gpu_speed.sh" --cpu-smoke --out "$work/bad" \
  >"$work/bad.txt" 2>&1 || status=$?
cat "$work/bad.txt"
((status == 1)) || fail "exit status $status with a failing depthbench, expected 1"
grep -qE '^\| main400m L = 24 \| pre_ln \| failed \|' "$work/bad/gpu_speed.md" || fail "failed row"
grep -q "depthbench pre_ln L24: failed: depthbench bench: error: out of device memory" "$work/bad/gpu_speed.md" ||
  fail "the reason of the failure"
grep -qE '^\| pre_ln \| activation_dtype=fp32 \| failed \|' "$work/bad/gpu_speed.md" || fail "failed lever row"
grep -q "depthbench pre_ln L24 cuda_graphs=off: failed: depthbench bench: error: out of device memory" \
  "$work/bad/gpu_speed.md" || fail "the reason of the lever row's failure"

# The lever table's GPU cells, from results a GPU would give: the attention paths without their
# shapes (a fallback's reason under the table, the main table's too), a failed capture, a row
# skipped for time.
gpu_result() {  # ARCH ATTENTION_PATHS CUDA_GRAPHS STEP_MS PEAK_BYTES
  printf '{"arch": "%s", "backend": "cuda", "device": "NVIDIA H200", "precision": "bf16", "activation_dtype": "bf16", "attention_paths": "%s", "cuda_graphs": "%s", "recompute": "none", "n_layer": 24, "d_model": 1024, "n_head": 16, "seq_len": 2048, "micro_batch": 8, "steps": 5, "warmup_steps": 3, "step_ms": %s, "tokens_per_second": %s, "mfu": 0.4, "peak_memory_bytes": %s}' \
    "$1" "$2" "$3" "$4" "$((16384000 / $4))" "$5"
}
{
  printf 'L24\t{"source": "depthbench", "result": %s}\n' \
    "$(gpu_result pre_ln "B=8 T=2048 H=16 H_kv=16 hd=64: cudnn" captured 100 8589934592)"
  printf 'L24\t{"source": "depthbench", "result": %s}\n' \
    "$(gpu_result hc "B=8 T=2048 H=16 H_kv=16 hd=64: flash (cuDNN: no engine)" captured 110 8589934592)"
  printf 'L24\t{"source": "depthbench", "result": %s, "variant": "attention=reference"}\n' \
    "$(gpu_result pre_ln "B=8 T=2048 H=16 H_kv=16 hd=64: reference" captured 400 8589934592)"
  printf 'L24\t{"source": "depthbench", "result": %s, "variant": "recompute=blocks"}\n' \
    "$(gpu_result pre_ln "B=8 T=2048 H=16 H_kv=16 hd=64: flash (cuDNN: no engine)" "eager after capture failed: cudaErrorStreamCaptureInvalidated" 125 4294967296)"
  printf 'L24\t{"source": "depthbench", "arch": "attnres_full", "variant": "activation_dtype=fp32", "skipped": "time budget spent"}\n'
  # The padded head dim (L = 28, d = 960: hd 60), cuDNN on padded copies and our flash kernel.
  printf 'Lpad\t{"source": "depthbench", "result": %s}\n' \
    "$(gpu_result pre_ln "B=8 T=2048 H=16 H_kv=16 hd=60: cudnn" captured 100 8589934592)"
  printf 'Lpad\t{"source": "depthbench", "result": %s, "variant": "attention=flash"}\n' \
    "$(gpu_result pre_ln "B=8 T=2048 H=16 H_kv=16 hd=60: flash" captured 90 8589934592)"
} | sed '/^Lpad/s/"n_layer": 24, "d_model": 1024/"n_layer": 28, "d_model": 960/' >"$work/gpu.jsonl"
"$python" "$root/bench/speed_table.py" "$work/gpu.jsonl" >"$work/gpu.md" || fail "speed_table.py on GPU results"
cat "$work/gpu.md"
for row in '| pre_ln | all levers on (defaults) | 163 840 | 100.0 | 1.00× | 8.00 | 1.00× | cudnn | bf16 | captured |' \
  '| pre_ln | attention=reference | 40 960 | 400.0 | 4.00× | 8.00 | 1.00× | reference | bf16 | captured |' \
  '| pre_ln | recompute=blocks | 131 072 | 125.0 | 1.25× | 4.00 | 0.50× | flash | bf16 | eager: capture failed |' \
  '| attnres_full | all levers on (defaults) | not measured in this run | — | — | — | — | — | — | — |' \
  '| attnres_full | activation_dtype=fp32 | skipped | — | — | — | — | — | — | — |' \
  '- attention of hc L24: B=8 T=2048 H=16 H_kv=16 hd=64: flash (cuDNN: no engine)' \
  '- attention of pre_ln recompute=blocks: B=8 T=2048 H=16 H_kv=16 hd=64: flash (cuDNN: no engine)' \
  '- CUDA graphs of pre_ln recompute=blocks: eager after capture failed: cudaErrorStreamCaptureInvalidated' \
  '- depthbench attnres_full L24 activation_dtype=fp32: skipped: time budget spent' \
  '| main400m L = 24 (d 1024, L 24) | 64 | default | cudnn | 163 840 | 100.0 | — | 8.00 |' \
  '| main400m L = 24 | — | attention=flash | not measured in this run | — | — | — | — |' \
  '| main400m, padded head dim (d 960, L 28) | 60 | default | cudnn | 163 840 | 100.0 | — | 8.00 |' \
  '| main400m, padded head dim (d 960, L 28) | 60 | attention=flash | flash | 182 044 | 90.0 | 0.90× | 8.00 |'; do
  grep -qxF -- "$row" "$work/gpu.md" || fail "lever table from GPU results: no line '$row'"
done
echo "gpu_speed.sh --cpu-smoke: table, ratios, PyTorch columns, lever table, breakdown, BENCH_ARGS and failures as expected"
