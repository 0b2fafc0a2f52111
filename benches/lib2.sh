# Shared by the iperf 2 benchmarks (sourced after `root` and `die` are set, with
# `work_name` naming the scratch directory): finds rperf3 (building it unless
# RPERF3 is given) and iperf 2 (IPERF2, else 2.2.1 beside the checkout, else
# `iperf` on PATH), makes the scratch directory, and links rperf3 there as `iperf`
# (its iperf 2 personality) in `$ours`. The cleanup stops `$server_pid` if set.

if [ -n "${RPERF3:-}" ]; then
    rperf3=$RPERF3
else
    (cd "$root" && cargo build --release --bin rperf3 >&2) || die "cargo build --release failed"
    target=${CARGO_TARGET_DIR:-$root/target}
    rperf3="$target/release/rperf3"
fi
[ -x "$rperf3" ] || die "rperf3 not found: $rperf3"
iperf2=${IPERF2:-}
if [ -z "$iperf2" ]; then
    if [ -x "$root/../shared/peers/iperf-2.2.1" ]; then
        iperf2="$root/../shared/peers/iperf-2.2.1"
    else
        iperf2=$(command -v iperf || true)
    fi
fi
[ -n "$iperf2" ] && [ -x "$iperf2" ] || die "no iperf 2 found; pass IPERF2=path"

work=$(mktemp -d "/tmp/rperf3-$work_name.XXXXXX")
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill -TERM "$server_pid" 2> /dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# rperf3 speaks iperf 2 under the name iperf.
mkdir -p "$work/bin"
ln -s "$(cd "$(dirname "$rperf3")" && pwd)/$(basename "$rperf3")" "$work/bin/iperf"
ours="$work/bin/iperf"
