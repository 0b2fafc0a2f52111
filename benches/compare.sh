#!/usr/bin/env bash
# Compare rperf3 against iperf3 on loopback: throughput, CPU per side and
# bits per CPU-second, as medians over interleaved rounds (see benches/README.md).
#
# Usage: benches/compare.sh [--cases tcp1,tcp2,...] [--rounds N] [--time T]
#                           [--port P] [--out DIR] [--extra "ARGS"]
# Cases: tcp1 tcp2 tcp4 tcp8 tcp32 tcp64 tcpR tcpZ udp1448 udp64 gsro1448 gsro64 tcp128 udp128 bidir128
#   (default: all; gsro* need an iperf3 with --gsro and are left out otherwise)
# --extra adds client arguments to every case for both programs (e.g. "-C cubic").
# Environment: RPERF3=path (skip the release build), IPERF3=path (any iperf3 binary;
#   default: iperf3 on PATH).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
stats="$here/compare_stats.py"

all_cases="tcp1,tcp2,tcp4,tcp8,tcp32,tcp64,tcpR,tcpZ,udp1448,udp64,gsro1448,gsro64,tcp128,udp128,bidir128"
cases=""
rounds=5
secs=5
port=27950
out=""
extra=""

die() { echo "compare.sh: $*" >&2; exit 2; }
usage() { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
    case "$1" in
        --cases) cases=${2:?}; shift 2 ;;
        --rounds) rounds=${2:?}; shift 2 ;;
        --time) secs=${2:?}; shift 2 ;;
        --port) port=${2:?}; shift 2 ;;
        --out) out=${2:?}; shift 2 ;;
        --extra) extra=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds must be a positive integer"
[[ $secs =~ ^[1-9][0-9]*$ ]] || die "--time must be a positive whole number of seconds"
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1024 ] && [ "$port" -le 65535 ] || die "--port must be 1024..65535"

# Client arguments of case $1 for program $2. Both programs get the same flags,
# except gsro*: iperf3 with --gsro against rperf3's defaults (which use UDP
# segmentation and receive offload wherever the kernel has them).
case_args() {
    case "$1" in
        tcp1) echo "" ;;
        tcp2) echo "-P 2" ;;
        tcp4) echo "-P 4" ;;
        tcp8) echo "-P 8" ;;
        tcp32) echo "-P 32" ;;
        tcp64) echo "-P 64" ;;
        tcpR) echo "-R" ;;
        tcpZ) echo "-Z --skip-rx-copy" ;;
        udp1448) echo "-u -b 0 -l 1448" ;;
        udp64) echo "-u -b 0 -l 64" ;;
        gsro1448) echo "-u -b 0 -l 1448$([ "$2" = iperf3 ] && echo " --gsro")" ;;
        gsro64) echo "-u -b 0 -l 64$([ "$2" = iperf3 ] && echo " --gsro")" ;;
        tcp128) echo "-P 128" ;;
        udp128) echo "-u -P 128" ;;
        bidir128) echo "-P 128 --bidir" ;;
    esac
}

for tool in python3 timeout /usr/bin/time; do
    command -v "$tool" > /dev/null || die "missing required tool: $tool"
done

# --- the two programs -------------------------------------------------------
if [ -n "${RPERF3:-}" ]; then
    rperf3=$RPERF3
    rperf3_from="RPERF3=$RPERF3"
else
    command -v cargo > /dev/null || die "cargo not found; build rperf3 yourself and pass RPERF3=path"
    echo "building rperf3 (cargo build --release) ..." >&2
    (cd "$root" && cargo build --release --bin rperf3 >&2) || die "cargo build --release failed"
    target=${CARGO_TARGET_DIR:-target}
    case "$target" in /*) ;; *) target="$root/$target" ;; esac
    rperf3="$target/release/rperf3"
    rperf3_from="built from $root ($(git -C "$root" describe --always --dirty 2> /dev/null || echo unknown))"
fi
[ -x "$rperf3" ] || die "rperf3 binary not found or not executable: $rperf3"

iperf3=${IPERF3:-$(command -v iperf3 || true)}
[ -n "$iperf3" ] || die "iperf3 not found on PATH; install it or pass IPERF3=path"
[ -x "$iperf3" ] || die "iperf3 binary not found or not executable: $iperf3"

has_gsro=0
"$iperf3" --help 2>&1 | grep -q -- --gsro && has_gsro=1
if [ -z "$cases" ]; then
    cases=$all_cases
    [ "$has_gsro" = 1 ] || cases=${cases/gsro1448,gsro64,/}
fi
IFS=, read -r -a case_list <<< "$cases"
for c in "${case_list[@]}"; do
    [[ ",$all_cases," == *",$c,"* ]] || die "unknown case '$c' (known: $all_cases)"
    [[ $c != gsro* || $has_gsro = 1 ]] || die "case $c needs an iperf3 with --gsro ($iperf3 has none)"
done

prog_path() { if [ "$1" = rperf3 ]; then echo "$rperf3"; else echo "$iperf3"; fi; }

# --- work dir and cleanup ---------------------------------------------------
if [ -n "$out" ]; then
    mkdir -p "$out" || die "cannot create $out"
    work=$(cd "$out" && pwd)
    keep=1
else
    work=$(mktemp -d /tmp/rperf3-compare.XXXXXX)
    keep=0
fi
records="$work/records.jsonl"
: > "$records"
server_pid=""
client_pid=""

cleanup() {
    # Only the processes this script started: the current pair, if any.
    for pid in $client_pid $server_pid; do
        kill -TERM "$pid" 2> /dev/null || true
    done
    for pid in $client_pid $server_pid; do
        wait "$pid" 2> /dev/null || true
    done
    if [ "$keep" = 0 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# True while something listens on TCP $port (IPv4 or IPv6). Reads /proc rather
# than connecting: a probe connection would count as the one-off (-1) test.
listening() {
    local hex
    hex=$(printf '%04X' "$port")
    awk -v h=":$hex" 'FNR > 1 && $4 == "0A" && substr($2, length($2) - 4) == h { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2> /dev/null
}

# Poll until the port is "$1" (up: listening, down: free) or $2 seconds pass.
await() {
    local want=$1 deadline=$((SECONDS + $2))
    while :; do
        if [ "$want" = up ] && listening; then return 0; fi
        if [ "$want" = down ] && ! listening; then return 0; fi
        [ $SECONDS -lt "$deadline" ] || return 1
        sleep 0.05
    done
}

# Whole-machine CPU counters and uptime, to estimate what else ran during a pair.
snapshot() { head -1 /proc/stat; cut -d' ' -f1 /proc/uptime; }

# Run one client+server pair of program $1 for case $2 into directory $3.
run_pair() {
    local prog=$1 case=$2 dir=$3 bin rc
    bin=$(prog_path "$prog")
    mkdir -p "$dir"
    await down 10 || die "port $port is still in use by another program; pick another with --port"

    snapshot > "$dir/stat.before"
    timeout -k 2 $((secs + 40)) /usr/bin/time -f '%U %S %e %M' -o "$dir/server.time" \
        "$bin" -s -1 -J -p "$port" > "$dir/server.json" 2> "$dir/server.err" &
    server_pid=$!
    if ! await up 10; then
        echo "server did not listen on port $port within 10 s" > "$dir/server.note"
        kill -TERM "$server_pid" 2> /dev/null || true
        rc=0; wait "$server_pid" 2> /dev/null || rc=$?
        echo "$rc" > "$dir/server.rc"
        server_pid=""
        echo 1 > "$dir/client.rc"
        return
    fi

    # shellcheck disable=SC2046  # the case arguments are meant to split
    timeout -k 2 $((secs + 25)) /usr/bin/time -f '%U %S %e %M' -o "$dir/client.time" \
        "$bin" -c 127.0.0.1 -p "$port" -J -t "$secs" $(case_args "$case" "$prog") $extra \
        > "$dir/client.json" 2> "$dir/client.err" &
    client_pid=$!
    rc=0; wait "$client_pid" || rc=$?
    echo "$rc" > "$dir/client.rc"
    client_pid=""

    # A one-off server exits once the test is over; give it a deadline.
    local deadline=$((SECONDS + 10))
    while kill -0 "$server_pid" 2> /dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
    if kill -0 "$server_pid" 2> /dev/null; then
        echo "did not exit within 10 s after the client finished (killed)" > "$dir/server.note"
        kill -TERM "$server_pid" 2> /dev/null || true
    fi
    rc=0; wait "$server_pid" || rc=$?
    echo "$rc" > "$dir/server.rc"
    server_pid=""
    snapshot > "$dir/stat.after"
}

echo "rperf3: $rperf3 ($rperf3_from)"
echo "iperf3: $iperf3 ($("$iperf3" --version 2> /dev/null | head -1))"
[ -n "$extra" ] && echo "extra client arguments: $extra"
echo "cases: ${case_list[*]}; rounds: $rounds; -t $secs; port $port; $(nproc) CPUs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$keep" = 1 ] && echo "raw results: $work"

# Rounds outermost, so every case's samples are spread over the whole session;
# within a round the program that goes first alternates per round and per case.
for ((r = 1; r <= rounds; r++)); do
    for ((ci = 0; ci < ${#case_list[@]}; ci++)); do
        c=${case_list[$ci]}
        if (((r + ci) % 2)); then order=(rperf3 iperf3); else order=(iperf3 rperf3); fi
        for prog in "${order[@]}"; do
            dir="$work/$c/round$r/$prog"
            first=0; [ "$prog" = "${order[0]}" ] && first=1
            run_pair "$prog" "$c" "$dir"
            python3 "$stats" extract --case "$c" --prog "$prog" --round "$r" --order "$first" --dir "$dir" \
                | tee -a "$records" \
                | python3 -c 'import json,sys; r=json.loads(sys.stdin.read()); b=r.get("bps");
print("  round %d %-8s %-6s %s" % (r["round"], r["case"], r["prog"],
      ("%.2f Gbit/s" % (b / 1e9)) if r["ok"] else "FAIL: " + "; ".join(r["problems"])))' >&2
        done
    done
done

rc=0
python3 "$stats" report "$records" --time "$secs" || rc=$?
if [ "$rc" != 0 ] && [ "$keep" = 0 ]; then
    keep=1
    echo "some runs failed; raw results kept in $work" >&2
fi
exit "$rc"
