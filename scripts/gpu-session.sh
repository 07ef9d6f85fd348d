#!/usr/bin/env bash
# One device call that measures the native witness on the GPU host's cores,
# then runs the GPU tests, and packs every log and report into
# $OUT/results.tgz (the device tool brings back a few files only).
#   scripts/gpu-session.sh          (on the GPU machine, through the device tool)
set -uo pipefail
dest=${OUT:-gpu-logs}
work=/tmp/gpu-session; rm -rf "$work"; mkdir -p "$work"
OUT=$work PROOFS=${PROOFS:-"porep-32g snap-32g window-post-32g"} PAGES=${PAGES:-plain} RUNS=${RUNS:-2} \
  WITNESS_TIMEOUT=${WITNESS_TIMEOUT:-100} timeout "${NATIVE_TIMEOUT:-300}" scripts/gpu-run.sh native >"$work/native.txt" 2>&1
echo "native exit: $?"
for f in "$work"/native-witness-*.json; do
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1].split("/")[-1], [(r["cpu_s"], r["wall_s"]) for r in d["native_runs"]], [(r["cpu_s"], r["wall_s"]) for r in d.get("native_runs_spare_values", [])])' "$f"
done
if [ -z "${SKIP_CHECK:-}" ]; then
  OUT=$work CHECK_TIMEOUT=${CHECK_TIMEOUT:-200} timeout "${CHECK_LIMIT:-250}" scripts/gpu-run.sh check >"$work/check.txt" 2>&1
  echo "check exit: $?"
  grep -h "test result\|GPU tests\|FAIL\|panicked" "$work/check.txt" | head -20
fi
tar czf "$dest/results.tgz" -C /tmp gpu-session
