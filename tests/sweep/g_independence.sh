#!/bin/bash
# The loss curve does not depend on the ranks per run: 4 ranks as groups of 1, 2 and 4 give the
# same curves to fp32 rounding (the ranks split each global batch and sum gradients).
source "$(dirname "$0")/common.sh" "$@"
make_suite "$WORK/suite.ini" "designs=pre_ln" "depths=1 2" "pre_ln=3e-3" "train.steps=60" \
  "train.micro_batch=1"
for G in 1 2 4; do
  "${MPIRUN[@]}" -np 4 "$DEPTHBENCH" sweep "$WORK/suite.ini" --ranks-per-run $G --out "$WORK/g$G" --quiet \
    | tail -1
done
"$PYTHON" "$SOURCE_DIR/tests/sweep/compare_curves.py" --tolerance 1e-4 "$WORK/g1" "$WORK/g2"
"$PYTHON" "$SOURCE_DIR/tests/sweep/compare_curves.py" --tolerance 1e-4 "$WORK/g1" "$WORK/g4"
echo PASS
