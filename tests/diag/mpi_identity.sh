#!/usr/bin/env bash
# The diagnostics of a tiny trained Pre-LN model are identical on 1 rank and on 4 ranks
# (mpirun): every dataset and attribute of diagnostics/, NaN for NaN, and nothing else changes.
# Usage: mpi_identity.sh DEPTHBENCH BINARY_DIR "MPIRUN ..." PYTHON
set -euo pipefail
depthbench=$1
work=$2/diag_mpi_identity
IFS=';' read -r -a mpirun <<< "${3// /;}"  # a CMake list (or spaces)
python=$4
if ! compgen -G '/usr/share/games/fortunes/*' > /dev/null; then
  echo "no fortune files: skipped"; exit 77
fi
if ! "$python" -c 'import h5py, numpy' 2> /dev/null; then
  echo "h5py/numpy missing for $python: skipped"; exit 77
fi
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$depthbench" tokenize --tokenizer bytes --format fortunes --input '/usr/share/games/fortunes/*' \
  --val-fraction 0.05 --out data > /dev/null
cat > tiny.ini << 'INI'
[model]
arch = pre_ln
n_layer = 4
d_model = 32
n_head = 4
vocab_size = 257
[train]
steps = 20
seq_len = 32
global_batch = 4
micro_batch = 4
learning_rate = 3e-3
threads = 1
val_interval = 20
val_windows = 8
[data]
train_files = data/train_000000.npy
val_files = data/val_000000.npy
[output]
dir = runs
name = tiny
INI
"$depthbench" train --config tiny.ini > /dev/null
cat > arc.jsonl << 'JSONL'
{"id": "a1", "question": "What do plants need to grow?", "choices": {"text": ["light", "plastic", "noise"], "label": ["A", "B", "C"]}, "answerKey": "A"}
{"id": "a2", "question": "Ice is frozen", "choices": {"text": ["sand", "water"], "label": ["1", "2"]}, "answerKey": "2"}
{"id": "a3", "question": "The sun is a", "choices": {"text": ["star", "planet", "moon", "rock"], "label": ["A", "B", "C", "D"]}, "answerKey": "1"}
JSONL
cat > gsm8k.jsonl << 'JSONL'
{"question": "Tom has 3 apples and buys 2 more. How many?", "answer": "3 + 2 = 5\n#### 5"}
{"question": "A cat has 4 legs. How many legs do 2 cats have?", "answer": "2 * 4 = 8\n#### 8"}
{"question": "What is 10 - 7?", "answer": "10 - 7 = 3\n#### 3"}
JSONL
options=(--threads 1 --angular-windows 24 --causal-windows 6 --permutation-windows 6
         --path-windows 5 --pruning-windows 6 --logitlens-windows 7 --bootstrap 100
         --arc arc.jsonl --gsm8k gsm8k.jsonl)
for n in 1 4; do
  cp runs/tiny.h5 "run$n.h5" && cp runs/tiny.weights "run$n.weights"
  "${mpirun[@]}" -np $n "$depthbench" diagnose "run$n.h5" "${options[@]}" > "diagnose$n.log"
done
"$python" - << 'PY'
import h5py, numpy as np, sys
a, b, orig = h5py.File("run1.h5", "r"), h5py.File("run4.h5", "r"), h5py.File("runs/tiny.h5", "r")
names = sorted(a["diagnostics"].keys())
assert names == sorted(b["diagnostics"].keys()), "dataset lists differ"
expected = {"angular_distance", "angular_distance_by_offset", "angular_distance_last_token",
            "causal_score", "permutation_score", "permutation_score_per_layer",
            "pruning_loss_delta", "pruning_arc_acc_delta", "pruning_arc_acc_norm_delta",
            "logitlens_kl", "logitlens_kl_reverse", "logitlens_ce", "logitlens_top5_overlap",
            "path_weights", "domain_nll_gsm8k"}
missing = expected - set(names)
assert not missing, f"missing datasets: {missing}"
for n in names:
    x, y = a["diagnostics"][n], b["diagnostics"][n]
    assert x.shape == y.shape and np.array_equal(x[()], y[()], equal_nan=True), f"{n} differs"
    assert dict(x.attrs).keys() == dict(y.attrs).keys(), f"{n}: attribute names differ"
    assert y.attrs["ranks"] == 4 and x.attrs["ranks"] == 1 and x.attrs["seconds"] > 0, n
    for k in x.attrs:
        if k in ("seconds", "ranks"):  # how it ran (measured time, ranks), not what it found
            continue
        u, v = x.attrs[k], y.attrs[k]
        same = (u == v) or (isinstance(u, float) and np.isnan(u) and np.isnan(v))
        assert same, f"{n}.{k}: {u} != {v}"
for group in ("curves", "final"):  # the other groups are untouched
    for k in orig[group].attrs:
        assert orig[group].attrs[k] == a[group].attrs[k]
    for k in orig[group].keys():
        assert np.array_equal(orig[group][k][()], a[group][k][()])
for k in orig.attrs:
    assert str(orig.attrs[k]) == str(a.attrs[k]), k
print(f"{len(names)} datasets identical on 1 and 4 ranks")
PY
grep -q "forward passes" diagnose1.log
