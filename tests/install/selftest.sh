#!/usr/bin/env bash
# `depthbench selftest` from an installed prefix, from a folder outside the repository, without
# ctest or a build tree (doc/cuda.md "selftest"): on the CPU backend one table with a row per
# design (float against double, unfused, bf16 storage), a verdict `pass` and exit status 0; with
# every tolerance scaled to 0 the verdict is `FAIL` and the exit status 1.
set -uo pipefail
build_dir=$1
home=$(mktemp -d "${TMPDIR:-/tmp}/depthbench-selftest.XXXXXX")
trap 'rm -rf "$home"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
prefix=$home/prefix
cmake --install "$build_dir" --prefix "$prefix" >"$home/install.log" || fail "cmake --install"
export PATH=$prefix/bin:$PATH
unset PYTHONPATH
cd "$home"
depthbench selftest --backend cpu >selftest.log 2>&1
rc=$?
cat selftest.log
((rc == 0)) || fail "selftest --backend cpu exited $rc"
grep -q "^check .*| result .*| err/tol" selftest.log || fail "no table header"
for design in pre_ln hc mhc attnres_full moda; do
  grep -qE "^design $design fp32 +\| pass" selftest.log || fail "no passing fp32 row for $design"
  grep -qE "^design $design bf16 storage +\| pass" selftest.log || fail "no bf16 storage row for $design"
done
grep -qE "^verdict: pass — [0-9]+ passed, 0 failed" selftest.log || fail "verdict is not pass"
depthbench selftest --backend cpu --tolerance-scale 0 >strict.log 2>&1
rc=$?
((rc == 1)) || fail "with tolerance 0 the exit status is $rc, not 1"
grep -qE "^verdict: FAIL" strict.log || fail "with tolerance 0 the verdict is not FAIL"
echo "selftest from an install: pass"
