#!/usr/bin/python3
"""Independent PyTorch reference of DepthBench's ten residual designs.

Written from the specification only (doc/architectures.md, doc/suites.md; originally the project specification) and the
parameter exchange format (doc/parameters.md). Every design's forward is written plainly from the
spec equations; gradients come from torch autograd. Default precision is float64;
--activation-dtype bf16 emulates the cores' bf16 storage in float32 (README.md next to this file).

Decisions where the spec or the names document is ambiguous are listed in README.md next to this
file; comments below cite the spec section ("spec §N") they implement.

CLI:
  depthbench_reference.py run  --weights IN.h5... --out OUT.h5... [--adamw-steps S] [--dtype float64]
                               [--activation-dtype fp32|bf16 [one per IN.h5...]]
  depthbench_reference.py init --config JSON|FILE --seed N --out W.h5 [--batch B --seq T]
                               [--perturb SIGMA]
  depthbench_reference.py designs      (the designs below, one per line)
"""

import argparse
import json
import math
import os
import sys
import warnings

import torch
import torch.nn.functional as F

# The designs this reference implements. A design of the C++ registry that is not here (a new
# design before its reference is written) is skipped by the agreement tests, which say so.
DESIGNS = ("pre_ln", "sandwich_ln", "lns", "deepnorm", "keel", "moda", "hc", "mhc",
           "attnres_full", "attnres_block")

# Config keys the reference understands, with their defaults (None = derived from the shape).
_CONFIG_DEFAULTS = {
    "arch": None, "n_layer": None, "d_model": None, "n_head": None, "n_kv_head": None,
    "head_dim": None, "ff": None, "vocab_size": None, "qk_norm": False,
    "rope_theta": 10000.0, "norm_eps": 1e-6,
    "deepnorm_norm": "layernorm", "deepnorm_alpha": None, "deepnorm_beta": None,
    "keel_alpha": None,
    "moda_rope_depth_keys": False, "moda_post_norm": False,
    "hc_streams": 4, "hc_readout": "norm_then_sum",
    "mhc_streams": 4, "mhc_sinkhorn_iters": 20, "mhc_sinkhorn_eps": 1e-6,
    "mhc_identity_init": False,
    "attnres_blocks": 8, "attnres_block_size": None,
}

# Parameters without weight decay (suites.md recipe): HC static routing, mHC biases and gates.
NO_DECAY_SUFFIXES = {
    "hc": (".static_alpha", ".static_beta"),
    "mhc": (".bias", ".gates"),
}


# ------------------------------------------------------------------------------------------------
# Configuration
# ------------------------------------------------------------------------------------------------
def resolve_config(cfg):
    """Fill defaults, derive design constants, validate. Returns a new dict."""
    unknown = sorted(set(cfg) - set(_CONFIG_DEFAULTS))
    if unknown:
        warnings.warn("reference: ignoring unknown config keys %s" % unknown)
    c = {k: cfg.get(k, v) for k, v in _CONFIG_DEFAULTS.items()}
    for k in ("arch", "n_layer", "d_model", "n_head", "ff", "vocab_size"):
        if c[k] is None:
            raise ValueError("config lacks required key '%s'" % k)
    if c["arch"] not in DESIGNS:
        raise ValueError("unknown arch '%s' (one of %s)" % (c["arch"], ", ".join(DESIGNS)))
    L, d = int(c["n_layer"]), int(c["d_model"])
    c["n_layer"], c["d_model"] = L, d
    c["n_head"] = int(c["n_head"])
    c["n_kv_head"] = int(c["n_kv_head"] if c["n_kv_head"] is not None else c["n_head"])
    c["head_dim"] = int(c["head_dim"] if c["head_dim"] is not None else d // c["n_head"])
    c["ff"], c["vocab_size"] = int(c["ff"]), int(c["vocab_size"])
    c["qk_norm"] = bool(c["qk_norm"])
    if c["head_dim"] % 2:
        raise ValueError("head_dim must be even (rotate-half RoPE)")
    if c["n_head"] % c["n_kv_head"]:
        raise ValueError("n_head must be a multiple of n_kv_head (GQA)")
    # spec §4: DeepNorm constants for a decoder-only stack of L blocks.
    if c["deepnorm_alpha"] is None:
        c["deepnorm_alpha"] = (2.0 * L) ** 0.25
    if c["deepnorm_beta"] is None:
        c["deepnorm_beta"] = (8.0 * L) ** -0.25
    if c["deepnorm_norm"] not in ("layernorm", "rmsnorm"):
        raise ValueError("deepnorm_norm must be layernorm or rmsnorm")
    # spec §5: KEEL highway weight = number of sublayers.
    if c["keel_alpha"] is None:
        c["keel_alpha"] = 2.0 * L
    if c["hc_readout"] not in ("norm_then_sum", "sum_then_norm"):
        raise ValueError("hc_readout must be norm_then_sum or sum_then_norm")
    # spec §10: 8 blocks of S = 2L/8 sublayers unless S is given explicitly.
    if c["arch"] == "attnres_block":
        if c["attnres_block_size"] is None:
            if (2 * L) % int(c["attnres_blocks"]):
                raise ValueError("attnres_block: 2L=%d not divisible by attnres_blocks=%d; give "
                                 "attnres_block_size" % (2 * L, c["attnres_blocks"]))
            c["attnres_block_size"] = (2 * L) // int(c["attnres_blocks"])
        c["attnres_block_size"] = int(c["attnres_block_size"])
        if c["attnres_block_size"] < 1:
            raise ValueError("attnres_block_size must be >= 1")
    return c


def ceil16(x):
    return int(math.ceil(x / 16.0)) * 16


# ------------------------------------------------------------------------------------------------
# Parameter names, shapes and init rules (doc/parameters.md)
# ------------------------------------------------------------------------------------------------
def parameter_specs(cfg):
    """Ordered list of (name, shape, init) for a resolved config.

    init is one of ('normal', std) [truncated at +-3 std], ('const', value), ('hc_alpha', k),
    ('mhc_bias', None).
    """
    c = cfg
    arch, L, d, V = c["arch"], c["n_layer"], c["d_model"], c["vocab_size"]
    H, Hkv, hd, ff = c["n_head"], c["n_kv_head"], c["head_dim"], c["ff"]
    std = 0.02
    # spec §4: DeepNorm scales wv, wo, w1, w2, w3 by beta. spec §7/§8: HC/mHC wo, w2 by 1/sqrt(n).
    std_v = std_o = std_ffn = std_w2 = std
    if arch == "deepnorm":
        b = c["deepnorm_beta"]
        std_v, std_o, std_ffn, std_w2 = std * b, std * b, std * b, std * b
    elif arch in ("hc", "mhc"):
        n = c["hc_streams"] if arch == "hc" else c["mhc_streams"]
        std_o = std_w2 = std / math.sqrt(n)
    one = ("const", 1.0)

    specs = [("embed", (V, d), ("normal", std))]
    for i in range(L):
        p = "blocks.%d." % i
        specs += [(p + "wq", (H * hd, d), ("normal", std)),
                  (p + "wk", (Hkv * hd, d), ("normal", std)),
                  (p + "wv", (Hkv * hd, d), ("normal", std_v)),
                  (p + "wo", (d, H * hd), ("normal", std_o)),
                  (p + "w1", (ff, d), ("normal", std_ffn)),
                  (p + "w3", (ff, d), ("normal", std_ffn)),
                  (p + "w2", (d, ff), ("normal", std_w2))]
        if c["qk_norm"]:
            specs += [(p + "q_norm", (hd,), one), (p + "k_norm", (hd,), one)]
        if arch == "sandwich_ln":
            norms = ["attn_norm", "attn_post_norm", "ffn_norm", "ffn_post_norm"]
        elif arch == "keel":
            norms = ["attn_norm"] + (["attn_out_norm"] if i > 0 else []) + ["ffn_norm",
                                                                             "ffn_out_norm"]
        else:
            norms = ["attn_norm", "ffn_norm"]
        specs += [(p + nm, (d,), one) for nm in norms]
        if arch == "moda" and i < L - 1:
            specs += [(p + "moda_wk_ffn", (Hkv * hd, d), ("normal", std)),
                      (p + "moda_wv_ffn", (Hkv * hd, d), ("normal", std))]
        if arch == "hc":
            n = c["hc_streams"]
            for s, k in (("attn_hc", 2 * i), ("ffn_hc", 2 * i + 1)):
                q = p + s + "."
                specs += [(q + "static_alpha", (n, n + 1), ("hc_alpha", k)),
                          (q + "static_beta", (n,), one),
                          (q + "w_alpha", (d, n + 1), ("const", 0.0)),
                          (q + "w_beta", (d, 1), ("const", 0.0)),
                          (q + "s_alpha", (1,), ("const", 0.01)),
                          (q + "s_beta", (1,), ("const", 0.01)),
                          (q + "norm", (d,), one)]
        if arch == "mhc":
            n = c["mhc_streams"]
            for s, k in (("attn_mhc", 2 * i), ("ffn_mhc", 2 * i + 1)):
                q = p + s + "."
                specs += [(q + "phi", (n * d, n * n + 2 * n), ("normal", std)),
                          (q + "bias", (n * n + 2 * n,), ("mhc_bias", k)),
                          (q + "gates", (3,), ("const", 0.01)),
                          (q + "norm", (n * d,), one)]
        if arch in ("attnres_full", "attnres_block"):
            # spec §9: sublayer 0 (block 0's attention) has no mix and no query.
            for s in (["attn_res"] if i > 0 else []) + ["ffn_res"]:
                specs += [(p + s + ".query", (d,), ("const", 0.0)),
                          (p + s + ".key_norm", (d,), one)]
    if arch in ("attnres_full", "attnres_block"):
        specs += [("readout_res.query", (d,), ("const", 0.0)),
                  ("readout_res.key_norm", (d,), one)]
    specs += [("final_norm", (d,), one), ("lm_head", (V, d), ("normal", std))]
    return specs


def parameter_count_formula(cfg):
    """Closed-form parameter count from the spec (§0 plus each design's extras)."""
    c = cfg
    arch, L, d, V = c["arch"], c["n_layer"], c["d_model"], c["vocab_size"]
    H, Hkv, hd, ff = c["n_head"], c["n_kv_head"], c["head_dim"], c["ff"]
    attn = 2 * d * H * hd + 2 * d * Hkv * hd + (2 * hd if c["qk_norm"] else 0)
    per_block = attn + 3 * d * ff + 2 * d          # two block norms
    extras = 0
    if arch == "sandwich_ln":
        extras = L * 2 * d
    elif arch == "keel":
        extras = (L - 1) * 2 * d + d                # block 0 has three norms
    elif arch == "moda":
        extras = 2 * (L - 1) * d * Hkv * hd
    elif arch == "hc":
        n = c["hc_streams"]
        extras = 2 * L * (n * (n + 1) + n + d * (n + 1) + d + 2 + d)
    elif arch == "mhc":
        n = c["mhc_streams"]
        m = n * n + 2 * n
        extras = 2 * L * (n * d * m + m + 3 + n * d)
    elif arch in ("attnres_full", "attnres_block"):
        extras = (2 * L - 1) * 2 * d + 2 * d        # queries+key norms, readout included
    return 2 * V * d + d + L * per_block + extras


def _trunc_normal(shape, std, gen, dtype):
    """N(0, std^2) truncated at +-3 std, by resampling (torch 1.13 trunc_normal_ has no generator)."""
    t = torch.randn(shape, generator=gen, dtype=torch.float64)
    bad = t.abs() > 3.0
    while bad.any():
        t[bad] = torch.randn(int(bad.sum()), generator=gen, dtype=torch.float64)
        bad = t.abs() > 3.0
    return (t * std).to(dtype)


def init_parameters(cfg, seed=0, dtype=torch.float64):
    """Random weights following each design's init rules (spec §0, §4, §7, §8, §9)."""
    gen = torch.Generator().manual_seed(int(seed))
    out = {}
    for name, shape, (kind, arg) in parameter_specs(cfg):
        if kind == "normal":
            t = _trunc_normal(shape, arg, gen, dtype)
        elif kind == "const":
            t = torch.full(shape, float(arg), dtype=dtype)
        elif kind == "hc_alpha":            # spec §7: a_k = e_{k mod n}, A_k = I
            n = shape[0]
            t = torch.zeros(shape, dtype=dtype)
            t[arg % n, 0] = 1.0
            t[:, 1:] = torch.eye(n, dtype=dtype)
        elif kind == "mhc_bias":            # spec §8: biases 0 (alternative: +-8 near identity)
            t = torch.zeros(shape, dtype=dtype)
            if cfg["mhc_identity_init"]:
                n = cfg["mhc_streams"]
                t[:n] = -8.0
                t[arg % n] = 8.0
                t[2 * n:] = (8.0 * (2 * torch.eye(n, dtype=dtype) - 1)).reshape(-1)
        else:
            raise AssertionError(kind)
        out[name] = t
    return out


# ------------------------------------------------------------------------------------------------
# Shared primitives (spec §0)
# ------------------------------------------------------------------------------------------------
def rms_norm(x, g, eps):
    """y = g * x / sqrt(mean(x^2) + eps) over the last axis."""
    return g * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)


def layer_norm_nobias(x, g, eps):
    """DeepNorm's LayerNorm without bias: g * (x - mean) / sqrt(var + eps), biased variance."""
    mu = x.mean(-1, keepdim=True)
    xc = x - mu
    return g * xc / torch.sqrt((xc * xc).mean(-1, keepdim=True) + eps)


def rope(x, theta):
    """Rotate-half RoPE on x [B, T, heads, hd]; pairs (i, i + hd/2), angle = t * theta^(-2i/hd)."""
    T, hd = x.shape[1], x.shape[-1]
    half = hd // 2
    i = torch.arange(half, dtype=torch.float64)
    inv_freq = theta ** (-2.0 * i / hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]   # [T, half]
    cos = torch.cos(ang).to(x.dtype)[None, :, None, :]
    sin = torch.sin(ang).to(x.dtype)[None, :, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


# ------------------------------------------------------------------------------------------------
# bf16 activation storage (train.activation_dtype = bf16, doc/performance.md): emulated in float32
# ------------------------------------------------------------------------------------------------
def _to_bf16(t):
    """Round float32 values to the nearest bf16 (ties to even), kept as float32."""
    return t.to(torch.bfloat16).to(torch.float32)


class _Round(torch.autograd.Function):
    """R(t): the forward value stored in bf16; the gradient passes unrounded."""

    @staticmethod
    def forward(ctx, t):
        return _to_bf16(t)

    @staticmethod
    def backward(ctx, g):
        return g


class _RoundGradient(torch.autograd.Function):
    """G(t): identity forward; the gradient is stored in bf16 (rounded) on its way back."""

    @staticmethod
    def forward(ctx, t):
        return t.view_as(t)

    @staticmethod
    def backward(ctx, g):
        return _to_bf16(g)


def round_bf16(t):
    return _Round.apply(t)


def round_gradient(t):
    return _RoundGradient.apply(t)


def stored(t):
    """G(R(t)): a core tensor whose value and gradient are both stored in bf16."""
    return round_gradient(round_bf16(t))


class _StoredOutputAttention(torch.autograd.Function):
    """out = softmax(scores) [v; Vd], whose backward takes the softmax's row term
    D = rowsum(dO * o) from the stored (bf16-rounded) output o, as a fused attention backward does
    (it is handed only the stored o), where autograd would use rowsum(dP * P) = rowsum(dO * o) with
    the unrounded o. scores [B, H, T, S + M]: S sequence keys (values vx [B, S, H, hd]), then M
    same-token depth entries of MoDA (values Vd [B, T, M, H, hd]; None: M = 0)."""

    @staticmethod
    def forward(ctx, scores, vx, Vd=None):
        prob = torch.softmax(scores, dim=-1)                                 # [B, H, T, S + M]
        S = vx.shape[1]
        out = torch.einsum("bhts,bshe->bthe", prob[..., :S], vx)
        if Vd is not None:
            out = out + torch.einsum("bhtm,btmhe->bthe", prob[..., S:], Vd)
        ctx.save_for_backward(prob, vx, Vd, _to_bf16(out))
        return out

    @staticmethod
    def backward(ctx, d_out):
        prob, vx, Vd, out_stored = ctx.saved_tensors
        S = vx.shape[1]
        dvx = torch.einsum("bhts,bthe->bshe", prob[..., :S], d_out)
        dprob = torch.einsum("bthe,bshe->bhts", d_out, vx)
        dVd = None
        if Vd is not None:
            dVd = torch.einsum("bhtm,bthe->btmhe", prob[..., S:], d_out)
            dprob = torch.cat([dprob, torch.einsum("bthe,btmhe->bhtm", d_out, Vd)], dim=-1)
        row = (d_out * out_stored).sum(-1).transpose(1, 2)[..., None]         # [B, H, T, 1]
        return prob * (dprob - row), dvx, dVd


class _SharedInputProducts(torch.autograd.Function):
    """(x Wa^T, x Wb^T, ...) of one input x, with dx summed in fp32 in the order of the weights
    (dx = dPa Wa + dPb Wb + ...), so that the accumulation order is fixed, not autograd's."""

    @staticmethod
    def forward(ctx, x, *weights):
        ctx.save_for_backward(x, *weights)
        return tuple(x @ w.T for w in weights)

    @staticmethod
    def backward(ctx, *grads):
        x, *weights = ctx.saved_tensors
        dx = None
        for g, w in zip(grads, weights):
            term = g @ w
            dx = term if dx is None else dx + term
        dws = [(g.reshape(-1, g.shape[-1]).T @ x.reshape(-1, x.shape[-1])) for g in grads]
        return (dx, *dws)


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------
class DepthBenchReference(torch.nn.Module):
    """All ten designs. Parameters keep their doc/parameters.md names in self.named()."""

    def __init__(self, config, params=None, dtype=torch.float64, seed=0, activation_dtype="fp32"):
        super().__init__()
        self.cfg = resolve_config(config)
        self.dtype = dtype
        # bf16: the attention and FFN cores store their tensors in bf16 (see core_products).
        if activation_dtype not in ("fp32", "bf16"):
            raise ValueError("activation_dtype must be fp32 or bf16, not '%s'" % activation_dtype)
        self.bf16 = activation_dtype == "bf16"
        if self.bf16 and dtype != torch.float32:
            raise ValueError("activation_dtype bf16 computes in float32: use dtype float32")
        specs = parameter_specs(self.cfg)
        if params is None:
            params = init_parameters(self.cfg, seed, dtype)
        self.names = [n for n, _, _ in specs]
        self.p = {}
        for name, shape, _ in specs:
            if name not in params:
                raise KeyError("missing parameter '%s'" % name)
            t = torch.as_tensor(params[name]).to(dtype)
            if tuple(t.shape) != tuple(shape):
                if t.numel() == int(math.prod(shape)) and t.dim() == 0:
                    t = t.reshape(shape)     # a scalar stored for a [1] parameter
                else:
                    raise ValueError("parameter '%s' has shape %s, expected %s"
                                     % (name, tuple(t.shape), tuple(shape)))
            prm = torch.nn.Parameter(t.clone())
            self.register_parameter(name.replace(".", "__"), prm)
            self.p[name] = prm

    # -- helpers ---------------------------------------------------------------------------------
    def named(self):
        return [(n, self.p[n]) for n in self.names]

    def no_decay(self, name):
        return name.endswith(NO_DECAY_SUFFIXES.get(self.cfg["arch"], ()))

    def norm(self, x, name):
        return rms_norm(x, self.p[name], self.cfg["norm_eps"])

    # -- the cores' storage: plain in fp32; emulated bf16 storage (doc/performance.md) --------------
    # With bf16, a core reads R(x) and R(W) (R: round to bf16, identity gradient), every tensor it
    # keeps is G(R(t)) (value and gradient rounded), its output G(o W^T) is fp32 with a rounded
    # incoming gradient. Everything around the cores (norms, streams, head, loss) stays fp32.
    def core_products(self, u, names):
        """[u W^T for W in names]: the projections of a core's input."""
        weights = [self.p[n] for n in names]
        if not self.bf16:
            return [u @ w.T for w in weights]
        products = _SharedInputProducts.apply(round_bf16(u), *[round_bf16(w) for w in weights])
        return [stored(t) for t in products]

    def keep(self, t):
        """A tensor the core stores (q, k after QK-norm and RoPE, the attention output, SwiGLU's h)."""
        return stored(t) if self.bf16 else t

    def one_use(self, t):
        """A stored tensor as one of its several readers sees it: with bf16, the gradient this
        reader sends back is stored (rounded) before it is added to the others'. MoDA's depth
        entries k, v have more than one reader; for a single reader the rounding repeats the
        stored tensor's own (rounding a bf16 value again changes nothing)."""
        return round_gradient(t) if self.bf16 else t

    def core_output(self, o, name):
        """o W^T, the core's fp32 output."""
        if not self.bf16:
            return o @ self.p[name].T
        return round_gradient(o @ round_bf16(self.p[name]).T)

    # -- sublayers (spec §0) ---------------------------------------------------------------------
    def attention(self, i, u, depth=None):
        """Causal softmax attention of block i on its (already normalised) input u [B, T, d].

        depth: optional (K_d, V_d) each [B, T, M, H_kv, hd], the MoDA same-position entries
        (spec §6), joined with the sequence keys under one softmax. Returns (output, k, k_rot, v): k after QK-norm but
        before RoPE, k_rot after RoPE (MoDA's depth cache takes one of them).
        """
        c, P = self.cfg, self.p
        pre = "blocks.%d." % i
        B, T, _ = u.shape
        H, Hkv, hd = c["n_head"], c["n_kv_head"], c["head_dim"]
        q, k, v = self.core_products(u, [pre + "wq", pre + "wk", pre + "wv"])
        q, k, v = q.view(B, T, H, hd), k.view(B, T, Hkv, hd), v.view(B, T, Hkv, hd)
        if c["qk_norm"]:   # RMSNorm over head_dim before RoPE (Qwen3)
            q = self.keep(rms_norm(q, P[pre + "q_norm"], c["norm_eps"]))
            k = self.keep(rms_norm(k, P[pre + "k_norm"], c["norm_eps"]))
        # k and v may also be MoDA depth entries (returned), k before or after RoPE: their own
        # attention is then one reader of several (one_use).
        qr = self.keep(rope(q, c["rope_theta"]))
        kr = self.keep(rope(self.one_use(k), c["rope_theta"]))
        group = H // Hkv                       # query head h uses kv head h // group
        kx = self.one_use(kr).repeat_interleave(group, dim=2)
        vx = self.one_use(v).repeat_interleave(group, dim=2)
        scale = 1.0 / math.sqrt(hd)
        scores = torch.einsum("bthe,bshe->bhts", qr, kx) * scale            # [B, H, T, T]
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        Vd = None
        if depth is not None:
            Kd, Vd = depth
            Kd, Vd = Kd.repeat_interleave(group, dim=3), Vd.repeat_interleave(group, dim=3)
            dscores = torch.einsum("bthe,btmhe->bhtm", qr, Kd) * scale      # [B, H, T, M]
            scores = torch.cat([scores, dscores], dim=-1)                   # one joint softmax
        if self.bf16:
            out = _StoredOutputAttention.apply(scores, vx, Vd)
        else:
            prob = torch.softmax(scores, dim=-1)
            out = torch.einsum("bhts,bshe->bthe", prob[..., :T], vx)
            if Vd is not None:
                out = out + torch.einsum("bhtm,btmhe->bthe", prob[..., T:], Vd)
        out = self.core_output(self.keep(out).reshape(B, T, H * hd), pre + "wo")
        return out, k, kr, v

    def ffn(self, i, u):
        """SwiGLU: W2(silu(W1 u) * W3 u)."""
        pre = "blocks.%d." % i
        a, b = self.core_products(u, [pre + "w1", pre + "w3"])
        return self.core_output(self.keep(F.silu(a) * b), pre + "w2")

    def sublayer(self, k, x_in):
        """F_k with its own pre-norm (used by HC, mHC, AttnRes): k = 2i attention, 2i+1 FFN."""
        i = k // 2
        if k % 2 == 0:
            return self.attention(i, self.norm(x_in, "blocks.%d.attn_norm" % i))[0]
        return self.ffn(i, self.norm(x_in, "blocks.%d.ffn_norm" % i))

    # -- spec §1 Pre-LN --------------------------------------------------------------------------
    def block_pre_ln(self, i, x, scale=1.0):
        pre = "blocks.%d." % i
        h = x + self.attention(i, scale * self.norm(x, pre + "attn_norm"))[0]
        return h + self.ffn(i, scale * self.norm(h, pre + "ffn_norm"))

    # -- spec §2 Sandwich-LN ---------------------------------------------------------------------
    def block_sandwich_ln(self, i, x):
        pre = "blocks.%d." % i
        a = self.attention(i, self.norm(x, pre + "attn_norm"))[0]
        h = x + self.norm(a, pre + "attn_post_norm")
        f = self.ffn(i, self.norm(h, pre + "ffn_norm"))
        return h + self.norm(f, pre + "ffn_post_norm")

    # -- spec §3 LNS: Pre-LN, block-norm outputs times 1/sqrt(b+1) after the gain -------------------
    def block_lns(self, i, x):
        return self.block_pre_ln(i, x, scale=1.0 / math.sqrt(i + 1))

    # -- spec §4 DeepNorm: Post-LN with alpha-scaled skip, no pre-norm -----------------------------
    def block_deepnorm(self, i, x):
        c = self.cfg
        pre = "blocks.%d." % i
        alpha = c["deepnorm_alpha"]
        if c["deepnorm_norm"] == "layernorm":
            N = lambda t, nm: layer_norm_nobias(t, self.p[pre + nm], c["norm_eps"])
        else:
            N = lambda t, nm: self.norm(t, pre + nm)
        h = N(alpha * x + self.attention(i, x)[0], "attn_norm")
        return N(alpha * h + self.ffn(i, h), "ffn_norm")

    # -- spec §5 KEEL ----------------------------------------------------------------------------
    def block_keel(self, i, x):
        pre = "blocks.%d." % i
        a_in = self.norm(x, pre + "attn_norm")
        if i == 0:   # block 0: plain Pre-LN attention, FFN post-norm with alpha = 1
            h = x + self.attention(i, a_in)[0]
            alpha_f = 1.0
        else:
            alpha = self.cfg["keel_alpha"]
            h = self.norm(alpha * x + self.attention(i, a_in)[0], pre + "attn_out_norm")
            alpha_f = alpha
        f = self.ffn(i, self.norm(h, pre + "ffn_norm"))
        return self.norm(alpha_f * h + f, pre + "ffn_out_norm")

    # -- spec §6 MoDA ----------------------------------------------------------------------------
    def forward_moda(self, x, trace):
        c = self.cfg
        L, theta = c["n_layer"], c["rope_theta"]
        B, T, _ = x.shape
        Hkv, hd = c["n_kv_head"], c["head_dim"]
        dk, dv = [], []      # depth entries of earlier blocks, each [B, T, H_kv, hd]
        for i in range(L):
            pre = "blocks.%d." % i
            depth = None
            if i > 0:        # block 0 is plain attention
                # Each reader of an entry adds its gradient to the entry's stored (bf16) gradient,
                # later blocks first: a chain of one_use per reader rounds after every addition.
                dk, dv = [self.one_use(e) for e in dk], [self.one_use(e) for e in dv]
                depth = (torch.stack(dk, dim=2), torch.stack(dv, dim=2))
            if c["moda_post_norm"]:   # h = N(x + MoDAAttn(x)), x' = N(h + FFN(h))
                a_in = x
                a, k, kr, v = self.attention(i, a_in, depth)
                h = self.norm(x + a, pre + "attn_norm")
                u = h
                x = self.norm(h + self.ffn(i, u), pre + "ffn_norm")
            else:                     # Pre-LN
                a_in = self.norm(x, pre + "attn_norm")
                a, k, kr, v = self.attention(i, a_in, depth)
                h = x + a
                u = self.norm(h, pre + "ffn_norm")
                x = h + self.ffn(i, u)
            trace.setdefault("moda_attention", []).append((a_in, depth, a))
            # (a) block i's own attention K (pre-RoPE by default) and V at the same position
            dk.append(kr if c["moda_rope_depth_keys"] else k)
            dv.append(v)
            # (b) K/V projections of block i's normalised FFN input (none for the last block)
            if i < L - 1:
                kf, vf = self.core_products(u, [pre + "moda_wk_ffn", pre + "moda_wv_ffn"])
                kf, vf = kf.view(B, T, Hkv, hd), vf.view(B, T, Hkv, hd)
                if c["moda_rope_depth_keys"]:   # stored rotated; its gradient after the inverse
                    kf = round_bf16(rope(kf, theta)) if self.bf16 else rope(kf, theta)
                dk.append(kf)
                dv.append(vf)
            trace.setdefault("stream", []).append(x)
        return self.norm(x, "final_norm")

    # -- spec §7 HC: dynamic hyper-connections with tanh -----------------------------------------
    def hc_sublayer(self, k, Hs):
        """Hs [B, T, n, d] -> H' [B, T, n, d]."""
        c, P = self.cfg, self.p
        q = "blocks.%d.%s." % (k // 2, "attn_hc" if k % 2 == 0 else "ffn_hc")
        Hn = rms_norm(Hs, P[q + "norm"], c["norm_eps"])                     # row-wise per stream
        alpha = P[q + "static_alpha"] + P[q + "s_alpha"] * torch.tanh(Hn @ P[q + "w_alpha"])
        beta = P[q + "static_beta"] + P[q + "s_beta"] * torch.tanh(Hn @ P[q + "w_beta"])[..., 0]
        x_in = (alpha[..., 0:1] * Hs).sum(dim=-2)                          # sum_s alpha[s,0] H[s]
        y = self.sublayer(k, x_in)
        mixed = torch.einsum("btsj,btsd->btjd", alpha[..., 1:], Hs)        # sum_s alpha[s,j+1] H[s]
        return mixed + beta[..., None] * y[..., None, :]

    def forward_hc(self, x, trace):
        c = self.cfg
        n = c["hc_streams"]
        Hs = x[..., None, :].expand(*x.shape[:-1], n, x.shape[-1])          # n copies of embedding
        for k in range(2 * c["n_layer"]):
            Hs = self.hc_sublayer(k, Hs)
            if k % 2 == 1:
                trace.setdefault("stream", []).append(Hs)
        if c["hc_readout"] == "norm_then_sum":
            return self.norm(Hs, "final_norm").sum(dim=-2)
        return self.norm(Hs.sum(dim=-2), "final_norm")

    # -- spec §8 mHC -----------------------------------------------------------------------------
    def sinkhorn(self, logits):
        """M = exp(logits - rowmax); iterations of row then column normalisation (eps in denominators)."""
        eps = self.cfg["mhc_sinkhorn_eps"]
        M = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
        for _ in range(self.cfg["mhc_sinkhorn_iters"]):
            M = M / (M.sum(dim=-1, keepdim=True) + eps)
            M = M / (M.sum(dim=-2, keepdim=True) + eps)
        return M

    def mhc_sublayer(self, k, X, trace=None):
        c, P = self.cfg, self.p
        n = c["mhc_streams"]
        q = "blocks.%d.%s." % (k // 2, "attn_mhc" if k % 2 == 0 else "ffn_mhc")
        B, T, _, d = X.shape
        v = rms_norm(X.reshape(B, T, n * d), P[q + "norm"], c["norm_eps"])  # over all n*d values
        z = v @ P[q + "phi"]                                               # [B, T, n^2 + 2n]
        g, b = P[q + "gates"], P[q + "bias"]
        h_pre = torch.sigmoid(g[0] * z[..., :n] + b[:n])
        h_post = 2.0 * torch.sigmoid(g[1] * z[..., n:2 * n] + b[n:2 * n])
        h_res = self.sinkhorn((g[2] * z[..., 2 * n:] + b[2 * n:]).view(B, T, n, n))
        if trace is not None:
            trace.setdefault("mhc", []).append((h_pre, h_post, h_res))
        y = self.sublayer(k, (h_pre[..., None] * X).sum(dim=-2))            # F_k(H_pre X)
        return torch.einsum("btij,btjd->btid", h_res, X) + h_post[..., None] * y[..., None, :]

    def forward_mhc(self, x, trace):
        c = self.cfg
        n = c["mhc_streams"]
        X = x[..., None, :].expand(*x.shape[:-1], n, x.shape[-1])
        for k in range(2 * c["n_layer"]):
            X = self.mhc_sublayer(k, X, trace)
            if k % 2 == 1:
                trace.setdefault("stream", []).append(X)
        return self.norm(X.mean(dim=-2), "final_norm")

    # -- spec §9/§10 Attention Residuals ----------------------------------------------------------
    def depth_mix(self, sources, prefix, trace):
        """h = sum_i softmax_i(w . RMSNorm(v_i)) v_i over sources [B, T, m, d] (per token)."""
        V = torch.stack(sources, dim=-2)
        K = rms_norm(V, self.p[prefix + "key_norm"], self.cfg["norm_eps"])
        w = torch.softmax(K @ self.p[prefix + "query"], dim=-1)            # [B, T, m]
        trace.setdefault("attnres_weights", []).append(w)
        return (w[..., None] * V).sum(dim=-2)

    def forward_attnres(self, x, trace):
        c = self.cfg
        L = c["n_layer"]
        S = 1 if c["arch"] == "attnres_full" else c["attnres_block_size"]
        emb = x
        completed, partial, count = [], None, 0   # block sums; S = 1 gives Full AttnRes's sources
        for k in range(2 * L):
            i = k // 2
            if k == 0:
                h = emb                             # block 0's attention reads the embedding
            else:
                srcs = [emb] + completed + ([partial] if partial is not None else [])
                h = self.depth_mix(srcs, "blocks.%d.%s." % (i, "attn_res" if k % 2 == 0
                                                             else "ffn_res"), trace)
            trace.setdefault("attnres_inputs", []).append(h)
            y = self.sublayer(k, h)                 # raw sublayer output (source v_{k+1})
            partial = y if partial is None else partial + y
            count += 1
            if count == S:
                completed.append(partial)
                partial, count = None, 0
        srcs = [emb] + completed + ([partial] if partial is not None else [])
        return self.norm(self.depth_mix(srcs, "readout_res.", trace), "final_norm")

    forward_attnres_full = forward_attnres
    forward_attnres_block = forward_attnres

    # -- full model ------------------------------------------------------------------------------
    def forward(self, tokens, trace=None):
        """tokens int64 [B, T] -> logits [B, T, V]. trace (dict) collects intermediate states."""
        if trace is None:
            trace = {}
        arch = self.cfg["arch"]
        x = self.p["embed"][tokens]                                        # no scaling, no norm
        # A design is found by its name: forward_<arch> when it carries a state of its own (MoDA,
        # HC, mHC, AttnRes), else block_<arch>, one block on the single stream.
        forward_design = getattr(self, "forward_" + arch, None)
        if forward_design is not None:
            z = forward_design(x, trace)
        else:
            block = getattr(self, "block_" + arch)
            for i in range(self.cfg["n_layer"]):
                x = block(i, x)
                trace.setdefault("stream", []).append(x)
            z = self.norm(x, "final_norm")
        return z @ self.p["lm_head"].T


def lm_loss(logits, tokens):
    """Mean next-token cross-entropy over positions 0..T-2 of all B windows."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), tokens[:, 1:].reshape(-1))


# ------------------------------------------------------------------------------------------------
# AdamW (torch.optim.AdamW semantics) with global-norm clipping
# ------------------------------------------------------------------------------------------------
def clip_global_norm(grads, max_norm):
    """Scale all grads by max_norm / ||g|| when ||g|| > max_norm (no epsilon). Returns ||g||."""
    total = torch.sqrt(sum((g * g).sum() for g in grads))
    if max_norm is not None and max_norm > 0 and total > max_norm:
        s = max_norm / total
        for g in grads:
            g.mul_(s)
    return float(total)


def run_adamw(model, tokens, steps, lr, beta1, beta2, eps, weight_decay, grad_clip):
    """S steps on the same batch. Returns (losses before each step, pre-clip grad norms)."""
    named = model.named()
    state = {n: (torch.zeros_like(p), torch.zeros_like(p)) for n, p in named}
    losses, norms = [], []
    for t in range(1, steps + 1):
        for _, p in named:
            p.grad = None
        loss = lm_loss(model(tokens), tokens)
        loss.backward()
        losses.append(float(loss))
        grads = [p.grad for _, p in named]
        norms.append(clip_global_norm(grads, grad_clip))
        with torch.no_grad():
            for n, p in named:
                g = p.grad
                m, v = state[n]
                wd = 0.0 if model.no_decay(n) else weight_decay
                p.mul_(1.0 - lr * wd)                                      # decoupled decay first
                m.mul_(beta1).add_(g, alpha=1.0 - beta1)
                v.mul_(beta2).addcmul_(g, g, value=1.0 - beta2)
                mhat = m / (1.0 - beta1 ** t)
                vhat = v / (1.0 - beta2 ** t)
                p.sub_(lr * mhat / (torch.sqrt(vhat) + eps))
    return losses, norms


# ------------------------------------------------------------------------------------------------
# HDF5 exchange
# ------------------------------------------------------------------------------------------------
ADAMW_DEFAULTS = {"lr": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8, "weight_decay": 0.1,
                  "grad_clip": 1.0}


def _attr_str(v):
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def load_weights(path):
    import h5py
    import numpy as np
    with h5py.File(path, "r") as f:
        cfg = json.loads(_attr_str(f.attrs["config"]))
        params = {}

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and name != "tokens":
                params[name] = torch.from_numpy(np.asarray(obj[()], dtype=np.float64))
        f.visititems(visit)
        tokens = torch.from_numpy(np.asarray(f["tokens"][()], dtype=np.int64)) \
            if "tokens" in f else None
        hyper = {k: float(f.attrs[k]) for k in ADAMW_DEFAULTS if k in f.attrs}
    return cfg, params, tokens, hyper


def save_weights(path, cfg, params, tokens=None, hyper=None):
    import h5py
    with h5py.File(path, "w") as f:
        f.attrs["config"] = json.dumps(cfg, sort_keys=True)
        for name, t in params.items():
            f.create_dataset(name, data=t.detach().to(torch.float64).numpy())
        if tokens is not None:
            f.create_dataset("tokens", data=tokens.to(torch.int64).numpy())
        for k, v in (hyper or {}).items():
            f.attrs[k] = float(v)


def cmd_run(args):
    """Each IN.h5 to its OUT.h5, in one process (importing torch takes seconds)."""
    n = len(args.weights)
    if len(args.out) != n:
        raise SystemExit("reference: %d --weights files but %d --out files" % (n, len(args.out)))
    modes = args.activation_dtype
    if len(modes) == 1:
        modes = modes * n
    if len(modes) != n:
        raise SystemExit("reference: give one --activation-dtype or one per --weights file (%d), "
                         "not %d" % (n, len(modes)))
    for weights, out, mode in zip(args.weights, args.out, modes):
        run_one(args, weights, out, mode)


def run_one(args, weights, out, activation_dtype):
    import h5py
    precision = args.dtype
    if precision is None:   # bf16 activation storage computes in float32
        precision = "float32" if activation_dtype == "bf16" else "float64"
    dtype = {"float64": torch.float64, "float32": torch.float32}[precision]
    cfg, params, tokens, hyper = load_weights(weights)
    if tokens is None:
        raise SystemExit("%s: no 'tokens' dataset" % weights)
    try:
        model = DepthBenchReference(cfg, params, dtype=dtype,
                                    activation_dtype=activation_dtype)
    except ValueError as e:
        raise SystemExit("reference: %s" % e)
    extra = sorted(set(params) - set(model.names))
    if extra:
        warnings.warn("reference: ignoring datasets that are no parameter: %s" % extra)
    logits = model(tokens)
    loss = lm_loss(logits, tokens)
    loss.backward()
    as_np = lambda t: t.detach().to(torch.float64).numpy()
    with h5py.File(out, "w") as f:
        f.attrs["config"] = json.dumps(model.cfg, sort_keys=True)
        f.attrs["dtype"] = precision
        f.attrs["activation_dtype"] = activation_dtype
        f.create_dataset("loss", data=float(loss))
        f.create_dataset("logits", data=as_np(logits))
        for n, p in model.named():
            f.create_dataset("grad/" + n, data=as_np(p.grad))
        if args.adamw_steps > 0:
            h = dict(ADAMW_DEFAULTS)
            h.update(hyper)
            for k, v in h.items():
                f.attrs["adamw_" + k] = v
            model = DepthBenchReference(cfg, params, dtype=dtype,   # fresh copy of the weights
                                        activation_dtype=activation_dtype)
            losses, norms = run_adamw(model, tokens, args.adamw_steps, h["lr"], h["beta1"],
                                      h["beta2"], h["eps"], h["weight_decay"], h["grad_clip"])
            f.create_dataset("adamw_losses", data=losses)
            f.create_dataset("adamw_grad_norms", data=norms)
            for n, p in model.named():
                f.create_dataset("adamw_params/" + n, data=as_np(p))
    print("%s: arch=%s loss=%.12g" % (out, model.cfg["arch"], float(loss)))


def cmd_init(args):
    text = args.config
    if os.path.exists(text):
        with open(text) as fh:
            text = fh.read()
    cfg = json.loads(text)
    rc = resolve_config(cfg)
    params = init_parameters(rc, args.seed, torch.float64)
    gen = torch.Generator().manual_seed(int(args.seed) + 1)
    if args.perturb > 0:   # move every parameter off its init (makes zero queries etc. non-trivial)
        for n in params:
            params[n] = params[n] + args.perturb * torch.randn(params[n].shape, generator=gen,
                                                               dtype=torch.float64)
    tokens = torch.randint(0, rc["vocab_size"], (args.batch, args.seq), generator=gen)
    save_weights(args.out, cfg, params, tokens, ADAMW_DEFAULTS)
    print("%s: arch=%s, %d tensors, %d parameters" % (args.out, rc["arch"], len(params),
                                                     sum(t.numel() for t in params.values())))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="forward, loss, gradients (and AdamW steps) for IN.h5")
    r.add_argument("--weights", required=True, nargs="+", help="IN.h5 files")
    r.add_argument("--out", required=True, nargs="+", help="one OUT.h5 per IN.h5")
    r.add_argument("--adamw-steps", type=int, default=0)
    r.add_argument("--dtype", choices=("float64", "float32"), default=None,
                   help="float64 (default), or float32 (default with --activation-dtype bf16)")
    r.add_argument("--activation-dtype", choices=("fp32", "bf16"), nargs="+", default=["fp32"],
                   help="bf16: emulate train.activation_dtype = bf16 (the cores store bf16); "
                        "one value for every IN.h5 or one per IN.h5")
    i = sub.add_parser("init", help="random weights following each design's init rules")
    i.add_argument("--config", required=True, help="JSON text or a JSON file")
    i.add_argument("--seed", type=int, default=0)
    i.add_argument("--out", required=True)
    i.add_argument("--batch", type=int, default=2)
    i.add_argument("--seq", type=int, default=8)
    i.add_argument("--perturb", type=float, default=0.0,
                   help="add N(0, sigma^2) noise to every parameter after init")
    sub.add_parser("designs", help="the designs this reference implements, one per line (the "
                                   "C++ agreement tests skip any other registered design)")
    args = ap.parse_args(argv)
    if args.cmd == "designs":
        print("\n".join(DESIGNS))
        return
    torch.set_num_threads(1)
    {"run": cmd_run, "init": cmd_init}[args.cmd](args)


if __name__ == "__main__":
    main()
