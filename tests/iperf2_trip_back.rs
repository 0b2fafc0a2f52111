//! `--trip-times` when the server sends (`-R`) or both sides do
//! (`--full-duplex`), between rperf3 (as `iperf`) and the stock 2.1.8 and
//! 2.2.1, each role. The server stamps its writes (after its own test header),
//! so the client's reverse rows carry the burst latency columns; the bursts
//! they count add up to what the server says it wrote, and the other way on
//! a full-duplex test.

use std::path::Path;

use crate::common::iperf2::{parse_row, run_pair as run, Pairing2, Row};
use crate::iperf2_latency::nums;

/// The whole-test row tagged `[tag]` (`1`, `*1`) and the words after its rate.
fn total(text: &str, tag: &str) -> Option<(Row, Vec<String>)> {
    text.lines()
        .filter_map(|l| parse_row(l).map(|r| (r, l)))
        .filter(|(r, _)| r.tag == tag && r.start == 0.0)
        .max_by(|a, b| a.0.end.total_cmp(&b.0.end))
        .map(|(r, l)| {
            let rest = l.split_once("/sec").map_or("", |x| x.1);
            (r, rest.split_whitespace().map(str::to_string).collect())
        })
}

/// The receiver's row `rx` counts bursts whose bytes are the sender's row
/// `tx` (within two 128 KiB writes and the printed precision), with
/// positive one-way delays below a second.
fn bursts_match(rx: &(Row, Vec<String>), tx: &Row, ctx: &str) {
    let cols = &rx.1;
    assert_eq!(
        cols.get(1).map(String::as_str),
        Some("ms"),
        "{cols:?}\n{ctx}"
    );
    let lat = nums(&cols[0], '/');
    let cnt = nums(&cols[2], '/');
    assert_eq!((lat.len(), cnt.len()), (4, 2), "{cols:?}\n{ctx}");
    let burst_bytes = cnt[0] * cnt[1];
    assert!(
        (tx.bytes - burst_bytes).abs() <= 2.0 * 131_072.0 + tx.bytes * 0.001 && cnt[0] > 50.0,
        "sent {} bytes, bursts {cnt:?}\n{ctx}",
        tx.bytes
    );
    assert!(
        lat[1] > 0.0 && lat[1] <= lat[0] && lat[0] <= lat[2] && lat[2] < 1000.0,
        "latency {lat:?}\n{ctx}"
    );
}

fn trip_back(peer: &Path, p: Pairing2, mode: &str) {
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1", "-f", "k"],
        &[
            "-e",
            "--trip-times",
            mode,
            "-t",
            "1",
            "-b",
            "200m",
            "-f",
            "k",
        ],
    );
    let ctx = format!("{p:?} {mode}\n--- client:\n{c}\n--- server:\n{s}");
    let note = if mode == "-R" {
        " (reverse) (trip-times) "
    } else {
        " (full-duplex) (trip-times) "
    };
    for side in [&c, &s] {
        assert!(
            side.lines()
                .any(|l| l.contains("connected with") && l.contains(note)),
            "{note:?}\n{ctx}"
        );
    }
    // The server's sending row: `[  1]` under -R, `[ *1]` beside its
    // receiving one under --full-duplex.
    let tx_tag = if mode == "-R" { "1" } else { "*1" };
    let (sent, _) = total(&s, tx_tag).unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let rx = total(&c, "*1").unwrap_or_else(|| panic!("no client reverse total\n{ctx}"));
    bursts_match(&rx, &sent, &ctx);
    if mode == "--full-duplex" {
        let (sent, _) = total(&c, "1").unwrap_or_else(|| panic!("no client total\n{ctx}"));
        let rx = total(&s, "1").unwrap_or_else(|| panic!("no server receive total\n{ctx}"));
        bursts_match(&rx, &sent, &ctx);
    }
}

both_ways2!(iperf2_trip_times_reverse, |peer: &Path, p| trip_back(
    peer, p, "-R"
));

both_ways2!(iperf2_trip_times_full_duplex, |peer: &Path, p| trip_back(
    peer,
    p,
    "--full-duplex"
));

/// UDP: each datagram carries its send time anyway; what `--trip-times`
/// changes with `-R` and `--full-duplex` is what both ends say on their
/// connection lines (2.2.1's notes, in its order) and the receiving client's
/// latency columns, whose datagram count is what the server sent.
fn udp_trip_back(peer: &Path, p: Pairing2, mode: &str) {
    let (c, s) = run(
        peer,
        p,
        &["-u", "-e", "-i", "1"],
        &["-u", "-e", "--trip-times", mode, "-t", "1", "-b", "2m"],
    );
    let ctx = format!("{p:?} {mode}\n--- client:\n{c}\n--- server:\n{s}");
    let (cnote, snote) = if mode == "-R" {
        (
            " (reverse) (trip-times)",
            " (reverse) (no-udp-fin) (trip-times)",
        )
    } else {
        (
            " (full-duplex) (no-udp-fin) (trip-times)",
            " (full-duplex) (no-udp-fin) (trip-times)",
        )
    };
    for (side, note) in [(&c, cnote), (&s, snote)] {
        assert!(
            side.lines()
                .any(|l| l.contains("connected with") && l.contains(note)),
            "{note:?}\n{ctx}"
        );
    }
    let sent: f64 = s
        .lines()
        .find_map(|l| l.split_once("] Sent ")?.1.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no Sent line\n{ctx}"));
    let (row, cols) = total(&c, "*1").unwrap_or_else(|| panic!("no client reverse total\n{ctx}"));
    let got = row.total.unwrap_or_default() as f64;
    // The server's count includes its FIN datagrams (none here: no FIN).
    assert!(
        (sent - got).abs() <= 2.0 && got > 100.0,
        "sent {sent}, total {got}\n{ctx}"
    );
    let ms = cols.iter().position(|w| w == "ms").unwrap_or(0);
    let lat = cols
        .iter()
        .skip(ms + 1)
        .find(|w| w.matches('/').count() == 3)
        .map(|w| nums(w, '/'))
        .unwrap_or_default();
    assert!(
        lat.len() == 4 && lat[1] > 0.0 && lat[1] <= lat[0] && lat[2] < 1000.0,
        "latency {lat:?} in {cols:?}\n{ctx}"
    );
}

mod iperf2_udp_trip_times_back {
    use super::*;
    use crate::common::iperf2::iperf2_221;

    #[test]
    fn reverse_ours_to_221() {
        if let Some(peer) = iperf2_221() {
            udp_trip_back(&peer, Pairing2::OursToPeer, "-R");
        }
    }

    #[test]
    fn reverse_221_to_ours() {
        if let Some(peer) = iperf2_221() {
            udp_trip_back(&peer, Pairing2::PeerToOurs, "-R");
        }
    }

    #[test]
    fn full_duplex_ours_to_221() {
        if let Some(peer) = iperf2_221() {
            udp_trip_back(&peer, Pairing2::OursToPeer, "--full-duplex");
        }
    }

    #[test]
    fn full_duplex_221_to_ours() {
        if let Some(peer) = iperf2_221() {
            udp_trip_back(&peer, Pairing2::PeerToOurs, "--full-duplex");
        }
    }
}
