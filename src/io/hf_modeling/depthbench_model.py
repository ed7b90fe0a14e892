"""DepthBench's ten residual designs as a plain PyTorch module (no transformers needed).

`depthbench export --format hf` ships this file beside `modeling_depthbench.py` (the thin
transformers wrapper) and `configuration_depthbench.py`; doc/export.md describes the folder.
The equations are those of doc/architectures.md, whose section numbers the comments cite (§0
backbone, §1-§10 the designs); parameter names and layouts are doc/parameters.md's, and they
are this module's state_dict keys.

    from depthbench_model import load_export, lm_loss
    model = load_export("runs/demo-hf")        # or a --format safetensors folder
    logits = model(tokens)                     # tokens int64 [B, T] -> logits [B, T, V]
    loss = lm_loss(logits, tokens)             # what `depthbench eval` reports for a window

Computation follows the module's dtype (float64 and float32 tested against `depthbench eval`);
with float16/bfloat16 weights the norms, softmaxes and Sinkhorn run in float32, as the
specification asks ("fp32 or wider"), and RoPE angles are computed in float64.
"""

import json
import math
import os
import struct

import torch
import torch.nn.functional as F
from torch import nn

DESIGNS = ("pre_ln", "sandwich_ln", "lns", "deepnorm", "keel", "moda", "hc", "mhc",
           "attnres_full", "attnres_block")

# Design options (doc/config.md) and their defaults; "auto" and None mean "derived from L".
DESIGN_OPTIONS = {
    "deepnorm": {"deepnorm_alpha": "auto", "deepnorm_beta": "auto", "deepnorm_norm": "layernorm"},
    "keel": {"keel_alpha": "auto"},
    "moda": {"moda_rope_depth_keys": False, "moda_post_norm": False},
    "hc": {"hc_streams": 4, "hc_readout": "norm_then_sum"},
    "mhc": {"mhc_streams": 4, "mhc_sinkhorn_iters": 20, "mhc_sinkhorn_eps": 1e-6,
            "mhc_identity_init": False},
    "attnres_block": {"attnres_blocks": 8, "attnres_block_size": None},
}


# ------------------------------------------------------------------------------------------------
# The config: the fields of an export's config.json, resolved
# ------------------------------------------------------------------------------------------------
def _derived(value):
    return value is None or value in ("auto", "", "null")


def _flag(value):
    if isinstance(value, str):
        if value not in ("true", "false", "1", "0"):
            raise ValueError("not a boolean: %r" % value)
        return value in ("true", "1")
    return bool(value)


class DepthBenchSettings:
    """The model of a config.json (`--format hf` or `--format safetensors`), every derived value
    filled in: n_kv_head, head_dim, ff and each design option of the design."""

    def __init__(self, config):
        c = dict(config)
        self.arch = c["arch"]
        if self.arch not in DESIGNS:
            raise ValueError("unknown design '%s' (one of %s)" % (self.arch, ", ".join(DESIGNS)))
        self.d_model, self.n_layer = int(c["d_model"]), int(c["n_layer"])
        self.n_head = int(c["n_head"])
        self.n_kv_head = int(c.get("n_kv_head") or self.n_head)
        self.head_dim = int(c.get("head_dim") or self.d_model // self.n_head)
        # §0: ff = ceil16(8d/3) below 1B when not given
        self.ff = int(c.get("ff") or (8 * self.d_model + 47) // 48 * 16)
        self.vocab_size = int(c["vocab_size"])
        self.qk_norm = _flag(c.get("qk_norm", False))
        self.tie_embeddings = _flag(c.get("tie_embeddings", False))
        self.rope_theta = float(c.get("rope_theta", 10000.0))
        self.norm_eps = float(c.get("norm_eps", 1e-6))
        if self.head_dim % 2 or self.n_head % self.n_kv_head:
            raise ValueError("head_dim must be even and n_head a multiple of n_kv_head")
        given = c.get("design_options") or {}
        if isinstance(given, str):  # "key=value;key=value", as weight files store them
            given = dict(item.split("=", 1) for item in given.split(";") if "=" in item)
        options = dict(DESIGN_OPTIONS.get(self.arch, {}))
        unknown = sorted(set(given) - set(options))
        if unknown:
            raise ValueError("design %s has no option %s" % (self.arch, ", ".join(unknown)))
        options.update(given)
        self.options = options
        self._resolve_options(options)

    def _resolve_options(self, o):
        L = self.n_layer
        if self.arch == "deepnorm":  # §4
            a, b = o["deepnorm_alpha"], o["deepnorm_beta"]
            self.deepnorm_alpha = (2.0 * L) ** 0.25 if _derived(a) else float(a)
            self.deepnorm_beta = (8.0 * L) ** -0.25 if _derived(b) else float(b)
            self.deepnorm_norm = o["deepnorm_norm"]
            if self.deepnorm_norm not in ("layernorm", "rmsnorm"):
                raise ValueError("deepnorm_norm must be layernorm or rmsnorm")
        elif self.arch == "keel":  # §5: α = 2L, the number of sublayers
            a = o["keel_alpha"]
            self.keel_alpha = 2.0 * L if _derived(a) else float(a)
        elif self.arch == "moda":  # §6
            self.moda_rope_depth_keys = _flag(o["moda_rope_depth_keys"])
            self.moda_post_norm = _flag(o["moda_post_norm"])
        elif self.arch == "hc":  # §7
            self.streams = int(o["hc_streams"])
            self.hc_readout = o["hc_readout"]
            if self.hc_readout not in ("norm_then_sum", "sum_then_norm"):
                raise ValueError("hc_readout must be norm_then_sum or sum_then_norm")
        elif self.arch == "mhc":  # §8
            self.streams = int(o["mhc_streams"])
            self.sinkhorn_iters = int(o["mhc_sinkhorn_iters"])
            self.sinkhorn_eps = float(o["mhc_sinkhorn_eps"])
            self.mhc_identity_init = _flag(o["mhc_identity_init"])
        elif self.arch == "attnres_block":  # §10: S = ceil(2L / blocks) unless given
            size = o["attnres_block_size"]
            blocks = int(o["attnres_blocks"])
            self.group_size = -(-2 * L // blocks) if _derived(size) else int(size)
            if self.group_size < 1:
                raise ValueError("attnres_block_size must be >= 1")
        if self.arch == "attnres_full":  # §9 is §10 with S = 1
            self.group_size = 1


# ------------------------------------------------------------------------------------------------
# §0 primitives
# ------------------------------------------------------------------------------------------------
def _wide(x):
    """x in float32 when it is stored in 16 bits (norms, softmaxes: "fp32 or wider")."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def rms_norm(x, gain, eps):
    """N(x) = g ⊙ x / sqrt(mean(x²) + ε) over the last axis."""
    w = _wide(x)
    y = w / torch.sqrt((w * w).mean(-1, keepdim=True) + eps)
    return (gain.to(y.dtype) * y).to(x.dtype)


def layer_norm_without_bias(x, gain, eps):
    """§4 DeepNorm's block norm: g ⊙ (x − mean) / sqrt(var + ε), biased variance, no bias."""
    w = _wide(x)
    centred = w - w.mean(-1, keepdim=True)
    y = centred / torch.sqrt((centred * centred).mean(-1, keepdim=True) + eps)
    return (gain.to(y.dtype) * y).to(x.dtype)


def softmax(x, dim=-1):
    return torch.softmax(_wide(x), dim=dim).to(x.dtype)


class Rope:
    """Rotate-half RoPE (§0): the pair (x_i, x_{i+hd/2}) at position t turns by t·θ^(−2i/hd),
    angles in float64."""

    def __init__(self, length, head_dim, theta, dtype, device):
        half = head_dim // 2
        inv_freq = theta ** (-2.0 * torch.arange(half, dtype=torch.float64) / head_dim)
        angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.cos = torch.cos(angles).to(dtype=dtype, device=device)[None, :, None, :]
        self.sin = torch.sin(angles).to(dtype=dtype, device=device)[None, :, None, :]

    def __call__(self, x):
        """x [B, T, heads, hd]."""
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return torch.cat([x1 * self.cos - x2 * self.sin, x2 * self.cos + x1 * self.sin], dim=-1)


def lm_loss(logits, tokens):
    """Mean next-token cross-entropy of tokens 1..T−1 over all windows: `depthbench eval`'s
    window loss (doc/eval.md), averaged over the B windows."""
    V = logits.shape[-1]
    return F.cross_entropy(_wide(logits[:, :-1]).reshape(-1, V), tokens[:, 1:].reshape(-1))


def _matrix(*shape):
    return nn.Parameter(torch.empty(*shape))


def _gain(size):
    return nn.Parameter(torch.ones(size))


# ------------------------------------------------------------------------------------------------
# Design parameter groups (doc/parameters.md): each a module, so that state_dict keys are the
# documented names ("blocks.3.attn_hc.static_alpha")
# ------------------------------------------------------------------------------------------------
class HyperConnection(nn.Module):
    """§7: the static and dynamic weights of one HC sublayer."""

    def __init__(self, n, d, k):
        super().__init__()
        self.k = k  # the sublayer index, for the one-hot init a_k = e_{k mod n}
        self.static_alpha = _matrix(n, n + 1)  # [a_k | A_k]
        self.static_beta = _matrix(n)  # b_k
        self.w_alpha = _matrix(d, n + 1)
        self.w_beta = _matrix(d, 1)
        self.s_alpha = _matrix(1)
        self.s_beta = _matrix(1)
        self.norm = _gain(d)

    def reset_parameters(self):
        n = self.static_beta.shape[0]
        with torch.no_grad():
            self.static_alpha.zero_()
            self.static_alpha[self.k % n, 0] = 1.0
            self.static_alpha[:, 1:] = torch.eye(n)
            self.static_beta.fill_(1.0)
            self.w_alpha.zero_()
            self.w_beta.zero_()
            self.s_alpha.fill_(0.01)
            self.s_beta.fill_(0.01)
            self.norm.fill_(1.0)

    def forward(self, H, sublayer, eps):
        """H [B, T, n, d] → H' [B, T, n, d]; sublayer(x_in) is F_k with its own pre-norm."""
        Hn = rms_norm(H, self.norm, eps)  # per stream, row by row
        alpha = self.static_alpha + self.s_alpha * torch.tanh(Hn @ self.w_alpha)  # [B, T, n, n+1]
        beta = self.static_beta + self.s_beta * torch.tanh(Hn @ self.w_beta)[..., 0]  # [B, T, n]
        x_in = torch.einsum("bts,btsd->btd", alpha[..., 0], H)  # Σ_s α[s,0]·H[s]
        y = sublayer(x_in)
        mixed = torch.einsum("btsj,btsd->btjd", alpha[..., 1:], H)  # Σ_s α[s,j+1]·H[s]
        return mixed + beta[..., None] * y[..., None, :]


class ManifoldHyperConnection(nn.Module):
    """§8: the projections of one mHC sublayer."""

    def __init__(self, n, d, k, settings):
        super().__init__()
        self.k, self.n, self.s = k, n, settings
        self.phi = _matrix(n * d, n * n + 2 * n)  # columns [pre | post | res]
        self.bias = _matrix(n * n + 2 * n)
        self.gates = _matrix(3)  # α_pre, α_post, α_res
        self.norm = _gain(n * d)

    def reset_parameters(self):
        n = self.n
        with torch.no_grad():
            nn.init.trunc_normal_(self.phi, std=0.02, a=-0.06, b=0.06)
            self.bias.zero_()
            if self.s.mhc_identity_init:  # H_pre ≈ e_{k mod n}, H_res ≈ I
                self.bias[:n] = -8.0
                self.bias[self.k % n] = 8.0
                self.bias[2 * n:] = (8.0 * (2.0 * torch.eye(n) - 1.0)).reshape(-1)
            self.gates.fill_(0.01)
            self.norm.fill_(1.0)

    def sinkhorn(self, logits):
        """exp(logits − row max), then row and column normalisations, each sum plus ε."""
        eps = self.s.sinkhorn_eps
        M = torch.exp(logits - logits.amax(dim=-1, keepdim=True))
        for _ in range(self.s.sinkhorn_iters):
            M = M / (M.sum(dim=-1, keepdim=True) + eps)
            M = M / (M.sum(dim=-2, keepdim=True) + eps)
        return M

    def forward(self, X, sublayer, eps):
        """X [B, T, n, d] → X' [B, T, n, d]."""
        B, T, n, d = X.shape
        v = _wide(rms_norm(X.reshape(B, T, n * d), self.norm, eps))  # over all n·d values
        z = v @ self.phi.to(v.dtype)
        gates, bias = self.gates.to(v.dtype), self.bias.to(v.dtype)
        h_pre = torch.sigmoid(gates[0] * z[..., :n] + bias[:n])
        h_post = 2.0 * torch.sigmoid(gates[1] * z[..., n:2 * n] + bias[n:2 * n])
        h_res = self.sinkhorn((gates[2] * z[..., 2 * n:] + bias[2 * n:]).view(B, T, n, n))
        h_pre, h_post, h_res = h_pre.to(X.dtype), h_post.to(X.dtype), h_res.to(X.dtype)
        y = sublayer(torch.einsum("bts,btsd->btd", h_pre, X))  # F_k(H_pre · X)
        return torch.einsum("btij,btjd->btid", h_res, X) + h_post[..., None] * y[..., None, :]


class DepthMixer(nn.Module):
    """§9: one pseudo-query and key norm; h = Σ_i softmax_i(w · RMSNorm(v_i)) · v_i."""

    def __init__(self, d):
        super().__init__()
        self.query = _matrix(d)
        self.key_norm = _gain(d)

    def reset_parameters(self):
        with torch.no_grad():
            self.query.zero_()  # every mixture starts as the plain mean of its sources
            self.key_norm.fill_(1.0)

    def forward(self, sources, eps):
        V = torch.stack(sources, dim=-2)  # [B, T, m, d]
        weights = softmax(rms_norm(V, self.key_norm, eps) @ self.query, dim=-1)  # [B, T, m]
        return (weights[..., None] * V).sum(dim=-2)


# ------------------------------------------------------------------------------------------------
# One block's parameters and its two sublayer cores (§0)
# ------------------------------------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, s, i):
        super().__init__()
        self.s, self.i = s, i
        d, hd, ff = s.d_model, s.head_dim, s.ff
        self.wq = _matrix(s.n_head * hd, d)
        self.wk = _matrix(s.n_kv_head * hd, d)
        self.wv = _matrix(s.n_kv_head * hd, d)
        self.wo = _matrix(d, s.n_head * hd)
        self.w1 = _matrix(ff, d)
        self.w3 = _matrix(ff, d)
        self.w2 = _matrix(d, ff)
        if s.qk_norm:
            self.q_norm, self.k_norm = _gain(hd), _gain(hd)
        self.attn_norm, self.ffn_norm = _gain(d), _gain(d)
        if s.arch == "sandwich_ln":
            self.attn_post_norm, self.ffn_post_norm = _gain(d), _gain(d)
        if s.arch == "keel":
            if i > 0:
                self.attn_out_norm = _gain(d)
            self.ffn_out_norm = _gain(d)
        if s.arch == "moda" and i < s.n_layer - 1:  # the last block's FFN entry is never read
            self.moda_wk_ffn = _matrix(s.n_kv_head * hd, d)
            self.moda_wv_ffn = _matrix(s.n_kv_head * hd, d)
        if s.arch == "hc":
            self.attn_hc = HyperConnection(s.streams, d, 2 * i)
            self.ffn_hc = HyperConnection(s.streams, d, 2 * i + 1)
        if s.arch == "mhc":
            self.attn_mhc = ManifoldHyperConnection(s.streams, d, 2 * i, s)
            self.ffn_mhc = ManifoldHyperConnection(s.streams, d, 2 * i + 1, s)
        if s.arch in ("attnres_full", "attnres_block"):
            if i > 0:  # sublayer 0 reads the embedding alone
                self.attn_res = DepthMixer(d)
            self.ffn_res = DepthMixer(d)

    def reset_parameters(self):
        """doc/parameters.md: trunc-normal 0.02 (±3σ); DeepNorm ·β on wv, wo, w1, w2, w3; HC and
        mHC 0.02/sqrt(n) on wo and w2; every gain 1."""
        s = self.s
        std = {name: 0.02 for name in ("wq", "wk", "wv", "wo", "w1", "w3", "w2")}
        if s.arch == "deepnorm":
            for name in ("wv", "wo", "w1", "w3", "w2"):
                std[name] *= s.deepnorm_beta
        if s.arch in ("hc", "mhc"):
            std["wo"] = std["w2"] = 0.02 / math.sqrt(s.streams)
        with torch.no_grad():
            for name, p in self.named_parameters(recurse=False):
                if p.dim() == 1:
                    p.fill_(1.0)
                else:
                    sigma = std.get(name, 0.02)
                    nn.init.trunc_normal_(p, std=sigma, a=-3 * sigma, b=3 * sigma)
        for child in self.children():
            child.reset_parameters()

    def attention(self, u, rope, depth=None):
        """Causal attention on the normalised input u [B, T, d]. depth: MoDA's same-token
        entries (keys, values), each [B, T, M, H_kv, hd], under the same softmax (§6).
        Returns (output, k before RoPE, k after RoPE, v)."""
        s = self.s
        B, T, _ = u.shape
        H, Hkv, hd = s.n_head, s.n_kv_head, s.head_dim
        q = (u @ self.wq.T).view(B, T, H, hd)
        k = (u @ self.wk.T).view(B, T, Hkv, hd)
        v = (u @ self.wv.T).view(B, T, Hkv, hd)
        if s.qk_norm:  # per head, before RoPE (Qwen3)
            q, k = rms_norm(q, self.q_norm, s.norm_eps), rms_norm(k, self.k_norm, s.norm_eps)
        q_rot, k_rot = rope(q), rope(k)
        group = H // Hkv  # query head h reads key/value head ⌊h / group⌋
        scale = 1.0 / math.sqrt(hd)
        keys, values = k_rot.repeat_interleave(group, 2), v.repeat_interleave(group, 2)
        logits = torch.einsum("bthe,bshe->bhts", q_rot, keys) * scale  # [B, H, T, T]
        causal = torch.ones(T, T, dtype=torch.bool, device=u.device).tril()
        logits = logits.masked_fill(~causal, float("-inf"))
        if depth is not None:
            depth_keys = depth[0].repeat_interleave(group, 3)
            depth_logits = torch.einsum("bthe,btmhe->bhtm", q_rot, depth_keys) * scale
            logits = torch.cat([logits, depth_logits], dim=-1)  # one softmax over both sets
        p = softmax(logits, dim=-1)
        out = torch.einsum("bhts,bshe->bthe", p[..., :T], values)
        if depth is not None:
            depth_values = depth[1].repeat_interleave(group, 3)
            out = out + torch.einsum("bhtm,btmhe->bthe", p[..., T:], depth_values)
        return out.reshape(B, T, H * hd) @ self.wo.T, k, k_rot, v

    def ffn(self, u):
        """SwiGLU: W2 · (silu(W1·u) ⊙ (W3·u))."""
        return (F.silu(u @ self.w1.T) * (u @ self.w3.T)) @ self.w2.T

    def norm(self, x, name, scale=1.0):
        y = rms_norm(x, getattr(self, name), self.s.norm_eps)
        return y if scale == 1.0 else y * scale

    def sublayer(self, k, rope):
        """F_k with its own pre-norm, as HC, mHC and AttnRes call it (k even: attention)."""
        if k % 2 == 0:
            return lambda x: self.attention(self.norm(x, "attn_norm"), rope)[0]
        return lambda x: self.ffn(self.norm(x, "ffn_norm"))


# ------------------------------------------------------------------------------------------------
# The model
# ------------------------------------------------------------------------------------------------
class DepthBenchModel(nn.Module):
    """Any of the ten designs. `config` is the dict of an export's config.json (or any mapping
    with its fields: arch, design_options, d_model, n_layer, n_head, n_kv_head, head_dim, ff,
    vocab_size, qk_norm, tie_embeddings, rope_theta, norm_eps); unknown keys are ignored.
    Parameters are initialised by the design's rules (doc/parameters.md)."""

    def __init__(self, config):
        super().__init__()
        s = self.settings = DepthBenchSettings(config)
        self.embed = _matrix(s.vocab_size, s.d_model)
        self.blocks = nn.ModuleList(Block(s, i) for i in range(s.n_layer))
        if s.arch in ("attnres_full", "attnres_block"):
            self.readout_res = DepthMixer(s.d_model)
        self.final_norm = _gain(s.d_model)
        if not s.tie_embeddings:
            self.lm_head = _matrix(s.vocab_size, s.d_model)
        self.reset_parameters()

    def reset_parameters(self):
        with torch.no_grad():
            for p in [self.embed] + ([] if self.settings.tie_embeddings else [self.lm_head]):
                nn.init.trunc_normal_(p, std=0.02, a=-0.06, b=0.06)
            self.final_norm.fill_(1.0)
        for block in self.blocks:
            block.reset_parameters()
        if hasattr(self, "readout_res"):
            self.readout_res.reset_parameters()

    def forward(self, tokens):
        """tokens int64 [B, T] → logits [B, T, V]."""
        s = self.settings
        x = self.embed[tokens]  # no scaling, no norm after it
        rope = Rope(tokens.shape[1], s.head_dim, s.rope_theta, x.dtype, x.device)
        stack = {"hc": self._hc, "mhc": self._mhc, "moda": self._moda,
                 "attnres_full": self._attnres, "attnres_block": self._attnres}
        z = stack.get(s.arch, self._one_stream)(x, rope)
        head = self.embed if s.tie_embeddings else self.lm_head
        return z @ head.T

    # §1-§5: one residual stream, block by block ----------------------------------------------
    def _one_stream(self, x, rope):
        block_forward = getattr(self, "_" + self.settings.arch)
        for b in self.blocks:
            x = block_forward(b, x, rope)
        return rms_norm(x, self.final_norm, self.settings.norm_eps)

    def _pre_ln(self, b, x, rope, scale=1.0):  # §1: h = x + Attn(N_a(x)); x' = h + FFN(N_f(h))
        h = x + b.attention(b.norm(x, "attn_norm", scale), rope)[0]
        return h + b.ffn(b.norm(h, "ffn_norm", scale))

    def _sandwich_ln(self, b, x, rope):  # §2: each branch output normalised before the add
        h = x + b.norm(b.attention(b.norm(x, "attn_norm"), rope)[0], "attn_post_norm")
        return h + b.norm(b.ffn(b.norm(h, "ffn_norm")), "ffn_post_norm")

    def _lns(self, b, x, rope):  # §3: the block norms' outputs times 1/sqrt(b + 1)
        return self._pre_ln(b, x, rope, scale=1.0 / math.sqrt(b.i + 1))

    def _deepnorm(self, b, x, rope):  # §4: h = N_a(α·x + Attn(x)); x' = N_f(α·h + FFN(h))
        s = self.settings
        if s.deepnorm_norm == "layernorm":
            N = lambda t, name: layer_norm_without_bias(t, getattr(b, name), s.norm_eps)
        else:
            N = b.norm
        alpha = s.deepnorm_alpha
        h = N(alpha * x + b.attention(x, rope)[0], "attn_norm")
        return N(alpha * h + b.ffn(h), "ffn_norm")

    def _keel(self, b, x, rope):  # §5: Post-LN with highway α, norms on both sides
        attn = b.attention(b.norm(x, "attn_norm"), rope)[0]
        if b.i == 0:  # block 0: plain Pre-LN attention, then the FFN with α = 1
            h, alpha = x + attn, 1.0
        else:
            alpha = self.settings.keel_alpha
            h = b.norm(alpha * x + attn, "attn_out_norm")
        return b.norm(alpha * h + b.ffn(b.norm(h, "ffn_norm")), "ffn_out_norm")

    # §6 MoDA: attention over the sequence and over the earlier blocks' same-token entries ----
    def _moda(self, x, rope):
        s = self.settings
        B, T, _ = x.shape
        keys, values = [], []  # depth entries, each [B, T, H_kv, hd]
        for b in self.blocks:
            depth = (torch.stack(keys, 2), torch.stack(values, 2)) if keys else None
            if s.moda_post_norm:  # h = N(x + MoDAAttn(x)); x' = N(h + FFN(h))
                attn, k, k_rot, v = b.attention(x, rope, depth)
                h = b.norm(x + attn, "attn_norm")
                u = h
                x = b.norm(h + b.ffn(u), "ffn_norm")
            else:  # Pre-LN
                attn, k, k_rot, v = b.attention(b.norm(x, "attn_norm"), rope, depth)
                h = x + attn
                u = b.norm(h, "ffn_norm")
                x = h + b.ffn(u)
            # slot 2m: the block's own key (before RoPE unless moda_rope_depth_keys) and value
            keys.append(k_rot if s.moda_rope_depth_keys else k)
            values.append(v)
            # slot 2m+1: projections of the normalised FFN input u
            if hasattr(b, "moda_wk_ffn"):
                shape = (B, T, s.n_kv_head, s.head_dim)
                k_ffn = (u @ b.moda_wk_ffn.T).view(shape)
                keys.append(rope(k_ffn) if s.moda_rope_depth_keys else k_ffn)
                values.append((u @ b.moda_wv_ffn.T).view(shape))
        return rms_norm(x, self.final_norm, s.norm_eps)

    # §7 HC and §8 mHC: n streams, H_0 = n copies of the embedding ---------------------------
    def _hc(self, x, rope):
        s = self.settings
        H = x[..., None, :].expand(*x.shape[:-1], s.streams, x.shape[-1])
        for b in self.blocks:
            H = b.attn_hc(H, b.sublayer(0, rope), s.norm_eps)
            H = b.ffn_hc(H, b.sublayer(1, rope), s.norm_eps)
        if s.hc_readout == "norm_then_sum":  # authors' code: final norm per stream, then sum
            return rms_norm(H, self.final_norm, s.norm_eps).sum(dim=-2)
        return rms_norm(H.sum(dim=-2), self.final_norm, s.norm_eps)

    def _mhc(self, x, rope):
        s = self.settings
        X = x[..., None, :].expand(*x.shape[:-1], s.streams, x.shape[-1])
        for b in self.blocks:
            X = b.attn_mhc(X, b.sublayer(0, rope), s.norm_eps)
            X = b.ffn_mhc(X, b.sublayer(1, rope), s.norm_eps)
        return rms_norm(X.mean(dim=-2), self.final_norm, s.norm_eps)  # mean of the streams

    # §9 Full and §10 Block AttnRes: depth softmax over the embedding and (group) outputs -----
    def _attnres(self, x, rope):
        s = self.settings
        completed, partial, in_partial = [], None, 0
        for k in range(2 * s.n_layer):
            b = self.blocks[k // 2]
            if k == 0:
                h = x  # block 0's attention reads the embedding alone
            else:
                sources = [x] + completed + ([partial] if partial is not None else [])
                h = (b.attn_res if k % 2 == 0 else b.ffn_res)(sources, s.norm_eps)
            y = b.sublayer(k, rope)(h)  # the raw output, a new source
            partial = y if partial is None else partial + y
            in_partial += 1
            if in_partial == s.group_size:  # a block boundary: the partial sum is complete
                completed.append(partial)
                partial, in_partial = None, 0
        sources = [x] + completed + ([partial] if partial is not None else [])
        return rms_norm(self.readout_res(sources, s.norm_eps), self.final_norm, s.norm_eps)


# ------------------------------------------------------------------------------------------------
# Reading an export folder without transformers or safetensors
# ------------------------------------------------------------------------------------------------
_DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16,
           "BF16": torch.bfloat16}


def read_safetensors(path):
    """{name: tensor} of a safetensors file (8-byte header length, JSON header, raw arrays)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        flat = torch.frombuffer(bytearray(data[begin:end]), dtype=_DTYPES[entry["dtype"]])
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


# A pre_ln export is a LLaMA (or, with QK-norm, Qwen3) folder: its names below model.layers.{i}.
_LLAMA_BLOCK_TENSORS = {
    "input_layernorm.weight": "attn_norm", "post_attention_layernorm.weight": "ffn_norm",
    "self_attn.q_proj.weight": "wq", "self_attn.k_proj.weight": "wk",
    "self_attn.v_proj.weight": "wv", "self_attn.o_proj.weight": "wo",
    "self_attn.q_norm.weight": "q_norm", "self_attn.k_norm.weight": "k_norm",
    "mlp.gate_proj.weight": "w1", "mlp.up_proj.weight": "w3", "mlp.down_proj.weight": "w2",
}


def _from_llama(config, tensors):
    """The pre_ln config and our tensor names of a LLaMA/Qwen3 export (doc/export.md's table)."""
    ours = {"arch": "pre_ln", "d_model": config["hidden_size"],
            "n_layer": config["num_hidden_layers"], "n_head": config["num_attention_heads"],
            "n_kv_head": config.get("num_key_value_heads"), "head_dim": config.get("head_dim"),
            "ff": config["intermediate_size"], "vocab_size": config["vocab_size"],
            "qk_norm": config["model_type"] == "qwen3",
            "tie_embeddings": config.get("tie_word_embeddings", False),
            "rope_theta": config.get("rope_theta", 10000.0),
            "norm_eps": config.get("rms_norm_eps", 1e-6)}
    renamed = {}
    for name, t in tensors.items():
        if name == "model.embed_tokens.weight":
            renamed["embed"] = t
        elif name == "model.norm.weight":
            renamed["final_norm"] = t
        elif name == "lm_head.weight":
            if not ours["tie_embeddings"]:
                renamed["lm_head"] = t
        else:
            i, rest = name[len("model.layers."):].split(".", 1)
            renamed["blocks.%s.%s" % (i, _LLAMA_BLOCK_TENSORS[rest])] = t
    return ours, renamed


def load_export(folder, dtype=torch.float32):
    """The model of a `depthbench export` folder, its weights converted to `dtype`: `--format
    hf` of any design (our names below `model.`; pre_ln as LLaMA/Qwen3) or `--format
    safetensors` (our names)."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    tensors = read_safetensors(os.path.join(folder, "model.safetensors"))
    if config.get("model_type") in ("llama", "qwen3"):
        config, tensors = _from_llama(config, tensors)
    elif all(name.startswith("model.") for name in tensors):
        tensors = {name[len("model."):]: t for name, t in tensors.items()}
    model = DepthBenchModel(config)
    model.load_state_dict(tensors)  # strict: every parameter present, nothing left over
    return model.to(dtype).eval()
