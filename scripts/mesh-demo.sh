#!/usr/bin/env bash
# A small fleet on this machine, one network namespace a node on one bridge,
# with a slow link and a lossy one: one cycle of `rperf3 mesh`, its JSON
# lines and its plot.
#   sudo scripts/mesh-demo.sh                 # 6 nodes, writes mesh-demo.jsonl and .svg
#   sudo N=8 OUT=/tmp/m scripts/mesh-demo.sh -t 2 --slot 4
# Node 2 receives through a 100 Mbit/s tbf with a 20 ms FIFO (its column
# reads 96 Mbit/s of goodput and ~20 ms loaded); 1% of what node 4 sends to
# node 5 is dropped (that cell's retransmits). Extra arguments go to every
# agent. Needs root, ip, tc, iptables.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-6}
OUT=${OUT:-mesh-demo}
BIN=${RPERF3:-target/release/rperf3}
[ -x "$BIN" ] || cargo build --release --quiet
BIN=$(realpath "$BIN")
. scripts/lib/fleet.sh
FLEET_ID=r3demo$$
WORK=$(mktemp -d)
trap 'fleet_down; rm -rf "$WORK"' EXIT
fleet_up "$N"
for i in $(seq 1 "$N"); do echo "n$i $(fleet_ip "$i")" >> "$WORK/peers"; done
ip netns exec "$FLEET_ID-br" tc qdisc add dev p2 root tbf rate 100mbit burst 32kb latency 20ms
ip netns exec "$FLEET_ID-n5" iptables -A INPUT -s "$(fleet_ip 4)" -p tcp --dport 5201 \
  -m length --length 1000:65535 -m statistic --mode random --probability 0.01 -j DROP
slots=$(( N % 2 == 0 ? 2 * (N - 1) : 2 * N ))
start=$(( $(date +%s) + 3 ))
echo "$N nodes, $slots slots: about $(( slots * 3 + 3 )) s" >&2
fleet_agents "$N" demo "$WORK" "$WORK/peers" -t 1 --slot 3 -C reno -J --cycles 1 --start-at "$start" "$@"
wait
cat "$WORK"/demo-out* > "$OUT.jsonl"
cat "$OUT.jsonl"
"$BIN" plot "$OUT.jsonl" -o "$OUT.svg" --title "$N nodes on a bridge: n2 receives through 100 Mbit/s, n4 -> n5 loses 1%"
echo "wrote $OUT.jsonl and $OUT.svg" >&2
