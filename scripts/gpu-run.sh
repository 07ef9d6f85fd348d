#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), with the binary built
# here by scripts/gpu-build.sh carried in .gpu/:
#   scripts/gpu-run.sh check            correctness checks (gpu-check)
#   scripts/gpu-run.sh bench K...       gpu-bench at 2^K (SUPRASEAL=1: beside supraseal-c2,
#                                       which needs a binary built with FEATURES=supraseal)
#   scripts/gpu-run.sh probe            where a hanging GPU MSM stops (cuda-gdb, memcheck)
#   scripts/gpu-run.sh fullscale        32 GiB-shaped PoRep proofs (10 x 2^27) through the
#                                       embedded engine, beside supraseal-c2 (FEATURES=supraseal
#                                       build), with peaks and a timeline chart; one GPU
#                                       (GPU=0); COUNT proofs, BUDGET GiB, SUPRASEAL_PER_CALL
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
  probe)
    # Where does a GPU MSM stop? Every thread's stack after 40 s (host side:
    # a wait in cudaStreamSynchronize means a kernel that does not finish),
    # the CUDA kernels running then, and a memcheck pass.
    timeout -s INT 40 cuda-gdb -batch -ex run -ex "thread apply all bt 12" -ex "info cuda kernels" \
      --args "$bin" gpu-check --only msm --msm-sizes "${PROBE_N:-4103}" 2>&1 | tail -300 | tee "$out/probe-gdb.log"
    timeout 120 compute-sanitizer --tool memcheck "$bin" gpu-check --only msm --msm-sizes "${PROBE_N:-4103}" \
      2>&1 | tail -100 | tee "$out/probe-sanitizer.log"
    ;;
  fullscale)
    export CUDA_VISIBLE_DEVICES=${GPU:-0}
    cache=/tmp/cuzk-shaped; mkdir -p "$cache"
    df -h /tmp | tail -1
    cat /sys/kernel/mm/transparent_hugepage/enabled; ldd --version | head -1
    # A small run first: the same path at 2^20, supraseal's bytes compared.
    [ -n "${SKIP_SMALL:-}" ] || timeout 180 "$bin" batch --type shaped --log2 20 --partitions 4 --count 2 \
      --concurrency 2 --embedded --param-cache "$cache" --memory-budget-gib 8 --warmup --supraseal 1 2>&1 | tee "$out/small.log"
    ( time "$bin" gen-srs --shape porep-32g --shape-seed 0 --out "$cache" ) 2>&1 | tee "$out/gen-srs.log"
    ls -la "$cache"; free -g | head -2
    ( while sleep 2; do nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader; done ) \
      >"$out/nvidia-smi-samples.csv" 2>&1 &
    sampler=$!
    # glibc backs its large (mmapped) allocations with transparent huge
    # pages: 4 KiB page faults on the 17 GB of every 2^27 partition cost
    # more than the witness generation itself (BENCHMARKS.md).
    GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.hugetlb=1} CUZK_LOG=${CUZK_LOG:-info} timeout "${FULL_TIMEOUT:-420}" "$bin" batch --type shaped --shape porep-32g \
      --embedded --param-cache "$cache" --count "${COUNT:-3}" --concurrency 2 --warmup \
      --partition-workers "${PW:-2}" --prover-workers "${PROVERS:-2}" --memory-budget-gib "${BUDGET:-100}" \
      --supraseal "${SUPRASEAL_PROOFS:-1}" ${SUPRASEAL_PER_CALL:+--supraseal-per-call $SUPRASEAL_PER_CALL} \
      2>"$out/engine.log" | tee "$out/batch.log"
    echo "batch exit: ${PIPESTATUS[0]}"
    kill $sampler
    "$bin" timeline --log "$out/engine.log" --out "$out/timeline-fullscale.svg" 2>&1 | tee "$out/timeline.txt"
    grep -v TIMELINE "$out/engine.log" | tail -40
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
