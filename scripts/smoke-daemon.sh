#!/usr/bin/env bash
# End-to-end smoke test of the release binaries: a daemon on TCP and on a
# Unix socket, driven by cuzk-bench and cuzk-ctl, then stopped with SIGTERM.
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

start_daemon() {  # $1 = bench --addr value, then the daemon's flags
  local addr=$1; shift
  "$bin/cuzk-daemon" "$@" --param-cache "$params" --log-level info 2>"$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do
    "$bin/cuzk-ctl" status --addr "$addr" >/dev/null 2>&1 && break
    sleep 0.1
  done
}

run_against() {  # $1 = daemon --listen value, $2 = bench --addr value
  start_daemon "$2" --listen "$1"
  "$bin/cuzk-ctl" preload --addr "$2" --circuit-id synthetic-v1-n4096-i2
  "$bin/cuzk-bench" batch --addr "$2" --param-cache "$params" --type synthetic --log2 12 \
    --partitions 2 --count 4 --concurrency 2 | tee "$work/batch.txt"
  grep -q '^verified:      4$' "$work/batch.txt"
  "$bin/cuzk-bench" single --addr "$2" --param-cache "$params" --log2 12 --priority critical
  # Shaped witnesses: the daemon writes the shaped parameter file on first use.
  "$bin/cuzk-bench" batch --addr "$2" --param-cache "$params" --type shaped --log2 12 \
    --partitions 3 --count 2 | tee "$work/shaped.txt"
  grep -q '^checked:       2 by the engine' "$work/shaped.txt"
  test -s "$params/shaped-v1-n4096-i2-s0.params"
  "$bin/cuzk-ctl" status --addr "$2"
  "$bin/cuzk-ctl" metrics --addr "$2" | grep -q 'cuzk_jobs_finished_total{kind="porep",status="completed"} 7'
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
echo "== Unix socket from Python (grpcio) =="
# grpc-core clients send the socket's path as :authority, which the daemon's
# HTTP/2 layer refuses: with the channel option docs/OPERATING.md documents
# the call works, without it it fails, and with [daemon] unix_authority_fix
# it works without the option.
grpcio="${XDG_CACHE_HOME:-$HOME/.cache}/cuzk/python-grpcio"
python3 -c 'import grpc' 2>/dev/null || PYTHONPATH="$grpcio" python3 -c 'import grpc' 2>/dev/null ||
  python3 -m pip install --quiet --disable-pip-version-check --target "$grpcio" grpcio
get_status() { PYTHONPATH="$grpcio${PYTHONPATH:+:$PYTHONPATH}" python3 crates/cuzk-daemon/tests/python/get_status.py "$sock" "$1"; }
python_against() {  # $1 = unix_authority_fix
  printf '[daemon]\nlisten = "unix://%s"\nunix_authority_fix = %s\n' "$sock" "$1" >"$work/python.toml"
  start_daemon "unix://$sock" --config "$work/python.toml"
}
python_against false
get_status with-option
if get_status without-option; then echo "FAIL: a grpc-core client without the option was answered"; exit 1; fi
kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
python_against true
get_status without-option
kill -TERM "$daemon_pid"; wait "$daemon_pid"; daemon_pid=
echo "smoke test passed"
