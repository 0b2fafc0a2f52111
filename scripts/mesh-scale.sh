#!/usr/bin/env bash
# The mesh at scale on one machine: N agents (default 64), each in its own
# network namespace on one bridge, run one full cycle (every ordered pair)
# and then, in sample mode, a few cycles whose series are counted.
#
#   sudo scripts/mesh-scale.sh                 # 64 agents, -t 1, 3 s slots
#   sudo N=16 SLOT=2.5 scripts/mesh-scale.sh   # smaller
#
# Prints: how long the full cycle took, how many of the N*(N-1) tests ran
# and how they ended, the most tests any node was in at once (from the
# servers' own logs), and in sample mode the most series any agent served.
# Needs root, ip, curl; outside CI (it takes minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-64}
T=${T:-1}
SLOT=${SLOT:-3}
RATE=${RATE:-50M}
SAMPLE=${SAMPLE:-4}
SAMPLE_CYCLES=${SAMPLE_CYCLES:-3}
BIN=${RPERF3:-target/release/rperf3}
[ -x "$BIN" ] || cargo build --release --quiet
BIN=$(realpath "$BIN")
. scripts/lib/fleet.sh
FLEET_ID=r3scale$$
WORK=$(mktemp -d)
ID=$FLEET_ID
ip_of() { fleet_ip "$@"; }
trap 'fleet_down; rm -rf "$WORK"' EXIT

echo "building $N namespaces on a bridge"
fleet_up "$N"
for i in $(seq 1 "$N"); do echo "n$i $(ip_of "$i")" >> "$WORK/peers"; done

# Starts every agent with the shared options "$@"; outputs in $WORK/$1.
run_agents() {
  local tag=$1; shift
  fleet_agents "$N" "$tag" "$WORK" "$WORK/peers" -t "$T" --slot "$SLOT" -b "$RATE" -J "$@"
}

start=$(( $(date +%s) + 5 ))
slots=$(( N % 2 == 0 ? 2 * (N - 1) : 2 * N ))
echo "full cycle: $N agents, $slots slots of $SLOT s, tests of $T s at $RATE, from $(date -d "@$start" -u +%T) UTC"
run_agents full --cycles 1 --full-max "$N" --start-at "$start"
wait
end=$(date +%s.%N)
cat "$WORK"/full-out* > "$WORK/full.jsonl"
python3 - "$WORK" "$N" "$start" "$end" <<'EOF'
import json, sys, glob, re, datetime, collections
work, n, start, end = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
lines = [json.loads(l) for l in open(f"{work}/full.jsonl") if l.strip()]
pairs = collections.Counter((l["source"], l["destination"]) for l in lines)
outcomes = collections.Counter(l["outcome"] for l in lines)
last = max(l["end"] for l in lines)
print(f"tests: {len(lines)} of {n*(n-1)} ordered pairs, {len(pairs)} distinct, outcomes {dict(outcomes)}")
print(f"cycle: first test at +{min(l['start'] for l in lines)-start:.1f} s, last ended at +{last-start:.1f} s ({(last-start)/60:.1f} min)")
ok = sorted(l["throughput_bps"] for l in lines if l["outcome"] == "ok")
if ok:
    print(f"throughput: min {ok[0]/1e6:.1f}, median {ok[len(ok)//2]/1e6:.1f}, max {ok[-1]/1e6:.1f} Mbit/s")
# The servers' own logs: intervals per node, as server and as client.
stamp = lambda s: datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
ip2n = {}
for l in open(f"{work}/peers"):
    name, ip = l.split()
    ip2n[ip] = name
busy = collections.defaultdict(list)
for f in glob.glob(f"{work}/full-err*"):
    me = "n" + f.rsplit("err", 1)[1]
    open_ = {}
    for l in open(f):
        m = re.match(r"(\S+) info: test (\d+) from ([\d.]+):\d+ (starts|ended)", l)
        if not m:
            continue
        t, tid, ip, what = stamp(m[1]), m[2], m[3], m[4]
        if what == "starts":
            open_[tid] = (t, ip)
        elif tid in open_:
            t0, ip = open_.pop(tid)
            for node in (me, ip2n.get(ip)):
                busy[node].append((t0, t))
worst = 0
for node, iv in busy.items():
    iv.sort()
    for a, b in zip(iv, iv[1:]):
        if b[0] < a[1]:
            worst += 1
print(f"servers' logs: {sum(len(v) for v in busy.values())//2} tests served, {worst} overlaps (a node in two tests at once)")
EOF

echo
echo "sample mode: --full-max 16 --sample $SAMPLE, $SAMPLE_CYCLES cycles"
period=$(python3 -c "print(2*$SAMPLE*$SLOT + 10)")
start=$(( $(date +%s) + 5 ))
run_agents sample --full-max 16 --sample "$SAMPLE" --start-at "$start" --period "$period"
max_series=0; max_peers=0
for c in $(seq 1 "$SAMPLE_CYCLES"); do
  # Scrape in the idle end of each cycle.
  sleep_to=$(python3 -c "print($start + $c*$period - 5)")
  now=$(date +%s.%N); sleep "$(python3 -c "print(max(0, $sleep_to - $now))")"
  for i in $(seq 1 "$N"); do
    body=$(ip netns exec "$ID-n$i" curl -sf "http://$(ip_of "$i"):9464/metrics" || true)
    s=$(grep -c '^rperf3_mesh_' <<<"$body" || true)
    p=$(grep '^rperf3_mesh_throughput_bits_per_second{' <<<"$body" | wc -l)
    [ "$s" -gt "$max_series" ] && max_series=$s
    [ "$p" -gt "$max_peers" ] && max_peers=$p
  done
  echo "after cycle $c: at most $max_peers peers and $max_series rperf3_mesh_ series per agent"
done
for i in $(seq 1 "$N"); do ip netns pids "$ID-n$i" | xargs -r kill -INT; done
wait
cat "$WORK"/sample-out* | python3 -c "
import json, sys, collections
ls = [json.loads(l) for l in sys.stdin if l.strip()]
pairs = {(l['source'], l['destination']) for l in ls}
print(f'sample mode: {len(ls)} tests in $SAMPLE_CYCLES cycles, {len(pairs)} distinct pairs of $((N*(N-1)))')
"
