"""Self-tests of the PyTorch reference (run: /usr/bin/python3 -m pytest tests/reference -q).

Covers: finite-difference gradients of every parameter (float64), the spec's init equivalences,
parameter counts against a closed formula and suites.md, MoDA's joint softmax against a per-token
loop, and the HDF5 CLI round trip including AdamW.
"""
import json
import math
import os
import subprocess
import sys

import pytest
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import depthbench_reference as ref  # noqa: E402

torch.set_num_threads(1)
DT = torch.float64
TINY = dict(n_layer=2, d_model=16, n_head=2, ff=32, vocab_size=11)
B, T = 2, 5


def tiny(arch, **kw):
    c = dict(TINY, arch=arch)
    if arch == "attnres_block":
        c.update(n_layer=4, attnres_block_size=3)   # uneven blocks: exercises a final partial
    c.update(kw)
    return c


def tokens(seed=0, vocab=11):
    return torch.randint(0, vocab, (B, T), generator=torch.Generator().manual_seed(seed))


def perturbed(cfg, seed=1, sigma=0.1):
    """Weights moved off their init so zero queries, zero W_alpha, etc. are exercised."""
    rc = ref.resolve_config(cfg)
    p = ref.init_parameters(rc, seed)
    g = torch.Generator().manual_seed(seed + 100)
    return {n: t + sigma * torch.randn(t.shape, generator=g, dtype=DT) for n, t in p.items()}


def loss_with(model, name, value, tok):
    old = model.p[name]
    model.p[name] = value
    try:
        return ref.lm_loss(model(tok), tok)
    finally:
        model.p[name] = old


# ------------------------------------------------------------------------------------------------
# Gradients
# ------------------------------------------------------------------------------------------------
SMALL_PARAMS = {   # a few parameters per design for torch.autograd.gradcheck (every element)
    "pre_ln": ["blocks.1.attn_norm"], "sandwich_ln": ["blocks.0.attn_post_norm"],
    "lns": ["blocks.1.ffn_norm"], "deepnorm": ["blocks.0.attn_norm"],
    "keel": ["blocks.1.attn_out_norm", "blocks.0.ffn_out_norm"],
    "moda": ["blocks.1.attn_norm"],
    "hc": ["blocks.0.attn_hc.static_alpha", "blocks.1.ffn_hc.s_beta"],
    "mhc": ["blocks.0.attn_mhc.gates", "blocks.1.ffn_mhc.bias"],
    "attnres_full": ["blocks.1.attn_res.query", "readout_res.key_norm"],
    "attnres_block": ["blocks.2.ffn_res.query", "readout_res.query"],
}

VARIANTS = [(a, {}) for a in ref.DESIGNS] + [
    ("pre_ln", dict(n_head=4, n_kv_head=2, head_dim=4, qk_norm=True)),
    ("moda", dict(n_head=4, n_kv_head=2, head_dim=4, qk_norm=True, n_layer=3)),
    ("moda", dict(moda_rope_depth_keys=True, n_layer=3)),
    ("moda", dict(moda_post_norm=True, n_layer=3)),
    ("deepnorm", dict(deepnorm_norm="rmsnorm")),
    ("hc", dict(hc_readout="sum_then_norm")),
]


@pytest.mark.parametrize("arch,kw", VARIANTS, ids=lambda v: v if isinstance(v, str) else
                         ",".join("%s=%s" % i for i in sorted(v.items())))
def test_gradients(arch, kw):
    cfg = tiny(arch, **kw)
    model = ref.DepthBenchReference(cfg, perturbed(cfg))
    tok = tokens()
    loss = ref.lm_loss(model(tok), tok)
    loss.backward()
    # (1) torch.autograd.gradcheck on every element of a few small parameters
    for name in SMALL_PARAMS[arch]:
        x = model.p[name].detach().clone().requires_grad_(True)
        assert torch.autograd.gradcheck(lambda t: loss_with(model, name, t, tok), (x,),
                                        eps=1e-6, atol=1e-7, rtol=1e-5)
    # (2) directional derivative of every parameter (embedding = the input path): central
    # differences at h and h/2 combined by Richardson extrapolation (error O(h^4))
    g = torch.Generator().manual_seed(7)
    h = 1e-4

    def central(name, p, u, e):
        return (loss_with(model, name, p + e * u, tok) - loss_with(model, name, p - e * u, tok)) \
            / (2 * e)
    with torch.no_grad():
        for name, p in model.named():
            u = torch.randn(p.shape, generator=g, dtype=DT)
            fd = (4 * central(name, p, u, h / 2) - central(name, p, u, h)) / 3
            an = (p.grad * u).sum()
            assert abs(float(fd - an)) <= 1e-9 + 1e-7 * abs(float(an)), (name, float(fd), float(an))
            assert torch.isfinite(p.grad).all(), name


def test_moda_depth_path_carries_gradient():
    cfg = tiny("moda", n_layer=3)
    model = ref.DepthBenchReference(cfg, perturbed(cfg))
    tok = tokens()
    ref.lm_loss(model(tok), tok).backward()
    for i in (0, 1):   # read by later blocks only through the depth path
        assert model.p["blocks.%d.moda_wk_ffn" % i].grad.abs().max() > 0
        assert model.p["blocks.%d.moda_wv_ffn" % i].grad.abs().max() > 0
    assert "blocks.2.moda_wk_ffn" not in model.p   # the last block's projection does not exist


# ------------------------------------------------------------------------------------------------
# Primitives
# ------------------------------------------------------------------------------------------------
def test_rope_is_relative():
    g = torch.Generator().manual_seed(3)
    q = torch.randn(1, 1, 1, 8, generator=g, dtype=DT).expand(1, 9, 1, 8)
    k = torch.randn(1, 1, 1, 8, generator=g, dtype=DT).expand(1, 9, 1, 8)
    qr, kr = ref.rope(q, 10000.0), ref.rope(k, 10000.0)
    dots = (qr[0, :, 0, None, :] * kr[0, None, :, 0, :]).sum(-1)   # [t, s]
    for off in range(-3, 4):
        d = torch.diagonal(dots, offset=off)
        assert torch.allclose(d, d[0].expand_as(d), atol=1e-12)
    # explicit rotate-half formula at position 3, pair (1, 1 + hd/2)
    ang = 3 * 10000.0 ** (-2.0 * 1 / 8)
    x = q[0, 3, 0]
    assert math.isclose(float(qr[0, 3, 0, 1]), float(x[1] * math.cos(ang) - x[5] * math.sin(ang)),
                        abs_tol=1e-14)
    assert math.isclose(float(qr[0, 3, 0, 5]), float(x[5] * math.cos(ang) + x[1] * math.sin(ang)),
                        abs_tol=1e-14)


def test_moda_joint_softmax_matches_per_token_loop():
    """Block l's attention recomputed per (b, t, head) with explicit key lists and one softmax."""
    cfg = tiny("moda", n_layer=3, n_head=4, n_kv_head=2, head_dim=4)
    model = ref.DepthBenchReference(cfg, perturbed(cfg))
    c, P = model.cfg, model.p
    trace = {}
    tok = tokens()
    model(tok, trace)
    H, Hkv, hd = c["n_head"], c["n_kv_head"], c["head_dim"]

    def rot(vec, pos):
        half = hd // 2
        out = vec.clone()
        for i in range(half):
            a = pos * c["rope_theta"] ** (-2.0 * i / hd)
            out[i] = vec[i] * math.cos(a) - vec[i + half] * math.sin(a)
            out[i + half] = vec[i + half] * math.cos(a) + vec[i] * math.sin(a)
        return out

    # depth entries rebuilt from each block's recorded attention/FFN inputs
    u_attn = [tr[0] for tr in trace["moda_attention"]]
    streams = trace["stream"]
    for l in (1, 2):
        pre = "blocks.%d." % l
        a_in, _, a_out = trace["moda_attention"][l]
        for b in range(B):
            for t in range(T):
                heads = []
                for h in range(H):
                    kvh = h // (H // Hkv)
                    sl = slice(kvh * hd, (kvh + 1) * hd)
                    q = rot((P[pre + "wq"] @ a_in[b, t])[h * hd:(h + 1) * hd], t)
                    keys, vals = [], []
                    for s in range(t + 1):
                        keys.append(rot((P[pre + "wk"] @ a_in[b, s])[sl], s))
                        vals.append((P[pre + "wv"] @ a_in[b, s])[sl])
                    for m in range(l):
                        pm = "blocks.%d." % m
                        keys.append((P[pm + "wk"] @ u_attn[m][b, t])[sl])   # pre-RoPE
                        vals.append((P[pm + "wv"] @ u_attn[m][b, t])[sl])
                        # block m's FFN input: ffn_norm(h_m), h_m = x_m + attn_m
                        xm = P["embed"][tok] if m == 0 else streams[m - 1]
                        hm = xm[b, t] + trace["moda_attention"][m][2][b, t]
                        um = ref.rms_norm(hm, P[pm + "ffn_norm"], c["norm_eps"])
                        keys.append((P[pm + "moda_wk_ffn"] @ um)[sl])
                        vals.append((P[pm + "moda_wv_ffn"] @ um)[sl])
                    logits = torch.stack([q @ kk for kk in keys]) / math.sqrt(hd)
                    w = torch.softmax(logits, 0)
                    heads.append(sum(wi * vi for wi, vi in zip(w, vals)))
                expect = P[pre + "wo"] @ torch.cat(heads)
                assert torch.allclose(a_out[b, t], expect, atol=1e-13, rtol=1e-11)


# ------------------------------------------------------------------------------------------------
# Init equivalences (spec "Tests every design must pass")
# ------------------------------------------------------------------------------------------------
def shared_backbone(src_arch, dst_arch, seed=5, **kw):
    """A model of dst_arch whose backbone weights are copied from an src_arch init."""
    src = ref.DepthBenchReference(tiny(src_arch, **kw), seed=seed)
    dst_cfg = ref.resolve_config(tiny(dst_arch, **kw))
    params = ref.init_parameters(dst_cfg, seed + 1)
    for n in params:
        if n in src.p and src.p[n].shape == params[n].shape:
            params[n] = src.p[n].detach().clone()
    return src, ref.DepthBenchReference(tiny(dst_arch, **kw), params)


def test_hc_streams_equal_pre_ln_exactly_at_init():
    hc, pre = shared_backbone("hc", "pre_ln")
    tok = tokens()
    th, tp = {}, {}
    lh, lp = hc(tok, th), pre(tok, tp)
    for Hs, x in zip(th["stream"], tp["stream"]):
        for s in range(hc.cfg["hc_streams"]):
            assert torch.equal(Hs[..., s, :], x)          # bitwise: one-hot/identity routing
    # default readout norm_then_sum: sum of n identical normalised streams = n * Pre-LN logits
    assert torch.allclose(lh, 4 * lp, rtol=1e-13, atol=1e-14)


def test_hc_sum_then_norm_logits():
    """RMSNorm(n x) = g x / sqrt(mean(x^2) + eps/n^2): equal to Pre-LN logits computed with the final
    norm's eps divided by n^2 (to rounding), and to Pre-LN's only up to an eps-sized difference."""
    hc, pre = shared_backbone("hc", "pre_ln", hc_readout="sum_then_norm")
    tok = tokens()
    tp = {}
    lh, lp = hc(tok), pre(tok, tp)
    x = tp["stream"][-1]
    lp_eps = ref.rms_norm(x, pre.p["final_norm"], pre.cfg["norm_eps"] / 16) @ pre.p["lm_head"].T
    assert torch.allclose(lh, lp_eps, rtol=1e-12, atol=1e-15)
    assert torch.allclose(lh, lp, rtol=1e-2, atol=0)   # eps/mean(x^2) is ~1e-3 at init scale
    # with eps = 0 the equivalence is exact up to rounding
    hc0, pre0 = shared_backbone("hc", "pre_ln", hc_readout="sum_then_norm", norm_eps=0.0)
    assert torch.allclose(hc0(tok), pre0(tok), rtol=1e-12, atol=1e-15)


def test_mhc_streams_at_init():
    tok = tokens()
    # spec init (phi ~ N(0, 0.02^2), biases 0, gates 0.01): H_pre ~ 0.5, H_post ~ 1, H_res ~ J/n
    mhc, pre = shared_backbone("mhc", "pre_ln")
    tm, tp = {}, {}
    mhc(tok, tm), pre(tok, tp)
    for h_pre, h_post, h_res in tm["mhc"]:
        assert torch.allclose(h_pre, torch.full_like(h_pre, 0.5), atol=5e-3)
        assert torch.allclose(h_post, torch.ones_like(h_post), atol=1e-2)
        assert torch.allclose(h_res, torch.full_like(h_res, 0.25), atol=5e-3)
        assert torch.allclose(h_res.sum(-1), torch.ones_like(h_res.sum(-1)), atol=1e-4)
        assert torch.allclose(h_res.sum(-2), torch.ones_like(h_res.sum(-2)), atol=1e-5)
    for X, x in zip(tm["stream"], tp["stream"]):
        scale = x.abs().max()
        for s in range(4):   # streams stay (approximately) equal, and equal to Pre-LN's
            assert (X[..., s, :] - X[..., 0, :]).abs().max() <= 1e-2 * scale
            assert (X[..., s, :] - x).abs().max() <= 2e-2 * scale
    # dynamic part zeroed (phi = 0): streams identical bitwise; with both eps = 0 equal to Pre-LN
    for eps_kw, tol in ((dict(), 1e-2), (dict(norm_eps=0.0, mhc_sinkhorn_eps=0.0), 1e-12)):
        mhc, pre = shared_backbone("mhc", "pre_ln", **eps_kw)
        with torch.no_grad():
            for n, p in mhc.named():
                if n.endswith(".phi"):
                    p.zero_()
        tm, tp = {}, {}
        lm, lp = mhc(tok, tm), pre(tok, tp)
        for X, x in zip(tm["stream"], tp["stream"]):
            for s in range(4):
                assert torch.equal(X[..., s, :], X[..., 0, :])
            assert torch.allclose(X[..., 0, :], x, rtol=tol, atol=tol * float(x.abs().max()))
        assert torch.allclose(lm, lp, rtol=tol, atol=tol * float(lp.abs().max()))


def test_attnres_block_s1_equals_full():
    cfg = tiny("attnres_full", n_layer=3)
    p = perturbed(cfg)
    full = ref.DepthBenchReference(cfg, p)
    blk = ref.DepthBenchReference(dict(cfg, arch="attnres_block", attnres_block_size=1), p)
    tok = tokens()
    assert torch.equal(full(tok), blk(tok))
    # default S = 2L / 8: L = 4 gives S = 1 as well
    cfg4 = tiny("attnres_full", n_layer=4)
    p4 = perturbed(cfg4)
    assert torch.equal(ref.DepthBenchReference(cfg4, p4)(tok),
                       ref.DepthBenchReference(dict(cfg4, arch="attnres_block"), p4)(tok))


def test_attnres_block_sources():
    """S = 2: sublayer k sees [emb, completed block sums, partial]; compare h_k directly."""
    cfg = tiny("attnres_block", n_layer=8, attnres_block_size=None)   # default S = 16 / 8 = 2
    model = ref.DepthBenchReference(cfg, perturbed(cfg))
    assert model.cfg["attnres_block_size"] == 2
    tr = {}
    model(tokens(), tr)
    assert [w.shape[-1] for w in tr["attnres_weights"]] == \
        [1 + k // 2 + k % 2 for k in range(1, 16)] + [9]
    hs, P = tr["attnres_inputs"], model.p
    emb = hs[0]
    ys = [model.sublayer(k, hs[k]) for k in range(16)]
    for k in range(1, 17):
        srcs = [emb] + [ys[j] + ys[j + 1] for j in range(0, k - 1, 2)] + ([ys[k - 1]] if k % 2
                                                                           else [])
        pre = "readout_res." if k == 16 else "blocks.%d.%s_res." % (k // 2, ("attn", "ffn")[k % 2])
        V = torch.stack(srcs, -2)
        K = ref.rms_norm(V, P[pre + "key_norm"], 1e-6)
        w = torch.softmax(K @ P[pre + "query"], -1)
        h = (w[..., None] * V).sum(-2)
        if k < 16:
            assert torch.allclose(hs[k], h, rtol=1e-13, atol=1e-15), k
        else:
            assert torch.allclose(tr["attnres_weights"][-1], w, rtol=1e-13, atol=1e-15)
    with pytest.raises(ValueError):
        ref.resolve_config(tiny("attnres_block", n_layer=3, attnres_block_size=None))


def test_attnres_full_uniform_at_init():
    model = ref.DepthBenchReference(tiny("attnres_full", n_layer=3), seed=2)
    for n, p in model.named():
        if n.endswith(".query"):
            assert torch.equal(p, torch.zeros_like(p)), n   # every query, readout's too, is zero
    tr = {}
    model(tokens(), tr)
    ws = tr["attnres_weights"]
    assert len(ws) == 2 * 3                                 # 2L - 1 mixes + readout
    for w in ws:
        assert torch.allclose(w, torch.full_like(w, 1.0 / w.shape[-1]), rtol=0, atol=1e-15)
    # h_k = plain mean of [emb, y_0, ..., y_{k-1}]
    hs = tr["attnres_inputs"]
    emb = hs[0]
    ys = [model.sublayer(k, hs[k]) for k in range(6)]
    for k in range(1, 6):
        mean = torch.stack([emb] + ys[:k]).mean(0)
        assert torch.allclose(hs[k], mean, rtol=1e-13, atol=1e-15)


def test_deepnorm_alpha1_beta1_rmsnorm_is_post_ln():
    cfg = tiny("deepnorm", deepnorm_alpha=1.0, deepnorm_beta=1.0, deepnorm_norm="rmsnorm")
    model = ref.DepthBenchReference(cfg, seed=4)
    P, eps = model.p, 1e-6
    tok = tokens()

    def rms(x, g):
        return g * x / torch.sqrt((x ** 2).mean(-1, keepdim=True) + eps)

    x = P["embed"][tok]
    for i in range(2):   # plain Post-LN: x' = N(h + FFN(h)), h = N(x + Attn(x))
        pre = "blocks.%d." % i
        h = rms(x + model.attention(i, x)[0], P[pre + "attn_norm"])
        x = rms(h + model.ffn(i, h), P[pre + "ffn_norm"])
    logits = rms(x, P["final_norm"]) @ P["lm_head"].T
    assert torch.allclose(model(tok), logits, rtol=1e-13, atol=1e-15)


def test_deepnorm_defaults_and_init_scale():
    c = ref.resolve_config(dict(TINY, arch="deepnorm", n_layer=6))
    assert math.isclose(c["deepnorm_alpha"], 12 ** 0.25) and math.isclose(c["deepnorm_beta"],
                                                                         48 ** -0.25)
    big = dict(arch="deepnorm", n_layer=6, d_model=64, n_head=4, ff=176, vocab_size=11)
    p = ref.init_parameters(ref.resolve_config(big), seed=0)
    beta = 48 ** -0.25
    for nm in ("wv", "wo", "w1", "w2", "w3"):
        w = p["blocks.3." + nm]
        assert w.abs().max() <= 3 * 0.02 * beta and abs(float(w.std()) / (0.02 * beta) - 0.986) < 0.05
    assert abs(float(p["blocks.3.wq"].std()) / 0.02 - 0.986) < 0.05   # trunc at 3 sigma: 0.986 std


def test_lns_and_moda_single_block_equal_pre_ln():
    tok = tokens()
    for arch in ("lns", "moda"):     # s_0 = 1; MoDA block 0 is plain attention
        cfg = tiny(arch, n_layer=1)
        p = ref.init_parameters(ref.resolve_config(cfg), 3)
        assert torch.equal(ref.DepthBenchReference(cfg, p)(tok),
                           ref.DepthBenchReference(dict(cfg, arch="pre_ln"), p)(tok))


def test_hc_mhc_init_values():
    hc = ref.DepthBenchReference(tiny("hc"), seed=0)
    a = hc.p["blocks.1.attn_hc.static_alpha"]       # sublayer k = 2: a = e_2, A = I
    assert torch.equal(a[:, 0], torch.tensor([0.0, 0, 1, 0], dtype=DT))
    assert torch.equal(a[:, 1:], torch.eye(4, dtype=DT))
    std = float(hc.p["blocks.0.wo"].std())
    assert std < 0.02 / 2 * 1.3                      # W_o std 0.02 / sqrt(4)
    mhc = ref.DepthBenchReference(tiny("mhc"), seed=0)
    assert torch.equal(mhc.p["blocks.0.attn_mhc.gates"], torch.full((3,), 0.01, dtype=DT))
    assert torch.equal(mhc.p["blocks.0.attn_mhc.bias"], torch.zeros(24, dtype=DT))


# ------------------------------------------------------------------------------------------------
# Parameter counts
# ------------------------------------------------------------------------------------------------
def independent_count(c):
    """Counted the long way from the spec text, per sublayer (independent of parameter_specs)."""
    L, d, V, H, Hkv, hd, ff = (c[k] for k in ("n_layer", "d_model", "vocab_size", "n_head",
                                              "n_kv_head", "head_dim", "ff"))
    n = 4
    total = V * d + d + V * d
    for i in range(L):
        total += d * H * hd + 2 * d * Hkv * hd + H * hd * d + 3 * d * ff
        total += 2 * hd if c["qk_norm"] else 0
        total += {"sandwich_ln": 4, "keel": 3 if i == 0 else 4}.get(c["arch"], 2) * d
        for _ in range(2):   # per sublayer
            if c["arch"] == "hc":   # a (n) + A (n^2) + b (n) + W_alpha + W_beta + 2 scales + norm
                total += n + n * n + n + d * (n + 1) + d + 2 + d
            if c["arch"] == "mhc":  # phi + biases + 3 gates + norm over n d
                total += n * d * (n * n + 2 * n) + (n * n + 2 * n) + 3 + n * d
        if c["arch"] == "moda" and i < L - 1:
            total += 2 * d * Hkv * hd
        if c["arch"].startswith("attnres"):
            total += (2 if i > 0 else 1) * 2 * d
    if c["arch"].startswith("attnres"):
        total += 2 * d
    return total


@pytest.mark.parametrize("arch", ref.DESIGNS)
def test_parameter_counts(arch):
    for kw in ({}, dict(n_head=4, n_kv_head=2, head_dim=4, qk_norm=True, n_layer=4)):
        cfg = tiny(arch, **kw)
        model = ref.DepthBenchReference(cfg)
        actual = sum(p.numel() for p in model.parameters())
        assert actual == ref.parameter_count_formula(model.cfg) == independent_count(model.cfg)
    # a full-size shape, counted from the specs without allocating
    c = ref.resolve_config(dict(arch=arch, n_layer=24, d_model=1024, n_head=16, ff=2736,
                                vocab_size=50280))
    spec_count = sum(math.prod(s) for _, s, _ in ref.parameter_specs(c))
    assert spec_count == ref.parameter_count_formula(c) == independent_count(c)


@pytest.mark.parametrize("L,d,ff,kv,qk,backbone_m,total_m", [
    (16, 1216, 3248, 16, False, 284, 407), (20, 1120, 2992, 16, False, 301, 414),
    (24, 1024, 2736, 16, False, 302, 405), (28, 960, 2560, 16, False, 310, 406),
    (32, 896, 2400, 16, False, 309, 399), (42, 800, 2144, 16, False, 324, 404),
    (70, 640, 1712, 16, False, 345, 409), (84, 544, 1456, 16, False, 299, 354),
    (28, 2048, 6144, 8, True, 1409, 1615), (40, 1728, 5184, 8, True, 1433, 1607),
    (54, 1504, 4512, 8, True, 1466, 1617)])
def test_suites_table_counts(L, d, ff, kv, qk, backbone_m, total_m):
    c = ref.resolve_config(dict(arch="pre_ln", n_layer=L, d_model=d, n_head=16, n_kv_head=kv,
                                ff=ff, vocab_size=50280, qk_norm=qk))
    total = ref.parameter_count_formula(c)
    backbone = total - 2 * 50280 * d - d
    assert round(total / 1e6) == total_m and round(backbone / 1e6) == backbone_m
    assert ref.parameter_count_formula(dict(c, n_layer=24, d_model=1024, ff=2736, head_dim=64,
                                            n_kv_head=16, qk_norm=False)) == 405406720


# ------------------------------------------------------------------------------------------------
# CLI round trip and AdamW
# ------------------------------------------------------------------------------------------------
def test_cli_roundtrip_and_adamw(tmp_path):
    import h5py
    cfg = tiny("hc", n_layer=2)
    w, out = str(tmp_path / "w.h5"), str(tmp_path / "o.h5")
    script = os.path.join(HERE, "depthbench_reference.py")
    subprocess.run([sys.executable, script, "init", "--config", json.dumps(cfg), "--seed", "3",
                    "--out", w, "--batch", "2", "--seq", "5", "--perturb", "0.05"], check=True)
    with h5py.File(w, "r+") as f:
        f.attrs["lr"] = 1e-2
        f.attrs["grad_clip"] = 0.5       # small enough that clipping is active
    subprocess.run([sys.executable, script, "run", "--weights", w, "--out", out,
                    "--adamw-steps", "3"], check=True)
    c, params, tok, hyper = ref.load_weights(w)
    model = ref.DepthBenchReference(c, params)
    logits = model(tok)
    loss = ref.lm_loss(logits, tok)
    loss.backward()
    with h5py.File(out, "r") as f:
        assert math.isclose(float(f["loss"][()]), float(loss), rel_tol=1e-14)
        assert f["logits"].shape == (2, 5, 11)
        assert torch.allclose(torch.from_numpy(f["logits"][()]), logits.detach(), rtol=0, atol=0)
        for n, p in model.named():
            assert torch.equal(torch.from_numpy(f["grad/" + n][()]), p.grad), n
        losses = f["adamw_losses"][()]
        norms = f["adamw_grad_norms"][()]
        final = {n: torch.from_numpy(f["adamw_params/" + n][()]) for n, _ in model.named()}
    assert len(losses) == 3 and losses[0] == float(loss) and norms[0] > 0.5

    # the same steps with torch.optim.AdamW (two parameter groups) and explicit clipping
    model = ref.DepthBenchReference(c, params)
    decay = [p for n, p in model.named() if not model.no_decay(n)]
    nodecay = [p for n, p in model.named() if model.no_decay(n)]
    assert len(nodecay) == 2 * 2 * 2                 # static_alpha and static_beta per sublayer
    opt = torch.optim.AdamW([dict(params=decay), dict(params=nodecay, weight_decay=0.0)],
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                            foreach=False)
    for s in range(3):
        opt.zero_grad()
        lt = ref.lm_loss(model(tok), tok)
        lt.backward()
        assert math.isclose(float(lt), losses[s], rel_tol=1e-13)
        gn = torch.sqrt(sum((p.grad ** 2).sum() for p in model.parameters()))
        assert math.isclose(float(gn), norms[s], rel_tol=1e-13)
        if gn > 0.5:
            for p in model.parameters():
                p.grad.mul_(0.5 / gn)
        opt.step()
    # Adam divides by sqrt(v): where a gradient is near zero, a last-bit difference from the BLAS
    # kernel's summation order (OPENBLAS_CORETYPE) grows to ~1e-14 after three steps. A step moves
    # a parameter by ~lr = 1e-2, so atol 1e-12 is still 1e-10 of one step.
    for n, p in model.named():
        assert torch.allclose(p.detach(), final[n], rtol=1e-12, atol=1e-12), n


def test_mhc_no_decay_names():
    m = ref.DepthBenchReference(tiny("mhc"))
    nd = sorted(n for n, _ in m.named() if m.no_decay(n))
    assert nd == sorted("blocks.%d.%s_mhc.%s" % (i, s, x) for i in range(2)
                        for s in ("attn", "ffn") for x in ("bias", "gates"))
    assert not any(m.no_decay(n) for n, _ in ref.DepthBenchReference(tiny("pre_ln")).named())


def test_float32_runs():
    cfg = tiny("mhc")
    m64 = ref.DepthBenchReference(cfg, perturbed(cfg))
    m32 = ref.DepthBenchReference(cfg, perturbed(cfg), dtype=torch.float32)
    tok = tokens()
    assert abs(float(ref.lm_loss(m64(tok), tok)) - float(ref.lm_loss(m32(tok), tok))) < 1e-5


# ------------------------------------------------------------------------------------------------
# bf16 activation storage emulation (--activation-dtype bf16)
# ------------------------------------------------------------------------------------------------
def test_bf16_rounding_and_gradient_rounding():
    t = torch.tensor([1.0 + 2.0 ** -9, 1.0 + 3 * 2.0 ** -9, 3.0 + 2.0 ** -20], requires_grad=True)
    # to nearest, ties to even: 1 + 2^-9 -> 1, 1 + 3·2^-9 -> 1 + 2^-7, 3 + tiny -> 3
    assert ref.round_bf16(t).tolist() == [1.0, 1.0 + 2.0 ** -7, 3.0]
    g = torch.tensor([1.0 + 3 * 2.0 ** -9, 5.0, 2.0 ** -20 + 2.0 ** -30])
    ref.round_bf16(t).backward(g)                       # R: the gradient passes unrounded
    assert torch.equal(t.grad, g)
    t.grad = None
    s = ref.stored(t)                                   # G(R(t)): value and gradient rounded
    assert torch.equal(s, ref._to_bf16(t.detach()))
    s.backward(g)
    assert torch.equal(t.grad, ref._to_bf16(g)) and not torch.equal(t.grad, g)


def test_bf16_shared_input_products_gradient():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, 5, dtype=DT, generator=gen, requires_grad=True)
    ws = [torch.randn(n, 5, dtype=DT, generator=gen, requires_grad=True) for n in (4, 2, 3)]
    assert torch.autograd.gradcheck(lambda x, *w: ref._SharedInputProducts.apply(x, *w), (x, *ws))


def test_bf16_attention_backward_takes_the_row_term_from_the_stored_output():
    gen = torch.Generator().manual_seed(5)
    T = 6
    scores = torch.randn(2, 3, T, T, generator=gen).masked_fill(
        ~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).requires_grad_()
    v = torch.randn(2, T, 3, 4, generator=gen, requires_grad=True)
    d_out = torch.randn(2, T, 3, 4, generator=gen)
    prob = torch.softmax(scores, dim=-1)
    out = torch.einsum("bhts,bshe->bthe", prob, v)
    exact_ds, exact_dv = torch.autograd.grad(out, (scores, v), d_out)
    emulated = ref._StoredOutputAttention.apply(scores, v)
    assert torch.equal(emulated, out)
    ds, dv = torch.autograd.grad(emulated, (scores, v), d_out)
    # D = rowsum(dO * R(o)) instead of rowsum(dO * o): dS moves by -P * rowsum(dO * (R(o) - o))
    shift = (d_out * (ref._to_bf16(out) - out)).sum(-1).transpose(1, 2)[..., None]
    assert torch.allclose(ds, exact_ds - prob.detach() * shift, atol=1e-6)
    assert not torch.allclose(ds, exact_ds, atol=1e-6)
    assert torch.allclose(dv, exact_dv, atol=1e-6)


@pytest.mark.parametrize("arch,kw", [("pre_ln", {}), ("pre_ln", dict(n_head=4, n_kv_head=2,
                                                                       head_dim=4, qk_norm=True)),
                                     ("sandwich_ln", {}), ("hc", {}),
                                     ("moda", {})])
def test_bf16_storage_rounds_only_the_cores(arch, kw):
    cfg = tiny(arch, **kw)
    p, tok = perturbed(cfg), tokens()
    runs = {}
    for mode in ("fp32", "bf16"):
        m = ref.DepthBenchReference(cfg, p, dtype=torch.float32, activation_dtype=mode)
        stored = []
        m.keep = lambda t, keep=m.keep: stored.append(keep(t)) or stored[-1]
        loss = ref.lm_loss(m(tok), tok)
        loss.backward()
        runs[mode] = (float(loss), torch.cat([q.grad.reshape(-1) for _, q in m.named()]), stored)
    (l32, g32, _), (l16, g16, kept) = runs["fp32"], runs["bf16"]
    assert kept and all(torch.equal(t, ref._to_bf16(t)) for t in kept)   # stored values are bf16
    assert l16 != l32 and abs(l16 - l32) < 1e-2 * l32
    assert 0 < float((g16 - g32).norm() / g32.norm()) < 5e-2


def test_bf16_storage_refusals():
    with pytest.raises(ValueError, match="float32"):
        ref.DepthBenchReference(tiny("pre_ln"), activation_dtype="bf16")
    with pytest.raises(ValueError, match="fp32 or bf16"):
        ref.DepthBenchReference(tiny("pre_ln"), dtype=torch.float32, activation_dtype="fp16")


def test_cli_several_runs_with_their_own_activation_dtype(tmp_path):
    import h5py
    cfg = tiny("pre_ln")
    w = str(tmp_path / "w.h5")
    ref.save_weights(w, cfg, perturbed(cfg), tokens())
    outs = [str(tmp_path / ("o%d.h5" % i)) for i in range(3)]
    script = os.path.join(HERE, "depthbench_reference.py")
    subprocess.run([sys.executable, script, "run", "--weights", w, w, w, "--out", *outs,
                    "--activation-dtype", "fp32", "bf16", "fp32"], check=True)
    attrs = []
    for o in outs:
        with h5py.File(o, "r") as f:
            attrs.append((f.attrs["activation_dtype"], f.attrs["dtype"], float(f["loss"][()])))
    assert [a[:2] for a in attrs] == [("fp32", "float64"), ("bf16", "float32"), ("fp32", "float64")]
    assert attrs[0][2] == attrs[2][2] != attrs[1][2]
