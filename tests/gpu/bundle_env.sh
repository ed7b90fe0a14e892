# DepthBench GPU bundle: `source DIR/env.sh` (doc/cuda.md "Running the check on a bare node").
# Copied into the bundle by tests/gpu/bundle.sh as env.sh. It
#  1. unpacks payload.tar.zst once into DIR/root (the zstd it needs travels uncompressed in
#     DIR/tools), again only when the payload changed;
#  2. puts bin/ first on PATH: depthbench, mpirun, h5dump and the gpu test programs, as small
#     wrappers that give the real programs (libexec/) the bundle's libraries. The libraries are
#     not exported to the whole shell, so the node's own python3 (torch, h5py) keeps its own
#     zlib, ICU, OpenMP...;
#  3. finds the CUDA libraries the programs need (listed in cuda-libs.txt: cuBLAS, cuBLASLt,
#     NCCL...; and in cuda-optional-libs.txt the ones opened at run time, cuDNN and NVRTC,
#     whose absence is only reported), which are NOT bundled, on the node: $CUDA_HOME, $LD_LIBRARY_PATH, ldconfig's
#     cache, /usr/local/cuda, then the NVIDIA wheels of whatever python3 exists
#     (site-packages/nvidia/*/lib), and says which file it uses;
#  4. sets up Open MPI to run ranks on this node alone, without ssh, as root (OPAL_PREFIX,
#     plm isolated, shared-memory transport).
# Exports DB_BUNDLE (DIR), DB_BUNDLE_ROOT (DIR/root), DB_BUNDLE_LD_PATH (what the wrappers put
# first on LD_LIBRARY_PATH) and DB_BUNDLE_CUDA_MISSING (sonames not found, empty when all are).
# Works under bash and POSIX sh (dash).

db_env_main() {
  DB_BUNDLE=$1
  DB_BUNDLE_ROOT=$DB_BUNDLE/root
  export DB_BUNDLE DB_BUNDLE_ROOT
  local stamp sum
  sum=$(cksum <"$DB_BUNDLE/payload.tar.zst" | cut -d' ' -f1)
  stamp=$DB_BUNDLE_ROOT/.payload-cksum
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$sum" ]; then
    echo "env: unpacking $DB_BUNDLE/payload.tar.zst (once)" >&2
    rm -rf "$DB_BUNDLE_ROOT.tmp" && mkdir -p "$DB_BUNDLE_ROOT.tmp" || return 1
    LD_LIBRARY_PATH="$DB_BUNDLE/tools" "$DB_BUNDLE/tools/zstd" -q -dc --long=27 "$DB_BUNDLE/payload.tar.zst" |
      tar -x -C "$DB_BUNDLE_ROOT.tmp" || { echo "env: unpacking failed" >&2; return 1; }
    echo "$sum" >"$DB_BUNDLE_ROOT.tmp/.payload-cksum"
    rm -rf "$DB_BUNDLE_ROOT" && mv "$DB_BUNDLE_ROOT.tmp" "$DB_BUNDLE_ROOT" || return 1
  fi

  # CUDA libraries of the node: the first directory of the search order that holds each one.
  local cuda_dirs="" missing="" soname dir found candidates py
  candidates=""
  for dir in ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/targets/x86_64-linux/lib}; do
    candidates="$candidates $dir"
  done
  candidates="$candidates $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' ')"
  candidates="$candidates $(ldconfig -p 2>/dev/null | sed -n 's/.* => \(.*\)\/[^/]*$/\1/p' | sort -u | tr '\n' ' ')"
  candidates="$candidates /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib"
  for py in python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    candidates="$candidates $("$py" -c 'import site, glob
for p in site.getsitepackages() + [site.getusersitepackages()]:
    print(" ".join(sorted(glob.glob(p + "/nvidia/*/lib") + glob.glob(p + "/nvidia/*/*/lib"))))' 2>/dev/null | tr '\n' ' ')"
  done
  local optional
  for soname in $(cat "$DB_BUNDLE_ROOT/cuda-libs.txt") \
                $(sed 's/$/:optional/' "$DB_BUNDLE_ROOT/cuda-optional-libs.txt" 2>/dev/null); do
    optional=""
    case $soname in *:optional) soname=${soname%:optional}; optional=1 ;; esac
    found=""
    for dir in $candidates; do
      if [ -e "$dir/$soname" ]; then found=$dir; break; fi
    done
    if [ -n "$found" ]; then
      echo "env: $soname from $(readlink -f "$found/$soname")" >&2
      case ":$cuda_dirs:" in *":$found:"*) ;; *) cuda_dirs=${cuda_dirs:+$cuda_dirs:}$found ;; esac
    elif [ -n "$optional" ]; then
      echo "env: $soname not found (optional, opened at run time by the cuDNN attention; train.attention = auto falls back without it)" >&2
    else
      echo "env: $soname NOT FOUND (set CUDA_HOME or LD_LIBRARY_PATH; GPU programs will not start)" >&2
      missing="${missing:+$missing }$soname"
    fi
  done
  DB_BUNDLE_CUDA_MISSING=$missing
  DB_BUNDLE_LD_PATH=$DB_BUNDLE_ROOT/lib${cuda_dirs:+:$cuda_dirs}
  export DB_BUNDLE_CUDA_MISSING DB_BUNDLE_LD_PATH

  # Open MPI from the bundle: its plugins and help files under OPAL_PREFIX, PMIx's beside them.
  # plm isolated starts ranks on this node only (no ssh/rsh); vader needs no network and no
  # cross-memory attach (refused in many containers).
  export OPAL_PREFIX=$DB_BUNDLE_ROOT/ompi/usr
  local pmix=$DB_BUNDLE_ROOT/ompi/usr/lib/x86_64-linux-gnu/pmix2
  export PMIX_PREFIX=$pmix PMIX_EXEC_PREFIX=$pmix PMIX_LIBDIR=$pmix/lib PMIX_PKGLIBDIR=$pmix/lib/pmix
  export PMIX_DATADIR=$pmix/share PMIX_PKGDATADIR=$pmix/share/pmix
  export PMIX_MCA_mca_base_component_path=$pmix/lib/pmix PMIX_MCA_pcompress_base_silence_warning=1
  export OMPI_MCA_plm=isolated OMPI_MCA_plm_rsh_agent=false OMPI_MCA_orte_rsh_agent=false
  export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Session files and the shared-memory segments in TMPDIR: a container's /dev/shm can be tiny.
  export OMPI_MCA_orte_tmpdir_base=${TMPDIR:-/tmp} OMPI_MCA_btl_vader_backing_directory=${TMPDIR:-/tmp}
  case ":$PATH:" in *":$DB_BUNDLE_ROOT/bin:"*) ;; *) PATH=$DB_BUNDLE_ROOT/bin:$PATH ;; esac
  export PATH
  echo "env: DepthBench bundle $(cat "$DB_BUNDLE_ROOT/VERSION" 2>/dev/null) ready; programs: $(ls "$DB_BUNDLE_ROOT/bin" | tr '\n' ' ')" >&2
}

if [ -n "${BASH_SOURCE:-}" ]; then
  db_env_main "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
else
  # POSIX sh has no way to name the sourced file: DB_BUNDLE must be set by the caller.
  db_env_main "${DB_BUNDLE:?set DB_BUNDLE=DIR before sourcing DIR/env.sh from sh}"
fi
