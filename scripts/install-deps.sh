#!/usr/bin/env bash
# Installs DepthBench's system packages on Debian/Ubuntu when run as root (or with sudo);
# otherwise prints the exact command to run. Safe to run again: only missing packages are
# installed.
set -euo pipefail

packages=(
  build-essential cmake git pkg-config
  libopenmpi-dev openmpi-bin            # MPI
  libhdf5-dev hdf5-tools                # run files, h5dump
  libboost-program-options-dev libboost-test-dev
  libboost-context-dev                  # fibers: the emulated GPU's threads (doc/cuda.md)
  ccache                                # build cache: the emulated build reuses the main one's objects
  libopenblas-openmp-dev                # CPU BLAS (OpenMP build)
  libicu-dev                            # Unicode categories for the BPE pre-tokenizer
  zlib1g-dev libzstd-dev gzip zstd      # .gz / .zst tokenize input (the CLIs for its tests)
  fortunes                              # the bundled demo corpus
  python3 python3-numpy python3-h5py python3-matplotlib python3-pytest  # postprocess
  python3-torch                         # the PyTorch reference the tests compare against
  debootstrap                           # the bare Debian root of the GPU bundle test (doc/cuda.md)
)
# The independent GPT-2 encoder of the tokenizer test runs on Node.js; a machine may already have
# node and npm from elsewhere (e.g. NodeSource), whose nodejs package conflicts with Debian's npm.
command -v npm >/dev/null || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO="sudo"
else
  echo "DepthBench needs these Debian packages; please run:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
