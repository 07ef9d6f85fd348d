#!/usr/bin/env bash
# Runs every fuzz target (issue 12, item 9) for ITERS inputs each (default
# 1,000,000), one target at a time so each has every core, and prints each
# target's counts: inputs, accepted, refused, panics (always 0: a panic, or
# a panic caught inside the Filecoin crates, fails the run naming the seed
# and the input to reproduce it), time and rate.
# Usage: scripts/fuzz.sh [ITERS] [TARGET...]
#   CUZK_FUZZ_SEED=<n> picks another run (default: the tests' fixed seed);
#   TARGETs are test names (e.g. fuzz_porep_c1), default all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
iters=${1:-1000000}
shift || true

# package  test-name
all_targets=(
  "cuzk-core fuzz_params_files"
  "cuzk-core fuzz_vk_files"
  "cuzk-core fuzz_circuit_id_parsers"
  "cuzk-synthetic fuzz_synthetic_specs"
  "cuzk-synthetic fuzz_benchmark_circuit_ids"
  "cuzk-filecoin fuzz_porep_c1"
  "cuzk-filecoin fuzz_post_vanilla_proofs"
  "cuzk-filecoin fuzz_snap_vanilla_proofs"
  "cuzk-filecoin fuzz_filecoin_circuit_ids"
  "cuzk-daemon fuzz_unix_socket_header_blocks"
)
targets=()
for t in "${all_targets[@]}"; do
  name=${t#* }
  if [ $# -eq 0 ] || [[ " $* " == *" $name "* ]]; then targets+=("$t"); fi
done
[ ${#targets[@]} -gt 0 ] || { echo "no such target: $*" >&2; exit 2; }

report=$(mktemp)
log=$(mktemp)
trap 'rm -f "$report" "$log"' EXIT
cargo test --release -p cuzk-core -p cuzk-synthetic -p cuzk-filecoin -p cuzk-daemon --test fuzz --no-run

echo "fuzzing: $iters inputs per target, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')," \
  "$(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)"
started=$(date +%s)
for t in "${targets[@]}"; do
  package=${t% *}
  name=${t#* }
  if ! CUZK_FUZZ_ITERS=$iters CUZK_FUZZ_REPORT=$report \
    cargo test --release -q -p "$package" --test fuzz -- --exact "$name" --nocapture >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "FAILED: $package $name" >&2
    exit 1
  fi
  grep -E '^fuzz ' "$log"
done
echo
echo "summary ($(( $(date +%s) - started )) s):"
cat "$report"
