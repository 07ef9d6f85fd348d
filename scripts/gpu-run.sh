#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), with the binary built
# here by scripts/gpu-build.sh carried in .gpu/:
#   scripts/gpu-run.sh check            correctness checks (gpu-check)
#   scripts/gpu-run.sh bench K...       gpu-bench beside supraseal-c2 at 2^K
# Logs go to $OUT (or ./gpu-logs when run by hand).
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
bin=/tmp/cuzk-bench
# Carried xz-compressed: the stripped binary (two sppark-based CUDA libraries,
# fat binaries for several GPU generations) is over the carry limit.
xz -dc .gpu/cuzk-bench.xz >"$bin" && chmod +x "$bin" || exit 1
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.max.sm --format=csv >"$out/nvidia-smi.txt" 2>&1
cat "$out/nvidia-smi.txt"
nproc; free -g | head -2
mode=${1:-check}; shift || true
case "$mode" in
  check)
    timeout "${CHECK_TIMEOUT:-240}" "$bin" gpu-check --max-log2 "${MAX_LOG2:-22}" 2>&1 | tee "$out/gpu-check.log"
    ;;
  bench)
    args=()
    for k in "$@"; do args+=(--log2 "$k"); done
    timeout "${BENCH_TIMEOUT:-420}" "$bin" gpu-bench "${args[@]}" ${SUPRASEAL:+--supraseal} --repeat "${REPEAT:-3}" --dir /tmp/cuzk-gpu-bench 2>&1 | tee "$out/gpu-bench.log"
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
