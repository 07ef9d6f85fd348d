#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool), with the binary built
# here by scripts/gpu-build.sh carried in .gpu/:
#   scripts/gpu-run.sh check            the GPU tests of cuzk-sys and cuzk-core (cargo test --features cuda)
#   scripts/gpu-run.sh bench K...       gpu-bench at 2^K (SUPRASEAL=1: beside supraseal-c2,
#                                       which needs a binary built with FEATURES=supraseal;
#                                       THROUGHPUT=N: N partitions from two threads, a, b, c
#                                       uploaded in the region beside uploaded ahead;
#                                       HMSM=1: the H MSM, sppark's beside cuzk's wide kernel;
#                                       HMSM_PLANS="4:3 3:4": also under these affine round plans;
#                                       NTTSBESIDE=1: the region again with the NTTs beside
#                                       the other MSMs too (Tuning::ntts_beside);
#                                       HSERIAL=1: the region again with the wide H MSM before,
#                                       not beside, the other MSMs)
#   scripts/gpu-run.sh soak             COUNT (1000) small proofs in a row, RSS and VRAM sampled
#   scripts/gpu-run.sh fullscale        32 GiB-shaped PoRep proofs (10 x 2^27) through the
#                                       embedded engine, beside supraseal-c2 (FEATURES=supraseal
#                                       build), with peaks and a timeline chart; one GPU
#                                       (GPU=0); COUNT proofs, BUDGET GiB (56; 100 with HOST_ABC),
#                                       SUPRASEAL_PER_CALL;
#                                       a, b, c computed on the GPU from the shaped R1CS
#                                       (HOST_ABC=1: on the host, uploaded);
#                                       CUZK_GPU_MEMORY_CAP_GIB=16: as a 16 GiB card (both provers)
#   scripts/gpu-run.sh witness          one real-structure partition's host side on this host's
#                                       cores (real-synthesis: sequential witness, by units,
#                                       a, b, c, bellperson's own synthesis); PROOFS (porep-32g)
#   scripts/gpu-run.sh native           each PROOFS' (porep-32g snap-32g window-post-32g) native
#                                       witness alone, RUNS (3) times, with glibc's huge pages
#                                       and without, and Poseidon one hash at a time beside the
#                                       IFMA lanes (real-synthesis --native-only); BESIDE: other
#                                       bench builds (.xz) run in turn, side by side
#                                       PATHS_ON_DEVICE=1: PoSt paths left to the prover (the host's part)
#   scripts/gpu-run.sh paths            PoSt paths left to the device: their GPU tests, a WindowPoSt
#                                       partition's paths finished on the device beside the host
#                                       (gpu-paths, RUNS (3)), the host's part with and without them
#   scripts/gpu-run.sh realc2           real-circuit C2 through the engine (real-c2), PASSES
#                                       (witness:3,host:1) in one process, BUDGET GiB (100),
#                                       a timeline chart per pass; REALC2_ARGS: more flags
#                                       (--sequential-slots N --pool-threads N)
#   scripts/gpu-run.sh postload         PoSt under load: a daemon proving COUNT real-structure PoRep
#                                       32 GiB proofs takes POSTS PoSt requests (POST, winning-post-32g)
#                                       one after another, each timed from submission
#   scripts/gpu-run.sh coldstart        daemon start to first proof (cold-start), a stand-in
#                                       parameter file of PROOF's (porep-32g) real sizes on disk,
#                                       with and without the R1CS file (needs .gpu/cuzk-daemon.xz)
# Logs go to $OUT (or ./gpu-logs when run by hand).
set -uo pipefail
out=${OUT:-gpu-logs}
mkdir -p "$out"
bin=/tmp/cuzk-bench
# Carried xz-compressed: the stripped binary (two sppark-based CUDA libraries,
# fat binaries for several GPU generations) is over the carry limit.
xz -dc .gpu/cuzk-bench.xz >"$bin" && chmod +x "$bin" || exit 1
# The operator's tool: status polls and timeline charts.
ctl=/tmp/cuzk-ctl
if [ -e .gpu/cuzk-ctl.xz ]; then xz -dc .gpu/cuzk-ctl.xz >"$ctl" && chmod +x "$ctl" || exit 1; fi
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.sm,clocks.max.sm --format=csv >"$out/nvidia-smi.txt" 2>&1
cat "$out/nvidia-smi.txt"
nproc; free -g | head -2
mode=${1:-check}; shift || true
case "$mode" in
  check)
    status=0
    for t in .gpu/gpu-test-*.xz; do
      name=$(basename "$t" .xz)
      xz -dc "$t" >"/tmp/$name" && chmod +x "/tmp/$name" || exit 1
      # --nocapture: a SKIPPED line must be seen (no device would pass vacuously).
      timeout "${CHECK_TIMEOUT:-900}" "/tmp/$name" --test-threads 1 --nocapture 2>&1 | tee "$out/$name.log"
      [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
      if grep -q SKIPPED "$out/$name.log"; then echo "FAIL: $name skipped on the GPU machine"; status=1; fi
    done
    echo "GPU tests: $([ $status -eq 0 ] && echo passed || echo FAILED)"
    [ $status -eq 0 ] || exit 1
    ;;
  bench)
    args=()
    for k in "$@"; do args+=(--log2 "$k"); done
    for p in ${HMSM_PLANS:-}; do args+=(--h-msm-plan "$p"); done
    timeout "${BENCH_TIMEOUT:-420}" "$bin" gpu-bench "${args[@]}" ${SUPRASEAL:+--supraseal} --repeat "${REPEAT:-3}" \
      ${THROUGHPUT:+--throughput $THROUGHPUT} ${HMSM:+--h-msm} ${NTTSBESIDE:+--ntts-beside} ${HSERIAL:+--h-serial} --json "$out/gpu-bench.json" --dir /tmp/cuzk-gpu-bench 2>&1 | tee "$out/gpu-bench.log"
    ;;
  soak)
    # Issue 12.10: many small proofs in a row on the GPU (embedded engine,
    # each verified), with the process's RSS and the device's used memory
    # sampled every second; the summary compares the first and last tenth.
    cache=/tmp/cuzk-soak; mkdir -p "$cache"
    "$bin" batch --embedded --type synthetic --log2 "${LOG2:-16}" --count 2 --concurrency 1 --param-cache "$cache" >/dev/null 2>&1
    "$bin" batch --embedded --type synthetic --log2 "${LOG2:-16}" --count "${COUNT:-1000}" --concurrency "${CONC:-4}" \
      --prover-workers 2 --param-cache "$cache" >"$out/soak-batch.log" 2>&1 &
    pid=$!
    echo "t_s,rss_mib,vram_used_mib" >"$out/soak-samples.csv"
    t=0
    while kill -0 $pid 2>/dev/null; do
      rss=$(awk '/VmRSS/ {print int($2/1024)}' /proc/$pid/status 2>/dev/null)
      vram=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
      [ -n "$rss" ] && echo "$t,$rss,$vram" >>"$out/soak-samples.csv"
      sleep 1; t=$((t+1))
    done
    wait $pid; rc=$?
    tail -25 "$out/soak-batch.log"
    python3 - "$out/soak-samples.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
n = max(1, len(rows) // 10)
first, last = rows[n:2*n] or rows[:n], rows[-n:]
avg = lambda rs, k: sum(float(r[k]) for r in rs) / len(rs)
print(f"soak: {len(rows)} samples; RSS MiB first tenth {avg(first,'rss_mib'):.0f}, last tenth {avg(last,'rss_mib'):.0f}, max {max(float(r['rss_mib']) for r in rows):.0f}")
print(f"soak: VRAM used MiB first tenth {avg(first,'vram_used_mib'):.0f}, last tenth {avg(last,'vram_used_mib'):.0f}, max {max(float(r['vram_used_mib']) for r in rows):.0f}")
PY
    echo "soak rc=$rc"
    ;;
  fullscale)
    export CUDA_VISIBLE_DEVICES=${GPU:-0}
    cache=/tmp/cuzk-shaped; mkdir -p "$cache"
    df -h /tmp | tail -1
    cat /sys/kernel/mm/transparent_hugepage/enabled; ldd --version | head -1
    # A small run first: the same path at 2^20, supraseal's bytes compared.
    [ -n "${SKIP_SMALL:-}" ] || timeout 180 "$bin" batch --type shaped --log2 20 --partitions 4 --count 2 \
      --concurrency 2 --embedded --param-cache "$cache" --memory-budget-gib 8 --warmup --supraseal 1 2>&1 | tee "$out/small.log"
    # Made once per machine: the 64 GiB disk holds one 44 GiB file, not a second beside it.
    [ -e "$cache/shaped-v1-n130278541-i327-s0.params" ] ||
      ( time "$bin" gen-srs --shape porep-32g --shape-seed 0 --out "$cache" ) 2>&1 | tee "$out/gen-srs.log"
    ls -la "$cache"; free -g | head -2
    ( while sleep 2; do nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader; done ) \
      >"$out/nvidia-smi-samples.csv" 2>&1 &
    sampler=$!
    # glibc backs its large (mmapped) allocations with transparent huge
    # pages: 4 KiB page faults on the 17 GB of every 2^27 partition cost
    # more than the witness generation itself (BENCHMARKS.md).
    # The budget covers everything the engine holds: the 45.6 GiB of
    # parameters, the R1CS (6.5 GiB) and the partitions in flight: 102 GiB
    # leaves room for 11 witnesses of 4.2 GiB; a host-side partition holds
    # 18 GiB, and the 128 GiB host has room for 4 of them beside the rest.
    budget=102; [ -z "${HOST_ABC:-}" ] || budget=120
    GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.hugetlb=1} CUZK_LOG=${CUZK_LOG:-info} timeout "${FULL_TIMEOUT:-420}" "$bin" batch --type shaped --shape porep-32g \
      --embedded --param-cache "$cache" --count "${COUNT:-3}" --concurrency 2 --warmup \
      --partition-workers "${PW:-2}" --prover-workers "${PROVERS:-2}" --memory-budget-gib "${BUDGET:-$budget}" \
      --supraseal "${SUPRASEAL_PROOFS:-1}" ${SUPRASEAL_PER_CALL:+--supraseal-per-call $SUPRASEAL_PER_CALL} ${HOST_ABC:+--host-abc} \
      2>"$out/engine.log" | tee "$out/batch.log"
    echo "batch exit: ${PIPESTATUS[0]}"
    kill $sampler
    "$ctl" timeline --log "$out/engine.log" --out "$out/timeline-fullscale.svg" 2>&1 | tee "$out/timeline.txt"
    grep -v TIMELINE "$out/engine.log" | tail -40
    ;;
  witness)
    for proof in ${PROOFS:-porep-32g}; do
      timeout "${WITNESS_TIMEOUT:-560}" "$bin" real-synthesis --proof "$proof" --skip synthesize ${WITNESS_ARGS:-} \
        >"$out/real-synthesis-$proof.json" 2>"$out/real-synthesis-$proof.log"
      echo "$proof exit: $?"; tail -4 "$out/real-synthesis-$proof.log"; cat "$out/real-synthesis-$proof.json"
    done
    ;;
  native)
    # The native witness alone on this host's cores, and Poseidon one hash
    # at a time against the IFMA lanes (real-synthesis --native-only).
    grep -o -m1 'avx512ifma' /proc/cpuinfo || echo "no avx512ifma on this host"
    # With glibc's huge pages (as deploy/systemd/cuzk.service runs the
    # daemon: a fresh witness vector is faulted in 2 MiB at a time) and
    # without them.
    # THREADS="4 16": the same with that many pool threads (RAYON_NUM_THREADS),
    # to tell the work's CPU time from idle workers' spinning.
    # BESIDE=".gpu-cpu/cuzk-bench-<commit>.xz ...": other builds of the bench
    # (plain release builds: the native witness needs no CUDA) run in turn
    # with the same loops, named by their file, for side-by-side figures.
    benches=$bin
    for other in ${BESIDE:-}; do
      label=$(basename "$other" .xz); xz -dc "$other" >"/tmp/$label" && chmod +x "/tmp/$label" || exit 1
      benches="$benches /tmp/$label"
    done
    for proof in ${PROOFS:-porep-32g snap-32g window-post-32g}; do
      for pages in ${PAGES:-huge plain}; do
        for threads in ${THREADS:-default}; do
          for b in $benches; do
            tunables=; [ "$pages" = huge ] && tunables=glibc.malloc.hugetlb=1
            name=native-witness-$proof-$pages; [ "$threads" = default ] || name=$name-$threads-threads
            [ "$b" = "$bin" ] || name=$name-$(basename "$b")
            pool=; [ "$threads" = default ] || pool=$threads
            GLIBC_TUNABLES=$tunables RAYON_NUM_THREADS=$pool timeout "${WITNESS_TIMEOUT:-300}" "$b" real-synthesis \
              --proof "$proof" --native-only "${RUNS:-3}" ${PATHS_ON_DEVICE:+--paths-on-device} \
              >"$out/$name.json" 2>"$out/$name.log"
            echo "$name exit: $?"; tail -3 "$out/$name.log"
            cat "$out/$name.json"
          done
        done
      done
    done
    ;;
  paths)
    # PoSt paths left to the device, in one call: the GPU tests of them
    # (the cuzk-filecoin test binary, filtered), a WindowPoSt 32 GiB
    # partition's paths (random values) finished on the device beside the
    # host's writer (cuzk-bench gpu-paths), and the host's part of the real
    # witness with and without them (real-synthesis --native-only).
    lscpu >"$out/lscpu.txt" 2>&1
    t=.gpu/gpu-test-cuzk-filecoin.xz
    if [ -e "$t" ]; then
      xz -dc "$t" >/tmp/gpu-test-cuzk-filecoin && chmod +x /tmp/gpu-test-cuzk-filecoin
      timeout "${CHECK_TIMEOUT:-240}" /tmp/gpu-test-cuzk-filecoin --test-threads 1 --nocapture paths_ 2>&1 | tee "$out/gpu-test-paths.log" | tail -15
    fi
    timeout "${PATHS_TIMEOUT:-240}" "$bin" gpu-paths --runs "${RUNS:-3}" >"$out/gpu-paths.json" 2>"$out/gpu-paths.log"
    echo "gpu-paths exit: $?"; tail -5 "$out/gpu-paths.log"; cat "$out/gpu-paths.json"
    for flag in "" --paths-on-device; do
      name=native-witness-window-post-32g${flag:+-paths-left}
      timeout "${WITNESS_TIMEOUT:-120}" "$bin" real-synthesis --proof window-post-32g --native-only 3 $flag \
        >"$out/$name.json" 2>"$out/$name.log"
      echo "$name exit: $?"; tail -2 "$out/$name.log"
    done
    ;;
  realc2)
    ( while sleep 2; do nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader; done ) \
      >"$out/nvidia-smi-samples.csv" 2>&1 &
    sampler=$!
    # The budget covers everything the engine holds: the 45.6 GiB of
    # parameters, the R1CS (6.5 GiB) and the partitions in flight: 102 GiB
    # leaves room for 11 witnesses of 4.2 GiB; a host-side partition holds
    # 18 GiB, and the 128 GiB host has room for 4 of them beside the rest.
    budget=102; [ -z "${HOST_ABC:-}" ] || budget=120
    GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.hugetlb=1} CUZK_LOG=${CUZK_LOG:-info} timeout "${REALC2_TIMEOUT:-560}" \
      "$bin" real-c2 --proof "${PROOF:-porep-32g}" --passes "${PASSES:-witness:3,host:1}" \
      --memory-budget-gib "${BUDGET:-118}" ${REALC2_ARGS:-} 2>"$out/engine.log" | tee "$out/real-c2.jsonl"
    echo "real-c2 exit: ${PIPESTATUS[0]}"
    kill $sampler
    # One chart per pass: the log between one "pass" line and the next.
    awk -v dir="$out" '/pass Pass/ {n++} n {print > (dir "/engine-pass" n ".log")}' "$out/engine.log"
    for log in "$out"/engine-pass*.log; do
      "$ctl" timeline --log "$log" --out "${log%.log}.svg" 2>&1 | tee "${log%.log}-timeline.txt"
    done
    grep -v TIMELINE "$out/engine.log" | grep -v UNVERIFI | tail -30
    ;;
  coldstart)
    # Issue 36: cuzk-daemon (carried as .gpu/cuzk-daemon.xz) from its start
    # to the first proof of PROOF (porep-32g), with a stand-in parameter
    # file of the real circuit's section sizes and the R1CS file on local
    # disk (gen-srs --real), preloaded as PRELOAD (Curio's name, porep-32g);
    # then again without the R1CS file. The page cache holds what gen-srs
    # just wrote (as much as the daemon's memory leaves).
    daemon=/tmp/cuzk-daemon
    xz -dc .gpu/cuzk-daemon.xz >"$daemon" && chmod +x "$daemon" || exit 1
    proof=${PROOF:-porep-32g}
    params=${PARAMS:-/tmp/cuzk-params}
    requests=/tmp/cuzk-requests
    mkdir -p "$params" "$requests"
    df -h "$params" | tail -1
    # R1CS_DIR: the R1CS file elsewhere (/dev/shm: the 64 GiB disk holds a
    # WindowPoSt 32 GiB parameter file but not its 10 GiB R1CS beside it).
    r1cs_dir=${R1CS_DIR:-$params}
    mkdir -p "$r1cs_dir"
    [ -e "$params/.$proof.made" ] ||
      { "$bin" gen-srs --real "$proof" --out "$params" --r1cs-dir "$r1cs_dir" 2>&1 | grep -v UNVERIFI |
        tee "$out/gen-srs-$proof.txt" && touch "$params/.$proof.made"; }
    df -h "$params" | tail -1
    "$bin" real-inputs --proof "$proof" --out "$requests" 2>&1 | grep -v UNVERIFI | tee "$out/real-inputs-$proof.txt"
    # "submit: cuzk-bench batch --type porep --c1 FILE [...]" -> the flags.
    flags=$(sed -n 's/.*submit: cuzk-bench batch \(--type [a-z-]* --[a-z0-9]* [^ ]*\).*/\1/p' "$out/real-inputs-$proof.txt")
    [ -n "$flags" ] || { echo "no request written for $proof"; exit 1; }
    printf '[daemon]\nlisten = "127.0.0.1:9820"\n[srs]\nparam_cache = "%s"\nr1cs_cache = "%s"\npreload = ["%s"]\n[benchmark]\nsynthetic = false\nallow_unverifiable = true\n' \
      "$params" "$r1cs_dir" "${PRELOAD:-porep-32g}" >/tmp/cuzk-coldstart.toml
    kind=${proof%-*}; size=${proof##*-}
    # COLD=1: a third run with the R1CS file (the second run wrote it
    # again) after the page cache is dropped.
    for run in r1cs-file no-r1cs-file ${COLD:+cold-r1cs-file}; do
      cache=warm
      [ "$run" = no-r1cs-file ] && rm -f "$r1cs_dir"/*.r1cs
      if [ "$run" = cold-r1cs-file ]; then
        sync; echo 3 >/proc/sys/vm/drop_caches && cache=cold || echo "could not drop the page cache"
      fi
      GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.hugetlb=1} timeout "${COLDSTART_TIMEOUT:-280}" \
        "$bin" cold-start --daemon "$daemon" --config /tmp/cuzk-coldstart.toml --proof "$kind" \
        --sector-size "$size" --page-cache "$cache" --daemon-log "$out/daemon-$proof-$run.log" \
        --addr http://127.0.0.1:9820 $flags --json "$out/cold-start-$proof-$run.json" 2>&1 | grep -v UNVERIFI
      echo "cold-start ($run) exit: ${PIPESTATUS[0]}"
    done
    ;;
  postload)
    # Issue 36.5: PoSt on time under load. cuzk-daemon preloads PoRep 32 GiB
    # and POST (winning-post-32g; Curio's name POST_PRELOAD, winning-32g)
    # from stand-in files of their real sizes (gen-srs --real, skipped when
    # a previous mode left them), COUNT (3) real-structure PoRep proofs keep
    # the GPU busy, and after POST_AFTER (30) s, POSTS (3) PoSt requests go
    # in one after another, each timed from its submission (single --json).
    daemon=/tmp/cuzk-daemon
    xz -dc .gpu/cuzk-daemon.xz >"$daemon" && chmod +x "$daemon" || exit 1
    params=${PARAMS:-/tmp/cuzk-params}
    post=${POST:-winning-post-32g}
    mkdir -p "$params"
    df -h "$params" | tail -1
    for proof in porep-32g "$post"; do
      [ -e "$params/.$proof.made" ] ||
        { "$bin" gen-srs --real "$proof" --out "$params" 2>&1 | grep -v UNVERIFI | tee "$out/gen-srs-$proof.txt" &&
          touch "$params/.$proof.made"; }
      mkdir -p "/tmp/cuzk-requests/$proof"
      "$bin" real-inputs --proof "$proof" --out "/tmp/cuzk-requests/$proof" 2>&1 | grep -v UNVERIFI >"$out/real-inputs-$proof.txt"
    done
    flags() { sed -n 's/.*submit: cuzk-bench batch \(--type [a-z-]* --[a-z0-9]* [^ ]*\).*/\1/p' "$out/real-inputs-$1.txt"; }
    printf '[daemon]\nlisten = "127.0.0.1:9820"\n[srs]\nparam_cache = "%s"\npreload = ["porep-32g", "%s"]\n[benchmark]\nsynthetic = false\nallow_unverifiable = true\n' \
      "$params" "${POST_PRELOAD:-winning-32g}" >/tmp/cuzk-postload.toml
    GLIBC_TUNABLES=${GLIBC_TUNABLES-glibc.malloc.hugetlb=1} CUZK_LOG=${CUZK_LOG:-info} \
      "$daemon" --config /tmp/cuzk-postload.toml >"$out/daemon-postload.log" 2>&1 &
    dpid=$!
    for _ in $(seq 300); do "$ctl" status --addr http://127.0.0.1:9820 >/dev/null 2>&1 && break; sleep 0.5; done
    ( while sleep 1; do nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader; done ) \
      >"$out/nvidia-smi-samples.csv" 2>&1 &
    sampler=$!
    timeout "${POSTLOAD_TIMEOUT:-420}" "$bin" batch --addr http://127.0.0.1:9820 $(flags porep-32g) --count "${COUNT:-3}" \
      --concurrency "${COUNT:-3}" --json "$out/postload-porep.json" >"$out/postload-porep.txt" 2>&1 &
    load=$!
    sleep "${POST_AFTER:-30}"
    for i in $(seq "${POSTS:-3}"); do
      timeout 120 "$bin" single --addr http://127.0.0.1:9820 $(flags "$post") --json "$out/postload-$post-$i.json" 2>&1 |
        grep -v UNVERIFI | tail -3
      sleep "${POST_GAP:-4}"
    done
    wait $load; echo "PoRep load exit: $?"; tail -8 "$out/postload-porep.txt"
    kill $sampler; kill -TERM $dpid; wait $dpid
    grep -E "preload|resident|declined" "$out/daemon-postload.log" | grep -v UNVERIFI | tail -20
    "$ctl" timeline --log "$out/daemon-postload.log" --out "$out/timeline-postload.svg" 2>&1 | tail -5
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
