#!/bin/bash
# model.extra_design_in_one_file: the contract of doc/designs.md ("Adding a design") kept by a
# test. The design file of that section (ReZero, the ```cpp compiles rezero.cpp block), with no
# other edit anywhere, is built as if dropped into src/model/residual/ (CMake:
# DEPTHBENCH_EXTRA_DESIGN_DIR, which adds a folder's files to the design glob) in a build tree of
# its own, and every test program that loops over the registered designs (the list in
# tests/model/tests.cmake, their demands in tests/support/design_variants.hpp) must pass with it.
# Usage: extra_design_in_one_file.sh SOURCE_DIR BUILD_DIR BUILD_TYPE CTEST_NAME...
set -euo pipefail
source_dir=$1 build_dir=$2 build_type=$3
shift 3
ctest_names=("$@")

# The design file, as the docs give it.
design_dir="$build_dir/extra_design"
mkdir -p "$design_dir"
awk '/^```cpp compiles rezero.cpp/ { inside = 1; next } /^```$/ { inside = 0 } inside' \
  "$source_dir/doc/designs.md" > "$design_dir/rezero.cpp.new"
grep -q "DesignInfo rezero_design()" "$design_dir/rezero.cpp.new" ||
  { echo "doc/designs.md has no rezero.cpp block"; exit 1; }
# Rewritten only when the docs changed it, so that a rerun rebuilds nothing.
cmp -s "$design_dir/rezero.cpp.new" "$design_dir/rezero.cpp" ||
  mv "$design_dir/rezero.cpp.new" "$design_dir/rezero.cpp"
rm -f "$design_dir/rezero.cpp.new"

launcher=()
if command -v ccache > /dev/null; then  # the objects of the parent build come from the cache
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S "$source_dir" -B "$build_dir" -DCMAKE_BUILD_TYPE="$build_type" -DDEPTHBENCH_CUDA=OFF \
  -DDEPTHBENCH_EXTRA_DESIGN_DIR="$design_dir" "${launcher[@]}" \
  > "$build_dir/configure.log" 2>&1 || { cat "$build_dir/configure.log"; exit 1; }

targets=(depthbench)
regex=""
for name in "${ctest_names[@]}"; do
  targets+=("${name#*.}")  # area.program → program
  regex+="${regex:+|}${name//./\\.}"
done
cmake --build "$build_dir" -j 2 --target "${targets[@]}" > "$build_dir/build.log" 2>&1 ||
  { tail -50 "$build_dir/build.log"; exit 1; }

# Registered from its file alone, after the paper's ten designs.
listing=$("$build_dir/depthbench" designs)
echo "$listing" | grep -q "rezero" || { echo "rezero is not registered:"; echo "$listing"; exit 1; }
[[ $(echo "$listing" | grep -n "rezero" | head -1 | cut -d: -f1) -gt \
   $(echo "$listing" | grep -n "attnres_block" | head -1 | cut -d: -f1) ]] ||
  { echo "rezero is not listed after the paper's designs:"; echo "$listing"; exit 1; }

cd "$build_dir"
ctest -R "^($regex)\$" --output-on-failure -j 2
# Every listed program ran (a renamed test would otherwise drop out of the check unseen).
ran=$(ctest -N -R "^($regex)\$" | grep -c "Test *#")
[[ $ran -eq ${#ctest_names[@]} ]] ||
  { echo "expected ${#ctest_names[@]} tests, found $ran"; exit 1; }
