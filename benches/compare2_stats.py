#!/usr/bin/env python3
"""Figures for benches/compare2.sh, read from iperf 2 CSV reports (-y C).

figure CASE FILE: one number from a server's CSV: TCP bits per second of the
    whole test (the sum row, id -1, if there is one); UDP datagrams received per
    second (total - lost over the interval). Exits 1 if the file has no final row.
summary RECORDS: per case, the median of each program and the ratio of medians,
    with the paired per-round ratios' range.
"""
import statistics
import sys


def final_rows(path):
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) < 9 or not fields[0][:1].isdigit():
                continue
            start, _, end = fields[6].partition("-")
            try:
                if float(start) != 0.0:
                    continue
                rows.append((int(fields[5]), float(end), fields))
            except ValueError:
                continue
    return rows


def figure(case, path):
    rows = final_rows(path)
    if not rows:
        return None
    if case.startswith("udp"):
        got = 0
        secs = 0.0
        for _, end, f in rows:
            if len(f) >= 14 and int(f[11]) >= 0:
                got += int(f[11]) - int(f[10])
                secs = max(secs, end)
        return got / secs if secs > 0 else None
    sums = [f for tid, _, f in rows if tid == -1]
    if sums:
        return float(sums[-1][8])
    streams = {}
    for tid, end, f in rows:
        streams[tid] = float(f[8])
    return sum(streams.values())


def summary(path):
    data = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            r, case, prog, value = line.split()
            data.setdefault(case, {}).setdefault(int(r), {})[prog] = float(value)
    print(f"{'case':<9} {'rperf3':>14} {'iperf 2':>14} {'ratio':>7}  paired range")
    for case, by_round in data.items():
        ours = [v["ours"] for v in by_round.values() if "ours" in v]
        stock = [v["stock"] for v in by_round.values() if "stock" in v]
        pairs = [v["ours"] / v["stock"] for v in by_round.values()
                 if v.get("stock", 0) > 0 and "ours" in v]
        if not ours or not stock:
            continue
        mo, ms = statistics.median(ours), statistics.median(stock)
        unit = "dgram/s" if case.startswith("udp") else "bit/s"
        rng = f"{min(pairs):.2f}..{max(pairs):.2f}" if pairs else "-"
        print(f"{case:<9} {mo:>14.4g} {ms:>14.4g} {mo / ms:>7.2f}  {rng}  ({unit})")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "figure":
        v = figure(sys.argv[2], sys.argv[3])
        if v is None:
            sys.exit(1)
        print(f"{v:.6g}")
    elif len(sys.argv) == 3 and sys.argv[1] == "summary":
        summary(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
