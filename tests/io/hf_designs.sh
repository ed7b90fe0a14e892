#!/usr/bin/env bash
# `depthbench export --format hf` of every design reproduces `depthbench eval`: a tiny model of
# each of the ten designs (and of the option values that change its equations) is trained a few
# steps with a high learning rate, so that no parameter keeps its structured init (zero AttnRes
# queries, zero HC dynamic weights), exported, and evaluated by `eval` (float32). The exported
# folder's own copy of the modelling code (depthbench_model.py, torch only) must give the same
# window losses within 1e-5 relative, in float64 and in float32; when transformers is
# installed, AutoModelForCausalLM.from_pretrained(trust_remote_code=True) must too. `eval --hf`
# of the folder gives eval's losses bit for bit. The config.json is typed and the
# tokenizer_config.json says the model's context.
set -euo pipefail
bin=$1; python=$2; source_dir=$3; work=$4
rm -rf "$work" && mkdir -p "$work/tokenizer" && cd "$work"
# A tokenizer folder as users have them: tokenizer.json with a tokenizer_config.json that claims
# a context of 128,000 tokens.
cp "$source_dir/tests/tokenizer/fixtures/neox_tiny_tokenizer.json" tokenizer/tokenizer.json
cat > tokenizer/tokenizer_config.json <<'JSON'
{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 128000, "eos_token": "<|endoftext|>"}
JSON
"$bin" tokenize --tokenizer tokenizer/tokenizer.json --format fortunes \
  --input /usr/share/games/fortunes/fortunes --val-fraction 0.1 --output-format npy --out data > tokenize.log

seq=16 windows=4
# name | design options (train's --model.KEY VALUE pairs)
cases=(
  "pre_ln|"
  "pre_ln_qk|--model.qk_norm true"
  "sandwich_ln|"
  "lns|"
  "deepnorm|"
  "deepnorm_rms|--model.deepnorm_norm rmsnorm --model.deepnorm_alpha 1.5"
  "keel|"
  "moda|--model.qk_norm true"
  "moda_variant|--model.moda_rope_depth_keys true --model.moda_post_norm true"
  "hc|"
  "hc_paper|--model.hc_readout sum_then_norm --model.hc_streams 3"
  "mhc|"
  "mhc_identity|--model.mhc_identity_init true --model.mhc_sinkhorn_iters 7"
  "attnres_full|"
  "attnres_block|--model.attnres_blocks 2"
)
for case in "${cases[@]}"; do
  name=${case%%|*} options=${case#*|}
  arch=$name
  case $name in pre_ln_qk) arch=pre_ln ;; deepnorm_rms) arch=deepnorm ;; moda_variant) arch=moda ;;
    hc_paper) arch=hc ;; mhc_identity) arch=mhc ;; esac
  # shellcheck disable=SC2086  # options are word-split on purpose
  "$bin" train --model.arch "$arch" --model.n_layer 3 --model.d_model 16 --model.n_head 4 \
    --model.n_kv_head 2 --model.vocab_size 267 --model.rope_theta 50000 $options \
    --train.steps 6 --train.learning_rate 1e-2 --train.warmup_fraction 0 --train.seq_len $seq \
    --train.global_batch 2 --train.micro_batch 2 --train.val_windows 2 --train.threads 1 \
    --data.train_files 'data/train_*.npy' --data.val_files 'data/val_*.npy' \
    --output.name "$name" --output.dir runs > "train_$name.log"
  "$bin" export "runs/$name.h5" --format hf > "export_$name.log"
  "$bin" eval --weights "runs/$name.weights" --data 'data/val_*.npy' --windows $windows \
    --threads 1 --windows-csv "eval_$name.csv" > /dev/null
  # DepthBench reads its own export back: the same design, the same losses bit for bit.
  "$bin" eval --hf "runs/$name-hf" --data 'data/val_*.npy' --windows $windows \
    --threads 1 --windows-csv "eval_hf_$name.csv" > /dev/null
  cmp -s "eval_$name.csv" "eval_hf_$name.csv" ||
    { echo "FAIL: eval --hf of the $name export differs from eval --weights"; exit 1; }
  echo "$name" >> names.txt
done
for file in depthbench_model.py configuration_depthbench.py modeling_depthbench.py; do
  cmp -s "$source_dir/src/io/hf_modeling/$file" runs/hc-hf/$file ||
    { echo "FAIL: the export's $file is not the shipped one"; exit 1; }
done

"$python" - "$seq" "$windows" <<'PY'
import csv, glob, importlib.util, json, os, sys
import numpy as np, torch

seq, windows = int(sys.argv[1]), int(sys.argv[2])
BOUND = 1e-5
tokens = np.concatenate([np.load(p) for p in sorted(glob.glob("data/val_*.npy"))]).astype(np.int64)
# The windows eval scored (spread over the held-out set, doc/data.md; the same for every run):
# their indices are in its csv.
picked = [int(r["window"]) for r in csv.DictReader(open(sorted(glob.glob("eval_*.csv"))[0]))]
assert len(picked) == windows, picked
batch = torch.from_numpy(np.stack([tokens[w * seq:(w + 1) * seq] for w in picked]))
try:
    import transformers
except ImportError:
    transformers = None


def shipped_module(folder):
    """The folder's own depthbench_model.py, imported under a name of its own (a pre_ln export
    is a LLaMA folder without it: the copy the others ship reads it)."""
    path = os.path.join(folder, "depthbench_model.py")
    if not os.path.exists(path):
        path = "runs/hc-hf/depthbench_model.py"
    spec = importlib.util.spec_from_file_location("depthbench_model_" + os.path.basename(folder),
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def window_losses(logits):
    return torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]).double(), batch[:, 1:].reshape(-1),
        reduction="none").view(windows, -1).mean(1)


def worst(ours, theirs):
    return max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))


failures = []
for name in open("names.txt").read().split():
    folder = "runs/%s-hf" % name
    config = json.load(open(folder + "/config.json"))
    tokenizer_config = json.load(open(folder + "/tokenizer_config.json"))
    assert tokenizer_config["model_max_length"] == seq, tokenizer_config
    assert tokenizer_config["eos_token"] == "<|endoftext|>", tokenizer_config
    evaluated = [float(row["loss"]) for row in csv.DictReader(open("eval_%s.csv" % name))]
    if config["model_type"] == "depthbench":
        assert config["auto_map"]["AutoModelForCausalLM"] == \
            "modeling_depthbench.DepthBenchForCausalLM", config
        assert config["max_position_embeddings"] == seq and config["n_kv_head"] == 2, config
        assert isinstance(config["qk_norm"], bool) and isinstance(config["design_options"], dict)
        assert isinstance(config["norm_eps"], float) and isinstance(config["d_model"], int)
    else:
        assert name.startswith("pre_ln") and config["model_type"] in ("llama", "qwen3"), config
    module = shipped_module(folder)
    report = []
    for dtype in (torch.float64, torch.float32):
        model = module.load_export(folder, dtype)
        with torch.no_grad():
            losses = window_losses(model(batch)).tolist()
        diff = worst(losses, evaluated)
        report.append("%s %.1e" % (str(dtype)[6:], diff))
        if not diff <= BOUND:
            failures.append("%s in %s: %s vs eval %s" % (name, dtype, losses, evaluated))
    if transformers is not None and config["model_type"] == "depthbench":
        model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, trust_remote_code=True).double().eval()
        with torch.no_grad():
            out = model(batch, labels=batch)
        diff = worst(window_losses(out.logits).tolist(), evaluated)
        mean_diff = abs(float(out.loss) - np.mean(evaluated)) / np.mean(evaluated)
        report.append("AutoModelForCausalLM %.1e (loss %.1e)" % (diff, mean_diff))
        if not (diff <= BOUND and mean_diff <= BOUND):
            failures.append("%s through transformers: %s" % (name, report[-1]))
    print("%-14s %-13s eval %.6f, max relative difference: %s" % (
        name, config.get("arch", "llama"), np.mean(evaluated), ", ".join(report)))
# A model built without weights (transformers' from_config) starts by doc/parameters.md's
# rules: given Pre-LN's backbone and norm ε = 0, HC with the paper's readout gives Pre-LN's
# logits, and so does mHC with φ = 0 and Sinkhorn ε = 0 (then H_pre = 1/2, H_post = 1 and
# H_res = J/n exactly); Block AttnRes with S = 1 is Full AttnRes; AttnRes queries are 0.
module = shipped_module("runs/hc-hf")
torch.manual_seed(0)
shape = dict(n_layer=3, d_model=16, n_head=4, n_kv_head=2, vocab_size=23, norm_eps=0.0)
build = lambda arch, **options: module.DepthBenchModel(
    dict(shape, arch=arch, design_options=options)).double()
pre_ln = build("pre_ln")
tokens = torch.randint(0, 23, (2, 9))
for model in (build("hc", hc_readout="sum_then_norm"), build("mhc", mhc_sinkhorn_eps=0),
              build("attnres_block", attnres_block_size=1)):
    backbone = pre_ln if model.settings.arch != "attnres_block" else build("attnres_full")
    model.load_state_dict({n: t for n, t in backbone.state_dict().items()
                           if n in model.state_dict()}, strict=False)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".phi"):
                p.zero_()
    with torch.no_grad():
        diff = float((model(tokens) - backbone(tokens)).abs().max())
    if not diff <= 1e-12:
        failures.append("init: %s differs from %s by %g" % (model.settings.arch,
                                                             backbone.settings.arch, diff))
queries = [m.query for m in build("attnres_full").modules() if hasattr(m, "query")]
if len(queries) != 2 * shape["n_layer"] or any(bool(q.any()) for q in queries):
    failures.append("init: AttnRes queries are not all zero (%d of them)" % len(queries))
print("from_config init: HC, mHC = Pre-LN, Block AttnRes (S = 1) = Full AttnRes at step 0")
if transformers is None:
    print("transformers not installed: the AutoModelForCausalLM route is skipped")
if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print("hf designs: ok")
PY
