#!/usr/bin/env bash
# Builds cuzk-bench with the CUDA backend and supraseal-c2 on this (GPU-less)
# machine and stages a stripped copy in .gpu/ for the device tool to carry.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/install-cuda.sh)"
CARGO_TARGET_DIR=target-cuda cargo build --release -p cuzk-bench --features "${FEATURES:-cuda}"
mkdir -p .gpu
strip -o .gpu/cuzk-bench target-cuda/release/cuzk-bench
xz -T2 -6 -f .gpu/cuzk-bench
ls -la .gpu/
