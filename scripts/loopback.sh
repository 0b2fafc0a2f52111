#!/usr/bin/env bash
# Builds rperf3 and runs one real measurement on this machine: a one-off server and
# a client on 127.0.0.1. Extra arguments go to the client (e.g. -u -b 100M, -P 4, -R).
set -euo pipefail
cd "$(dirname "$0")/.."
# RPERF3_BIN: use an already built binary instead of building one.
if [ -n "${RPERF3_BIN:-}" ]; then
  bin=$RPERF3_BIN
else
  cargo build --release --quiet
  bin=target/release/rperf3
fi
port=${PORT:-5201}
"$bin" -s -1 -p "$port" >/dev/null &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
# Wait until the server listens (up to 5 s). Look in the kernel's socket table
# rather than connecting: a probe connection would be the one-off server's test.
hexport=$(printf ':%04X' "$port")
for _ in $(seq 100); do
  if awk -v p="$hexport" '$4 == "0A" && $2 ~ p"$" {found=1} END {exit !found}' \
      /proc/net/tcp /proc/net/tcp6 2>/dev/null; then
    break
  fi
  if ! kill -0 "$server" 2>/dev/null; then
    echo "rperf3 server did not start (port $port in use?)" >&2
    exit 1
  fi
  sleep 0.05
done
"$bin" -c 127.0.0.1 -p "$port" "$@"
