"""An independent Hugging Face-style LLaMA / Qwen3 model and checkpoint writer for the tests.

Written from the Hugging Face layout (LlamaForCausalLM, Qwen3ForCausalLM) without reading the
C++: RMSNorm x*rsqrt(mean(x^2)+eps)*w in float32, rotate_half RoPE with
inv_freq = 1/theta^(arange(0, hd, 2)/hd), GQA by repeating k/v heads, Qwen3's per-head q/k RMSNorm
before RoPE, SiLU-gated MLP, optional tied embeddings. Safetensors files are written by hand
(struct + json), so the tests need neither `safetensors` nor `transformers`.

As a script, `make OUT` writes the checkpoint folders that tests/io/hf_checkpoint_test.cpp
reads, with reference tokens and logits in OUT/reference.h5.
"""
import json
import os
import struct
import sys

import numpy as np
import torch


def rms_norm(x, w, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class HfLlama:
    """config: a Hugging Face config.json dict; tensors: name -> float32 tensor (HF names)."""

    def __init__(self, config, tensors):
        self.c = config
        self.t = tensors
        self.hd = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
        self.qk_norm = config["model_type"] == "qwen3"

    def w(self, name):
        return self.t[name]

    def __call__(self, tokens):  # tokens [B, T] int64 -> logits [B, T, V]
        c, hd = self.c, self.hd
        H, Hkv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
        eps, theta = c.get("rms_norm_eps", 1e-6), c.get("rope_theta", 10000.0)
        B, T = tokens.shape
        x = self.w("model.embed_tokens.weight")[tokens]
        inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        freqs = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        for i in range(c["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = rms_norm(x, self.w(p + "input_layernorm.weight"), eps)
            q = (h @ self.w(p + "self_attn.q_proj.weight").T).view(B, T, H, hd)
            k = (h @ self.w(p + "self_attn.k_proj.weight").T).view(B, T, Hkv, hd)
            v = (h @ self.w(p + "self_attn.v_proj.weight").T).view(B, T, Hkv, hd)
            if self.qk_norm:
                q = rms_norm(q, self.w(p + "self_attn.q_norm.weight"), eps)
                k = rms_norm(k, self.w(p + "self_attn.k_norm.weight"), eps)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            k = k.repeat_interleave(H // Hkv, dim=1)
            v = v.repeat_interleave(H // Hkv, dim=1)
            scores = q @ k.transpose(-1, -2) / hd**0.5 + mask
            o = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, H * hd)
            x = x + o @ self.w(p + "self_attn.o_proj.weight").T
            h = rms_norm(x, self.w(p + "post_attention_layernorm.weight"), eps)
            gate = h @ self.w(p + "mlp.gate_proj.weight").T
            up = h @ self.w(p + "mlp.up_proj.weight").T
            x = x + (torch.nn.functional.silu(gate) * up) @ self.w(p + "mlp.down_proj.weight").T
        x = rms_norm(x, self.w("model.norm.weight"), eps)
        head = "model.embed_tokens.weight" if c.get("tie_word_embeddings") else "lm_head.weight"
        return x @ self.w(head).T


# --- safetensors by hand ----------------------------------------------------------------------
DTYPES = {"F32": (np.float32, 4), "F16": (np.float16, 2), "BF16": (None, 2), "F64": (np.float64, 8)}


def write_safetensors(path, tensors, dtype="F32", metadata=None):
    """tensors: name -> float32 torch tensor, stored as dtype (F32, F16, BF16)."""
    header, blobs, offset = {"__metadata__": metadata or {"format": "pt"}}, [], 0
    for name, t in tensors.items():
        if dtype == "BF16":
            blob = t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            blob = t.numpy().astype(np.dtype(DTYPES[dtype][0]).newbyteorder("<")).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """name -> float32 numpy array, and the metadata; F32, F16, BF16, F64."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        raw = data[8 + n + e["data_offsets"][0]:8 + n + e["data_offsets"][1]]
        if e["dtype"] == "BF16":
            array = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            array = np.frombuffer(raw, np.dtype(DTYPES[e["dtype"]][0]).newbyteorder("<")).astype(np.float32)
        out[name] = array.reshape(e["shape"])
    return out, metadata


# --- the test checkpoints -----------------------------------------------------------------
def random_tensors(c, seed):
    g = torch.Generator().manual_seed(seed)
    d, V, L, ff = c["hidden_size"], c["vocab_size"], c["num_hidden_layers"], c["intermediate_size"]
    H, Hkv = c["num_attention_heads"], c.get("num_key_value_heads", c["num_attention_heads"])
    hd = c.get("head_dim") or d // H
    rand = lambda *shape, std=0.3: torch.randn(*shape, generator=g) * std
    gain = lambda n: 1.0 + rand(n, std=0.2)
    t = {"model.embed_tokens.weight": rand(V, d, std=1.0)}
    for i in range(L):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = gain(d)
        t[p + "self_attn.q_proj.weight"] = rand(H * hd, d)
        t[p + "self_attn.k_proj.weight"] = rand(Hkv * hd, d)
        t[p + "self_attn.v_proj.weight"] = rand(Hkv * hd, d)
        t[p + "self_attn.o_proj.weight"] = rand(d, H * hd)
        if c["model_type"] == "qwen3":
            t[p + "self_attn.q_norm.weight"] = gain(hd)
            t[p + "self_attn.k_norm.weight"] = gain(hd)
        t[p + "post_attention_layernorm.weight"] = gain(d)
        t[p + "mlp.gate_proj.weight"] = rand(ff, d)
        t[p + "mlp.up_proj.weight"] = rand(ff, d)
        t[p + "mlp.down_proj.weight"] = rand(d, ff)
    t["model.norm.weight"] = gain(d)
    if not c.get("tie_word_embeddings"):
        t["lm_head.weight"] = rand(V, d)
    return t


def llama_config(**overrides):
    c = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 37,
         "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 3,
         "num_attention_heads": 4, "num_key_value_heads": 4, "hidden_act": "silu",
         "max_position_embeddings": 16, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
         "rope_scaling": None, "attention_bias": False, "mlp_bias": False,
         "tie_word_embeddings": False, "torch_dtype": "float32", "bos_token_id": 1,
         "eos_token_id": 2, "initializer_range": 0.02, "use_cache": True, "pretraining_tp": 1,
         "transformers_version": "4.46.0"}
    c.update(overrides)
    return c


def qwen3_config(**overrides):
    c = llama_config(architectures=["Qwen3ForCausalLM"], model_type="qwen3", head_dim=16,
                     num_key_value_heads=2, tie_word_embeddings=True, rope_theta=1000000.0,
                     use_sliding_window=False, sliding_window=None, max_window_layers=3)
    del c["mlp_bias"], c["pretraining_tp"]
    c.update(overrides)
    return c


CASES = {  # name -> (config, stored dtype); GQA, tied embeddings and QK-norm each covered
    "gqa": (llama_config(num_key_value_heads=2, rope_theta=500000.0), "F32"),
    "tied": (llama_config(tie_word_embeddings=True), "F32"),
    "qwen3": (qwen3_config(), "F32"),
    "bf16": (llama_config(num_key_value_heads=1, torch_dtype="bfloat16"), "BF16"),
    "fp16": (qwen3_config(torch_dtype="float16"), "F16"),
}

REFUSED = {  # name -> (config change, the field the refusal must name)
    "attention_bias": ({"attention_bias": True}, "attention_bias"),
    "rope_scaling": ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "rope_scaling"),
    "moe": ({"num_local_experts": 8}, "num_local_experts"),
    "sliding_window": ({"model_type": "mistral", "sliding_window": 4096}, "sliding_window"),
    "hidden_act": ({"hidden_act": "gelu"}, "hidden_act"),
    "unknown": ({"partial_rotary_factor": 0.5}, "partial_rotary_factor"),
}


def save_folder(folder, config, tensors, dtype="F32", shards=1):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if shards == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), tensors, dtype)
        return
    names, weight_map = list(tensors), {}
    for s in range(shards):
        part = names[s::shards]
        file = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors(os.path.join(folder, file), {n: tensors[n] for n in part}, dtype)
        weight_map.update({n: file for n in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)


def rounded(tensors, dtype):
    """The float32 values a reader of the stored dtype gets back."""
    torch_dtype = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}[dtype]
    return {n: t.to(torch_dtype).float() for n, t in tensors.items()}


def transformers_logits(folder, tokens):
    """Logits of transformers' own model, or None when transformers is not installed."""
    try:
        from transformers import AutoModelForCausalLM
    except ImportError:
        return None
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32)
    with torch.no_grad():
        return model(tokens).logits


def relative_difference(a, b):
    return float((a - b).abs().max() / b.abs().max())


def make(out):
    import h5py
    torch.manual_seed(0)
    with h5py.File(os.path.join(out, "reference.h5"), "w") as ref:
        for seed, (name, (config, dtype)) in enumerate(CASES.items()):
            tensors = random_tensors(config, seed + 1)
            save_folder(os.path.join(out, name), config, tensors, dtype)
            tokens = torch.randint(0, config["vocab_size"], (2, 12), generator=torch.Generator().manual_seed(seed))
            with torch.no_grad():
                logits = HfLlama(config, rounded(tensors, dtype))(tokens)
            ref[f"{name}/tokens"] = tokens.numpy().astype(np.int64)
            ref[f"{name}/logits"] = logits.reshape(-1, config["vocab_size"]).numpy().astype(np.float64)
            hf = transformers_logits(os.path.join(out, name), tokens)
            if hf is None:
                print(f"{name}: transformers not installed, its check is skipped")
            else:
                diff = relative_difference(logits, hf)
                assert diff <= 1e-5, (name, diff)
                print(f"{name}: transformers agrees with the reference, max relative difference {diff:.2e}")
        config, _ = CASES["gqa"]
        save_folder(os.path.join(out, "sharded"), config, random_tensors(config, 1), shards=3)
        for name, (change, _) in REFUSED.items():
            config = dict(CASES["tied"][0], **change)
            save_folder(os.path.join(out, "refused_" + name), config, random_tensors(config, 9))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "make":
        sys.exit("usage: hf_llama_reference.py make OUT_DIR")
    make(sys.argv[2])
