#!/usr/bin/env bash
# CTest gpu.bundle_in_bare_root (label bundle): the GPU check bundle runs where none of the
# project's dependencies are installed, so that a missing library shows up here and not on the
# GPU node (doc/cuda.md "Running the check on a bare node").
#  1. tests/gpu/bundle.sh gathers the bundle from BUILD (reused while newer than its inputs);
#  2. debootstrap --variant=minbase bookworm makes a bare Debian root (cached under BUILD, so a
#     second run takes seconds); only the CUDA toolkit's libraries are made visible inside it
#     (read-only bind mount of /usr/local/cuda/lib64, as on a GPU node), with /proc, /sys, /dev;
#  3. inside `chroot`: source env.sh (every CUDA library found), depthbench --help, a 2-rank
#     mpirun CPU training of a tiny model whose run file h5dump reads (completed, final loss),
#     and check.sh --bundle up to "no GPU" (exit 3, a summary and one log archive).
# The mounts live in a private mount namespace (unshare), so they vanish with the test even when
# it is killed (a CTest timeout sends SIGKILL), and a trap unmounts them on every other exit: a
# bind mount of /dev left under the build folder would let `rm -rf build` delete device nodes.
# Not root: skipped (exit 77). No debootstrap, or debootstrap failing (e.g. no network): the
# test FAILS, loudly. DEPTHBENCH_DEBIAN_ROOT overrides the cached root's folder.
# usage: bundle_chroot.sh SOURCE_DIR BUILD_DIR WORK_DIR
set -euo pipefail
SRC=$1 BUILD=$2 WORK=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
if [[ $(id -u) != 0 ]]; then echo "SKIP: chroot and mount need root"; exit 77; fi
command -v debootstrap >/dev/null ||
  fail "debootstrap is not installed (scripts/install-deps.sh installs it); this test cannot run without it"
CUDA_LIB=$(readlink -f /usr/local/cuda/lib64) || fail "no /usr/local/cuda/lib64 (the CUDA toolkit)"

BUNDLE=$BUILD/bundle-test/bundle
DEBIAN=${DEPTHBENCH_DEBIAN_ROOT:-$BUILD/bundle-test/debian-bookworm}
# Never touch a root that still has something mounted in it (a run killed before namespaces).
if grep -q " $DEBIAN/" /proc/mounts; then
  fail "mounts of an earlier run are still in place under $DEBIAN (umount them first)"
fi
mkdir -p "$BUILD/bundle-test" "$(dirname "$DEBIAN")"
if [[ -z ${DB_BUNDLE_TEST_NAMESPACE:-} ]]; then
  # 1. The bundle, rebuilt when the programs or the scripts are newer.
  newest=$(find "$BUILD/depthbench" "$BUILD"/tests/cuda_*_test "$SRC"/tests/gpu "$SRC"/tests/reference \
    "$SRC"/bench/pytorch_reference.py -newer "$BUNDLE/payload.tar.zst" 2>/dev/null | head -1 || true)
  if [[ ! -f $BUNDLE/payload.tar.zst || -n $newest ]]; then
    bash "$SRC/tests/gpu/bundle.sh" --from-build "$BUILD" --out "$BUNDLE" || fail "bundle.sh failed"
  else
    echo "reusing $BUNDLE ($(cat "$BUNDLE/VERSION"))"
  fi

  # 2. The bare Debian root, made once.
  if [[ ! -f $DEBIAN/.complete ]]; then
    echo "debootstrap --variant=minbase bookworm (once; cached in $DEBIAN)"
    rm -rf "$DEBIAN.tmp"
    debootstrap --variant=minbase bookworm "$DEBIAN.tmp" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
      >"$BUILD/bundle-test/debootstrap.log" 2>&1 ||
      { tail -20 "$BUILD/bundle-test/debootstrap.log"; fail "debootstrap failed (log: $BUILD/bundle-test/debootstrap.log)"; }
    rm -rf "$DEBIAN" && mv "$DEBIAN.tmp" "$DEBIAN" && touch "$DEBIAN/.complete"
  fi
  for absent in mpirun h5dump python3; do  # the root must lack what the bundle brings
    [[ ! -e $DEBIAN/usr/bin/$absent ]] || fail "the bare root has /usr/bin/$absent"
  done
  # The rest in a private mount namespace.
  DB_BUNDLE_TEST_NAMESPACE=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

# 3. Mounts, undone on every exit; a fresh copy of the bundle at /opt/bundle.
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
    umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" || echo "WARNING: could not unmount ${MOUNTS[i]}"
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mount_in() {  # TARGET (inside the root) MOUNT-ARGS...
  local target=$DEBIAN$1
  shift
  mkdir -p "$target"
  mount "$@" "$target" || fail "mount $* $target"
  MOUNTS+=("$target")
}
rm -rf "$DEBIAN/opt/bundle" "$DEBIAN/opt/work" "$DEBIAN/tmp"/* "$WORK"
mkdir -p "$WORK" "$DEBIAN/opt/work"
cp -r "$BUNDLE" "$DEBIAN/opt/bundle"
mount_in /proc -t proc proc
mount_in /sys --bind /sys
mount_in /dev --bind /dev
mount_in /usr/local/cuda/lib64 --bind "$CUDA_LIB"
mount -o remount,bind,ro "$DEBIAN/usr/local/cuda/lib64" || true

cat >"$DEBIAN/opt/work/inside.sh" <<'EOF'
set -euo pipefail
cd /opt/work
export TMPDIR=/tmp
echo "== source /opt/bundle/env.sh"
source /opt/bundle/env.sh 2>env.txt
cat env.txt
if grep -q "NOT FOUND" env.txt; then echo "FAIL: a CUDA library was not found"; exit 1; fi
grep -q "libcublas.so.* from /usr/local/cuda" env.txt || { echo "FAIL: cuBLAS not taken from the CUDA toolkit"; exit 1; }
echo "== depthbench --help"
depthbench --help | head -3
echo "== a 2-rank CPU training"
depthbench tokenize --tokenizer bytes --format text --doc-separator blank-line \
  --input "$DB_BUNDLE_ROOT/tree/data/corpus.txt" \
  --val-fraction 0.1 --out data >/dev/null
mpirun -np 2 depthbench train --model.n_layer 2 --model.d_model 32 --model.n_head 2 \
  --model.vocab_size 257 --train.backend cpu --train.threads 1 --train.steps 6 --train.seq_len 32 \
  --train.global_batch 8 --train.micro_batch 2 --train.val_interval 3 --train.val_windows 2 \
  --data.train_files 'data/train_*.npy' --data.val_files 'data/val_*.npy' --output.dir runs \
  --output.name tiny
test -f runs/tiny.h5 || { echo "FAIL: no run file"; exit 1; }
h5dump -a /status runs/tiny.h5 | grep -q '"completed"' || { echo "FAIL: the run is not completed"; exit 1; }
final=$(h5dump -a /final/val_loss runs/tiny.h5 | sed -n 's/.*(0): *\([0-9.e+-]*\).*/\1/p')
echo "run file runs/tiny.h5: completed, final validation loss $final"
[ -n "$final" ] || { echo "FAIL: no final loss in the run file"; exit 1; }
echo "== check.sh up to 'no GPU'"
set +e
OUT=/opt/work/out WORK=/opt/work/check /opt/bundle/check.sh
rc=$?
set -e
[ $rc = 3 ] || { echo "FAIL: check.sh exited $rc, expected 3 (no GPU)"; exit 1; }
ls -l out
test -f out/gpu_check_summary.txt && test -f out/gpu_check_logs.tar.gz ||
  { echo "FAIL: the summary or the log archive is missing"; exit 1; }
[ "$(ls out | wc -l)" = 2 ] || { echo "FAIL: OUT holds more than the two files"; exit 1; }
grep -qE '^env +\| pass' out/gpu_check_summary.txt || { echo "FAIL: the env stage did not pass"; exit 1; }
grep -qE '\| skipped +\| no GPU' out/gpu_check_summary.txt || { echo "FAIL: no stage says 'no GPU'"; exit 1; }
echo "inside the bare root: ok"
EOF
echo "== chroot $DEBIAN"
# A clean environment, as on a node: nothing of this machine's PATH or libraries.
env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  chroot "$DEBIAN" /bin/bash /opt/work/inside.sh 2>&1 | tee "$WORK/inside.log"
rc=${PIPESTATUS[0]}
((rc == 0)) || fail "inside the bare root (exit $rc; log $WORK/inside.log)"
echo "bundle in a bare Debian root: ok ($(du -sh "$BUNDLE" | cut -f1), $(cat "$BUNDLE/VERSION"))"
