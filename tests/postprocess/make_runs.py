"""Writes run files exactly as doc/hdf5-schema.md (schema version 1) describes, for synthetic
sweeps: the stand-in for the real `depthbench` until its writer lands. Every root attribute,
the /curves datasets (chunked, extendible), the /final attributes and /diagnostics datasets
under the names of postprocess/names.py."""
from __future__ import annotations

import math
from pathlib import Path

import h5py
import numpy as np

VOCAB = 50280
SEQ_LEN = 2048

# The registry as `depthbench designs --json` prints it (test_names.py checks this copy against
# the executable): run files record their design's display name and order from it, as the real
# writer does.
DESIGNS_JSON = Path(__file__).with_name("designs.json")


def design_record(arch: str) -> dict:
    """Root attributes `design_title`, `design_order` of a design, {} for unknown names."""
    import json
    for d in json.loads(DESIGNS_JSON.read_text(encoding="utf-8"))["designs"]:
        if d["name"] == arch:
            return {"design_title": d["title"], "design_order": np.int64(d["order"])}
    return {}


def ceil16(x: float) -> int:
    return int(math.ceil(x / 16) * 16)


def param_counts(n_layer: int, d_model: int, vocab: int = VOCAB) -> tuple[int, int, int]:
    """(backbone, embedding, total) by the shape rule of spec/suites.md (untied embeddings)."""
    ff = ceil16(8 * d_model / 3)
    backbone = n_layer * (4 * d_model * d_model + 3 * d_model * ff)
    embedding = vocab * d_model
    return backbone, embedding, backbone + 2 * embedding


def run_name(suite, arch, n_layer, d_model, learning_rate) -> str:
    mantissa, exponent = f"{learning_rate:.0e}".split("e")
    return f"{suite}__{arch}__L{n_layer}_d{d_model}__lr{mantissa}e{exponent}"


def write_run(directory, *, suite: str, arch: str, n_layer: int, d_model: int,
              learning_rate: float, val_loss: float | None = None,
              ci: tuple[float, float] | None = None, status: str = "completed",
              status_reason: str = "", status_step: int = -1, schema_version=1,
              params_total: int | None = None, params_backbone: int | None = None,
              vocab: int = VOCAB, steps: int = 20, tokens_per_second: float = 1.0e5,
              mfu: float = 0.0, diagnostics: dict | None = None, extra_attrs: dict | None = None,
              omit_attrs=(), file_name: str | None = None, in_progress: bool = False,
              window_losses=None) -> Path:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = file_name or run_name(suite, arch, n_layer, d_model, learning_rate)
    backbone, embedding, total = param_counts(n_layer, d_model, vocab)
    backbone = backbone if params_backbone is None else params_backbone
    total = total if params_total is None else params_total
    head_dim = d_model // 16
    attrs = {
        "schema_version": np.int64(schema_version) if isinstance(schema_version, int)
        else schema_version,
        "run_id": f"{abs(hash(name)) % (1 << 64):016x}", "run_name": name, "suite": suite,
        "arch": arch, **design_record(arch), "design_options": "", "d_model": np.int64(d_model),
        "n_layer": np.int64(n_layer), "n_head": np.int64(16), "n_kv_head": np.int64(16),
        "head_dim": np.int64(head_dim), "ff": np.int64(ceil16(8 * d_model / 3)),
        "vocab_size": np.int64(vocab), "seq_len": np.int64(SEQ_LEN),
        "aspect_ratio": np.float64(d_model / n_layer), "params_total": np.int64(total),
        "params_backbone": np.int64(backbone), "params_embedding": np.int64(embedding),
        "learning_rate": np.float64(learning_rate),
        "global_batch_sequences": np.int64(512), "micro_batch_sequences": np.int64(8),
        "steps": np.int64(steps), "warmup_steps": np.int64(max(1, steps // 10)),
        "min_lr_ratio": np.float64(0.1), "weight_decay": np.float64(0.1),
        "beta1": np.float64(0.9), "beta2": np.float64(0.95), "adam_eps": np.float64(1e-8),
        "grad_clip": np.float64(1.0), "seed": np.int64(1234),
        "train_files": "train_000.npy;train_001.npy", "val_files": "val_000.npy",
        "tokens_planned": np.int64(steps * 512 * SEQ_LEN), "backend": "cpu",
        "device_name": "test CPU", "ranks": np.int64(1), "software_version": "0.1.0",
        "git_commit": "test", "flops_per_token": np.float64(6.0 * total),
        "flops_convention": "PaLM: 6N + 12·L·d·T (+ design extras)", "status": status,
        "status_reason": status_reason, "status_step": np.int64(status_step),
        "start_time": "2025-01-01T00:00:00Z", "end_time": "2025-01-01T01:00:00Z",
        "config": f"[model]\narch = {arch}\nn_layer = {n_layer}\nd_model = {d_model}\n",
    }
    attrs.update(extra_attrs or {})
    for key in omit_attrs:
        attrs.pop(key, None)

    path = directory / (name + (".h5.tmp" if in_progress else ".h5"))
    final_loss = val_loss if val_loss is not None else float("nan")
    with h5py.File(path, "w") as f:
        for key, value in attrs.items():
            f.attrs[key] = value
        n = steps
        curves = f.create_group("curves")
        step = np.arange(1, n + 1, dtype=np.int64)
        start = final_loss + 2.0 if math.isfinite(final_loss) else 10.0
        train_loss = np.linspace(start, final_loss if math.isfinite(final_loss) else 50.0, n)
        columns = {
            "step": step, "tokens": step * 512 * SEQ_LEN, "train_loss": train_loss,
            "learning_rate": np.full(n, learning_rate), "grad_norm": np.full(n, 0.5),
            "step_time_s": np.full(n, 512 * SEQ_LEN / tokens_per_second),
            "tokens_per_second": np.full(n, float(tokens_per_second)),
            "mfu": np.full(n, float(mfu)),
        }
        for key, values in columns.items():
            curves.create_dataset(key, data=values, chunks=(max(1, min(n, 64)),),
                                  maxshape=(None,))
        val_step = step[n // 2 - 1::n // 2] if n >= 2 else step
        curves.create_dataset("val_step", data=val_step, chunks=True, maxshape=(None,))
        curves.create_dataset("val_loss", data=np.full(len(val_step), final_loss,
                                                       dtype=np.float64),
                              chunks=True, maxshape=(None,))
        final = f.create_group("final")
        final.attrs["val_loss"] = np.float64(final_loss)
        final.attrs["val_loss_ci_low"] = np.float64(ci[0] if ci else float("nan"))
        final.attrs["val_loss_ci_high"] = np.float64(ci[1] if ci else float("nan"))
        final.attrs["best_val_loss"] = np.float64(final_loss)
        final.attrs["best_step"] = np.int64(n)
        final.attrs["train_windows_consumed"] = np.int64(n * 512)
        if window_losses is not None:  # optional: per-window final losses (names.py)
            final.create_dataset("val_window_losses", data=np.asarray(window_losses, float))
        group = f.create_group("diagnostics")
        for key, (data, data_attrs) in (diagnostics or {}).items():
            ds = group.create_dataset(key, data=data)
            ds.attrs["definition"] = f"synthetic {key} for tests"
            for a, v in data_attrs.items():
                ds.attrs[a] = v
    return path


def synthetic_diagnostics(n_layer: int, seed: int = 0, tasks=("gsm8k",)) -> dict:
    """Every provisional diagnostic dataset for a model of depth n_layer, with attributes."""
    rng = np.random.default_rng(seed)
    L = n_layer
    angular = np.full((L + 1, L + 1), np.nan)
    for i in range(L + 1):
        for j in range(i, L + 1):
            angular[i, j] = min(1.0, 0.05 * (j - i) + 0.01 * rng.random())
    causal = np.full((L, L), np.nan)
    perm = np.full((L, L), np.nan)
    for s in range(L):
        for l in range(s + 1, L):
            causal[s, l] = rng.random() * 0.9
            perm[s, l] = rng.random() * 0.3
    d = {
        "angular_distance": (angular, {}),
        "causal_score": (causal, {"late_share_above_0.45": 0.25}),
        "permutation_score": (perm, {}),  # no stored share: the reader computes it
        "pruning_loss_delta": (np.linspace(2.0, 0.01, L) + 0.001 * rng.random(L), {}),
        "logitlens_kl": (np.linspace(5.0, 0.0, L + 1), {}),
        "path_weights": (rng.random((2 * L + 1, 2 * L)), {}),
        "effective_rank": (np.float64(1.5), {"mean": 1.55}),
        "dead_segment": (np.int64(2), {"layers": np.int64(2)}),
    }
    for k, task in enumerate(tasks):
        nll = 1.0 + 0.1 * k + 0.01 * L
        d[f"domain_nll_{task}"] = (np.float64(nll), {"nll": nll, "ci_low": nll - 0.02,
                                                    "ci_high": nll + 0.02})
    return d


def write_sweep(directory, *, suite: str, designs, shapes, learning_rates, loss,
                ci_halfwidth: float | None = 0.002, **kwargs) -> list[Path]:
    """A full sweep: `loss(arch, n_layer, d_model, lr)` gives the final validation loss, or
    None for a run that diverged."""
    paths = []
    for arch in designs:
        for n_layer, d_model in shapes:
            for lr in learning_rates:
                value = loss(arch, n_layer, d_model, lr)
                if value is None:
                    paths.append(write_run(directory, suite=suite, arch=arch, n_layer=n_layer,
                                           d_model=d_model, learning_rate=lr,
                                           status="diverged", status_reason="loss is NaN",
                                           status_step=7, **kwargs))
                    continue
                ci = None if ci_halfwidth is None else (value - ci_halfwidth,
                                                        value + ci_halfwidth)
                paths.append(write_run(directory, suite=suite, arch=arch, n_layer=n_layer,
                                       d_model=d_model, learning_rate=lr, val_loss=value, ci=ci,
                                       **kwargs))
    return paths
