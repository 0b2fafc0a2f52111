//! iperf 2's latency options between rperf3 (as `iperf`) and the stock 2.1.8
//! and 2.2.1, each role, each side's figures checked against the other's.
//! `--trip-times` on TCP: the receiver's bursts add up to what the sender
//! wrote, and the one-way latency on loopback is positive and below 1 ms.

use std::path::Path;

use crate::common::iperf2::{parse_row, run_pair as run, Pairing2, Row};

/// The whole-test row of stream 1 and the words after its rate.
pub(crate) fn total_cols(text: &str) -> Option<(Row, Vec<String>)> {
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
pub(crate) fn nums(word: &str, sep: char) -> Vec<f64> {
    word.split([sep, '(', ')'])
        .filter_map(|w| w.parse().ok())
        .collect()
}

fn trip_times(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    // Paced, so that the latency is the path's and not a full send buffer's.
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1", "-f", "k"],
        &["-e", "--trip-times", "-t", "1", "-b", "100m", "-f", "k"],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    for side in [&c, &s] {
        assert!(
            side.lines()
                .any(|l| l.contains("connected with") && l.contains(" (trip-times) ")),
            "(trip-times) note\n{ctx}"
        );
    }
    let (sent, _) = total_cols(&c).unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let (_, cols) = total_cols(&s).unwrap_or_else(|| panic!("no server total\n{ctx}"));
    // "avg/min/max/stdev ms (cnt/size) inP NetPwr reads=dist".
    assert_eq!(cols[1], "ms", "latency columns {cols:?}\n{ctx}");
    let lat = nums(&cols[0], '/');
    let cnt = nums(&cols[2], '/');
    assert_eq!((lat.len(), cnt.len()), (4, 2), "{cols:?}\n{ctx}");
    // Every 128 KiB write the sender made is one burst (a paced 2.1.8 makes
    // it in two writes, so bytes are compared, not writes).
    let burst_bytes = cnt[0] * cnt[1];
    assert!(
        (sent.bytes - burst_bytes).abs() <= 2.0 * 131_072.0 && cnt[0] > 50.0,
        "sent {} bytes, bursts {cnt:?}\n{ctx}",
        sent.bytes
    );
    // Loopback trips of a few hundred microseconds; a busy host (4 tests at
    // once, the hypervisor taking up to a fifth of the CPU) read 1.02 ms. A
    // wrong clock (seconds, or the epoch) is far outside 20 ms.
    let (avg, min, max) = (lat[0], lat[1], lat[2]);
    assert!(
        min > 0.0 && min <= avg && avg <= max && avg < 20.0,
        "latency {lat:?}\n{ctx}"
    );
}

both_ways2!(iperf2_latency_trip_times, |peer: &Path, p| trip_times(
    peer, p
));

/// `--bounceback`: 10 requests a second for 2 s. The client's round trips
/// (count, avg/min/max) and its RPS (round trips per second of round-trip
/// time) against the server's own byte count: every round trip is one
/// 100-byte request and one 100-byte reply.
fn bounceback(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-i", "1"],
        &["--bounceback", "-t", "2", "-i", "1"],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    for side in [&c, &s] {
        assert!(
            side.lines().any(|l| l.contains("connected with")
                && (l.contains("(bb w/quickack req/reply/hold=100/100/0)")
                    || l.contains("(bb w/quickack len/hold=100/0)"))),
            "bounceback note\n{ctx}"
        );
    }
    let (_, cols) = total_cols(&c).unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let (cnt, stats) = cols[0].split_once('=').expect("cnt=avg/min/max/stdev");
    let count: f64 = cnt.parse().expect("count");
    let rtt = nums(stats, '/');
    let rps: f64 = cols
        .iter()
        .find_map(|w| w.strip_prefix("RPS="))
        .or_else(|| cols.iter().rev().nth(1).map(String::as_str))
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("RPS in {cols:?}\n{ctx}"));
    // Two bursts of 10 in 2 s, give or take a request at the ends. A stock
    // client's own clock can also start a third burst exactly at 2.0 s and
    // count all of it or the part done before it stops (seen with 2.1.8's
    // client: rows of 10 and 10, totals of 30 and of 24 over 2.0006 s); the
    // server's bytes below hold the count to what was exchanged.
    let stock_client = matches!(p, Pairing2::PeerToOurs);
    let counts = if stock_client {
        18.0..=30.0
    } else {
        18.0..=22.0
    };
    assert!(counts.contains(&count), "count {count}\n{ctx}");
    assert!(
        rtt[1] > 0.0 && rtt[1] <= rtt[0] && rtt[0] <= rtt[2] && rtt[1] < 1.0,
        "round trips {rtt:?}\n{ctx}"
    );
    // RPS is 1 / mean round trip; the mean is printed to the microsecond, so
    // the unrounded mean lies within half of one of it (RPS itself rounded).
    let (lo, hi) = (1e3 / (rtt[0] + 0.0005), 1e3 / (rtt[0] - 0.0005));
    assert!(
        (lo - 1.0..=hi + 1.0).contains(&rps),
        "RPS {rps} vs {lo}..{hi}\n{ctx}"
    );
    // The server may have answered one request more: a 2.1.8 client writes
    // one as its time runs out and does not wait for the reply.
    let (got, _) = total_cols(&s).unwrap_or_else(|| panic!("no server total\n{ctx}"));
    let answered = |n: f64| (got.bytes - n * 200.0).abs() <= n * 200.0 * 0.005 + 1.0;
    assert!(
        answered(count) || answered(count + 1.0),
        "server {} bytes, client {count} round trips\n{ctx}",
        got.bytes
    );
}

both_ways2!(iperf2_latency_bounceback, |peer: &Path, p| bounceback(
    peer, p
));

/// `--txstart-time`: the client connects at once, says when its traffic
/// starts, and sends from then for `-t`; the server (which counts from the
/// connection, as 2.2.1's does) sees the wait before the same bytes.
fn txstart(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // A whole second 1 to 2 s ahead.
    let at = (now + 2).to_string();
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1", "-f", "k"],
        &["-e", "-t", "1", "-i", "1", "-f", "k", "--txstart-time", &at],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert!(
        c.lines()
            .any(|l| l.contains("] Client traffic to start in ")),
        "start line\n{ctx}"
    );
    let (sent, _) = total_cols(&c).unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let (got, _) = total_cols(&s).unwrap_or_else(|| panic!("no server total\n{ctx}"));
    assert!(
        (sent.end - 1.0).abs() < 0.2,
        "client span {}\n{ctx}",
        sent.end
    );
    let wait = got.end - sent.end;
    assert!(
        (0.8..=2.3).contains(&wait),
        "server saw a wait of {wait} s\n{ctx}"
    );
    assert!(
        (sent.bytes - got.bytes).abs() <= 129.0 * 1024.0,
        "sent {} received {}\n{ctx}",
        sent.bytes,
        got.bytes
    );
}

both_ways2!(iperf2_latency_txstart, |peer: &Path, p| txstart(peer, p));

/// `--histograms` on the receiver of `--trip-times` bursts: after every row
/// its `F8-PDF` line (`F8(f)` after the total) counts the same bursts in its
/// bins as the row's (cnt/size), and names the row's largest delay.
fn histograms(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1", "--histograms"],
        &["-e", "--trip-times", "-t", "2", "-i", "1", "-b", "50m"],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert!(
        s.lines()
            .any(|l| l.starts_with("Enabled receive histograms bin-width=0.100 ms")),
        "settings line\n{ctx}"
    );
    let lines: Vec<&str> = s.lines().collect();
    let mut finals = 0;
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(row) = parse_row(l) else { continue };
        let rest = l.split_once("/sec").map_or("", |x| x.1);
        let cols: Vec<&str> = rest.split_whitespace().collect();
        if cols.get(1) != Some(&"ms") || row.tag != "1" {
            continue;
        }
        let lat = nums(cols[0], '/');
        let cnt = nums(cols[2], '/')[0];
        let h = lines.get(i + 1).copied().unwrap_or_default();
        assert!(
            h.contains("F8-PDF:") || h.contains("F8(f)-PDF:"),
            "after {l:?}\n{ctx}"
        );
        finals += usize::from(h.contains("F8(f)-PDF:"));
        let hc: f64 = h
            .split("cnt(")
            .nth(1)
            .and_then(|x| x.split(')').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or(-1.0);
        // Bins count every burst of the row (each bin:count pair adds up).
        let bins: f64 = h
            .split(")=")
            .nth(1)
            .and_then(|x| x.split(' ').next())
            .map(|x| {
                x.split(',')
                    .filter_map(|b| b.split(':').nth(1)?.parse::<f64>().ok())
                    .sum()
            })
            .unwrap_or(-1.0);
        let max: f64 = h
            .rsplit(" (")
            .next()
            .and_then(|x| x.split(" ms/").next())
            .and_then(|x| x.parse().ok())
            .unwrap_or(-1.0);
        assert_eq!((hc, bins), (cnt, cnt), "{l:?}\n{h:?}\n{ctx}");
        // 2.2.1 leaves the largest delay off some of its total lines.
        let ours = p == Pairing2::PeerToOurs;
        if ours || h.contains(" ms/") {
            assert!((max - lat[2]).abs() < 0.0015, "max {max} vs {lat:?}\n{ctx}");
        }
        seen += 1;
    }
    assert!(
        seen >= 3 && finals == 1,
        "{seen} rows, {finals} totals\n{ctx}"
    );
}

both_ways2!(iperf2_latency_histograms, |peer: &Path, p| histograms(
    peer, p
));

/// Delays past the last bin (`--histograms=1u,2`: two bins of 1 µs, and every
/// loopback burst takes longer) are the line's overflow: `obu` holds each
/// burst the row counted, no bin does, and the 95% and 99.7% bins, never
/// passed, read as the bin count, as 2.2.1 prints them.
fn histogram_overflow(peer: &Path, p: Pairing2) {
    let _gate = crate::common::load::timed();
    let (c, s) = run(
        peer,
        p,
        &["-e", "-i", "1", "--histograms=1u,2"],
        &["-e", "--trip-times", "-t", "2", "-i", "1", "-b", "50m"],
    );
    let ctx = format!("{p:?}\n--- client:\n{c}\n--- server:\n{s}");
    let lines: Vec<&str> = s.lines().collect();
    let mut seen = 0;
    for (i, l) in lines.iter().enumerate() {
        let Some(row) = parse_row(l) else { continue };
        let rest = l.split_once("/sec").map_or("", |x| x.1);
        let cols: Vec<&str> = rest.split_whitespace().collect();
        if cols.get(1) != Some(&"ms") || row.tag != "1" {
            continue;
        }
        let cnt = nums(cols[2], '/')[0] as u64;
        let h = lines.get(i + 1).copied().unwrap_or_default();
        let want =
            format!("bin(w=1us):cnt({cnt}) (5.00/95.00/99.7%=0/2/2,Outliers=0,obl/obu=0/{cnt})");
        assert!(cnt > 0 && h.contains(&want), "{want}\n{h:?}\n{ctx}");
        seen += 1;
    }
    assert!(seen >= 3, "{seen} rows\n{ctx}");
}

both_ways2!(iperf2_latency_histogram_overflow, |peer: &Path, p| {
    histogram_overflow(peer, p)
});
