#!/usr/bin/env bash
# Installs the CUDA 13.0 compiler from PyPI into .cuda/ (no GPU needed) and
# prints the environment to build with `--features cuda`:
#   eval "$(scripts/install-cuda.sh)"
#   cargo build --release --features cuda
# Versions are pinned: the H200 machine's driver 580 (CUDA 13.0) cannot JIT
# newer PTX, and an unpinned nvidia-nvvm pulls a cicc newer than this ptxas.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cuda"
cuda="$dir/nvidia/cu13"
if [ ! -x "$cuda/bin/nvcc" ]; then
  python3 -m pip install --quiet --disable-pip-version-check --target "$dir" \
    "nvidia-cuda-nvcc==13.0.88" "nvidia-nvvm==13.0.88" "nvidia-cuda-crt==13.0.88" \
    "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-cccl==13.0.85" >&2
fi
# The wheels put libraries in lib/; nvcc links from lib64/ and the cc crate
# looks under targets/x86_64-linux/.
[ -e "$cuda/lib64" ] || ln -s lib "$cuda/lib64"
mkdir -p "$cuda/targets/x86_64-linux"
[ -e "$cuda/targets/x86_64-linux/lib" ] || ln -s ../../lib "$cuda/targets/x86_64-linux/lib"
[ -e "$cuda/targets/x86_64-linux/include" ] || ln -s ../../include "$cuda/targets/x86_64-linux/include"
echo "export CUDA_PATH=$cuda"
echo "export PATH=$cuda/bin:\$PATH"
# Hopper (H100/H200) code plus PTX for newer GPUs of the same major version.
echo "export NVCC_APPEND_FLAGS='-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90'"
