#!/usr/bin/env bash
# CPU training throughput of depthbench against PyTorch on the same Pre-LN model, shape and
# threads, measured in the same run: each side three times, interleaved, median tokens/s and
# the ratio. usage: bench/cpu_vs_pytorch.sh BUILD_DIR [d_model n_layer seq_len batch threads]
set -euo pipefail
build=${1:-build}; d=${2:-256}; L=${3:-4}; T=${4:-256}; B=${5:-4}; threads=${6:-$(nproc)}
python=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
ours=(); theirs=()
for i in 1 2 3; do
  ours+=("$("$build/depthbench" bench --model.d_model "$d" --model.n_layer "$L" --train.seq_len "$T" \
    --train.micro_batch "$B" --train.threads "$threads" --train.steps 5 | sed -n 's/.*tokens_per_second=\([0-9.]*\).*/\1/p')")
  theirs+=("$("$python" "$here/pytorch_cpu_reference.py" --d-model "$d" --n-layer "$L" --seq-len "$T" \
    --batch "$B" --threads "$threads" --steps 5 | sed -n 's/.*tokens_per_second=\([0-9.]*\).*/\1/p')")
done
"$python" - "$d" "$L" "$T" "$B" "$threads" "${ours[@]}" "${theirs[@]}" <<'PY'
import statistics, sys
d, L, T, B, threads = sys.argv[1:6]
ours, theirs = map(float, sys.argv[6:9]), map(float, sys.argv[9:12])
ours, theirs = sorted(ours), sorted(theirs)
mo, mt = statistics.median(ours), statistics.median(theirs)
print(f"Pre-LN d={d} L={L} T={T} B={B} threads={threads}")
print(f"  depthbench tokens/s: {mo:.0f} (runs {', '.join(f'{x:.0f}' for x in ours)})")
print(f"  PyTorch    tokens/s: {mt:.0f} (runs {', '.join(f'{x:.0f}' for x in theirs)})")
print(f"  ratio depthbench / PyTorch: {mo / mt:.2f}")
PY
