#!/usr/bin/env bash
# `depthbench eval` on a tiny trained run: the run's validation windows (spread over the files,
# as the run file's val_tokens / val_documents record) give back the losses the run file
# recorded (final weights and step 0), bit for bit per window; 1 and 2 ranks agree; a
# seeded sample is reproducible; per-document losses match an independent PyTorch recomputation;
# bad options are refused with one line naming them.
set -euo pipefail
bin=$1; python=$2; source_dir=$3; work=$4; read -r -a mpirun <<<"${5//;/ }"
rm -rf "$work" && mkdir -p "$work" && cd "$work"
"$bin" tokenize --tokenizer bytes --format fortunes --input /usr/share/games/fortunes/fortunes \
  --val-fraction 0.05 --output-format npy --out data > tokenize.log
"$bin" train --model.n_layer 2 --model.d_model 16 --model.n_head 2 --train.steps 4 \
  --train.seq_len 32 --train.global_batch 2 --train.micro_batch 2 --train.val_windows 6 \
  --train.threads 1 --train.save_initial_weights true --data.train_files 'data/train_*.npy' \
  --data.val_files 'data/val_*.npy' --output.name tiny --output.dir runs > train.log
val='data/val_*.npy'
"$bin" eval --weights runs/tiny.weights --data "$val" --windows 6 --threads 1 \
  --windows-csv final.csv --documents-csv documents.csv | tee eval.log
"$bin" eval --weights runs/tiny.init.weights --data "$val" --windows 6 --windows-csv initial.csv > /dev/null
"${mpirun[@]}" -np 2 "$bin" eval --weights runs/tiny.weights --data "$val" --windows 6 --threads 1 \
  --windows-csv final2.csv --documents-csv documents2.csv > /dev/null
"$bin" eval --weights runs/tiny.weights --data "$val" --sample 5 --seed 7 --windows-csv a.csv > /dev/null
"$bin" eval --weights runs/tiny.weights --data "$val" --sample 5 --seed 7 --windows-csv b.csv > /dev/null
"$bin" eval --weights runs/tiny.weights --data "$val" --sample 5 --seed 8 --windows-csv c.csv > /dev/null
cmp -s a.csv b.csv || { echo "FAIL: a seeded sample is not reproducible"; exit 1; }
cmp -s a.csv c.csv && { echo "FAIL: another seed drew the same windows"; exit 1; }
cmp -s final.csv final2.csv || { echo "FAIL: 2 ranks give other window losses"; exit 1; }
"$python" - "$source_dir" <<'PY'
import csv, glob, sys
import h5py, numpy as np, torch
sys.path.insert(0, sys.argv[1] + "/tests/reference")
import depthbench_reference as reference

rows = lambda path: list(csv.DictReader(open(path)))
run = h5py.File("runs/tiny.h5", "r")
final = [float(r["loss"]) for r in rows("final.csv")]
assert final == list(run["final/val_window_losses"][:]), (final, run["final/val_window_losses"][:])
initial = np.mean([float(r["loss"]) for r in rows("initial.csv")])
assert abs(initial - run["curves/val_loss"][0]) < 1e-12, (initial, run["curves/val_loss"][0])
sample = [int(r["window"]) for r in rows("a.csv")]
assert len(set(sample)) == 5, sample

# Per-document losses, recomputed: the document of token g is the number of end-of-document
# ids (256) before g; the targets of a window are its tokens 1..T-1.
T, eod = 32, 256
tokens = np.concatenate([np.load(p) for p in sorted(glob.glob("data/val_*.npy"))]).astype(np.int64)
f = h5py.File("runs/tiny.weights", "r")
config = {k: (v.item() if hasattr(v, "item") else v) for k, v in f.attrs.items()
          if k in ("arch", "n_layer", "d_model", "n_head", "n_kv_head", "head_dim", "ff",
                   "vocab_size", "rope_theta", "norm_eps")}
model = reference.DepthBenchReference(config, {n: d[()] for n, d in f["params"].items()})
# The windows eval scored are the run's validation windows, spread over the files by a stride
# (doc/data.md, "Validation windows"): not the first six, and reaching the last sixth.
windows = [int(r["window"]) for r in rows("final.csv")]
available = len(tokens) // T
assert windows == [k * available // 6 for k in range(6)], (windows, available)
assert windows[-1] >= available * 5 // 6 - 1, windows
assert run.attrs["val_tokens"] == 6 * T, run.attrs["val_tokens"]
assert run.attrs["val_held_out_tokens"] == len(tokens), run.attrs["val_held_out_tokens"]
covered = set()
for k in windows:
    for p in range(1, T):
        covered.add(int(np.count_nonzero(tokens[:k * T + p] == eod)))
assert run.attrs["val_documents"] == len(covered), (run.attrs["val_documents"], len(covered))
held_out = int(np.count_nonzero(tokens == eod)) + (tokens[-1] != eod)
assert run.attrs["val_held_out_documents"] == held_out, (run.attrs["val_held_out_documents"], held_out)
nll, count = {}, {}
for k in windows:
    w = torch.from_numpy(tokens[k * T:(k + 1) * T])
    with torch.no_grad():
        logp = torch.log_softmax(model(w[None])[0, :-1], dim=-1)
    losses = -logp[torch.arange(T - 1), w[1:]]
    for p in range(1, T):
        doc = int(np.count_nonzero(tokens[:k * T + p] == eod))
        nll[doc] = nll.get(doc, 0.0) + float(losses[p - 1])
        count[doc] = count.get(doc, 0) + 1
ours = rows("documents.csv")
assert [int(r["document"]) for r in ours] == sorted(nll), ([r["document"] for r in ours], sorted(nll))
for r in ours:
    d = int(r["document"])
    assert int(r["targets"]) == count[d], (d, r, count[d])
    assert abs(float(r["nll_sum"]) - nll[d]) < 1e-4 * max(1.0, nll[d]), (d, r, nll[d])
two_ranks = rows("documents2.csv")
assert [r["document"] for r in two_ranks] == [r["document"] for r in ours]
assert all(abs(float(a["nll_sum"]) - float(b["nll_sum"])) < 1e-9 for a, b in zip(ours, two_ranks))
print(f"eval: {len(final)} windows as recorded by training, {len(ours)} documents as recomputed")
PY
# One window and one document (id 0, never in the text, as end-of-document): no zero-width
# interval, a line that says a single unit cannot be bootstrapped.
"$bin" eval --weights runs/tiny.weights --data "$val" --windows 1 --eod-id 0 > one.log
grep -q "one window: no interval, a single window cannot be bootstrapped" one.log ||
  { echo "FAIL: one window: $(cat one.log)"; exit 1; }
grep -q "^documents: 1, .*one document cannot be bootstrapped" one.log ||
  { echo "FAIL: one document: $(cat one.log)"; exit 1; }
grep -q "CI" one.log && { echo "FAIL: an interval for one unit: $(cat one.log)"; exit 1; }
# Bad options: one line naming the option.
check_refused() {
  local expected=$1; shift
  if "$bin" eval "$@" 2> err.txt; then echo "FAIL: accepted $*"; exit 1; fi
  grep -q -- "$expected" err.txt || { echo "FAIL: '$expected' not in: $(cat err.txt)"; exit 1; }
}
check_refused "--windows = 0: must be in" --weights runs/tiny.weights --data "$val" --windows 0
check_refused "either --windows or --sample" --weights runs/tiny.weights --data "$val" --windows 2 --sample 2
check_refused "the files hold only" --weights runs/tiny.weights --data "$val" --windows 100000000
check_refused "--eod-id = x" --weights runs/tiny.weights --data "$val" --eod-id x
check_refused "not found" --weights runs/nope.weights --data "$val"
echo "eval command: ok"
