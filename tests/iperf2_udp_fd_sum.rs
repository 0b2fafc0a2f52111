//! A UDP `--full-duplex` test without `-i` closes, on both sides, with the
//! sum of its two directions, as 2.2.1 prints it: a `Datagrams   PPS`
//! header, with `-e` the flow's `[FD1]` row, the `[SUM]` row, and on the
//! client `[SUM-2] Sent N datagrams`. Its datagrams are what that side sent
//! plus what it received, read from the rows the same side printed (the
//! stock side's own where a stock program plays it).

use std::path::Path;

use crate::common::iperf2::{iperf2_221, parse_row, rows, run_pair, sent_datagrams, Pairing2};

const HEADER: &str = "[ ID] Interval       Transfer     Bandwidth    Datagrams   PPS";

/// (datagrams, pps) of the last row tagged `tag` in the duplex layout
/// (`... 21.0 Mbits/sec 1789    1786 pps`).
fn duplex_row(text: &str, tag: &str) -> Option<(u64, f64, f64)> {
    let line = text
        .lines()
        .rfind(|l| l.starts_with(&format!("[{tag}] ")) && l.ends_with(" pps"))?;
    let row = parse_row(line)?;
    let mut w = line.rsplit(' ').skip(1).filter(|s| !s.is_empty());
    let pps = w.next()?.parse().ok()?;
    let datagrams = w.next()?.parse().ok()?;
    Some((datagrams, pps, row.end - row.start))
}

/// One side's closing lines: the sum is its sent plus received datagrams.
fn check_side(text: &str, client: bool, enhanced: bool, ctx: &str) {
    assert!(text.lines().any(|l| l == HEADER), "no duplex header\n{ctx}");
    let sent = sent_datagrams(text, "1").unwrap_or_else(|| panic!("no Sent line\n{ctx}"));
    // The receiving direction's total row (`[ *1]` on a client, `[  1]` on a
    // server): the one with a Lost/Total column.
    let received = rows(text)
        .into_iter()
        .filter(|r| (r.tag == "1" || r.tag == "*1") && r.start == 0.0)
        .filter_map(|r| r.total)
        .next_back()
        .unwrap_or_else(|| panic!("no received total\n{ctx}"));
    let (n, pps, secs) = duplex_row(text, "SUM").unwrap_or_else(|| panic!("no [SUM]\n{ctx}"));
    assert_eq!(n, sent + received, "[SUM] datagrams\n{ctx}");
    // The rate is the datagrams over the longer direction, a little over
    // the printed (rounded) interval.
    assert!(
        pps <= n as f64 / secs * 1.001 && pps >= n as f64 / secs * 0.98,
        "[SUM] {pps} pps for {n} in {secs} s\n{ctx}"
    );
    if enhanced {
        assert_eq!(
            duplex_row(text, "FD1").map(|r| r.0),
            Some(n),
            "[FD1]\n{ctx}"
        );
    }
    if client {
        assert_eq!(
            sent_datagrams(text, "SUM-2"),
            Some(n),
            "[SUM-2] Sent\n{ctx}"
        );
    }
}

fn fd_sum(peer: &Path, p: Pairing2, enhanced: bool) {
    let mut args = vec!["-u", "-b", "10M", "-t", "1", "--full-duplex"];
    let mut srv = vec!["-u"];
    if enhanced {
        args.push("-e");
        srv.push("-e");
    }
    let (c, s) = run_pair(peer, p, &srv, &args);
    let ctx = format!("--- client ---\n{c}\n--- server ---\n{s}");
    check_side(&c, true, enhanced, &ctx);
    check_side(&s, false, enhanced, &ctx);
    // Each side's sum holds the other's figures: what the client sent is
    // what the server received (nothing is lost on loopback at 10 Mbit/s).
    let (cn, _, _) = duplex_row(&c, "SUM").unwrap();
    let (sn, _, _) = duplex_row(&s, "SUM").unwrap();
    assert!(cn.abs_diff(sn) <= 2, "client {cn}, server {sn}\n{ctx}");
}

#[test]
fn iperf2_udp_full_duplex_sums_both_directions_with_a_stock_client() {
    let Some(p) = iperf2_221() else { return };
    fd_sum(&p, Pairing2::PeerToOurs, false);
    fd_sum(&p, Pairing2::PeerToOurs, true);
}

#[test]
fn iperf2_udp_full_duplex_sums_both_directions_with_a_stock_server() {
    let Some(p) = iperf2_221() else { return };
    fd_sum(&p, Pairing2::OursToPeer, false);
    fd_sum(&p, Pairing2::OursToPeer, true);
}
