#!/usr/bin/env python3
"""The Pre-LN model of DepthBench in plain PyTorch on the CPU, timed like `depthbench bench`.

Same shape, same threads, same step (forward, backward, AdamW) on random tokens, so the two
tokens/s figures can be compared as a ratio in one run. Written with the usual fast PyTorch
building blocks (nn.Linear, fused attention where available), not our code.
Usage: bench/pytorch_cpu_reference.py --d-model 256 --n-layer 4 --seq-len 256 --batch 4 [--threads N]
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.g = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return self.g * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)


def rope(x, cos, sin):  # rotate-half, x: [B, H, T, hd]
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def causal_attention(q, k, v):
    # F.scaled_dot_product_attention where torch has it (≥ 2.0); Debian 12 ships 1.13.
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = torch.ones(T, T, dtype=torch.bool).triu(1)
    return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.heads = heads
        self.attn_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d, ff, bias=False), nn.Linear(d, ff, bias=False)
        self.w2 = nn.Linear(ff, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, d = x.shape
        u = self.attn_norm(x)
        q, k, v = (w(u).view(B, T, self.heads, -1).transpose(1, 2) for w in (self.wq, self.wk, self.wv))
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        o = causal_attention(q, k, v)
        x = x + self.wo(o.transpose(1, 2).reshape(B, T, d))
        u = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(u)) * self.w3(u))


class PreLN(nn.Module):
    def __init__(self, vocab, d, layers, heads):
        super().__init__()
        ff = math.ceil(8 * d / 3 / 16) * 16
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d, heads, ff) for _ in range(layers))
        self.final_norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.heads = heads

    def forward(self, tokens):
        T = tokens.shape[1]
        hd = self.embed.embedding_dim // self.heads
        inv = 10000.0 ** (-torch.arange(0, hd // 2, dtype=torch.float32) * 2 / hd)
        ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
        cos, sin = ang.cos(), ang.sin()
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, cos, sin)
        logits = self.lm_head(self.final_norm(x))
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--d-model", type=int, default=256)
    p.add_argument("--n-layer", type=int, default=4)
    p.add_argument("--n-head", type=int, default=16)
    p.add_argument("--vocab", type=int, default=257)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = PreLN(a.vocab, a.d_model, a.n_layer, a.n_head)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    tokens = torch.randint(0, a.vocab, (a.batch, a.seq_len))

    def step():
        opt.zero_grad(set_to_none=True)
        model(tokens).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        step()
    seconds = time.perf_counter() - t0
    tps = a.batch * a.seq_len * a.steps / seconds
    print(f"pytorch arch=pre_ln L={a.n_layer} d={a.d_model} T={a.seq_len} B={a.batch} "
          f"threads={torch.get_num_threads()} torch={torch.__version__}")
    print(f"tokens_per_second={tps:.1f} step_ms={1e3 * seconds / a.steps:.2f}")


if __name__ == "__main__":
    main()
