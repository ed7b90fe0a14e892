#!/usr/bin/env python3
"""The table of bench/gpu_speed.sh (Markdown, pasted as is into doc/performance.md) from its
results file: one line per measurement, "SHAPE<TAB>JSON", where JSON is
  {"source": "depthbench", "result": <depthbench bench --json>}   a measured design,
  {"source": "depthbench", "result": ..., "variant": "KEY=VALUE"}  a lever row: one key set,
  {"source": "pytorch", "mode": ..., "tokens_per_second": ...}    bench/pytorch_reference.py --json,
or the same with "failed", "unavailable" or "skipped" and the reason instead of figures.
Standard library only. usage: speed_table.py RESULTS.jsonl [--commit C] [--peak-tflops P]
[--precision bf16] [--bench-args "--train.KEY VALUE ..."] [--cpu-smoke]
"""
import argparse
import datetime
import json
import re
import sys

SHAPE_NAMES = {"L24": "main400m L = 24", "L70": "main400m L = 70", "1p6b": "validation1p6b",
               "Lpad": "main400m, padded head dim"}
DASH = "—"


def read_results(path):
    rows = []  # (shape, record) in file order
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            shape, _, text = line.rstrip("\n").partition("\t")
            try:
                rows.append((shape, json.loads(text)))
            except json.JSONDecodeError as e:
                sys.exit(f"speed_table.py: {path}:{number}: not JSON ({e})")
    return rows


def why(record):
    for key in ("failed", "unavailable", "skipped"):
        if key in record:
            return f"{key}: {record[key]}"
    return None


def fmt_int(x):
    return f"{x:,.0f}".replace(",", " ")


def attention_cell(paths):
    """The path names of depthbench's attention_paths ("B=8 T=2048 H=16 H_kv=16 hd=64: cudnn;
    ..."); a fallback's reason, in parentheses, goes under the table (fallback_notes)."""
    names = list(dict.fromkeys(re.findall(r"hd=\d+: (\w+)", paths)))
    return "/".join(names) if names else paths or DASH


def fallback_notes(label, r, notes):
    """Lines for what did not run as asked: an attention shape that fell back, a failed capture;
    returns the CUDA graphs cell."""
    if "(" in r.get("attention_paths", ""):
        notes.append(f"attention of {label}: {r['attention_paths']}")
    graphs = r.get("cuda_graphs", DASH)
    if graphs.startswith("eager after capture failed"):
        notes.append(f"CUDA graphs of {label}: {graphs}")
        graphs = "eager: capture failed"
    return graphs


def print_lever_table(levers, ours, notes):
    """Issue 22's levers: each lever row against the all-levers-on row of its design at L = 24
    (the main table's), with what the run reports it ran. levers: (arch, (variant, result or
    reason)) at L = 24."""
    print("\n### Pre-LN L = 24, one lever off\n")
    print("Each row sets one key (`--train.KEY VALUE`, the variant) and leaves every other at its "
          "default; \"vs all on\": its step time and peak memory over the all-levers-on row of "
          "the same design (the main table's row, every lever at its default). Step time above "
          "1.00× is what the lever gives; for `recompute=blocks` it is the cost of the memory "
          "it saves. The breakdown below is of the `cuda_graphs=off` row (a timed model runs "
          "eagerly). `train.reduce_bucket_mb` (lever 5) needs two GPUs or more: no row here.\n")
    print("| design | variant | tokens/s | step ms | step vs all on | peak GiB | peak vs all on "
          "| attention | activations | CUDA graphs |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    designs = list(dict.fromkeys(arch for arch, _ in levers))
    for design in designs:
        base = ours.get(("L24", design))
        rows = [("all levers on (defaults)", base)]
        rows += [(variant, r) for arch, (variant, r) in levers if arch == design]
        for number, (variant, r) in enumerate(rows):
            if not isinstance(r, dict):
                reason = r or "not measured in this run"
                print(f"| {design} | {variant} | {reason.split(':')[0]} | " +
                      " | ".join([DASH] * 7) + " |")
                if number > 0 or r is None:  # a failed main row has its line under its table
                    notes.append(f"depthbench {design} L24 {variant}: {reason}")
                continue
            step = (f"{r['step_ms'] / base['step_ms']:.2f}×" if isinstance(base, dict) else DASH)
            peak = (f"{r['peak_memory_bytes'] / base['peak_memory_bytes']:.2f}×"
                    if isinstance(base, dict) and base["peak_memory_bytes"] else DASH)
            attention = attention_cell(r.get("attention_paths", ""))
            graphs = fallback_notes(f"{design} {variant}", r, notes)
            print(f"| {design} | {variant} | {fmt_int(r['tokens_per_second'])} | "
                  f"{r['step_ms']:.1f} | {step} | {r['peak_memory_bytes'] / 2**30:.2f} | {peak} | "
                  f"{attention} | {r.get('activation_dtype', DASH)} | {graphs} |")


def head_dim(r):
    return r["d_model"] // r["n_head"] if r.get("n_head") else DASH


def print_attention_path_table(levers, ours, notes):
    """Pre-LN on the default attention path (cuDNN) and on our flash kernel, at L = 24 (a head
    dim cuDNN reads in place) and at the padded-head-dim shape (Lpad), where cuDNN works on
    padded copies."""
    print("\n### Attention paths: cuDNN and our flash kernel, unpadded and padded head dim\n")
    print("Pre-LN with the default attention path (`auto`: cuDNN where it runs the shape) and with "
          "`train.attention = flash`. cuDNN needs the head dim a multiple of 8: elsewhere every "
          "call pads q, k, v, o and their gradients into copies (doc/cuda.md). \"flash vs "
          "default\": the flash row's step time over the default row's of the same shape; below "
          "1.00× at the padded shape and above it at L = 24 means the copies cost cuDNN its "
          "lead there.\n")
    print("| shape | head dim | variant | attention | tokens/s | step ms | flash vs default "
          "| peak GiB |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in ("L24", "Lpad"):
        base = ours.get((shape, "pre_ln"))
        flash = next((r for s, arch, v, r in levers
                      if s == shape and arch == "pre_ln" and v == "attention=flash"), None)
        for variant, r in (("default", base), ("attention=flash", flash)):
            name = SHAPE_NAMES.get(shape, shape)
            if not isinstance(r, dict):
                reason = r or "not measured in this run"
                print(f"| {name} | {DASH} | {variant} | {reason.split(':')[0]} | " +
                      " | ".join([DASH] * 4) + " |")
                notes.append(f"depthbench pre_ln {shape} {variant}: {reason}")
                continue
            ratio = (f"{r['step_ms'] / base['step_ms']:.2f}×"
                     if variant != "default" and isinstance(base, dict) else DASH)
            fallback_notes(f"pre_ln {shape} {variant}", r, notes)
            print(f"| {name} (d {r['d_model']}, L {r['n_layer']}) | {head_dim(r)} | {variant} | "
                  f"{attention_cell(r.get('attention_paths', ''))} | "
                  f"{fmt_int(r['tokens_per_second'])} | {r['step_ms']:.1f} | {ratio} | "
                  f"{r['peak_memory_bytes'] / 2**30:.2f} |")


def print_notes(notes, title):
    if not notes:
        return
    print(f"\n{title}:")
    seen = set()
    for n in notes:
        key = n.split(": ", 1)[1]
        if "is not written in the PyTorch reference" in key:  # one line for every such design
            key = "designs PyTorch lacks"
            n = "PyTorch: the reference implements pre_ln, sandwich_ln, lns, deepnorm and keel only"
        if key not in seen:
            seen.add(key)
            print(f"- {n}")


def main():
    p = argparse.ArgumentParser(description="the table of bench/gpu_speed.sh")
    p.add_argument("results")
    p.add_argument("--commit", default="unknown")
    p.add_argument("--peak-tflops", type=float, default=989)
    p.add_argument("--precision", default="bf16")
    p.add_argument("--bench-args", default="", help="BENCH_ARGS: on every depthbench command")
    p.add_argument("--cpu-smoke", action="store_true")
    args = p.parse_args()
    rows = read_results(args.results)

    ours = {}     # (shape, arch) -> result or reason, every lever at its default
    levers = []   # (shape, arch, variant, result or reason), in the order measured
    theirs = {}   # (shape, arch, mode) -> record
    order = []    # (shape, arch) in the order measured
    notes, lever_notes = [], []
    results = []  # every measured depthbench result, lever rows too
    for shape, r in rows:
        if r.get("source") == "depthbench":
            result = r.get("result")
            arch = result["arch"] if result else r.get("arch", "?")
            if result:
                results.append(result)
            if "variant" in r:
                levers.append((shape, arch, r["variant"], result if result else why(r)))
                continue
            ours[(shape, arch)] = result if result else why(r)
            if (shape, arch) not in order:
                order.append((shape, arch))
        elif r.get("source") == "pytorch":
            theirs[(shape, r.get("arch"), r.get("mode"))] = r
    measured = [v for v in ours.values() if isinstance(v, dict)]
    device = next((m["device"] for m in measured if m.get("device")), "")
    backend = measured[0]["backend"] if measured else "?"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    print(f"## GPU speed, {now}, commit {args.commit}")
    if args.cpu_smoke:
        print("\n**CPU smoke run** (`--cpu-smoke`): tiny shapes on the CPU backend; the figures "
              "test the script, they measure nothing.")
    where = (f"{device or 'host CPU'} ({backend} backend)" if measured
             else "— (no depthbench row was measured)")
    precision = measured[0].get("precision", args.precision) if measured else args.precision
    print(f"\nDevice: {where}, {precision}. "
          f"MFU = (6·N_non-embedding + 12·L·d·T + design extras) FLOP per token × tokens/s / "
          f"{args.peak_tflops:.0f} TFLOP/s — the assumed peak (dense bf16 of one H100/H200 SXM "
          f"unless PEAK_TFLOPS says otherwise).")
    if measured:
        m = measured[0]
        print(f"Each step: micro-batch {m['micro_batch']} × T = {m['seq_len']} tokens, forward, "
              f"backward, clipping, AdamW; {m['steps']} timed steps after {m['warmup_steps']} "
              f"warm-up. \"vs Pre-LN\": step time over Pre-LN's of the same shape in this run; "
              f"\"ours / PyTorch\": tokens/s ratio on the same design and shape.")
    if args.bench_args:
        print(f"Every depthbench command had `{args.bench_args}` (BENCH_ARGS).")
    print()
    print("| shape | design | tokens/s | MFU | step ms | peak GiB | vs Pre-LN | PyTorch eager tokens/s "
          "| compiled tokens/s | ours / eager | ours / compiled |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for shape, arch in order:
        r = ours[(shape, arch)]
        pre = ours.get((shape, "pre_ln"))
        if isinstance(r, dict):
            label = f"{SHAPE_NAMES.get(shape, shape)} (d {r['d_model']}, L {r['n_layer']})"
            ratio = (f"{r['step_ms'] / pre['step_ms']:.2f}×" if isinstance(pre, dict) else DASH)
            fallback_notes(f"{arch} {shape}", r, notes)
            cells = [fmt_int(r["tokens_per_second"]), f"{100 * r['mfu']:.1f}%",
                     f"{r['step_ms']:.1f}", f"{r['peak_memory_bytes'] / 2**30:.2f}", ratio]
        else:
            label = SHAPE_NAMES.get(shape, shape)
            cells = [r.split(":")[0], DASH, DASH, DASH, DASH]
            notes.append(f"depthbench {arch} {shape}: {r}")
        torch_cells, torch_ratios = [], []
        for mode in ("eager", "compile"):
            t = theirs.get((shape, arch, mode))
            if t and "tokens_per_second" in t:
                torch_cells.append(fmt_int(t["tokens_per_second"]))
                torch_ratios.append(f"{r['tokens_per_second'] / t['tokens_per_second']:.2f}×"
                                    if isinstance(r, dict) else DASH)
            else:
                torch_cells.append(DASH)
                torch_ratios.append(DASH)
                if t:
                    notes.append(f"PyTorch {mode} {arch} {shape}: {why(t)}")
        print(f"| {label} | {arch} | " + " | ".join(cells + torch_cells + torch_ratios) + " |")
    print_notes(notes, "Why a cell is empty, and what fell back")
    at_l24 = [(arch, (variant, r)) for shape, arch, variant, r in levers if shape == "L24"]
    if at_l24:
        print_lever_table(at_l24, ours, lever_notes)
        print_notes(lever_notes, "Why a cell is empty, and what fell back")
    if any(shape == "Lpad" for shape, _ in ours) or any(lever[0] == "Lpad" for lever in levers):
        path_notes = []
        print_attention_path_table(levers, ours, path_notes)
        print_notes(path_notes, "Why a cell is empty, and what fell back")
    for r in (v for v in results if v.get("breakdown")):
        step = r["breakdown_step_ms"]
        timed = sum(s["ms"] for s in r["breakdown"])
        timer = "CUDA events" if r.get("device") else "host clock"
        print(f"\n### One {r['arch']} step op by op (L = {r['n_layer']}, d = {r['d_model']}; "
              f"{timer}, eager): {step:.1f} ms\n")
        print("| op | calls | ms | % of step |")
        print("|---|---|---|---|")
        for s in sorted(r["breakdown"], key=lambda s: -s["ms"]):
            print(f"| {s['section']} | {s['calls']} | {s['ms']:.2f} | "
                  f"{100 * s['ms'] / step if step else 0:.1f}% |")
        print(f"| other: host work, gaps | | {step - timed:.2f} | "
              f"{100 * (step - timed) / step if step else 0:.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
