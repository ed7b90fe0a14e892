#!/usr/bin/env python3
"""Hugging Face interop against the real `transformers` (tests/gpu/check.sh stage "hf").

  hf_interop.py tiny OUT --vocab V --seq T
      OUT/llama and OUT/qwen3: tiny random LlamaForCausalLM and Qwen3ForCausalLM (GQA, untied
      head) written by transformers' own save_pretrained (safetensors, float32).
  hf_interop.py losses FOLDER --data FILE.npy --seq T --windows N --ours WINDOWS.csv [--expect CLASS]
      loads FOLDER with AutoModelForCausalLM.from_pretrained (and checks its class), computes the
      mean next-token loss of windows k = tokens[kT, (k+1)T) as `depthbench eval` defines them,
      and compares with the `loss` column of eval's --windows-csv: max relative difference
      within 1e-4 (float32 on both sides, different order of additions). Exit 1 otherwise.
      A folder whose config.json has an auto_map (`depthbench export --format hf` of any design
      but pre_ln) is loaded with trust_remote_code=True: its own modelling code.
  hf_interop.py check --depthbench PROG --backend B --data FILE.npy --seq T --windows N
                      [--exported FOLDER=WINDOWS.csv] --tiny OUT --vocab V
      everything check.sh's hf stage compares, in this one process (torch and transformers are
      imported once: each import costs seconds): the exported folder against eval's csv, then
      the tiny LLaMA and Qwen3 of `tiny`, each read by `PROG eval --hf` (run from here) and
      compared as `losses` does. One line per comparison, `result NAME: ...: pass|FAIL`; exit 1
      when one fails.
Exit status 77 when transformers is not installed.
"""
import argparse
import csv
import json
import os
import sys

import numpy as np

BOUND = 1e-4


def need_transformers():
    try:
        import transformers  # noqa: F401
        return transformers
    except ImportError:
        print("transformers not installed: skipped")
        sys.exit(77)


def cmd_tiny(args):
    transformers = need_transformers()
    import torch
    torch.manual_seed(1)
    common = dict(vocab_size=args.vocab, hidden_size=64, intermediate_size=160, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  max_position_embeddings=args.seq, rms_norm_eps=1e-6, rope_theta=10000.0,
                  tie_word_embeddings=False, attention_bias=False)
    for name, config_class, model_class in (
            ("llama", transformers.LlamaConfig, transformers.LlamaForCausalLM),
            ("qwen3", transformers.Qwen3Config, transformers.Qwen3ForCausalLM)):
        extra = {"mlp_bias": False} if name == "llama" else {}
        model = model_class(config_class(**common, **extra)).float()
        with torch.no_grad():  # larger than the default init, so that the loss depends on them
            for p in model.parameters():
                if p.dim() == 2:
                    p.normal_(0.0, 0.1)
        model.save_pretrained(f"{args.out}/{name}")  # safetensors: the default since 4.35
        print(f"wrote {args.out}/{name} ({model_class.__name__}, transformers {transformers.__version__})")


def cmd_losses(args):
    rc, message = compare(args.folder, args.ours, args.expect, args)
    print(message)
    return rc


def compare(folder, ours_csv, expect, args):
    """(0, line) when transformers' window losses of FOLDER match eval's csv within BOUND, else
    (1, line): the line says what was compared and ends in ": pass" or ": FAIL"."""
    transformers = need_transformers()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    # No dtype argument (torch_dtype in 4.x, dtype in 5.x): the folders hold float32 already.
    with open(os.path.join(folder, "config.json")) as f:
        remote_code = "auto_map" in json.load(f)  # any design but pre_ln: its shipped modelling code
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, trust_remote_code=remote_code).float()
    if expect and type(model).__name__ != expect:
        return 1, f"{folder} loads as {type(model).__name__}, expected {expect}: FAIL"
    model.eval()
    tokens = np.load(args.data).astype(np.int64)
    windows = torch.from_numpy(tokens[:args.windows * args.seq].reshape(args.windows, args.seq))
    with torch.no_grad():
        logits = model(windows).logits.float()
    losses = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1),
        reduction="none").view(args.windows, -1).mean(1).tolist()
    with open(ours_csv) as f:
        ours = [float(row["loss"]) for row in csv.DictReader(f)]
    if len(ours) != len(losses):
        return 1, f"eval reported {len(ours)} windows, transformers computed {len(losses)}: FAIL"
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, losses))
    good = worst <= BOUND
    return (0 if good else 1,
            f"hf {folder}: {type(model).__name__}, {len(ours)} windows, depthbench eval "
            f"{np.mean(ours):.6f} vs transformers {np.mean(losses):.6f}, max relative difference "
            f"{worst:.1e} (bound {BOUND:g}, error/bound {worst / BOUND:.2f}): {'pass' if good else 'FAIL'}")


def cmd_check(args):
    import subprocess
    need_transformers()
    failed = 0

    def one(name, folder, ours_csv, expect):
        nonlocal failed
        try:
            rc, message = compare(folder, ours_csv, expect, args)
        except Exception as e:  # one comparison's error must not hide the others
            rc, message = 1, f"{type(e).__name__}: {e}: FAIL"
        print(f"result {name}: {message}", flush=True)
        failed |= rc != 0

    for exported in args.exported:
        folder, ours_csv = exported.split("=", 1)
        with open(os.path.join(folder, "config.json")) as f:
            remote_code = "auto_map" in json.load(f)
        if remote_code:
            one("export -> remote code", folder, ours_csv, "DepthBenchForCausalLM")
        else:
            one("export -> Llama", folder, ours_csv, "LlamaForCausalLM")
    args.out = args.tiny
    cmd_tiny(args)
    for name, expect in (("llama", "LlamaForCausalLM"), ("qwen3", "Qwen3ForCausalLM")):
        ours_csv = f"ours_{name}.csv"
        run = subprocess.run([args.depthbench, "eval", "--hf", f"{args.tiny}/{name}", "--data",
                              args.data, "--windows", str(args.windows), "--seq-len",
                              str(args.seq), "--backend", args.backend, "--windows-csv", ours_csv],
                             capture_output=True, text=True)
        print(run.stdout + run.stderr, end="")
        if run.returncode != 0:
            error = next((l for l in (run.stdout + run.stderr).splitlines()
                          if "rror" in l), f"exit status {run.returncode}")
            print(f"result eval --hf {name}: depthbench eval failed: {error}: FAIL", flush=True)
            failed = True
            continue
        one(f"eval --hf {name}", f"{args.tiny}/{name}", ours_csv, expect)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tiny")
    t.add_argument("out")
    t.add_argument("--vocab", type=int, required=True)
    t.add_argument("--seq", type=int, required=True)
    l = sub.add_parser("losses")
    l.add_argument("folder")
    l.add_argument("--data", required=True)
    l.add_argument("--seq", type=int, required=True)
    l.add_argument("--windows", type=int, required=True)
    l.add_argument("--ours", required=True)
    l.add_argument("--expect", default="")
    c = sub.add_parser("check")
    c.add_argument("--depthbench", required=True)
    c.add_argument("--backend", default="cuda")
    c.add_argument("--data", required=True)
    c.add_argument("--seq", type=int, required=True)
    c.add_argument("--windows", type=int, required=True)
    c.add_argument("--exported", action="append", default=[])
    c.add_argument("--tiny", required=True)
    c.add_argument("--vocab", type=int, required=True)
    args = ap.parse_args()
    sys.exit({"tiny": cmd_tiny, "losses": cmd_losses, "check": cmd_check}[args.cmd](args))


if __name__ == "__main__":
    main()
