#!/usr/bin/env bash
# End-to-end smoke test of the release binaries: a daemon on TCP and on a
# Unix socket, driven by cuzk-bench's subcommands, then stopped with SIGTERM.
# Usage: scripts/smoke-daemon.sh  (after `cargo build --release`)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release
work=$(mktemp -d)
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
sock="$work/cuzk.sock"
params="$work/params"

run_against() {  # $1 = daemon --listen value, $2 = bench --addr value
  "$bin/cuzk-daemon" --listen "$1" --param-cache "$params" --log-level info 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do
    "$bin/cuzk-bench" status --addr "$2" >/dev/null 2>&1 && break
    sleep 0.1
  done
  "$bin/cuzk-bench" preload --addr "$2" --circuit-id synthetic-v1-n4096-i2
  "$bin/cuzk-bench" batch --addr "$2" --param-cache "$params" --type synthetic --log2 12 \
    --partitions 2 --count 4 --concurrency 2 | tee "$work/batch.txt"
  grep -q '^verified:      4$' "$work/batch.txt"
  "$bin/cuzk-bench" single --addr "$2" --param-cache "$params" --log2 12 --priority critical
  # Shaped witnesses: the daemon writes the shaped parameter file on first use.
  "$bin/cuzk-bench" batch --addr "$2" --param-cache "$params" --type shaped --log2 12 \
    --partitions 3 --count 2 | tee "$work/shaped.txt"
  grep -q '^checked:       2 by the engine' "$work/shaped.txt"
  test -s "$params/shaped-v1-n4096-i2-s0.params"
  "$bin/cuzk-bench" status --addr "$2"
  "$bin/cuzk-bench" metrics --addr "$2" | grep -q 'cuzk_jobs_finished_total{kind="porep",status="completed"} 7'
  grep -q 'TIMELINE .*event=prover_end' "$work/daemon.log"
  kill -TERM "$daemon_pid"
  wait "$daemon_pid"
  daemon_pid=
  grep -q 'every accepted job has a final status' "$work/daemon.log"
}

echo "== TCP =="
run_against "127.0.0.1:$port" "http://127.0.0.1:$port"
echo "== Unix socket =="
run_against "unix://$sock" "unix://$sock"
echo "smoke test passed"
