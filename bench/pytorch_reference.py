#!/usr/bin/env python3
"""Training throughput of DepthBench's model written in plain PyTorch, eager (with
F.scaled_dot_product_attention) and torch.compile, for a same-run ratio with `depthbench bench`
(bench/gpu_speed.sh puts both in one table; doc/performance.md).

The model follows doc/architectures.md §0: token embedding (no scaling), L blocks, final
RMSNorm, untied LM head; RMSNorm eps 1e-6 computed in fp32, RoPE rotate-half with theta 10000
in fp32, causal attention with scale 1/sqrt(head_dim), grouped-query attention when
n_kv_head < n_head, optional QK-norm, SwiGLU FFN, no biases, truncated-normal(0.02) init.
Designs implemented (their block equations, §1-§5): pre_ln, sandwich_ln, lns, deepnorm, keel.
The others (moda, hc, mhc, attnres_full, attnres_block) are not: the script says so
("unavailable") and the table prints "—".

Training step: on a GPU bf16 autocast with fp32 master weights and AdamW (fused when
available); on the CPU (--device cpu, for the smoke test) fp32. Global-norm clipping at 1.0.
MFU uses depthbench's FLOP count (6·N_non-embedding + 12·L·d·T per token) over --peak-tflops.

Prints one line per mode, or one JSON object per mode with --json:
  pytorch mode=eager arch=.. L=.. d=.. T=.. B=.. tokens_per_second=.. mfu=..% step_ms=.. peak_mem_gib=..
  pytorch mode=compile unavailable: <why>
"""
import argparse
import json
import math
import resource
import sys
import time

DESIGNS = ("pre_ln", "sandwich_ln", "lns", "deepnorm", "keel")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arch", default="pre_ln")
    p.add_argument("--n_layer", type=int, default=24)
    p.add_argument("--d_model", type=int, default=1024)
    p.add_argument("--n_head", type=int, default=16)
    p.add_argument("--n_kv_head", type=int, default=0, help="0: n_head (multi-head attention)")
    p.add_argument("--ff", type=int, default=0, help="0: ceil16(8d/3), the sub-1B rule")
    p.add_argument("--qk_norm", action="store_true")
    p.add_argument("--vocab_size", type=int, default=50280)
    p.add_argument("--seq_len", type=int, default=2048)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=5, help="timed steps")
    p.add_argument("--warmup", type=int, default=2, help="untimed steps first (compilation)")
    p.add_argument("--modes", default="eager,compile")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch's default)")
    p.add_argument("--peak-tflops", type=float, default=989.0,
                   help="MFU denominator: dense bf16 of one H100/H200 SXM")
    p.add_argument("--json", action="store_true", help="one JSON object per mode")
    p.add_argument("--list-designs", action="store_true",
                   help="print the designs this reference implements and stop")
    p.add_argument("--shape-json", default="",
                   help="the shape of a `depthbench bench --json` object (its L, d, heads, KV "
                        "heads, ff, QK-norm, V, T, micro-batch) in place of the shape options")
    args = p.parse_args()
    if args.shape_json:
        shape = json.loads(args.shape_json)
        shape = shape.get("result", shape)
        for ours, mine in (("n_layer", "n_layer"), ("d_model", "d_model"), ("n_head", "n_head"),
                           ("n_kv_head", "n_kv_head"), ("ff", "ff"), ("qk_norm", "qk_norm"),
                           ("vocab_size", "vocab_size"), ("seq_len", "seq_len"),
                           ("micro_batch", "batch")):
            setattr(args, mine, shape[ours])
    return args


def build_model(args, torch, F):
    d, L, H, V, T = args.d_model, args.n_layer, args.n_head, args.vocab_size, args.seq_len
    H_kv = args.n_kv_head or H
    hd = d // H
    ff = args.ff or (8 * d + 47) // 48 * 16
    eps = 1e-6
    arch = args.arch
    nn = torch.nn

    def rms_norm(x, g):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * g).to(x.dtype)

    def layer_norm(x, g):  # bias-free LayerNorm (DeepNorm's block norms)
        return F.layer_norm(x.float(), (x.shape[-1],), weight=g, bias=None, eps=eps).to(x.dtype)

    def attention(q, k, v):  # [B, H, T, hd]
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])  # torch < 2.0 (CPU smoke)
        mask = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)
        return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v

    def gain():
        return nn.Parameter(torch.ones(d))

    class Block(nn.Module):
        """h = out_a(α·x + post_a(Attn(s·in_a(x)))), likewise for the FFN; absent norms are
        the identity (doc/architectures.md §1-§5)."""

        def __init__(self, index):
            super().__init__()
            self.wq = nn.Linear(d, H * hd, bias=False)
            self.wk = nn.Linear(d, H_kv * hd, bias=False)
            self.wv = nn.Linear(d, H_kv * hd, bias=False)
            self.wo = nn.Linear(H * hd, d, bias=False)
            self.w1 = nn.Linear(d, ff, bias=False)
            self.w3 = nn.Linear(d, ff, bias=False)
            self.w2 = nn.Linear(ff, d, bias=False)
            if args.qk_norm:
                self.q_norm, self.k_norm = nn.Parameter(torch.ones(hd)), nn.Parameter(torch.ones(hd))
            pre = arch in ("pre_ln", "sandwich_ln", "lns", "keel")
            self.in_a, self.in_f = (gain(), gain()) if pre else (None, None)
            self.post_a, self.post_f = (gain(), gain()) if arch == "sandwich_ln" else (None, None)
            self.out_a = gain() if arch == "deepnorm" or (arch == "keel" and index > 0) else None
            self.out_f = gain() if arch in ("deepnorm", "keel") else None
            self.out_norm = layer_norm if arch == "deepnorm" else rms_norm
            self.scale = 1 / math.sqrt(index + 1) if arch == "lns" else 1.0
            alpha = {"deepnorm": (2 * L) ** 0.25, "keel": 2.0 * L}.get(arch, 1.0)
            self.alpha_a = 1.0 if arch == "keel" and index == 0 else alpha
            self.alpha_f = 1.0 if arch == "keel" and index == 0 else alpha

        def attn(self, u, cos, sin):
            B = u.shape[0]
            q = self.wq(u).view(B, T, H, hd)
            k = self.wk(u).view(B, T, H_kv, hd)
            v = self.wv(u).view(B, T, H_kv, hd)
            if args.qk_norm:
                q, k = rms_norm(q, self.q_norm), rms_norm(k, self.k_norm)

            def rope(t):
                t1, t2 = t[..., : hd // 2].float(), t[..., hd // 2:].float()
                return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], -1).to(t.dtype)

            q, k = rope(q).transpose(1, 2), rope(k).transpose(1, 2)
            v = v.transpose(1, 2)
            if H_kv < H:  # query head h reads KV head h // (H / H_kv)
                k, v = k.repeat_interleave(H // H_kv, 1), v.repeat_interleave(H // H_kv, 1)
            o = attention(q, k, v)
            return self.wo(o.transpose(1, 2).reshape(B, T, H * hd))

        def ffn(self, u):
            return self.w2(F.silu(self.w1(u)) * self.w3(u))

        def sublayer(self, x, f, g_in, g_post, g_out, alpha):
            u = rms_norm(x, g_in) * self.scale if g_in is not None else x
            y = f(u)
            if g_post is not None:
                y = rms_norm(y, g_post)
            h = alpha * x + y if alpha != 1.0 else x + y
            return self.out_norm(h, g_out) if g_out is not None else h

        def forward(self, x, cos, sin):
            h = self.sublayer(x, lambda u: self.attn(u, cos, sin), self.in_a, self.post_a,
                              self.out_a, self.alpha_a)
            return self.sublayer(h, self.ffn, self.in_f, self.post_f, self.out_f, self.alpha_f)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(V, d)
            self.blocks = nn.ModuleList(Block(i) for i in range(L))
            self.final_norm = nn.Parameter(torch.ones(d))
            self.lm_head = nn.Linear(d, V, bias=False)
            beta = (8 * L) ** -0.25 if arch == "deepnorm" else 1.0
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 * (beta if name.split(".")[-2] in ("wv", "wo", "w1", "w2", "w3") else 1)
                    torch.nn.init.trunc_normal_(p, std=std, a=-3 * std, b=3 * std)
            pos = torch.arange(T, dtype=torch.float32)
            inv = 10000.0 ** (-torch.arange(0, hd // 2, dtype=torch.float32) * 2.0 / hd)
            angle = pos[:, None] * inv[None, :]  # [T, hd/2]
            self.register_buffer("cos", angle.cos()[None, :, None, :], persistent=False)
            self.register_buffer("sin", angle.sin()[None, :, None, :], persistent=False)

        def forward(self, tokens, targets):
            x = self.embed(tokens)
            for block in self.blocks:
                x = block(x, self.cos, self.sin)
            logits = self.lm_head(rms_norm(x, self.final_norm))
            return F.cross_entropy(logits.float().view(-1, V), targets.view(-1), ignore_index=-1)

    return Model()


def report(args, mode, fields, reason=None):
    shape = dict(arch=args.arch, n_layer=args.n_layer, d_model=args.d_model, seq_len=args.seq_len,
                 micro_batch=args.batch)
    if args.json:
        print(json.dumps(dict(source="pytorch", mode=mode, **shape,
                              **({"unavailable": reason} if reason else fields))), flush=True)
    elif reason:
        print(f"pytorch mode={mode} unavailable: {reason}", flush=True)
    else:
        print(f"pytorch mode={mode} arch={args.arch} L={args.n_layer} d={args.d_model} "
              f"T={args.seq_len} B={args.batch} params={fields['params']} "
              f"tokens_per_second={fields['tokens_per_second']:.1f} "
              f"mfu={100 * fields['mfu']:.2f}% step_ms={fields['step_ms']:.2f} "
              f"peak_mem_gib={fields['peak_memory_bytes'] / 2**30:.2f} loss={fields['loss']:.4f}",
              flush=True)


def main():
    args = parse_args()
    if args.list_designs:
        print(" ".join(DESIGNS))
        return 0
    modes = [m for m in args.modes.split(",") if m]
    def unavailable(reason):
        for mode in modes:
            report(args, mode, None, reason)
        return 0
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        return unavailable("torch is not installed")
    if args.arch not in DESIGNS:
        return unavailable(f"design {args.arch} is not written in the PyTorch reference "
                           f"(it has {', '.join(DESIGNS)})")
    if args.device == "cuda" and not torch.cuda.is_available():
        return unavailable("no CUDA GPU visible to torch")
    device = torch.device(args.device)
    on_gpu = args.device == "cuda"
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    B, T, V = args.batch, args.seq_len, args.vocab_size

    for mode in modes:
        if mode not in ("eager", "compile"):
            report(args, mode, None, "unknown mode (eager, compile)")
            continue
        if mode == "compile" and not hasattr(torch, "compile"):
            report(args, mode, None, f"torch {torch.__version__} has no torch.compile")
            continue
        torch.manual_seed(1234)
        if on_gpu:
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        model = build_model(args, torch, F).to(device)
        params = sum(p.numel() for p in model.parameters())
        non_embedding = params - V * args.d_model
        flops_per_token = 6 * non_embedding + 12 * args.n_layer * args.d_model * T
        try:
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95),
                                    weight_decay=0.1, fused=on_gpu)
        except (TypeError, RuntimeError):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
        run = torch.compile(model) if mode == "compile" else model
        tokens = torch.randint(0, V, (B, T), device=device)
        targets = torch.roll(tokens, -1, dims=1)
        targets[:, -1] = -1

        def step():
            opt.zero_grad(set_to_none=True)
            if on_gpu:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = run(tokens, targets)
            else:
                loss = run(tokens, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        def sync():
            if on_gpu:
                torch.cuda.synchronize()

        try:
            for _ in range(args.warmup):
                step()
            sync()
            t0 = time.perf_counter()
            for _ in range(args.steps):
                loss = step()
            sync()
        except Exception as e:  # e.g. out of memory, a compiler missing: the table says why
            report(args, mode, None, f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
            del model, opt, run
            continue
        seconds = time.perf_counter() - t0
        tps = B * T * args.steps / seconds
        peak = (torch.cuda.max_memory_allocated() if on_gpu
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        report(args, mode, dict(params=params, params_non_embedding=non_embedding,
                                flops_per_token=flops_per_token, tokens_per_second=tps,
                                mfu=flops_per_token * tps / (args.peak_tflops * 1e12),
                                step_ms=1e3 * seconds / args.steps, peak_memory_bytes=peak,
                                loss=loss.item(), precision="bf16" if on_gpu else "fp32"))
        del model, opt, run
    if not args.json:
        print(f"mfu: achieved FLOP/s (6·N_non-embedding + 12·L·d·T per token) over "
              f"{args.peak_tflops:.0f} TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
