#!/usr/bin/env bash
# Builds rperf3 and runs one real measurement on this machine: a one-off server and
# a client on 127.0.0.1. Extra arguments go to the client (e.g. -u -b 100M, -P 4, -R).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin=target/release/rperf3
port=${PORT:-5201}
"$bin" -s -1 -p "$port" >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
# Wait until the server accepts connections (up to 5 s).
for _ in $(seq 100); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  sleep 0.05
done
"$bin" -c 127.0.0.1 -p "$port" "$@"
