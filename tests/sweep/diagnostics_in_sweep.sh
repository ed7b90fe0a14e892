#!/bin/bash
# A suite that asks for diagnostics gets them written into each completed run's file, computed on
# the run's own communicator (2 ranks per run here), with their measured time.
source "$(dirname "$0")/common.sh" "$@"
make_suite "$WORK/suite.ini" "designs=pre_ln" "depths=2" "pre_ln=3e-3" "train.steps=30" \
  "diagnostics=path_weights logitlens"
"${MPIRUN[@]}" -np 2 "$DEPTHBENCH" sweep "$WORK/suite.ini" --ranks-per-run 2 --out "$WORK/out" --quiet | tee "$WORK/log"
f=$(ls "$WORK"/out/*.h5)
[ "$(h5attr "$f" status)" = completed ] || fail "$f not completed"
"$PYTHON" - "$f" <<'PY'
import h5py, sys, numpy as np
d = h5py.File(sys.argv[1], "r")["diagnostics"]
assert "logitlens_kl" in d and "path_weights" in d, list(d)
kl = d["logitlens_kl"][:]
assert kl[-1] == 0.0 and kl[0] > 0, kl
w = d["path_weights"][:]
assert np.allclose(w[np.isfinite(w)], 1.0), w  # Pre-LN: every path weight is 1
for name in ("logitlens_kl", "path_weights"):  # measured time, and on how many ranks
    assert d[name].attrs["seconds"] > 0 and d[name].attrs["ranks"] == 2, dict(d[name].attrs)
print("diagnostics in the run file:", sorted(d))
PY
grep -Eq "^\[sweep\] diagnostics of .*\.h5: [0-9.]+ s \([0-9.]+x its training's [0-9.]+ s\)$" \
  "$WORK/log" || fail "the sweep did not say what the diagnostics took"
# An unknown diagnostic name in a suite is rejected with the key named.
make_suite "$WORK/bad.ini" "diagnostics=angular, nope"
if "$DEPTHBENCH" sweep "$WORK/bad.ini" --out "$WORK/bad" 2>"$WORK/bad.err"; then fail "bad diagnostics accepted"; fi
grep -q "suite.diagnostics: unknown diagnostic" "$WORK/bad.err" || fail "$(cat "$WORK/bad.err")"
echo PASS
