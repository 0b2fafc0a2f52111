//! iperf 2's `--isochronous` UDP frames between rperf3 (as `iperf`) and the
//! stock 2.1.8 and 2.2.1, each role: the client's frame line and columns,
//! `(isoch)` on both connection lines, one frame per slot of the schedule,
//! and the receiver's count of what the sender sent at the asked-for rate.
//! UDP `--histograms` (`--udp-histograms`) on a `--trip-times` server: a
//! `T8-PDF` line after each row whose count is the datagrams the sender's
//! "Sent" line accounts for.

use std::path::Path;

use crate::common::iperf2::{
    assert_isoch_notes, parse_row, run_pair as run, sent_datagrams, Pairing2, ISOCH,
};

fn isochronous(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-u", "-e", "-i", "1"],
        // 0.99 s: the last slot (983 ms) goes out whole; at -t 1 the slot
        // at 1.000 s may start and be cut, a partial frame in the count.
        &["-u", "-e", "-i", "1", "-t", "0.99", ISOCH],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert_isoch_notes(&c, &s, &ctx);
    assert!(
        c.lines().any(|l| l.ends_with("  PPS  isoch:tx/miss/slip")),
        "isoch columns\n{ctx}"
    );
    // The client's whole-test row ends with tx/miss/slip: 0.99 s at 60
    // frames a second is 60 slots (61 with the first frame counted twice, as
    // iperf 2 counts it). A loaded machine may start the sender a slot or two
    // into its second.
    let own = c.split("Server Report:").next().unwrap_or_default();
    let total = own
        .lines()
        .rfind(|l| parse_row(l).is_some_and(|r| r.tag == "1" && r.start == 0.0))
        .unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let f: Vec<u64> = total
        .split_whitespace()
        .next_back()
        .unwrap_or_default()
        .split('/')
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(f.len(), 3, "{total}\n{ctx}");
    assert!((58..=62).contains(&(f[0] + f[1])), "slots {f:?}\n{ctx}");
    // The receiver (the other program) accounts for every datagram but the
    // FIN, sent at 20 Mbit/s within the frames' spread (a loaded machine may
    // drop a few on loopback: they count as lost, and the rate allows them).
    let sent = sent_datagrams(&c, "1").unwrap_or_else(|| panic!("no Sent line\n{ctx}"));
    let got = s
        .lines()
        .filter_map(parse_row)
        .filter(|r| r.tag == "1" && r.start == 0.0)
        .max_by(|a, b| a.end.total_cmp(&b.end))
        .unwrap_or_else(|| panic!("no server total\n{ctx}"));
    assert_eq!(got.total, Some(sent - 1), "datagrams\n{ctx}");
    let lost = got.lost.unwrap_or(u64::MAX) as f64;
    assert!(lost <= 0.02 * sent as f64, "loss {lost}\n{ctx}");
    // Every frame is 20 Mbit/s / 60 / 8 = 41,667 bytes (no spread); iperf 2
    // counts the first frame twice in tx. Lost datagrams are put back.
    let frames = (f[0] - 1) as f64;
    let per_frame = got.bytes / frames / (1.0 - lost / sent as f64);
    assert!(
        (per_frame / (20e6 / 60.0 / 8.0) - 1.0).abs() < 0.01,
        "{per_frame} bytes a frame over {frames} frames\n{ctx}"
    );
}

both_ways2!(iperf2_isoch_udp, |peer: &Path, p| isochronous(peer, p));

/// The frames' tx/miss/slip figures of the whole-test sender row of `text`.
fn frame_tally(text: &str, ctx: &str) -> Vec<u64> {
    let total = text
        .lines()
        .filter(|l| l.ends_with(|c: char| c.is_ascii_digit()) && l.contains(" pps "))
        .rfind(|l| parse_row(l).is_some_and(|r| r.tag == "1" && r.start == 0.0))
        .unwrap_or_else(|| panic!("no sender total\n{ctx}"));
    let f: Vec<u64> = total
        .split_whitespace()
        .next_back()
        .unwrap_or_default()
        .split('/')
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(f.len(), 3, "{total}\n{ctx}");
    f
}

/// `--isochronous -R`: the client's header carries the frame settings (as
/// 2.2.1's: ISOCH_SETTINGS and its block at 128), so the server sends the
/// frames: its rows show tx/miss/slip, one frame per slot, and the client
/// receives 20 Mbit/s / 60 a frame, its rows with the delays of `-e`.
fn isochronous_reverse(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-u", "-e", "-i", "1"],
        &["-u", "-e", "-i", "1", "-t", "0.99", ISOCH, "-R"],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert!(
        s.lines().any(|l| l.ends_with("  PPS  isoch:tx/miss/slip")),
        "the server's isoch columns\n{ctx}"
    );
    let f = frame_tally(&s, &ctx);
    assert!((58..=62).contains(&(f[0] + f[1])), "slots {f:?}\n{ctx}");
    let got = c
        .lines()
        .filter_map(parse_row)
        .filter(|r| r.tag == "*1" && r.start == 0.0)
        .max_by(|a, b| a.end.total_cmp(&b.end))
        .unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let (lost, total) = (
        got.lost.unwrap_or(u64::MAX) as f64,
        got.total.unwrap_or(1) as f64,
    );
    assert!(lost <= 0.02 * total, "loss {lost}/{total}\n{ctx}");
    let frames = (f[0] - 1) as f64;
    let per_frame = got.bytes / frames / (1.0 - lost / total);
    assert!(
        (per_frame / (20e6 / 60.0 / 8.0) - 1.0).abs() < 0.02,
        "{per_frame} bytes a frame over {frames} frames\n{ctx}"
    );
    // -e: the receiving client shows the datagrams' delays.
    assert!(
        c.lines()
            .any(|l| l.starts_with("[ *1]") && l.contains(" ms ") && !l.contains("-/-/-/-")),
        "delays\n{ctx}"
    );
}

both_ways2!(iperf2_isoch_udp_reverse, |peer: &Path, p| {
    isochronous_reverse(peer, p)
});

fn udp_histograms(peer: &Path, p: Pairing2) {
    let (c, s) = run(
        peer,
        p,
        &["-u", "-e", "-i", "1", "--udp-histograms"],
        &[
            "-u",
            "-e",
            "-i",
            "1",
            "-t",
            "1",
            "-b",
            "10m",
            "--trip-times",
        ],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert!(
        s.lines()
            .any(|l| l.starts_with("Enabled receive histograms bin-width=0.100 ms")),
        "block line\n{ctx}"
    );
    let rows: Vec<&str> = s
        .lines()
        .filter(|l| parse_row(l).is_some() && !l.contains("-PDF:"))
        .collect();
    let pdf: Vec<&str> = s
        .lines()
        .filter(|l| l.contains("-PDF: bin(w=100us):cnt("))
        .collect();
    assert!(
        !rows.is_empty() && pdf.len() == rows.len(),
        "one line per row\n{ctx}"
    );
    let last = pdf.last().copied().unwrap_or_default();
    assert!(last.contains(" sec T8(f)-PDF: "), "final line\n{ctx}");
    // cnt(N)=bin:count,... : the bins add up to N, and N is what was sent
    // (2.2.1 leaves the first datagram out).
    let (cnt, rest) = last
        .split_once("cnt(")
        .and_then(|x| x.1.split_once(")="))
        .unwrap_or_else(|| panic!("{last}\n{ctx}"));
    let cnt: u64 = cnt.parse().unwrap_or_default();
    let bins: u64 = rest
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .split(',')
        .filter_map(|b| b.split_once(':').and_then(|x| x.1.parse::<u64>().ok()))
        .sum();
    assert_eq!(bins, cnt, "{last}\n{ctx}");
    let sent = sent_datagrams(&c, "1").unwrap_or_else(|| panic!("no Sent line\n{ctx}"));
    // Datagrams lost on a loaded machine have no delay to count.
    let lost = rows
        .last()
        .and_then(|l| parse_row(l))
        .and_then(|r| r.lost)
        .unwrap_or_else(|| panic!("no loss figure\n{ctx}"));
    assert!(
        (sent - 2..=sent - 1).contains(&(cnt + lost)),
        "cnt {cnt}, lost {lost}, sent {sent}\n{ctx}"
    );
}

both_ways2!(iperf2_udp_histograms, |peer: &Path, p| udp_histograms(
    peer, p
));
