#!/usr/bin/env bash
# Builds, on this (GPU-less) machine, what the GPU machine runs and stages
# stripped, xz-compressed copies in .gpu/ for the device tool to carry:
# cuzk-bench, cuzk-daemon and cuzk-ctl with the CUDA backend (FEATURES, default "cuda"; add
# "supraseal" for the side-by-side runs) and the GPU test binaries of
# cuzk-sys and cuzk-core (`scripts/gpu-run.sh check` runs them). The bench
# binary is built with PROFILE (default "production": fat LTO, what operators
# run; "release" builds faster); the tests with release.
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/install-cuda.sh)"
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-target-cuda}
profile=${PROFILE:-production}
# The daemon too, for `scripts/gpu-run.sh coldstart` (daemon start to first
# proof), and the operator's tool (status, timeline charts), in one build
# with the bench: one feature set, so the CUDA code is compiled once (the
# daemon here carries the bench's measurement features, which it never
# calls).
features=$(for f in ${FEATURES:-cuda}; do printf 'cuzk-bench/%s,' "$f"; done)
cargo build --profile "$profile" -p cuzk-bench -p cuzk-daemon -p cuzk-ctl --features "${features%,}"
rm -rf .gpu && mkdir -p .gpu
strip -o .gpu/cuzk-bench "$CARGO_TARGET_DIR/$profile/cuzk-bench"
strip -o .gpu/cuzk-daemon "$CARGO_TARGET_DIR/$profile/cuzk-daemon"
strip -o .gpu/cuzk-ctl "$CARGO_TARGET_DIR/$profile/cuzk-ctl"
# The GPU tests: cargo prints each test executable it builds.
tests=$(cargo test --release --features cuzk-core/cuda,cuzk-core/fault-injection,cuzk-sys/cuda -p cuzk-sys -p cuzk-core -p cuzk-filecoin \
  --test gpu --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["package_id"].split("#")[0].rsplit("/", 1)[-1] + " " + m["executable"])')
echo "$tests" | while read -r package exe; do
  strip -o ".gpu/gpu-test-$package" "$exe"
done
for f in .gpu/cuzk-bench .gpu/cuzk-daemon .gpu/cuzk-ctl .gpu/gpu-test-*; do xz -T2 -6 -f "$f"; done
ls -la .gpu/
