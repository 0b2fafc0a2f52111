#!/usr/bin/env bash
# Compare rperf3's iperf 2 personality against a stock iperf 2 on loopback, each
# program against itself, in interleaved rounds; prints medians and ratios.
#
# Usage: benches/compare2.sh [--cases tcp1,tcp4,udp1470,udp64] [--rounds N] [--time T] [--port P]
# Figures come from each server's own CSV report (-y C): TCP bits per second of the
# sum; UDP datagrams received per second (total - lost) at an unreachable -b.
# Environment: RPERF3=path (skip the release build), IPERF2=path (default:
#   ../shared/peers/iperf-2.2.1 beside the checkout, else iperf on PATH).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
cases="tcp1,tcp4,udp1470,udp64"
rounds=5
secs=3
port=27960

die() { echo "compare2.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --cases) cases=${2:?}; shift 2 ;;
        --rounds) rounds=${2:?}; shift 2 ;;
        --time) secs=${2:?}; shift 2 ;;
        --port) port=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "--time must be a positive whole number of seconds"

case_args() {
    case "$1" in
        tcp1) echo "" ;;
        tcp4) echo "-P 4" ;;
        udp1470) echo "-u -l 1470 -b 100g" ;;
        udp64) echo "-u -l 64 -b 100g" ;;
        *) die "unknown case '$1' (known: tcp1 tcp4 udp1470 udp64)" ;;
    esac
}

work_name=compare2
# shellcheck source=benches/lib2.sh
. "$here/lib2.sh"

bound() { # is anything bound to $port (TCP listen or UDP)?
    local hex
    hex=$(printf ':%04X' "$port")
    awk -v h="$hex" 'FNR > 1 && substr($2, length($2) - 4) == h && (FILENAME ~ /udp/ || $4 == "0A") { f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2> /dev/null
}

# One pair: program $1 ("ours" or "stock"), case $2; prints the figure.
run_pair() {
    local bin udp="" args deadline
    if [ "$1" = ours ]; then bin=$ours; else bin=$iperf2; fi
    args=$(case_args "$2")
    [[ $args == -u* ]] && udp="-u"
    deadline=$((SECONDS + 10))
    while bound; do [ $SECONDS -lt $deadline ] || die "port $port stays busy"; sleep 0.05; done
    # shellcheck disable=SC2086
    "$bin" -s $udp -p "$port" -y C > "$work/server.csv" 2> "$work/server.err" &
    server_pid=$!
    deadline=$((SECONDS + 10))
    until bound; do [ $SECONDS -lt $deadline ] || die "$1 server did not start"; sleep 0.02; done
    # shellcheck disable=SC2086
    timeout -k 2 $((secs + 20)) "$bin" -c 127.0.0.1 -p "$port" -t "$secs" -y C $args \
        > "$work/client.csv" 2> "$work/client.err" || true
    # The server prints its report once the client's last stream has ended.
    deadline=$((SECONDS + 5))
    until python3 "$here/compare2_stats.py" figure "$2" "$work/server.csv" > /dev/null 2>&1; do
        [ $SECONDS -lt $deadline ] || break
        sleep 0.05
    done
    kill -INT "$server_pid" 2> /dev/null || true
    wait "$server_pid" 2> /dev/null || true
    server_pid=""
    python3 "$here/compare2_stats.py" figure "$2" "$work/server.csv" || echo "nan"
}

echo "rperf3 (as iperf): $rperf3"
echo "iperf 2: $iperf2 ($("$iperf2" -v 2>&1 | head -1))"
records="$work/records.txt"
: > "$records"
IFS=, read -r -a case_list <<< "$cases"
for ((r = 1; r <= rounds; r++)); do
    for c in "${case_list[@]}"; do
        # Alternate who goes first, so drift in the machine's load is shared.
        if ((r % 2)); then order="ours stock"; else order="stock ours"; fi
        for p in $order; do
            f=$(run_pair "$p" "$c")
            echo "$r $c $p $f" | tee -a "$records" >&2
        done
    done
done
python3 "$here/compare2_stats.py" summary "$records"
