#!/usr/bin/env bash
# Every registered design trains on the bundled corpus without NaN and lowers its validation
# loss clearly (issue: "every design trains for a few hundred steps").
set -euo pipefail
bin=$1; python=$2; work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$work"
"$bin" tokenize --tokenizer bytes --format fortunes --input '/usr/share/games/fortunes/*' \
  --val-fraction 0.05 --out data > tokenize.log
designs=$( ("$bin" train --model.arch '?' 2>&1 || true) | sed -n 's/.*(valid: \(.*\)).*/\1/p' | tr -d ',')
[ -n "$designs" ]
for arch in $designs; do
  "$bin" train --model.arch "$arch" --model.n_layer 4 --model.d_model 64 --model.n_head 4 \
    --model.vocab_size 257 --train.steps 200 --train.seq_len 64 --train.global_batch 8 \
    --train.micro_batch 8 --train.learning_rate 3e-3 --train.val_interval 40 --train.val_windows 32 \
    --train.threads 1 --train.log_interval 1000 --data.train_files 'data/train_*.npy' \
    --data.val_files 'data/val_*.npy' --output.dir runs > "train_$arch.log" || true
done
"$python" - $designs <<'PY'
import glob, h5py, sys
failed = []
for arch in sys.argv[1:]:
    [path] = glob.glob(f"runs/single__{arch}__*.h5")
    f = h5py.File(path, "r")
    val = f["curves/val_loss"][:]
    print(f"{arch:14s} status {f.attrs['status']:9s} validation loss {val[0]:.3f} (step 0) -> {val[-1]:.3f} (step 200)")
    if f.attrs["status"] != "completed" or not val[-1] < val[0] - 0.1 or not val[-1] < 3.0:
        failed.append(arch)
assert not failed, f"did not learn: {failed}"
PY
