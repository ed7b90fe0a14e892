#!/usr/bin/env python3
"""Throughput of the same Pre-LN model in PyTorch, eager and torch.compile, for a side-by-side
ratio with `depthbench bench --backend cuda` (doc/cuda.md).

The model follows spec §0-§1: token embedding (no scaling), L blocks of
h = x + Attn(RMSNorm(x)), x' = h + SwiGLU(RMSNorm(h)), final RMSNorm, untied LM head; RMSNorm
eps 1e-6 computed in fp32, RoPE rotate-half with theta 10000 in fp32, causal attention with
scale 1/sqrt(head_dim), no biases, truncated-normal(0.02) init. Training step: bf16 autocast,
fp32 master weights, AdamW (fused when available), global-norm clipping at 1.0. MFU uses the
same FLOP count as depthbench (6N + 12*L*d*T per token, N = parameters without the input
embedding) over the dense bf16 peak of 989 TFLOP/s (H100/H200 SXM).

Prints one line per mode:
  pytorch mode=eager L=.. d=.. T=.. B=.. tokens_per_second=.. tflops=.. mfu=..% step_ms=.. peak_mem_gib=..
"""
import argparse
import math
import sys
import time

PEAK_BF16_FLOPS = 989e12


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n_layer", type=int, default=24)
    parser.add_argument("--d_model", type=int, default=1024)
    parser.add_argument("--n_head", type=int, default=16)
    parser.add_argument("--vocab_size", type=int, default=50304)
    parser.add_argument("--seq_len", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--modes", default="eager,compile")
    args = parser.parse_args()

    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("pytorch unavailable: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("pytorch unavailable: no CUDA GPU visible to torch")
        return 0

    d, L, H, V, T, B = args.d_model, args.n_layer, args.n_head, args.vocab_size, args.seq_len, args.batch
    hd = d // H
    ff = (8 * d + 47) // 48 * 16  # ceil16(8d/3), the sub-1B rule
    eps = 1e-6
    device = torch.device("cuda")

    def rms_norm(x, g):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * g).to(x.dtype)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn_norm = torch.nn.Parameter(torch.ones(d))
            self.ffn_norm = torch.nn.Parameter(torch.ones(d))
            self.wq = torch.nn.Linear(d, d, bias=False)
            self.wk = torch.nn.Linear(d, d, bias=False)
            self.wv = torch.nn.Linear(d, d, bias=False)
            self.wo = torch.nn.Linear(d, d, bias=False)
            self.w1 = torch.nn.Linear(d, ff, bias=False)
            self.w3 = torch.nn.Linear(d, ff, bias=False)
            self.w2 = torch.nn.Linear(ff, d, bias=False)

        def forward(self, x, cos, sin):
            u = rms_norm(x, self.attn_norm)
            q = self.wq(u).view(B, T, H, hd)
            k = self.wk(u).view(B, T, H, hd)
            v = self.wv(u).view(B, T, H, hd)

            def rope(t):
                t1, t2 = t[..., : hd // 2].float(), t[..., hd // 2 :].float()
                return torch.cat([t1 * cos - t2 * sin, t2 * cos + t1 * sin], -1).to(t.dtype)

            q, k = rope(q), rope(k)
            o = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            x = x + self.wo(o.transpose(1, 2).reshape(B, T, d))
            u = rms_norm(x, self.ffn_norm)
            return x + self.w2(F.silu(self.w1(u)) * self.w3(u))

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(V, d)
            self.blocks = torch.nn.ModuleList(Block() for _ in range(L))
            self.final_norm = torch.nn.Parameter(torch.ones(d))
            self.lm_head = torch.nn.Linear(d, V, bias=False)
            for p in self.parameters():
                if p.dim() == 2:
                    torch.nn.init.trunc_normal_(p, std=0.02, a=-0.06, b=0.06)
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

    for mode in args.modes.split(","):
        torch.manual_seed(1234)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        model = Model().to(device)
        params = sum(p.numel() for p in model.parameters())
        non_embedding = params - V * d
        flops_per_token = 6 * non_embedding + 12 * L * d * T
        try:
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95),
                                    weight_decay=0.1, fused=True)
        except (TypeError, RuntimeError):
            opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), weight_decay=0.1)
        run = torch.compile(model) if mode == "compile" else model
        tokens = torch.randint(0, V, (B, T), device=device)
        targets = torch.roll(tokens, -1, dims=1)
        targets[:, -1] = -1

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = run(tokens, targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            return loss

        for _ in range(2):  # warm-up (compilation for torch.compile)
            step()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            loss = step()
        torch.cuda.synchronize()
        seconds = time.perf_counter() - t0
        tps = B * T * args.steps / seconds
        mfu = flops_per_token * tps / PEAK_BF16_FLOPS
        print(f"pytorch mode={mode} L={L} d={d} T={T} B={B} params={params} "
              f"tokens_per_second={tps:.1f} tflops={flops_per_token * tps * 1e-12:.2f} "
              f"mfu={100 * mfu:.2f}% step_ms={1e3 * seconds / args.steps:.2f} "
              f"peak_mem_gib={torch.cuda.max_memory_allocated() / 2**30:.2f} loss={loss.item():.4f}",
              flush=True)
        del model, opt, run
    print("mfu: achieved FLOP/s (6N + 12*L*d*T per token) over the dense bf16 peak of 989 TFLOP/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
