#!/usr/bin/env bash
# `depthbench export` on a tiny trained Pre-LN run (GQA, data tokenized with a tokenizer.json):
# the safetensors export is read by name with a hand-written reader (and `safetensors` when
# installed) and equals the weight file tensor for tensor; `eval` gives the same window losses
# from the weight file, the safetensors export and the HF folder (--hf); the HF folder holds the
# run's tokenizer and gives, in the independent HF-style PyTorch model (and in transformers when
# installed), the losses eval reports; `diagnose --hf` runs and skips path_weights with a note.
set -euo pipefail
bin=$1; python=$2; source_dir=$3; work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work"
tokenizer_json=$source_dir/tests/tokenizer/fixtures/neox_tiny_tokenizer.json
"$bin" tokenize --tokenizer "$tokenizer_json" --format fortunes \
  --input /usr/share/games/fortunes/fortunes --val-fraction 0.1 --output-format npy --out data > tokenize.log
"$bin" train --model.n_layer 2 --model.d_model 16 --model.n_head 4 --model.n_kv_head 2 \
  --model.vocab_size 267 --model.rope_theta 50000 --train.steps 4 --train.seq_len 16 \
  --train.global_batch 2 --train.micro_batch 2 --train.val_windows 4 --train.threads 1 \
  --data.train_files 'data/train_*.npy' --data.val_files 'data/val_*.npy' \
  --output.name tiny --output.dir runs > train.log
"$bin" export runs/tiny.h5 --format safetensors | tee export.log
"$bin" export runs/tiny.h5 --format hf | tee -a export.log
test -f runs/tiny-hf/tokenizer.json || { echo "FAIL: the run's tokenizer.json was not shipped"; exit 1; }
cmp -s runs/tiny-hf/tokenizer.json "$tokenizer_json" || { echo "FAIL: tokenizer.json differs"; exit 1; }

val='data/val_*.npy'
"$bin" eval --weights runs/tiny.weights --data "$val" --windows 4 --threads 1 --windows-csv weights.csv > /dev/null
"$bin" eval --weights runs/tiny-safetensors --data "$val" --windows 4 --threads 1 --windows-csv safetensors.csv > /dev/null
"$bin" eval --hf runs/tiny-hf --data "$val" --windows 4 --threads 1 --windows-csv hf.csv > /dev/null
cmp -s weights.csv safetensors.csv || { echo "FAIL: the safetensors export evaluates differently"; exit 1; }
cmp -s weights.csv hf.csv || { echo "FAIL: the HF export evaluates differently"; exit 1; }

"$python" - "$source_dir" <<'PY'
import csv, glob, json, sys
import h5py, numpy as np, torch
sys.path.insert(0, sys.argv[1] + "/tests/io")
from hf_llama_reference import HfLlama, read_safetensors, relative_difference, transformers_logits

weights = h5py.File("runs/tiny.weights", "r")["params"]
tensors, metadata = read_safetensors("runs/tiny-safetensors/model.safetensors")
assert sorted(tensors) == sorted(weights), (sorted(tensors), sorted(weights))
for name, array in tensors.items():
    assert np.array_equal(array, weights[name][()]), name
# The count the command reports is that of the tensors written, not of the padded storage.
import re
reported = int(re.search(r"\(pre_ln, (\d+) values\)", open("export.log").read()).group(1))
assert reported == sum(a.size for a in tensors.values()), (reported, sum(a.size for a in tensors.values()))
config = json.load(open("runs/tiny-safetensors/config.json"))
assert config["arch"] == metadata["arch"] == "pre_ln" and config["n_kv_head"] == 2, config
try:
    from safetensors.numpy import load_file
    for name, array in load_file("runs/tiny-safetensors/model.safetensors").items():
        assert np.array_equal(array, weights[name][()]), name
    print("safetensors package reads the export")
except ImportError:
    print("safetensors package not installed, its check is skipped")

# The HF folder in the HF-style model: the window losses eval reported.
hf_config = json.load(open("runs/tiny-hf/config.json"))
assert hf_config["architectures"] == ["LlamaForCausalLM"] and hf_config["rope_theta"] == 50000
hf_tensors = {n: torch.from_numpy(a.copy()) for n, a in read_safetensors("runs/tiny-hf/model.safetensors")[0].items()}
model = HfLlama(hf_config, hf_tensors)
T = hf_config["max_position_embeddings"]
tokens = np.concatenate([np.load(p) for p in sorted(glob.glob("data/val_*.npy"))]).astype(np.int64)
# The windows eval scored (spread over the held-out set, doc/data.md): their indices are in its csv.
picked = [int(r["window"]) for r in csv.DictReader(open("hf.csv"))]
windows = torch.from_numpy(np.stack([tokens[w * T:(w + 1) * T] for w in picked]))
with torch.no_grad():
    logits = model(windows)
losses = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                                           windows[:, 1:].reshape(-1), reduction="none").view(4, -1).mean(1)
ours = [float(r["loss"]) for r in csv.DictReader(open("hf.csv"))]
worst = max(abs(a - b) / abs(b) for a, b in zip(ours, losses.tolist()))
assert worst < 1e-5, (ours, losses)
hf = transformers_logits("runs/tiny-hf", windows)
if hf is None:
    print("transformers not installed, LlamaForCausalLM check skipped")
else:
    diff = relative_difference(hf, logits)
    assert diff <= 1e-5, diff
    print(f"transformers LlamaForCausalLM: max relative logit difference {diff:.2e}")
print(f"export: {len(tensors)} tensors by name; HF-style losses agree within {worst:.1e}")
PY

"$bin" diagnose --hf runs/tiny-hf --tokens "$val" --out hf.diag.h5 --only causal_score,path_weights \
  --window-len 16 --causal-windows 2 --bootstrap 20 --threads 1 > diagnose.log
grep -q "path_weights: skipped" diagnose.log || { echo "FAIL: path_weights not skipped"; cat diagnose.log; exit 1; }
"$python" -c "import h5py; f = h5py.File('hf.diag.h5', 'r'); assert f['diagnostics/causal_score'].shape == (2, 2), f['diagnostics/causal_score'].shape"

check_refused() {
  local expected=$1; shift
  if "$bin" "$@" 2> err.txt > /dev/null; then echo "FAIL: accepted $*"; exit 1; fi
  grep -q -- "$expected" err.txt || { echo "FAIL: '$expected' not in: $(cat err.txt)"; exit 1; }
}
check_refused "--format = onnx" export runs/tiny.h5 --format onnx
check_refused "not found" export runs/nope.h5 --format hf
check_refused "either --weights or --hf" eval --weights runs/tiny.weights --hf runs/tiny-hf --data "$val"
check_refused "is read with --hf" eval --weights runs/tiny-hf/model.safetensors --data "$val"
echo "export command: ok"
