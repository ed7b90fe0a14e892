#!/usr/bin/env bash
# bench/gpu_speed.sh --cpu-smoke end to end on the CPU (no GPU here): every shape row, the
# PyTorch columns ("—" for a design the reference lacks and for torch.compile where torch has
# none), the ratios against Pre-LN, the per-op breakdown; then a depthbench that fails gives a
# "failed" row, the reason, and exit status 1.
# usage: gpu_speed_smoke.sh DEPTHBENCH PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
depthbench=$1 python=$2 root=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

DEPTHBENCH=$depthbench PYTHON=$python bash "$root/bench/gpu_speed.sh" --cpu-smoke --out "$work/ok" \
  >"$work/ok.txt" 2>"$work/ok.err" || { cat "$work/ok.txt" "$work/ok.err"; fail "exit status $?"; }
table=$work/ok/gpu_speed.md
cat "$table"
cmp -s "$table" "$work/ok.txt" || fail "stdout is not the table written to gpu_speed.md"
grep -q '^| shape | design | tokens/s | MFU | step ms | peak GiB | vs Pre-LN | PyTorch eager tokens/s | compiled tokens/s | ours / eager | ours / compiled |$' "$table" ||
  fail "header row"
rows=$(grep -cE '^\| (main400m|validation1p6b)' "$table")
((rows == 5)) || fail "$rows design rows, expected 5 (pre_ln and hc at two 400M shapes, pre_ln at 1.6B)"
# Pre-LN rows: figures, 1.00× against themselves, a PyTorch eager figure and its ratio.
while read -r line; do
  [[ $line =~ \|\ pre_ln\ \|\ [0-9\ ]+\ \|\ [0-9.]+%\ \|\ [0-9.]+\ \|\ [0-9.]+\ \|\ 1\.00×\ \|\ [0-9\ ]+\ \|\ —\ \|\ [0-9.]+×\ \|\ —\ \|$ ]] ||
    fail "pre_ln row: $line"
done < <(grep -E '\| pre_ln \|' "$table")
# HC: measured, a ratio against Pre-LN, no PyTorch twin.
grep -E '\| hc \|' "$table" | while read -r line; do
  [[ $line =~ \|\ hc\ \|\ [0-9\ ]+\ \|.*\|\ [0-9.]+×\ \|\ —\ \|\ —\ \|\ —\ \|\ —\ \|$ ]] || fail "hc row: $line"
done
grep -q "the reference implements pre_ln, sandwich_ln, lns, deepnorm and keel only" "$table" || fail "why hc has no PyTorch figure"
grep -q "MFU = (6·N_non-embedding + 12·L·d·T + design extras) FLOP per token × tokens/s / 989 TFLOP/s" "$table" ||
  fail "the MFU definition and its assumed peak"
grep -q "^### One pre_ln step op by op" "$table" || fail "breakdown title"
grep -qE '^\| linear_forward \| 14 \| [0-9.]+ \| [0-9.]+% \|$' "$table" || fail "breakdown: 7 products × 2 blocks"
grep -q '^| other: design launchers, copies, host gaps |' "$table" || fail "breakdown: the rest of the step"
(($(wc -l <"$work/ok/gpu_speed.jsonl") == 15)) || fail "gpu_speed.jsonl: 5 depthbench + 10 PyTorch lines (2 modes each) expected"

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
echo "gpu_speed.sh --cpu-smoke: table, ratios, PyTorch columns, breakdown and failures as expected"
