"""A loader written from doc/hdf5-schema.md and doc/parameters.md alone, tried on every design.

Trains a tiny run of every registered design (a few steps, with the initial weights kept), then,
with h5py and nothing of DepthBench's C++:
  1. derives the documented tensor names and shapes from the weights file's attributes and
     checks that `params/` holds exactly those;
  2. checks the documented initial values in NAME.init.weights (gains 1, truncation at 3 std,
     HC routing, ...);
  3. runs the independent PyTorch reference (tests/reference) on the tensors read by name and
     demands the validation losses the run file recorded: at step 0 from NAME.init.weights and
     per window at the end from NAME.weights. A tensor in the wrong place cannot pass this.

usage: weights_loader.py DEPTHBENCH SOURCE_DIR WORK_DIR
"""
import glob
import math
import os
import shutil
import subprocess
import sys

import h5py
import numpy as np
import torch

BIN, SOURCE_DIR, WORK = sys.argv[1:4]
sys.path.insert(0, os.path.join(SOURCE_DIR, "tests", "reference"))
import depthbench_reference as reference  # noqa: E402  (independent of the C++)

SEQ_LEN, VAL_WINDOWS = 16, 3
TINY = ["--model.n_layer", "4", "--model.d_model", "16", "--model.n_head", "2",
        "--model.n_kv_head", "1", "--model.qk_norm", "true", "--model.vocab_size", "257",
        "--train.steps", "3", "--train.seq_len", str(SEQ_LEN), "--train.global_batch", "2",
        "--train.micro_batch", "2", "--train.learning_rate", "3e-3", "--train.val_interval", "100",
        "--train.val_windows", str(VAL_WINDOWS), "--train.threads", "1",
        "--train.save_initial_weights", "true", "--data.train_files", "data/train_*.npy",
        "--data.val_files", "data/val_*.npy", "--output.dir", "runs"]
EXTRA = {"attnres_block": ["--model.attnres_blocks", "4"]}  # 2L = 8 sublayers: blocks of 2


def text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


# --- the loader: attributes and tensors by name (doc/hdf5-schema.md) ---------------------------
def read_weights(path):
    with h5py.File(path, "r") as f:
        attrs = {k: (text(v) if isinstance(v, (str, bytes)) else v.item())
                 for k, v in f.attrs.items()}
        tensors = {name: np.asarray(data[()]) for name, data in f["params"].items()}
        groups = sorted(f.keys())
    return attrs, tensors, groups


def design_options(attrs):
    return dict(item.split("=", 1) for item in attrs["design_options"].split(";") if item)


# --- the layout of doc/parameters.md: name -> (shape, init) -------------------------------------
def documented_layout(a):
    arch, L, d, V = a["arch"], a["n_layer"], a["d_model"], a["vocab_size"]
    H, Hkv, hd, ff = a["n_head"], a["n_kv_head"], a["head_dim"], a["ff"]
    opts = design_options(a)
    std = 0.02
    std_of = {m: std for m in ("wq", "wk", "wv", "wo", "w1", "w3", "w2")}
    if arch == "deepnorm":  # ·β, β = (8L)^(-1/4) unless set
        beta = (8 * L) ** -0.25 if opts["deepnorm_beta"] == "auto" else float(opts["deepnorm_beta"])
        for m in ("wv", "wo", "w1", "w2", "w3"):
            std_of[m] = std * beta
    n = int(opts.get("hc_streams", opts.get("mhc_streams", 0)))
    if arch in ("hc", "mhc"):
        std_of["wo"] = std_of["w2"] = std / math.sqrt(n)
    one, zero = ("const", 1.0), ("const", 0.0)
    t = {"embed": ((V, d), ("normal", std)), "lm_head": ((V, d), ("normal", std)),
         "final_norm": ((d,), one)}
    for i in range(L):
        b = f"blocks.{i}."
        shapes = {"wq": (H * hd, d), "wk": (Hkv * hd, d), "wv": (Hkv * hd, d), "wo": (d, H * hd),
                  "w1": (ff, d), "w3": (ff, d), "w2": (d, ff)}
        for m, shape in shapes.items():
            t[b + m] = (shape, ("normal", std_of[m]))
        if a["qk_norm"]:
            t[b + "q_norm"] = t[b + "k_norm"] = ((hd,), one)
        norms = {"sandwich_ln": ["attn_norm", "attn_post_norm", "ffn_norm", "ffn_post_norm"],
                 "keel": ["attn_norm"] + (["attn_out_norm"] if i > 0 else [])
                         + ["ffn_norm", "ffn_out_norm"]}.get(arch, ["attn_norm", "ffn_norm"])
        for norm in norms:
            t[b + norm] = ((d,), one)
        if arch == "moda" and i < L - 1:
            t[b + "moda_wk_ffn"] = t[b + "moda_wv_ffn"] = ((Hkv * hd, d), ("normal", std))
        if arch == "hc":
            for s, k in (("attn_hc.", 2 * i), ("ffn_hc.", 2 * i + 1)):
                alpha = np.zeros((n, n + 1))
                alpha[:, 1:] = np.eye(n)  # A_k = I
                alpha[k % n, 0] = 1.0     # a_k = e_{k mod n}
                t.update({b + s + "static_alpha": ((n, n + 1), ("values", alpha)),
                          b + s + "static_beta": ((n,), one),
                          b + s + "w_alpha": ((d, n + 1), zero), b + s + "w_beta": ((d, 1), zero),
                          b + s + "s_alpha": ((1,), ("const", 0.01)),
                          b + s + "s_beta": ((1,), ("const", 0.01)), b + s + "norm": ((d,), one)})
        if arch == "mhc":
            m = n * n + 2 * n
            for s in ("attn_mhc.", "ffn_mhc."):
                t.update({b + s + "phi": ((n * d, m), ("normal", std)), b + s + "bias": ((m,), zero),
                          b + s + "gates": ((3,), ("const", 0.01)), b + s + "norm": ((n * d,), one)})
        if arch in ("attnres_full", "attnres_block"):
            for s in (["attn_res."] if i > 0 else []) + ["ffn_res."]:
                t[b + s + "query"], t[b + s + "key_norm"] = ((d,), zero), ((d,), one)
    if arch in ("attnres_full", "attnres_block"):
        t["readout_res.query"], t["readout_res.key_norm"] = ((d,), zero), ((d,), one)
    return t


def check_initial_values(name, tensor, init, problems):
    kind, value = init
    if kind == "normal":  # truncated normal at ±3 std (doc/parameters.md)
        if np.abs(tensor).max() > 3 * value * (1 + 1e-5):
            problems.append(f"{name}: |x| up to {np.abs(tensor).max():.4g} > 3·{value:.4g}")
        if tensor.size >= 1000 and not 0.8 * value < tensor.std() < 1.1 * value:
            problems.append(f"{name}: std {tensor.std():.4g}, documented {value:.4g}")
    elif kind == "const" and not np.all(tensor == value):
        problems.append(f"{name}: not all {value}")
    elif kind == "values" and not np.array_equal(tensor, value):
        problems.append(f"{name}: {tensor.tolist()} is not the documented {value.tolist()}")


# --- the reference model on the validation windows (doc/data.md: window w = tokens wT..wT+T−1) ---
def reference_config(a):
    config = {k: a[k] for k in ("arch", "n_layer", "d_model", "n_head", "n_kv_head", "head_dim",
                                "ff", "vocab_size", "rope_theta", "norm_eps")}
    config["qk_norm"] = bool(a["qk_norm"])
    for key, value in design_options(a).items():
        if value in ("auto", ""):
            continue  # the reference derives it as the doc does
        if value in ("true", "false"):
            config[key] = value == "true"
        else:
            try:
                config[key] = int(value)
            except ValueError:
                try:
                    config[key] = float(value)
                except ValueError:
                    config[key] = value
    return config


def window_losses(attrs, tensors, windows):
    model = reference.DepthBenchReference(reference_config(attrs), params=tensors,
                                          dtype=torch.float64)
    with torch.no_grad():
        return [float(reference.lm_loss(model(w[None, :]), w[None, :])) for w in windows]


def validation_windows():
    """The windows a run scores (doc/data.md, "Validation windows"): of the A windows the
    concatenated files hold, window floor(k·A/n) for k < n, spread over the held-out set."""
    tokens = np.concatenate([np.load(p) for p in sorted(glob.glob("data/val_*.npy"))])
    available = len(tokens) // SEQ_LEN
    n = min(VAL_WINDOWS, available)
    return [torch.from_numpy(tokens[w * SEQ_LEN:(w + 1) * SEQ_LEN].astype(np.int64))
            for w in (k * available // n for k in range(n))]


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    os.chdir(WORK)
    subprocess.run([BIN, "tokenize", "--tokenizer", "bytes", "--format", "fortunes", "--input",
                    "/usr/share/games/fortunes/fortunes", "--val-fraction", "0.05",
                    "--output-format", "npy", "--out", "data"], check=True, stdout=subprocess.DEVNULL)
    listing = subprocess.run([BIN, "train", "--model.arch", "?"], capture_output=True, text=True)
    designs = listing.stderr.split("(valid: ")[1].split(")")[0].split(", ")
    assert len(designs) >= 10, listing.stderr
    windows = validation_windows()
    failed = []
    for arch in designs:
        subprocess.run([BIN, "train", "--model.arch", arch, *TINY, *EXTRA.get(arch, [])],
                       check=True, stdout=subprocess.DEVNULL)
        [run_file] = glob.glob(f"runs/single__{arch}__*.h5")
        stem = run_file[:-len(".h5")]
        problems = []
        final_attrs, final, groups = read_weights(stem + ".weights")
        init_attrs, initial, _ = read_weights(stem + ".init.weights")
        if final_attrs["format_version"] != 2 or final_attrs["arch"] != arch:
            problems.append(f"attributes {final_attrs}")
        if groups != ["params"]:
            problems.append(f"groups {groups} (a weights file holds no optimizer state)")
        layout = documented_layout(final_attrs)
        for tensors in (final, initial):
            if set(tensors) != set(layout):
                problems.append(f"missing {sorted(set(layout) - set(tensors))}, "
                                f"undocumented {sorted(set(tensors) - set(layout))}")
            for name, tensor in tensors.items():
                if name in layout and tensor.shape != layout[name][0]:
                    problems.append(f"{name}: shape {tensor.shape}, documented {layout[name][0]}")
        if not problems:
            for name, (_, init) in layout.items():
                check_initial_values(name, initial[name], init, problems)
        if not problems:
            with h5py.File(run_file, "r") as f:
                val_step, val_loss = f["curves/val_step"][:], f["curves/val_loss"][:]
                final_windows = f["final/val_window_losses"][:]
            if val_step[0] != 0 or list(val_step).count(0) != 1:
                problems.append(f"val_step {val_step} does not start with one step 0")
            at_start = np.mean(window_losses(init_attrs, initial, windows))
            at_end = window_losses(final_attrs, final, windows)
            if abs(at_start - val_loss[0]) > 1e-4 * val_loss[0]:
                problems.append(f"step-0 loss {at_start:.6f} from init weights, run file {val_loss[0]:.6f}")
            if not np.allclose(at_end, final_windows, rtol=1e-4):
                problems.append(f"final window losses {at_end} from weights, run file {final_windows}")
            print(f"{arch:14s} {len(final):3d} tensors by name; loss at step 0 {at_start:.4f} "
                  f"(file {val_loss[0]:.4f}), at the end {np.mean(at_end):.4f} "
                  f"(file {np.mean(final_windows):.4f})")
        if problems:
            print(f"{arch}: " + "; ".join(problems[:5]))
            failed.append(arch)
    assert not failed, f"weights not loadable from the docs: {failed}"
    print("every design's weights load by name from the documented layout")


main()
