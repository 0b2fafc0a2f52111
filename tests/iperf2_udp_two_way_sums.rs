//! UDP tests that move data both ways close with the sum of the two
//! directions on each side, as 2.2.1 prints it. `--full-duplex` without
//! `-i`: a `Datagrams   PPS` header, with `-e` the flow's `[FD1]` row, the
//! `[SUM]` row, and on the client `[SUM-2] Sent N datagrams`. `-d`: the
//! client's `[SUM]` (with `-e` `[SUM-2]` and its PPS) and `[SUM-2] Sent N`,
//! the server's `[SUM]` with the datagrams it sent back among the total.
//! Each sum is checked against the rows the same side printed (the stock
//! side's own where a stock program plays it).

use std::path::Path;

use crate::common::free_port;
use crate::common::iperf2::{iperf2_221, parse_row, rows, run_pair, sent_datagrams, Pairing2};

/// Runs `check` against 2.2.1 in `pairing`, plain and with `-e`.
fn with_and_without_e(check: fn(&Path, Pairing2, bool), pairing: Pairing2) {
    let Some(p) = iperf2_221() else { return };
    check(&p, pairing, false);
    check(&p, pairing, true);
}

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
    // the printed (rounded) interval; a late last datagram on a busy host
    // (4 tests at once) stretches that direction by a few percent.
    assert!(
        pps <= n as f64 / secs * 1.001 && pps >= n as f64 / secs * 0.95,
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
    with_and_without_e(fd_sum, Pairing2::PeerToOurs);
}

#[test]
fn iperf2_udp_full_duplex_sums_both_directions_with_a_stock_server() {
    with_and_without_e(fd_sum, Pairing2::OursToPeer);
}

/// The total of the last row tagged `tag` from 0 with a Lost/Total column.
fn received(text: &str, tag: &str) -> Option<u64> {
    rows(text)
        .into_iter()
        .filter(|r| r.tag == tag && r.start == 0.0)
        .filter_map(|r| r.total)
        .next_back()
}

fn dual_sum(peer: &Path, p: Pairing2, enhanced: bool) {
    let back = free_port().to_string();
    let mut args = vec!["-u", "-b", "10M", "-t", "1", "-d", "-L", &back];
    let mut srv = vec!["-u"];
    if enhanced {
        args.push("-e");
        srv.push("-e");
    }
    let (c, s) = run_pair(peer, p, &srv, &args);
    let ctx = format!("--- client ---\n{c}\n--- server ---\n{s}");
    let sum_tag = if enhanced { "SUM-2" } else { "SUM" };
    // Client: its sends ([  1] Sent) and what came back ([  2] L/T).
    let sent = sent_datagrams(&c, "1").unwrap_or_else(|| panic!("no Sent\n{ctx}"));
    let got = received(&c, "2").unwrap_or_else(|| panic!("no [  2] total\n{ctx}"));
    assert_eq!(
        sent_datagrams(&c, "SUM-2"),
        Some(sent + got),
        "client [SUM-2] Sent\n{ctx}"
    );
    let sum = rows(&c)
        .into_iter()
        .rfind(|r| r.tag == sum_tag && r.start == 0.0)
        .unwrap_or_else(|| panic!("no client [{sum_tag}]\n{ctx}"));
    // Two 10 Mbit/s directions for a second (1.25 MBytes each).
    assert!(
        (sum.bits_per_second - 21e6).abs() < 1e6,
        "client [{sum_tag}] {} bit/s\n{ctx}",
        sum.bits_per_second
    );
    if enhanced {
        let line = c
            .lines()
            .rfind(|l| l.starts_with("[SUM-2] 0.00-") && l.ends_with(" pps"))
            .unwrap_or_else(|| panic!("no client [SUM-2] pps\n{ctx}"));
        let pps: f64 = line
            .rsplit(' ')
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap();
        let n = (sent + got) as f64;
        assert!(
            pps > 0.97 * n && pps < 1.01 * n,
            "client [SUM-2] {pps} pps for {n} datagrams\n{ctx}"
        );
    }
    // Server: what it received ([  1] L/T) and sent back ([  2] Sent).
    let got = received(&s, "1").unwrap_or_else(|| panic!("no server [  1] total\n{ctx}"));
    let sent = sent_datagrams(&s, "2").unwrap_or_else(|| panic!("no server Sent\n{ctx}"));
    let line = s
        .lines()
        .rfind(|l| l.starts_with(&format!("[{sum_tag}] 0.00-")))
        .unwrap_or_else(|| panic!("no server [{sum_tag}]\n{ctx}"));
    let want = format!("/{} (", sent + got);
    assert!(
        line.contains(&want),
        "server [{sum_tag}] wants {want}\n{ctx}"
    );
}

#[test]
fn iperf2_udp_dual_sums_both_directions_with_a_stock_client() {
    with_and_without_e(dual_sum, Pairing2::PeerToOurs);
}

#[test]
fn iperf2_udp_dual_sums_both_directions_with_a_stock_server() {
    with_and_without_e(dual_sum, Pairing2::OursToPeer);
}
