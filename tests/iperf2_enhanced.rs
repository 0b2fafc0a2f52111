//! `-e` on both sides (rperf3 run as `iperf` against the stock iperf 2.1.8
//! and 2.2.1, each role): every side's total row carries the stock `-e`
//! columns with figures that can be checked against the other side's. TCP:
//! the sender's Write/Err (writes counted, no errors), the receiver's
//! Reads=Dist, and both byte totals within one 128 KiB write (`-f k` prints
//! them to the KByte). UDP: the sender's Write/Err and PPS, the receiver's
//! latency avg/min/max/stdev and PPS, its total equal to the sender's "Sent".

use std::path::Path;

use crate::common::iperf2::{parse_row, run_pair as run, sent_datagrams, Pairing2, Row};

/// The whole-test row of stream 1 and the words after its rate.
fn total_cols(text: &str) -> Option<(Row, Vec<String>)> {
    text.lines()
        .filter_map(|l| parse_row(l).map(|r| (r, l)))
        .filter(|(r, _)| r.tag == "1" && r.start == 0.0)
        .max_by(|a, b| a.0.end.total_cmp(&b.0.end))
        .map(|(r, l)| {
            let rest = l.split_once("/sec").map_or("", |x| x.1);
            (r, rest.split_whitespace().map(str::to_string).collect())
        })
}

/// `a/b...` as numbers.
fn nums(word: &str, sep: char) -> Vec<f64> {
    word.split(sep).filter_map(|w| w.parse().ok()).collect()
}

fn tcp(peer: &Path, p: Pairing2) {
    let (c, s) = run(peer, p, &["-e", "-f", "k"], &["-e", "-f", "k", "-t", "1"]);
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    let (sent, cols) = total_cols(&c).unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let we = nums(&cols[0], '/');
    assert!(
        we.len() == 2 && we[0] > 0.0 && we[1] == 0.0,
        "Write/Err {cols:?}\n{ctx}"
    );
    let (got, cols) = total_cols(&s).unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let (reads, dist) = cols[0].split_once('=').expect("Reads=Dist");
    assert!(reads.parse::<u64>().unwrap() > 0, "{ctx}");
    assert_eq!(dist.split(':').count(), 8, "{ctx}");
    assert!(
        (sent.bytes - got.bytes).abs() <= 129.0 * 1024.0,
        "sent {} received {}\n{ctx}",
        sent.bytes,
        got.bytes
    );
}

fn udp(peer: &Path, p: Pairing2) {
    let (c, s) = run(peer, p, &["-u", "-e"], &["-u", "-e", "-t", "1", "-b", "2M"]);
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    // The sender's own total, not the Server Report's row below it.
    let own = c.split("Server Report:").next().unwrap_or_default();
    let (_, cols) = total_cols(own).unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let we = nums(&cols[0], '/');
    assert!(
        we.len() >= 2 && we[0] > 50.0 && we[1] == 0.0,
        "Write/Err {cols:?}\n{ctx}"
    );
    assert!(cols.iter().any(|w| w == "pps"), "{ctx}");
    let (got, cols) = total_cols(&s).unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let sent = sent_datagrams(&c, "1").expect("Sent");
    assert_eq!((got.lost, got.total), (Some(0), Some(sent - 1)), "{ctx}");
    // "0.003 ms 0/181 (0%) avg/min/max/stdev ms N pps ...".
    let lat = nums(&cols[4], '/');
    assert_eq!(lat.len(), 4, "latency {cols:?}\n{ctx}");
    assert!(
        lat[1] <= lat[0] && lat[0] <= lat[2],
        "latency {lat:?}\n{ctx}"
    );
    assert_eq!(cols[5], "ms", "{ctx}");
    let pps: f64 = cols[6].parse().expect("PPS");
    assert_eq!(cols[7], "pps", "{ctx}");
    // The datagrams the client sent over the span the receiver measured (a
    // stock 2.2.1 server prints "-0 pps" in its final row: ours only).
    let expected = (sent - 1) as f64 / got.end;
    if p == Pairing2::PeerToOurs {
        assert!(
            (pps - expected).abs() <= 3.0,
            "pps {pps} vs {expected}\n{ctx}"
        );
    }
}

both_ways2!(iperf2_enhanced_tcp, |peer: &Path, p| tcp(peer, p));
both_ways2!(iperf2_enhanced_udp, |peer: &Path, p| udp(peer, p));
