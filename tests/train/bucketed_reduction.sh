#!/usr/bin/env bash
# train.reduce_bucket_mb on real mpirun ranks: a run whose gradients are summed in tiny buckets
# started during the backward (hundreds of buckets) and the same run summed in one piece after
# it (reduce_bucket_mb = 0) give bit-identical curves and final weights, on 2 and on 3 ranks
# (where MPI_Allreduce's own order would depend on the message size), for Pre-LN, a
# multi-stream design (HC, mHC) and one with depth-mixing parameters (Full AttnRes). Three
# micro-batches per rank and step, so the gradients accumulate before the overlapped one. Open
# MPI's ring all-reduce is forced, whose order of additions would move with the bucket size.
# usage: bucketed_reduction.sh DEPTHBENCH PYTHON SOURCE_DIR WORK_DIR "MPIRUN..."
source "$(dirname "$0")/../sweep/common.sh"
cd "$WORK"
export OMP_NUM_THREADS=1 OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=4
cat >base.ini <<INI
[model]
n_layer = 3
d_model = 16
n_head = 2
vocab_size = 257
[train]
steps = 4
seq_len = 16
global_batch = 6
micro_batch = 1
val_interval = 2
val_windows = 2
threads = 1
log_interval = 1
[data]
train_files = $DATA/train_*.npy
val_files = $DATA/val_*.npy
INI

same_weights() {
  "$PYTHON" - "$1" "$2" <<'PY'
import sys, h5py, numpy as np
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
names = []
a["params"].visit(lambda n: names.append(n) if isinstance(a["params"][n], h5py.Dataset) else None)
assert names, "no parameters in " + sys.argv[1]
for n in names:
    x, y = a["params"][n][()], b["params"][n][()]
    if x.tobytes() != y.tobytes():
        sys.exit(f"params/{n} differs: max |diff| {np.max(np.abs(x - y)):.3e}")
print(f"{len(names)} weight tensors bit-identical")
PY
}

for np in 2 3; do
  for arch in pre_ln hc mhc attnres_full; do
    for mb in 0 0.0005; do
      timeout 300 "${MPIRUN[@]}" -np $np "$DEPTHBENCH" train --config base.ini \
        --model.arch=$arch --train.reduce_bucket_mb=$mb --output.dir="np$np/mb$mb" \
        --output.name=$arch >"np${np}_${arch}_$mb.out" 2>&1 ||
        fail "$arch on $np ranks, reduce_bucket_mb $mb: $(tail -5 "np${np}_${arch}_$mb.out")"
    done
    flat=$(h5attr "np$np/mb0/$arch.h5" gradient_reduction)
    bucketed=$(h5attr "np$np/mb0.0005/$arch.h5" gradient_reduction)
    [ "$flat" = mpi ] || fail "$arch: flat reduction recorded as '$flat'"
    [[ "$bucketed" =~ ^mpi,\ ([0-9]+)\ buckets\ of\ 0.0005\ MB\ overlapped$ ]] ||
      fail "$arch: bucketed reduction recorded as '$bucketed'"
    [ "${BASH_REMATCH[1]}" -gt 20 ] || fail "$arch: only ${BASH_REMATCH[1]} buckets"
    grep -q "gradient reduction: $bucketed" "np$np/mb0.0005/$arch.log" ||
      fail "$arch: the log does not name the reduction"
    echo "$arch on $np ranks: '$flat' vs '$bucketed'"
  done
  "$PYTHON" "$SOURCE_DIR/tests/sweep/compare_curves.py" --exact "np$np/mb0" "np$np/mb0.0005" ||
    fail "curves differ on $np ranks"
  for arch in pre_ln hc mhc attnres_full; do
    same_weights "np$np/mb0/$arch.weights" "np$np/mb0.0005/$arch.weights" ||
      fail "$arch on $np ranks: final weights differ"
  done
done
# A bad value is refused with one line before anything runs.
! "$DEPTHBENCH" train --config base.ini --train.reduce_bucket_mb=-1 >bad.out 2>&1 ||
  fail "reduce_bucket_mb = -1 was accepted"
grep -q "train.reduce_bucket_mb" bad.out || fail "no error naming the key: $(cat bad.out)"
echo "bucketed and flat gradient sums agree bit for bit"
