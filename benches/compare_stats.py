#!/usr/bin/env python3
"""Figures for benches/compare.sh: pull one run's numbers out of its -J documents,
then summarise interleaved rounds as medians and rperf3/iperf3 ratios.

Standard library only, so the benchmark needs nothing beyond python3.

  compare_stats.py extract --case C --prog P --round N --order K --dir RUNDIR
      reads RUNDIR/{client,server}.{json,rc,time,err}; appends one JSON line to stdout.
  compare_stats.py report RECORDS.jsonl --time T
      prints a table per case, then one SUMMARY line per case.
"""

import argparse
import json
import math
import os
import statistics
import sys

PROGS = ("rperf3", "iperf3")

CASES = {
    "tcp1": "TCP, 1 stream",
    "tcp2": "TCP, -P 2",
    "tcp4": "TCP, -P 4",
    "tcp8": "TCP, -P 8",
    "tcp32": "TCP, -P 32",
    "tcp64": "TCP, -P 64",
    "tcpZ": "TCP, -Z --skip-rx-copy (both)",
    "gsro1448": "UDP, -b 0 -l 1448; iperf3 with --gsro, rperf3 with its defaults",
    "gsro64": "UDP, -b 0 -l 64; iperf3 with --gsro, rperf3 with its defaults",
    "tcp128": "TCP, -P 128",
    "udp128": "UDP, -P 128 (1 Mbit/s each)",
    "bidir128": "TCP, -P 128 --bidir",
    "tcpR": "TCP, -R (server sends)",
    "udp1448": "UDP, -b 0 -l 1448",
    "udp64": "UDP, -b 0 -l 64",
}


def _read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _load_doc(path, side, problems):
    """Parse one -J document; note why it is unusable instead of raising."""
    text = _read(path)
    if text is None or not text.strip():
        problems.append(f"{side}: no JSON on stdout")
        return None
    try:
        doc = json.loads(text)
    except ValueError as e:
        problems.append(f"{side}: JSON does not parse ({e})")
        return None
    if not isinstance(doc, dict):
        problems.append(f"{side}: JSON is not an object")
        return None
    if "error" in doc:
        problems.append(f"{side}: error key: {doc['error']!r}")
    return doc


def _get(doc, *keys):
    for k in keys:
        if not isinstance(doc, dict) or k not in doc:
            return None
        doc = doc[k]
    return doc


def _num(v):
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _rusage(path):
    """(CPU seconds (user + system), peak RSS in KiB) from
    `/usr/bin/time -f '%U %S %e %M'`, or (None, None)."""
    text = _read(path)
    if not text:
        return None, None
    for line in reversed(text.strip().splitlines()):
        parts = line.split()
        if len(parts) == 4:
            try:
                return float(parts[0]) + float(parts[1]), float(parts[3])
            except ValueError:
                pass
    return None, None


def _snapshot(path):
    """(user+nice+system CPU seconds of the whole machine, uptime seconds), or None."""
    lines = (_read(path) or "").split("\n")
    try:
        f = lines[0].split()
        assert f[0] == "cpu"
        ticks = int(f[1]) + int(f[2]) + int(f[3])
        return ticks / os.sysconf("SC_CLK_TCK"), float(lines[1])
    except (IndexError, ValueError, AssertionError):
        return None


def _others_pct(d, ext_cpu):
    """CPU % (of one core) used by other processes while this pair ran.

    Machine-wide user+system time minus the pair's own, over the pair's wall time.
    Interrupt and softirq time are left out on both sides (loopback packet work lands
    there), so this is an estimate: near 0 on a quiet machine, tens of % when other
    jobs competed for the cores.
    """
    a, b = _snapshot(os.path.join(d, "stat.before")), _snapshot(os.path.join(d, "stat.after"))
    if a is None or b is None or ext_cpu is None or b[1] <= a[1]:
        return None
    return max(0.0, (b[0] - a[0]) - ext_cpu) / (b[1] - a[1]) * 100.0


def extract(args):
    d = args.dir
    problems, warnings = [], []
    rec = {"case": args.case, "prog": args.prog, "round": args.round, "order": args.order}
    for side in ("client", "server"):
        rc = (_read(os.path.join(d, side + ".rc")) or "").strip()
        rec[side + "_rc"] = rc
        if rc == "124" or rc == "137":
            problems.append(f"{side}: killed by time limit (rc {rc})")
        elif rc not in ("0", ""):
            warnings.append(f"{side}: exit status {rc}")
    if (_read(os.path.join(d, "server.note")) or "").strip():
        problems.append("server: " + _read(os.path.join(d, "server.note")).strip())
    cdoc = _load_doc(os.path.join(d, "client.json"), "client", problems)
    sdoc = _load_doc(os.path.join(d, "server.json"), "server", problems)

    # The receiver's own document holds the received figures: the server's
    # normally, the client's with -R.
    reverse = args.case == "tcpR"
    rdoc, rside = (cdoc, "client") if reverse else (sdoc, "server")
    recv = _get(rdoc, "end", "sum_received")
    bps = _num(_get(recv, "bits_per_second"))
    if rdoc is not None and bps is None:
        problems.append(f"{rside}: no end.sum_received.bits_per_second")
    elif bps is not None and bps <= 0:
        problems.append(f"{rside}: zero throughput")
    rec["bps"] = bps
    rec["bytes"] = _num(_get(recv, "bytes"))

    # The client's view of the received sum should agree with the receiver's.
    cbps = _num(_get(cdoc, "end", "sum_received", "bits_per_second"))
    if reverse is False and bps and cbps is not None and abs(cbps - bps) > 0.02 * bps:
        warnings.append(f"client sum_received {cbps:.4g} b/s vs server {bps:.4g} b/s")

    for side, doc in (("client", cdoc), ("server", sdoc)):
        cpu = _num(_get(doc, "end", "cpu_utilization_percent", "host_total"))
        if doc is not None and cpu is None:
            problems.append(f"{side}: no end.cpu_utilization_percent.host_total")
        rec["cpu_" + side] = cpu
    cc, cs = rec["cpu_client"], rec["cpu_server"]
    rec["eff"] = bps / ((cc + cs) / 100.0) if bps and cc is not None and cs is not None and cc + cs > 0 else None

    if args.case.startswith(("udp", "gsro")):
        pk = _num(_get(recv, "packets"))
        lost = _num(_get(recv, "lost_packets"))
        secs = _num(_get(recv, "seconds"))
        if pk is None or lost is None or not secs:
            if rdoc is not None:
                problems.append(f"{rside}: no packets/lost_packets/seconds in end.sum_received")
            rec["pps"] = rec["loss"] = None
        else:
            rec["pps"] = (pk - lost) / secs
            lp = _num(_get(recv, "lost_percent"))
            rec["loss"] = lp if lp is not None else (100.0 * lost / pk if pk else 0.0)
            if rec["pps"] <= 0:
                problems.append(f"{rside}: zero packets received")

    (ec, rc_), (es, rs) = _rusage(os.path.join(d, "client.time")), _rusage(os.path.join(d, "server.time"))
    rec["rss"] = (rc_ + rs) * 1024 if rc_ is not None and rs is not None else None
    rec["ext_cpu"] = ec + es if ec is not None and es is not None else None
    rec["ext_eff"] = rec["bytes"] * 8 / rec["ext_cpu"] if rec["bytes"] and rec["ext_cpu"] else None

    rec["others"] = _others_pct(d, rec["ext_cpu"])

    for side in ("client", "server"):
        err = (_read(os.path.join(d, side + ".err")) or "").strip()
        if err and problems:
            problems.append(f"{side} stderr: " + " | ".join(err.splitlines()[-3:]))
    rec["ok"] = not problems
    rec["problems"] = problems
    rec["warnings"] = warnings
    print(json.dumps(rec))


# (key, label, scale for display, display format)
METRICS = [
    ("bps", "throughput Gbit/s", 1e-9, "{:.3f}"),
    ("pps", "received kpkt/s", 1e-3, "{:.1f}"),
    ("loss", "loss %", 1, "{:.2f}"),
    ("cpu_client", "client CPU %", 1, "{:.1f}"),
    ("cpu_server", "server CPU %", 1, "{:.1f}"),
    ("eff", "efficiency Gbit/CPU-s", 1e-9, "{:.3f}"),
    ("ext_cpu", "ext CPU-s client+srv", 1, "{:.2f}"),
    ("ext_eff", "ext eff Gbit/CPU-s", 1e-9, "{:.3f}"),
    ("rss", "peak RSS MiB clnt+srv", 1 / 1048576, "{:.1f}"),
    ("others", "others' CPU % (noise)", 1, "{:.0f}"),
]

SUMMARY_KEYS = {
    "bps": "bps",
    "pps": "pps",
    "loss": "loss",
    "cpu_client": "cpu_c",
    "cpu_server": "cpu_s",
    "eff": "eff",
    "ext_cpu": "ext_cpu",
    "ext_eff": "ext_eff",
    "rss": "rss",
    "others": "others",
}


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def _fmt(v, fmt="{:.3f}"):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def report(args):
    recs = []
    with open(args.records, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                recs.append(json.loads(line))
    cases = []
    for r in recs:
        if r["case"] not in cases:
            cases.append(r["case"])
    summaries, failures = [], []
    for case in cases:
        rows = [r for r in recs if r["case"] == case]
        rounds = sorted({r["round"] for r in rows})
        by = {(r["prog"], r["round"]): r for r in rows}
        ok = {p: [r for r in rows if r["prog"] == p and r["ok"]] for p in PROGS}
        n = {p: len([r for r in rows if r["prog"] == p]) for p in PROGS}
        print()
        print(f"== {case}: {CASES.get(case, case)}, -t {args.time}, {len(rounds)} rounds "
              f"(usable: rperf3 {len(ok['rperf3'])}/{n['rperf3']}, iperf3 {len(ok['iperf3'])}/{n['iperf3']}) ==")
        first = " ".join("r" if by.get(("rperf3", k), {}).get("order") == 1 else "i" for k in rounds)
        print(f"   first in each round: {first}   (r = rperf3, i = iperf3)")
        print(f"   {'metric':<22} {'rperf3':>9} {'iperf3':>9} {'r/i':>7} {'paired r/i (min..max)':>23}   per round: rperf3 | iperf3")
        summary = {"case": case, "rounds": len(rounds),
                   "ok_rperf3": f"{len(ok['rperf3'])}/{n['rperf3']}",
                   "ok_iperf3": f"{len(ok['iperf3'])}/{n['iperf3']}"}
        for key, label, scale, fmt in METRICS:
            if key in ("pps", "loss") and not case.startswith(("udp", "gsro")):
                continue
            med = {}
            for p in PROGS:
                vals = [r.get(key) for r in ok[p] if r.get(key) is not None]
                med[p] = statistics.median(vals) if vals else None
            paired = []
            for k in rounds:
                a, b = by.get(("rperf3", k)), by.get(("iperf3", k))
                if a and b and a["ok"] and b["ok"]:
                    q = _ratio(a.get(key), b.get(key))
                    if q is not None:
                        paired.append(q)
            ratio = _ratio(med["rperf3"], med["iperf3"])
            if key in ("loss", "others"):
                ratio = None  # a ratio of percentages near 0 says nothing
                paired = []
            pr = (f"{statistics.median(paired):.3f} ({min(paired):.2f}..{max(paired):.2f})"
                  if paired else "-")
            per = {}
            for p in PROGS:
                cells = []
                for k in rounds:
                    r = by.get((p, k))
                    v = r.get(key) if r and r["ok"] else None
                    cells.append("FAIL" if r and not r["ok"] else _fmt(None if v is None else v * scale, fmt))
                per[p] = " ".join(cells)
            sm = lambda v: None if v is None else v * scale  # noqa: E731
            print(f"   {label:<22} {_fmt(sm(med['rperf3']), fmt):>9} {_fmt(sm(med['iperf3']), fmt):>9} "
                  f"{_fmt(ratio):>7} {pr:>23}   {per['rperf3']} | {per['iperf3']}")
            sk = SUMMARY_KEYS[key]
            summary[sk + "_r"] = med["rperf3"]
            summary[sk + "_i"] = med["iperf3"]
            if key not in ("loss", "others"):
                summary[sk + "_ratio"] = ratio
        for r in rows:
            for w in r.get("warnings", []):
                print(f"   warning: {r['prog']} round {r['round']}: {w}")
            if not r["ok"]:
                failures.append(r)
                for pb in r["problems"]:
                    print(f"   FAIL: {r['prog']} round {r['round']}: {pb}")
        summaries.append(summary)

    print()
    print("# SUMMARY lines: medians of usable rounds; *_ratio = median(rperf3) / median(iperf3)")
    print("# bps, pps: receiver side per second; cpu_c/cpu_s: host_total %; eff: bits per CPU-second")
    for s in summaries:
        parts = []
        for k, v in s.items():
            if isinstance(v, float):
                v = f"{v:.4g}" if not k.endswith("_ratio") else f"{v:.3f}"
            elif v is None:
                v = "NA"
            parts.append(f"{k}={v}")
        print("SUMMARY " + " ".join(parts))
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("extract")
    e.add_argument("--case", required=True)
    e.add_argument("--prog", required=True, choices=PROGS)
    e.add_argument("--round", required=True, type=int)
    e.add_argument("--order", required=True, type=int, help="1 if this program ran first in the round")
    e.add_argument("--dir", required=True)
    r = sub.add_parser("report")
    r.add_argument("records")
    r.add_argument("--time", default="?")
    args = ap.parse_args()
    if args.cmd == "extract":
        extract(args)
        return 0
    return report(args)


if __name__ == "__main__":
    sys.exit(main())
