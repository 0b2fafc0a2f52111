#!/usr/bin/env bash
# Runs rperf3 through a shaped link on this machine: two network namespaces joined
# by a veth pair, a tbf on the client's side (100 Mbit/s, a 150 ms FIFO unless
# RATE and QUEUE say otherwise), a one-off server in one and the client in the
# other. Extra arguments go to the client; by default a UDP load above the rate
# over 16 sockets, which keeps the FIFO full, with --latency. Needs root, ip, tc.
#   scripts/shaped.sh                       # latency under load, text
#   QUEUE=5ms scripts/shaped.sh             # a short FIFO
#   scripts/shaped.sh -u -b 7M -P 16 -t 10 --latency -J > run.json
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${RPERF3_BIN:-}" ]; then
  bin=$(realpath "$RPERF3_BIN")
else
  cargo build --release --quiet
  bin=$PWD/target/release/rperf3
fi
rate=${RATE:-100mbit}
queue=${QUEUE:-150ms}
if [ "$#" -eq 0 ]; then
  set -- -u -b 7M -P 16 -t 10 --latency
fi
s=rperf3-shaped-s-$$
c=rperf3-shaped-c-$$
cleanup() {
  for ns in "$s" "$c"; do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
}
trap cleanup EXIT
ip netns add "$s"
ip netns add "$c"
ip link add veth0 netns "$s" type veth peer name veth0 netns "$c"
ip -n "$s" addr add 10.99.0.1/30 dev veth0
ip -n "$c" addr add 10.99.0.2/30 dev veth0
for ns in "$s" "$c"; do
  ip -n "$ns" link set lo up
  ip -n "$ns" link set veth0 up
done
# The bottleneck: a token bucket whose queue holds `latency` worth of the rate.
ip netns exec "$c" tc qdisc add dev veth0 root tbf rate "$rate" burst 64kb latency "$queue"
# A server for every test the client runs (--rpm runs one a stage); the
# cleanup ends it with the namespaces.
ip netns exec "$s" "$bin" -s >/dev/null &
# Wait until the server listens.
for _ in $(seq 100); do
  if [ -n "$(ip netns exec "$s" ss -Hltn 'sport = :5201')" ]; then break; fi
  sleep 0.05
done
echo "# tbf $rate, queue $queue on the client's side; rperf3 -c 10.99.0.1 $*" >&2
ip netns exec "$c" "$bin" -c 10.99.0.1 "$@"
echo "# the queue at the end of the run:" >&2
ip netns exec "$c" tc -s qdisc show dev veth0 >&2
