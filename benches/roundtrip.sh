#!/usr/bin/env bash
# Round trips on loopback, side by side, in interleaved rounds: rperf3 as iperf 2
# (`iperf --bounceback --bounceback-period 0`), iperf 2 the same, sockperf's
# TCP ping-pong, and rperf3's iperf3 personality (`rperf3 -c --bounceback`,
# "rperf3rt"); each program against its own server on 127.0.0.1, one request
# at a time, every request and reply SIZE bytes (iperf 2 `--bounceback-request`,
# whose reply is the request's size; sockperf `-m`). Prints each program's median
# transactions per second and mean round trip, and the two ratios asked of
# rperf3: mean round trip / sockperf's (goal <= 1.1) and transactions per second
# / iperf 2's (goal >= 1.2).
#
# Usage: benches/roundtrip.sh [--rounds N] [--time T] [--port P] [--size BYTES]
#                             [--pin CLIENT_CPU,SERVER_CPU] [--rt PRIORITY]
#   defaults: 5 rounds of 3 s, ports 27980 and up (one per program), 100 bytes (iperf 2's default request),
#   placement left to the scheduler. `--pin 0,0` puts every client and server on
#   CPU 0, `--pin 0,1` each client on 0 and its server on 1 (taskset); `--rt 50`
#   runs all of them SCHED_FIFO at that priority (chrt, needs root), so other
#   work on the machine does not preempt them. Where a client and its server
#   sit decides a loopback round trip more than either program does (see the
#   README's Speed section): compare programs under one placement.
# Figures: iperf 2 and rperf3 from the client's final row (round trips over the
# row's span; its mean round trip); sockperf from its "Valid Duration" line
# (received messages over the run time; its warm-up is not counted) and its
# average latency, which is half a round trip: doubled here.
# Environment: RPERF3=path (skip the release build), IPERF2=path (default:
#   ../shared/peers/iperf-2.2.1 beside the checkout, else iperf on PATH),
#   SOCKPERF=path (default: sockperf on PATH). A missing program stops the
#   script (status 2).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=5
secs=3
port=27980
size=100
pin=""
rt=""

die() { echo "roundtrip.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?}; shift 2 ;;
        --time) secs=${2:?}; shift 2 ;;
        --port) port=${2:?}; shift 2 ;;
        --size) size=${2:?}; shift 2 ;;
        --pin) pin=${2:?}; shift 2 ;;
        --rt) rt=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "--time must be a positive whole number of seconds"
[[ $size =~ ^[0-9]+$ ]] && [ "$size" -ge 64 ] || die "--size must be at least 64 (iperf 2's request header)"
[ -z "$pin" ] || [[ $pin =~ ^[0-9]+,[0-9]+$ ]] || die "--pin takes CLIENT_CPU,SERVER_CPU, e.g. 0,1"
[ -z "$rt" ] || [[ $rt =~ ^[1-9][0-9]*$ ]] || die "--rt takes a SCHED_FIFO priority, e.g. 50"
# The commands each client and server run under (placement and priority).
client_pre=()
server_pre=()
if [ -n "$pin" ]; then
    command -v taskset > /dev/null || die "--pin needs taskset"
    client_pre+=(taskset -c "${pin%,*}")
    server_pre+=(taskset -c "${pin#*,}")
fi
if [ -n "$rt" ]; then
    command -v chrt > /dev/null || die "--rt needs chrt"
    chrt -f "$rt" true || die "chrt -f $rt is not allowed here"
    client_pre+=(chrt -f "$rt")
    server_pre+=(chrt -f "$rt")
fi

work_name=roundtrip
# shellcheck source=benches/lib2.sh
. "$here/lib2.sh"
sockperf=${SOCKPERF:-$(command -v sockperf || true)}
[ -n "$sockperf" ] && [ -x "$sockperf" ] || die "sockperf not found (apt-get install sockperf, or SOCKPERF=path)"

listening() { # is a TCP socket listening on $port?
    local hex
    hex=$(printf ':%04X' "$port")
    awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h && $4 == "0A" { f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2> /dev/null
}

# Starts "$@" as the server on $port and waits until it listens.
serve() {
    local deadline=$((SECONDS + 10))
    while listening; do [ $SECONDS -lt $deadline ] || die "port $port stays busy"; sleep 0.05; done
    "${server_pre[@]}" "$@" > "$work/server.txt" 2> "$work/server.err" &
    server_pid=$!
    deadline=$((SECONDS + 10))
    until listening; do
        kill -0 "$server_pid" 2> /dev/null || die "$1 server exited: $(cat "$work/server.err")"
        [ $SECONDS -lt $deadline ] || die "$1 server did not start"
        sleep 0.02
    done
}

unserve() {
    kill -INT "$server_pid" 2> /dev/null || true
    wait "$server_pid" 2> /dev/null || true
    server_pid=""
}

# An iperf 2 client's final row, "[  1] 0.00-3.00 sec ... 64778=0.045/0.021/5.515/0.225 ms
# ...": prints "transactions_per_second mean_rtt_us", or nothing.
iperf2_figures() {
    awk '/ sec / && /=[0-9.]+\/[0-9.]+\/[0-9.]+\/[0-9.]+ ms/ {
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^[0-9.]+-[0-9.]+$/) { split($i, t, "-"); start = t[1]; end = t[2] }
            if ($i ~ /^[0-9]+=[0-9.]+\//) { split($i, c, "="); n = c[1]; split(c[2], s, "/"); rtt = s[1] }
        }
        if (start + 0 == 0 && end > 0) { last = sprintf("%.6g %.6g", n / end, rtt * 1000) }
    } END { if (last != "") print last }' "$1"
}

# One iperf 2 style run of binary $1 against its own server.
iperf2_run() {
    serve "$1" -s -p "$port"
    timeout -k 2 $((secs + 20)) "${client_pre[@]}" "$1" -c 127.0.0.1 -p "$port" -t "$secs" \
        --bounceback --bounceback-period 0 --bounceback-request "$size" \
        > "$work/client.txt" 2> "$work/client.err" || true
    unserve
    iperf2_figures "$work/client.txt"
}

# Each prog_NAME runs one measurement and prints "tps mean_rtt_us" (nothing
# when the run failed).
prog_rperf3() { iperf2_run "$ours"; }
prog_iperf2() { iperf2_run "$iperf2"; }
prog_sockperf() {
    serve "$sockperf" server --tcp -i 127.0.0.1 -p "$port"
    timeout -k 2 $((secs + 20)) "${client_pre[@]}" "$sockperf" ping-pong --tcp -i 127.0.0.1 -p "$port" \
        -t "$secs" -m "$size" > "$work/client.txt" 2> "$work/client.err" || true
    unserve
    # sockperf colours its lines; "avg-latency=16.420" is half a round trip.
    sed 's/\x1b\[[0-9;]*m//g' "$work/client.txt" | awk '
        /\[Valid Duration\]/ {
            for (i = 1; i <= NF; i++) {
                if ($i ~ /^RunTime=/) { split($i, a, "="); t = a[2] + 0 }
                if ($i ~ /^ReceivedMessages=/) { split($i, a, "="); n = a[2] + 0 }
            }
        }
        /avg-latency=/ { split($0, a, "avg-latency="); half = a[2] + 0 }
        END { if (t > 0 && half > 0) printf "%.6g %.6g\n", n / t, 2 * half }'
}

# rperf3's own round-trip mode in its iperf3 personality: `rperf3 -c HOST
# --bounceback`, SIZE-byte requests and replies, back to back, figures from
# its -J `end.bounceback` (transactions per second, mean round trip).
prog_rperf3rt() {
    serve "$rperf3" -s -p "$port"
    timeout -k 2 $((secs + 20)) "${client_pre[@]}" "$rperf3" -c 127.0.0.1 -p "$port" -t "$secs" \
        --bounceback --bounceback-request "$size" --bounceback-reply "$size" -J \
        > "$work/client.txt" 2> "$work/client.err" || true
    unserve
    python3 -c '
import json, sys
try:
    b = json.load(open(sys.argv[1]))["end"]["bounceback"]
    print("%.6g %.6g" % (b["tps"], b["mean_ms"] * 1000))
except Exception:
    pass' "$work/client.txt"
}

extra_programs() {
    echo rperf3rt
}
# -----------------------------------------------------------------------------

read -r -a programs <<< "rperf3 iperf2 sockperf $(extra_programs)"
echo "rperf3 (as iperf): $rperf3"
echo "iperf 2: $iperf2 ($("$iperf2" -v 2>&1 | head -1))"
echo "sockperf: $sockperf ($("$sockperf" --version 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | grep -o 'version [^ ]*' | head -1))"
echo "$rounds rounds of $secs s, $size-byte requests and replies;" \
    "placement: ${pin:-left to the scheduler}${rt:+, SCHED_FIFO $rt}; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
base_port=$port
records="$work/records.txt"
: > "$records"
n=${#programs[@]}
for ((r = 1; r <= rounds; r++)); do
    # Each round starts with the next program, so drift in the machine's load
    # falls on all of them alike.
    for ((i = 0; i < n; i++)); do
        k=$(((r - 1 + i) % n))
        p=${programs[$k]}
        # A port of its own per program: a server that closed first leaves
        # TIME-WAIT sockets on its port, which sockperf's server cannot bind.
        port=$((base_port + k))
        f=$("prog_$p")
        echo "$r $p ${f:-nan nan}" | tee -a "$records" >&2
    done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$records" << 'EOF'
import math
import statistics
import sys

data = {}
progs = []
failed = 0
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        r, prog, tps, rtt = line.split()
        progs += [prog] if prog not in progs else []
        if math.isnan(float(tps)) or math.isnan(float(rtt)):
            failed += 1
        else:
            data.setdefault(int(r), {})[prog] = (float(tps), float(rtt))


def med(prog, i):
    xs = [v[prog][i] for v in data.values() if prog in v]
    return statistics.median(xs) if xs else float("nan")


print(f"{'program':<10} {'runs':>4} {'transactions/s':>15} {'mean round trip (us)':>21}")
for p in progs:
    runs = sum(1 for v in data.values() if p in v)
    print(f"{p:<10} {runs:>4} {med(p, 0):>15.5g} {med(p, 1):>21.4g}")


def ratio(name, i, a, b, goal):
    pairs = [v[a][i] / v[b][i] for v in data.values() if a in v and b in v and v[b][i] > 0]
    m = med(a, i) / med(b, i)
    rng = f"{min(pairs):.2f}..{max(pairs):.2f}" if pairs else "-"
    print(f"{name:<34} {m:>6.2f}  (goal {goal}; a round's pair: {rng})")


ratio("rperf3 / sockperf mean round trip", 1, "rperf3", "sockperf", "<= 1.1")
ratio("rperf3 / iperf 2 transactions/s", 0, "rperf3", "iperf2", ">= 1.2")
if "rperf3rt" in progs:
    ratio("rperf3 -c --bounceback / sockperf rtt", 1, "rperf3rt", "sockperf", "<= 1.1")
    ratio("rperf3 -c --bounceback / iperf 2 tps", 0, "rperf3rt", "iperf2", ">= 1.2")
if failed:
    print(f"{failed} run(s) gave no figures", file=sys.stderr)
sys.exit(1 if failed else 0)
EOF
