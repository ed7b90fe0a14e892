#!/usr/bin/env bash
# `depthbench train` from the command line on the bundled corpus: the validation loss must fall
# clearly; bad configs and unknown designs must be rejected with one clear line.
set -euo pipefail
bin=$1; python=$2; source_dir=$3; work=$4
rm -rf "$work" && mkdir -p "$work"
cd "$work"
"$bin" tokenize --tokenizer bytes --format fortunes --input '/usr/share/games/fortunes/fortunes' \
  --val-fraction 0.05 --out data/demo > tokenize.log
"$bin" train --config "$source_dir/input/train_demo.ini" --train.steps 100 --train.val_interval 25 \
  --output.dir runs > train.log
"$python" - <<'PY'
import glob, h5py, math
f = h5py.File(glob.glob("runs/*.h5")[0], "r")
val = f["curves/val_loss"][:]
print("validation loss by evaluation:", [round(v, 3) for v in val], "ln V =", round(math.log(257), 3))
assert f.attrs["status"] == "completed"
assert val[-1] < val[0] - 0.2 and val[-1] < 3.0, val
PY
# A misspelt key names itself and lists the valid keys; an unknown design lists the designs.
if "$bin" train --config "$source_dir/input/train_demo.ini" --train.stpes 5 2> err.txt; then exit 1; fi
grep -q "unknown option 'train.stpes'" err.txt && grep -q "train.steps" err.txt
if "$bin" train --config "$source_dir/input/train_demo.ini" --model.arch nope 2> err.txt; then exit 1; fi
grep -q "unknown architecture 'nope' (valid: pre_ln" err.txt
[ "$(wc -l < err.txt)" -eq 1 ]
# train.recompute = blocks re-runs each block's forward in the backward: the same curve, bit for
# bit, and the run file says which it was.
for recompute in none blocks; do
  "$bin" train --config "$source_dir/input/train_demo.ini" --model.arch hc --train.steps 4 \
    --train.val_interval 2 --train.recompute $recompute --output.dir runs_$recompute > train_$recompute.log
done
"$python" - <<'PY'
import glob, h5py
kept, recomputed = (h5py.File(glob.glob(f"runs_{r}/*.h5")[0], "r") for r in ("none", "blocks"))
assert kept.attrs["recompute"] == "none" and recomputed.attrs["recompute"] == "blocks"
for curve in ("train_loss", "grad_norm", "val_loss"):
    assert (kept["curves/" + curve][:] == recomputed["curves/" + curve][:]).all(), curve
PY
echo "cli training: ok"
