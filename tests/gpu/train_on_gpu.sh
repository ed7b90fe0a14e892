#!/usr/bin/env bash
# Training on the GPU through `depthbench train` (label gpu), on the byte-level fortunes data:
#  1. every design: 20 steps on CUDA in fp32 follow the CPU run's curve (train loss per step
#     within 2e-3 relative; the two differ only in the order of additions);
#  2. bf16 arithmetic stays within 2e-2 relative of fp32 on every step (Pre-LN, HC);
#  3. a CUDA run stopped after a checkpoint resumes to exactly the loss curve of an
#     uninterrupted CUDA run (bit-identical rows);
#  4. a checkpoint written on the GPU resumes on the CPU and completes.
# Without a GPU it prints "no GPU: skipped" and passes, except in a build for the emulated device
# (DEPTHBENCH_EMULATED_DEVICE=1, set by CTest there: doc/cuda.md "The emulated device"). GPU_BACKEND=cpu runs the whole script
# with the CPU in the GPU's place, which checks the script, train.stop_after_steps and resuming
# on any machine (train.stop_and_resume); DESIGNS limits the designs of check 1.
source "$(dirname "$0")/../sweep/common.sh"
GPU=${GPU_BACKEND:-cuda}
if [ "$GPU" = cuda ] && [ -z "${DEPTHBENCH_EMULATED_DEVICE:-}" ] &&
  ! nvidia-smi -L 2>/dev/null | grep -q "^GPU"; then
  echo "no GPU: skipped"
  exit 0
fi
cd "$WORK"

# On the emulated device every kernel runs on the host with its accesses checked: a smaller
# model (d = 32, T = 32) and three designs (one stream, several streams, depth sources) by
# default; the checks are the same.
d_model=64 seq_len=64
if [ -n "${DEPTHBENCH_EMULATED_DEVICE:-}" ] && [ "$GPU" = cuda ]; then
  d_model=32 seq_len=32
  DESIGNS=${DESIGNS:-pre_ln hc attnres_block}
fi
COMMON=(--model.n_layer 3 --model.d_model $d_model --model.n_head 4 --model.vocab_size 257
  --train.steps 20 --train.seq_len $seq_len --train.global_batch 8 --train.micro_batch 4
  --train.val_interval 10 --train.val_windows 4 --train.log_interval 1 --train.warmup_fraction 0.1
  --train.learning_rate 3e-3 --train.threads 2
  --data.train_files "$DATA/train_*.npy" --data.val_files "$DATA/val_*.npy"
  --output.dir runs)

# train NAME ARCH BACKEND PRECISION [--key=value...]: one tiny run into runs/NAME.h5.
train() {
  local name=$1 arch=$2 backend=$3 precision=$4
  shift 4
  "$DEPTHBENCH" train "${COMMON[@]}" --model.arch "$arch" --train.backend "$backend" \
    --train.precision "$precision" --output.name "$name" "$@" >"$name.out" 2>&1 || {
    cat "$name.out"
    fail "$name: depthbench train exited non-zero"
  }
}

# compare A.h5 B.h5 TOLERANCE: train-loss curves agree row by row within a relative tolerance
# (0 = bit-identical).
compare() {
  "$PYTHON" - "$@" <<'PY'
import sys, h5py, numpy as np
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
la = h5py.File(a, "r")["curves/train_loss"][()]
lb = h5py.File(b, "r")["curves/train_loss"][()]
assert la.shape == lb.shape, f"{a}: {la.shape} rows, {b}: {lb.shape}"
rel = np.max(np.abs(la - lb) / np.abs(lb))
print(f"{a} vs {b}: max relative difference {rel:.2e} (bound {tol:g})")
sys.exit(0 if (rel <= tol if tol > 0 else np.array_equal(la, lb)) else 1)
PY
}

for arch in ${DESIGNS:-pre_ln sandwich_ln lns deepnorm keel moda hc mhc attnres_full attnres_block}; do
  train "cpu_$arch" "$arch" cpu fp32
  train "cuda_$arch" "$arch" "$GPU" fp32
  compare "runs/cuda_$arch.h5" "runs/cpu_$arch.h5" 2e-3 || fail "$arch: CUDA curve left the CPU curve"
done

for arch in pre_ln hc; do
  train "bf16_$arch" "$arch" "$GPU" bf16
  compare "runs/bf16_$arch.h5" "runs/cuda_$arch.h5" 2e-2 || fail "$arch: bf16 left fp32"
done

# 3. Resume on the GPU: stop after 10 steps (checkpoint, exit 75), rerun the same command.
stopped() {  # NAME BACKEND: the first 10 steps of a 20-step CUDA run, left resumable
  "$DEPTHBENCH" train "${COMMON[@]}" --model.arch pre_ln --train.backend "$GPU" --train.precision fp32 \
    --output.name "$1" \
    --train.stop_after_steps 10 >"$1.stop.out" 2>&1 && fail "$1: expected exit 75, got 0"
  [ $? -eq 75 ] || { cat "$1.stop.out"; fail "$1: expected exit 75"; }
  [ -f "runs/$1.h5.tmp" ] || fail "$1: no resumable run file"
}
stopped resumed
train resumed pre_ln "$GPU" fp32
compare runs/resumed.h5 runs/cuda_pre_ln.h5 0 || fail "a resumed CUDA run differs from an uninterrupted one"

# 4. A GPU checkpoint resumed on the CPU.
stopped moved
train moved pre_ln cpu fp32
compare runs/moved.h5 runs/cpu_pre_ln.h5 2e-3 || fail "a GPU checkpoint resumed on the CPU left the CPU curve"
echo "gpu training checks passed"
