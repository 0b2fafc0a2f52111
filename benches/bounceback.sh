#!/usr/bin/env bash
# Round trips on loopback: rperf3's iperf 2 personality against a stock iperf 2,
# each program against itself, `--bounceback --bounceback-period 0` (requests back
# to back), in interleaved rounds; prints medians and ratios.
#
# Usage: benches/bounceback.sh [--rounds N] [--time T] [--port P]
# Figures come from each client's own final row: transactions per second (round
# trips completed over the row's span) and the mean round trip in microseconds.
# Environment: RPERF3=path (skip the release build), IPERF2=path (default:
#   ../shared/peers/iperf-2.2.1 beside the checkout, else iperf on PATH).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
rounds=5
secs=3
port=27980

die() { echo "bounceback.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?}; shift 2 ;;
        --time) secs=${2:?}; shift 2 ;;
        --port) port=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "--time must be a positive whole number of seconds"

work_name=bounceback
# shellcheck source=benches/lib2.sh
. "$here/lib2.sh"

listening() { # is a TCP socket listening on $port?
    local hex
    hex=$(printf ':%04X' "$port")
    awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h && $4 == "0A" { f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2> /dev/null
}

# The client's final row, "[  1] 0.00-3.00 sec ... 64778=0.045/0.021/5.515/0.225 ms
# ...": prints "transactions_per_second mean_rtt_us", or nothing.
figures() {
    awk '/ sec / && /=[0-9.]+\/[0-9.]+\/[0-9.]+\/[0-9.]+ ms/ {
        for (i = 1; i <= NF; i++) {
            if ($i ~ /^[0-9.]+-[0-9.]+$/) { split($i, t, "-"); start = t[1]; end = t[2] }
            if ($i ~ /^[0-9]+=[0-9.]+\//) { split($i, c, "="); n = c[1]; split(c[2], s, "/"); rtt = s[1] }
        }
        if (start + 0 == 0 && end > 0) { last = sprintf("%.6g %.6g", n / end, rtt * 1000) }
    } END { if (last != "") print last }' "$1"
}

# One pair: program $1 ("ours" or "stock"); prints its figures.
run_pair() {
    local bin deadline
    if [ "$1" = ours ]; then bin=$ours; else bin=$iperf2; fi
    deadline=$((SECONDS + 10))
    while listening; do [ $SECONDS -lt $deadline ] || die "port $port stays busy"; sleep 0.05; done
    "$bin" -s -p "$port" > "$work/server.txt" 2> "$work/server.err" &
    server_pid=$!
    deadline=$((SECONDS + 10))
    until listening; do [ $SECONDS -lt $deadline ] || die "$1 server did not start"; sleep 0.02; done
    timeout -k 2 $((secs + 20)) "$bin" -c 127.0.0.1 -p "$port" -t "$secs" \
        --bounceback --bounceback-period 0 > "$work/client.txt" 2> "$work/client.err" || true
    kill -INT "$server_pid" 2> /dev/null || true
    wait "$server_pid" 2> /dev/null || true
    server_pid=""
    local f
    f=$(figures "$work/client.txt")
    echo "${f:-nan nan}"
}

echo "rperf3 (as iperf): $rperf3"
echo "iperf 2: $iperf2 ($("$iperf2" -v 2>&1 | head -1))"
records="$work/records.txt"
: > "$records"
for ((r = 1; r <= rounds; r++)); do
    # Alternate who goes first, so drift in the machine's load is shared.
    if ((r % 2)); then order="ours stock"; else order="stock ours"; fi
    for p in $order; do
        f=$(run_pair "$p")
        echo "$r $p $f" | tee -a "$records" >&2
    done
done
python3 - "$records" << 'EOF'
import statistics
import sys

data = {}
with open(sys.argv[1], encoding="utf-8") as f:
    for line in f:
        r, prog, tps, rtt = line.split()
        data.setdefault(int(r), {})[prog] = (float(tps), float(rtt))
print(f"{'figure':<22} {'rperf3':>10} {'iperf 2':>10} {'ratio':>7}  paired range")
for i, name in enumerate(["transactions/s", "mean round trip (us)"]):
    ours = [v["ours"][i] for v in data.values() if "ours" in v]
    stock = [v["stock"][i] for v in data.values() if "stock" in v]
    pairs = [v["ours"][i] / v["stock"][i] for v in data.values()
             if "ours" in v and "stock" in v and v["stock"][i] > 0]
    if not ours or not stock:
        continue
    mo, ms = statistics.median(ours), statistics.median(stock)
    rng = f"{min(pairs):.2f}..{max(pairs):.2f}" if pairs else "-"
    print(f"{name:<22} {mo:>10.4g} {ms:>10.4g} {mo / ms:>7.2f}  {rng}")
EOF
