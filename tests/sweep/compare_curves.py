"""Compares the curves of run files in two directories: bit for bit (--exact) or within a
tolerance. Prints the largest absolute difference of train_loss and val_loss."""
import argparse, glob, os, sys
import h5py, numpy as np

parser = argparse.ArgumentParser()
parser.add_argument("dir_a")
parser.add_argument("dir_b")
parser.add_argument("--exact", action="store_true")
parser.add_argument("--tolerance", type=float, default=0.0)
args = parser.parse_args()
files = sorted(os.path.basename(p) for p in glob.glob(os.path.join(args.dir_a, "*.h5"))
               if not p.endswith((".weights", ".ckpt")))
if not files:
    sys.exit("no run files in " + args.dir_a)
worst = 0.0
for name in files:
    a = h5py.File(os.path.join(args.dir_a, name), "r")
    b = h5py.File(os.path.join(args.dir_b, name), "r")
    if a.attrs["status"] != b.attrs["status"]:
        sys.exit(f"{name}: status {a.attrs['status']} vs {b.attrs['status']}")
    for key in ("step", "tokens", "val_step"):
        if not np.array_equal(a["curves/" + key][:], b["curves/" + key][:]):
            sys.exit(f"{name}: curves/{key} differ: {a['curves/' + key][:]} vs {b['curves/' + key][:]}")
    for key in ("train_loss", "val_loss"):
        x, y = a["curves/" + key][:], b["curves/" + key][:]
        if len(x) == 0:
            continue
        if args.exact and x.tobytes() != y.tobytes():
            i = int(np.argmax(x != y))
            sys.exit(f"{name}: curves/{key} not bit-identical (first difference at row {i}: {x[i]!r} vs {y[i]!r})")
        worst = max(worst, float(np.max(np.abs(x - y))))
    print(f"{name}: {len(a['curves/step'])} rows, {len(a['curves/val_step'])} validations, "
          f"status {a.attrs['status']}")
print(f"max |difference| of train/val loss over {len(files)} runs: {worst:.3e}")
if not args.exact and worst > args.tolerance:
    sys.exit(f"difference {worst:.3e} above tolerance {args.tolerance:.1e}")
