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
    transformers = need_transformers()
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    # No dtype argument (torch_dtype in 4.x, dtype in 5.x): the folders hold float32 already.
    with open(os.path.join(args.folder, "config.json")) as f:
        remote_code = "auto_map" in json.load(f)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        args.folder, trust_remote_code=remote_code).float()
    if args.expect and type(model).__name__ != args.expect:
        print(f"FAIL: {args.folder} loads as {type(model).__name__}, expected {args.expect}")
        return 1
    model.eval()
    tokens = np.load(args.data).astype(np.int64)
    windows = torch.from_numpy(tokens[:args.windows * args.seq].reshape(args.windows, args.seq))
    with torch.no_grad():
        logits = model(windows).logits.float()
    losses = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), windows[:, 1:].reshape(-1),
        reduction="none").view(args.windows, -1).mean(1).tolist()
    with open(args.ours) as f:
        ours = [float(row["loss"]) for row in csv.DictReader(f)]
    if len(ours) != len(losses):
        print(f"FAIL: eval reported {len(ours)} windows, transformers computed {len(losses)}")
        return 1
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, losses))
    good = worst <= BOUND
    print(f"hf {args.folder}: {type(model).__name__}, {len(ours)} windows, depthbench eval "
          f"{np.mean(ours):.6f} vs transformers {np.mean(losses):.6f}, max relative difference "
          f"{worst:.1e} (bound {BOUND:g}): {'pass' if good else 'FAIL'}")
    return 0 if good else 1


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
    args = ap.parse_args()
    sys.exit(cmd_tiny(args) if args.cmd == "tiny" else cmd_losses(args))


if __name__ == "__main__":
    main()
