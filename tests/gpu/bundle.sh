#!/usr/bin/env bash
# Builds the GPU check bundle (doc/cuda.md "Running the check on a bare node"): depthbench and
# the gpu test programs for sm_90, every non-system shared library they load (HDF5, Boost,
# OpenBLAS, ICU, zlib, zstd, OpenMP, Open MPI with its plugins, PMIx and help files), h5dump,
# and the scripts and inputs of tests/gpu/check.sh, in one folder that runs on a GPU node with
# none of the project's dependencies:
#   DIR/env.sh            `source DIR/env.sh`: unpack once, PATH, CUDA libraries of the node, MPI
#   DIR/check.sh          runs DIR's copy of tests/gpu/check.sh --bundle DIR
#   DIR/payload.tar.zst   everything else (unpacked into DIR/root)
#   DIR/tools/            zstd and its libraries, uncompressed (a bare node may have no zstd)
# The CUDA libraries (cuBLAS, cuBLASLt, NCCL...) are not bundled: env.sh finds them on the node.
# System libraries every Linux node has (glibc, libstdc++, libgcc_s) are not bundled either.
#
# usage: tests/gpu/bundle.sh [--out DIR] [--from-build BUILD]
#   --out DIR           the bundle folder (default <repo>/build-bundle/bundle); replaced
#   --from-build BUILD  gather from a configured and built tree instead of building one (it must
#                       have the CUDA backend for sm_90 and the gpu test programs built)
# Environment: BUILD (own build folder, default <repo>/build-bundle/build), JOBS, MAX_MIB (40).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT_DIR=$ROOT/build-bundle/bundle
FROM_BUILD=""
while (($#)); do
  case $1 in
    --out) OUT_DIR=$2; shift 2 ;;
    --from-build) FROM_BUILD=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bundle.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
MAX_MIB=${MAX_MIB:-40}
say() { echo "[bundle] $*"; }
die() { echo "[bundle] ERROR: $*" >&2; exit 1; }
# The gpu test programs, and the CUDA instance of the backend conformance suite (tests/backend).
GPU_TESTS="$(cd "$ROOT/tests/gpu" && ls *_test.cpp | sed 's/\.cpp$//') backend_conformance_cuda"

# 1. The programs, for Hopper (sm_90).
if [[ -z $FROM_BUILD ]]; then
  BUILD=${BUILD:-$ROOT/build-bundle/build}
  launcher=()
  command -v ccache >/dev/null &&
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  say "configuring $BUILD (DEPTHBENCH_CUDA=ON, sm_90)"
  cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDEPTHBENCH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 "${launcher[@]}" >/dev/null
  say "building depthbench and the gpu tests"
  # shellcheck disable=SC2086  # one target per word
  cmake --build "$BUILD" -j "${JOBS:-$(nproc)}" --target depthbench $GPU_TESTS >/dev/null
else
  BUILD=$(cd "$FROM_BUILD" && pwd)
fi
[[ -f $BUILD/CMakeCache.txt ]] || die "$BUILD is not a CMake build folder"
for t in depthbench $(printf 'tests/%s ' $GPU_TESTS); do
  [[ -x $BUILD/$t ]] || die "$BUILD/$t is missing (build it first; the gpu tests need the CUDA backend)"
done
# The machine code must be Hopper's: a build for another target would fall back to JIT-compiled
# PTX on the H200, or not run at all. cuobjdump reads it from the binary where the toolkit has
# it; else the CUDA flags of the build say it.
if command -v cuobjdump >/dev/null; then
  arch=$(cuobjdump --list-elf "$BUILD/depthbench" 2>/dev/null | grep -oE 'sm_[0-9]+a?' | sort -u | tr '\n' ' ' || true)
else
  arch=$(grep -rhoE --include=flags.make 'code=\[?[^] ]*' "$BUILD/src" 2>/dev/null |
         grep -oE 'sm_[0-9]+a?' | sort -u | tr '\n' ' ' || true)
fi
[[ " $arch" == *" sm_90 "* || " $arch" == *" sm_90a "* ]] ||
  die "$BUILD builds no sm_90 machine code (found: ${arch:-none}); configure with -DCMAKE_CUDA_ARCHITECTURES=90"

# 2. The staging tree that becomes DIR/root.
STAGE=$OUT_DIR.stage
rm -rf "$STAGE" && mkdir -p "$STAGE"/root/{bin,libexec,lib,tree}
R=$STAGE/root
cp "$BUILD/depthbench" "$R/libexec/"
for t in $GPU_TESTS; do cp "$BUILD/tests/$t" "$R/libexec/"; done
echo "$GPU_TESTS" >"$R/gpu-tests.txt"  # the programs check.sh runs in its ops stage
for tool in h5dump h5ls; do
  p=$(command -v "$tool") || die "$tool not found (apt-get install hdf5-tools)"
  cp -L "$p" "$R/libexec/"
done

# Open MPI laid out as under /usr, so that OPAL_PREFIX=root/ompi/usr finds its plugins
# (lib/x86_64-linux-gnu/openmpi/lib/openmpi3) and help files (share/openmpi); PMIx likewise
# under its own prefix (lib/x86_64-linux-gnu/pmix2). Plugins for fabrics a single-node check never
# uses (UCX, OFI/libfabric, verbs, PSM, OpenSHMEM) are left out with their large libraries.
OMPI=$R/ompi/usr
ompi_plugins=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
pmix_prefix=/usr/lib/x86_64-linux-gnu/pmix2
[[ -d $ompi_plugins ]] || die "Open MPI plugins not found in $ompi_plugins (Debian's openmpi-bin)"
mkdir -p "$OMPI/bin" "$OMPI/share" "$OMPI/${ompi_plugins#/usr/}" "$OMPI/${pmix_prefix#/usr/}/lib"
cp -L /usr/bin/orterun /usr/bin/orted "$OMPI/bin/"
cp -r /usr/share/openmpi "$OMPI/share/"
skip='libuc[pmst]|libmca_common_(ucx|ofi|verbs)|libpsm|libinfinipath|libibverbs|librdmacm|libfabric|libefa|libnl-|liboshmem'
kept=0 dropped=0
for so in "$ompi_plugins"/*.so; do
  if ldd "$so" | grep -Eq "$skip"; then dropped=$((dropped + 1)); continue; fi
  cp "$so" "$OMPI/${ompi_plugins#/usr/}/" && kept=$((kept + 1))
done
say "Open MPI plugins: $kept kept, $dropped for unused fabrics left out"
cp -r "$pmix_prefix/share" "$OMPI/${pmix_prefix#/usr/}/"
if [[ -d $pmix_prefix/lib/pmix ]]; then
  mkdir -p "$OMPI/${pmix_prefix#/usr/}/lib/pmix"
  for so in "$pmix_prefix"/lib/pmix/*.so; do
    ldd "$so" | grep -Eq "$skip" || cp "$so" "$OMPI/${pmix_prefix#/usr/}/lib/pmix/"
  done
fi

# 3. The shared-library closure of every program and plugin (ldd lists it transitively).
system_re='^(linux-vdso|ld-linux|libc\.so|libm\.so|libmvec|libpthread|libdl\.so|librt\.so|libutil\.so|libresolv|libnsl|libanl|libstdc\+\+|libgcc_s)'
cuda_re='^lib(cublas|cublasLt|nccl|cudart|cudnn[a-z_]*|cufft|curand|cusolver|cusparse|nvJitLink|nvrtc|cuda)\.so'
: >"$R/cuda-libs.txt"
missing=()
while read -r name path; do
  if [[ $name =~ $system_re ]]; then continue; fi
  if [[ $name =~ $cuda_re ]]; then
    [[ $name == libcuda.so* ]] || echo "$name" >>"$R/cuda-libs.txt"  # the driver comes with the node
    continue
  fi
  [[ $path == "not" || -z $path ]] && { missing+=("$name"); continue; }
  [[ -e $R/lib/$name ]] || cp -L "$path" "$R/lib/$name"
done < <(find "$R/libexec" "$R/ompi" -type f \( -name '*.so' -o -perm -u+x \) -print0 |
         xargs -0 -n 20 ldd 2>/dev/null | awk '$2 == "=>" {print $1, $3}' | sort -u)
((${#missing[@]} == 0)) || die "libraries not found by ldd: ${missing[*]}"
sort -u -o "$R/cuda-libs.txt" "$R/cuda-libs.txt"
# Loaded with dlopen, so ldd does not see them: cuDNN (the fused attention; without it
# train.attention = auto falls back, ops/cuda/cudnn_library.cpp) with the libraries it opens
# itself, and NVRTC for its runtime-compiled engines. env.sh looks for them like the others
# but reports a missing one as optional.
printf '%s\n' libcudnn.so.9 libcudnn_graph.so.9 libcudnn_engines_precompiled.so.9 \
  libcudnn_engines_runtime_compiled.so.9 libcudnn_heuristic.so.9 libnvrtc.so.13 libnvrtc.so.12 \
  >"$R/cuda-optional-libs.txt"
say "libraries: $(ls "$R/lib" | wc -l) bundled ($(du -sh "$R/lib" | cut -f1)); from the node: $(tr '\n' ' ' <"$R/cuda-libs.txt")"

# 4. Wrappers on PATH: each real program runs with the bundle's libraries, the shell does not.
wrapper() {  # NAME TARGET (relative to root)
  cat >"$R/bin/$1" <<EOF
#!/bin/sh
# DepthBench bundle: $2 with the bundle's libraries (env.sh sets DB_BUNDLE_LD_PATH).
r=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH="\${DB_BUNDLE_LD_PATH:-\$r/lib}\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$r/$2" "\$@"
EOF
  chmod +x "$R/bin/$1"
}
for p in "$R"/libexec/*; do wrapper "$(basename "$p")" "libexec/$(basename "$p")"; done
for p in mpirun mpiexec orterun; do wrapper "$p" ompi/usr/bin/orterun; done
wrapper orted ompi/usr/bin/orted

# 5. The scripts and inputs of the check, in the repository's layout (check.sh finds them from
# its own place), and a small text corpus for the CPU and sweep stages.
for f in tests/gpu/check.sh tests/gpu/scale_parity.py tests/gpu/hf_interop.py \
         tests/gpu/bundle_env.sh tests/reference/depthbench_reference.py \
         tests/io/hf_llama_reference.py bench/pytorch_reference.py bench/gpu_speed.sh \
         bench/speed_table.py input/main400m.ini input/validation1p6b.ini; do
  mkdir -p "$R/tree/$(dirname "$f")" && cp "$ROOT/$f" "$R/tree/$f"
done
mkdir -p "$R/tree/data"
cat "$ROOT"/README.md "$ROOT"/doc/*.md >"$R/tree/data/corpus.txt"
commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo "+changes" || true)
echo "commit $commit$dirty, built $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), CUDA ${arch% }" \
  >"$R/VERSION"

# 6. The folder: compressed payload, zstd to unpack it, env.sh, check.sh.
rm -rf "$OUT_DIR" && mkdir -p "$OUT_DIR/tools"
say "compressing $(du -sh "$R" | cut -f1) with zstd"
tar -C "$R" -cf - . | zstd -q -"${ZSTD_LEVEL:-12}" --long=27 -T0 -o "$OUT_DIR/payload.tar.zst"
zstd_bin=$(command -v zstd)
cp -L "$zstd_bin" "$OUT_DIR/tools/zstd"
ldd "$zstd_bin" | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
  [[ $name =~ $system_re ]] || cp -L "$path" "$OUT_DIR/tools/$name"
done
cp "$ROOT/tests/gpu/bundle_env.sh" "$OUT_DIR/env.sh"
cat >"$OUT_DIR/check.sh" <<'EOF'
#!/usr/bin/env bash
# Runs the bundle's copy of tests/gpu/check.sh on this bundle (doc/cuda.md).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/env.sh" || exit 1
export DB_BUNDLE_SOURCED=$here
exec "$here/root/tree/tests/gpu/check.sh" --bundle "$here" "$@"
EOF
chmod +x "$OUT_DIR/check.sh"
cp "$R/VERSION" "$OUT_DIR/VERSION"
rm -rf "$STAGE"
size_kib=$(du -sk "$OUT_DIR" | cut -f1)
say "bundle $OUT_DIR: $((size_kib / 1024)) MiB on disk ($(cat "$OUT_DIR/VERSION"))"
((size_kib <= MAX_MIB * 1024)) || die "the bundle is $((size_kib / 1024)) MiB, over $MAX_MIB MiB"
