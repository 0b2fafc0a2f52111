//! The iperf 2 personality over TCP (rperf3 run as `iperf`) against the stock
//! iperf 2.1.8 and 2.2.1, in both roles: plain, `-P 4`, `-R`,
//! `--full-duplex`, `-d`, `-r`, `-b 50M` and `-n`. Both sides print `-y C`,
//! whose byte counts are exact, so every stream's total on one side equals the
//! other side's; the rate of `-b` holds within 1% at the receiver. Then raw
//! bytes against our server: hostile first bytes end only their connection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::free_port;
use crate::common::iperf2::{ours, rows, total, Pairing2, Server2};

/// One `-y C` TCP record: transfer id, interval, bytes, bits per second.
#[derive(Debug, Clone, PartialEq)]
struct Csv {
    id: String,
    interval: String,
    bytes: u64,
    bps: f64,
}

/// The 9-field records (2.2.1's full-duplex sum, with split interval bounds,
/// is left out: per-stream records are what is compared).
fn csv(text: &str) -> Vec<Csv> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            if f.len() != 9 || !f[6].contains('-') {
                return None;
            }
            Some(Csv {
                id: f[5].to_string(),
                interval: f[6].to_string(),
                bytes: f[7].parse().ok()?,
                bps: f[8].parse().ok()?,
            })
        })
        .collect()
}

/// Every stream's total (sums left out), sorted: the two sides number their
/// streams differently.
fn streams(text: &str) -> Vec<u64> {
    let mut v: Vec<u64> = csv(text)
        .into_iter()
        .filter(|r| r.id != "-1" && r.interval.starts_with("0.0-"))
        .map(|r| r.bytes)
        .collect();
    v.sort_unstable();
    v
}

/// Runs a test both ways: client `extra` against a `-y C` server; returns
/// (client output, server output), each stdout then stderr (the rows are
/// stdout's; stderr says why one is missing).
fn run(peer: &Path, pairing: Pairing2, extra: &[&str]) -> (String, String) {
    let (client, server) = pairing.programs(peer);
    let srv = Server2::start(&server, &["-y", "C"]);
    let mut args = vec!["-y", "C"];
    args.extend_from_slice(extra);
    let out = srv.client(&client, &args);
    out.assert_ok();
    // The server may still be reading what the client wrote (and a stock one
    // prints a -r connection back after the client ended): stop it once it
    // has a row for each of the client's streams.
    let want = streams(&out.stdout).len();
    let served = srv.stop_when(|s| streams(s).len() >= want);
    (
        format!("{}{}", out.stdout, out.stderr),
        format!("{}{}", served.stdout, served.stderr),
    )
}

fn same_streams(peer: &Path, pairing: Pairing2, extra: &[&str], n: usize) {
    let (c, s) = run(peer, pairing, extra);
    let (cs, ss) = (streams(&c), streams(&s));
    assert_eq!(
        cs.len(),
        n,
        "{pairing:?} {extra:?}\nclient:\n{c}\nserver:\n{s}"
    );
    assert_eq!(cs, ss, "{pairing:?} {extra:?}\nclient:\n{c}\nserver:\n{s}");
}

both_ways2!(iperf2_tcp_plain, |peer: &Path, p| same_streams(
    peer,
    p,
    &["-t", "1"],
    1
));

both_ways2!(iperf2_tcp_p4, |peer: &Path, p| same_streams(
    peer,
    p,
    &["-t", "1", "-P", "4"],
    4
));

both_ways2!(iperf2_tcp_reverse, |peer: &Path, p| same_streams(
    peer,
    p,
    &["-t", "1", "-R"],
    1
));

both_ways2!(iperf2_tcp_full_duplex, |peer: &Path, p| same_streams(
    peer,
    p,
    &["-t", "1", "--full-duplex"],
    2
));

both_ways2!(iperf2_tcp_dual, |peer: &Path, p| {
    let l = free_port().to_string();
    same_streams(peer, p, &["-t", "1", "-d", "-L", &l], 2);
});

both_ways2!(iperf2_tcp_tradeoff, |peer: &Path, p| {
    let l = free_port().to_string();
    same_streams(peer, p, &["-t", "1", "-r", "-L", &l], 2);
});

// `-n`: exactly that many bytes arrive (the test header counts, as iperf 2's).
both_ways2!(iperf2_tcp_n, |peer: &Path, p| {
    let (c, s) = run(peer, p, &["-n", "7654321"]);
    assert_eq!(streams(&c), [7_654_321], "{c}");
    assert_eq!(streams(&s), [7_654_321], "{s}");
});

// `-b 50M` (1024-based: 52 428 800 bit/s): our sender's bytes within 1% of
// the rate over the 2 s at the stock receiver, and its rate there within
// 1% over and 3% under (its clock runs until the close reaches it, which a
// busy machine delays: 21 ms seen); a stock sender's bytes over the test
// time within 1% at ours (a stock sender writes one block beyond the rate:
// its own receiver measures 1% over).
both_ways2!(iperf2_tcp_rate_50m, |peer: &Path, p| {
    let _gate = crate::common::load::timed();
    let (c, s) = run(peer, p, &["-t", "2", "-b", "50M"]);
    let sent = csv(&c)
        .into_iter()
        .find(|r| r.id != "-1")
        .expect("client row");
    let got = csv(&s)
        .into_iter()
        .find(|r| r.id != "-1")
        .expect("server row");
    let (want, under) = match p {
        Pairing2::OursToPeer => {
            let bytes = 52_428_800.0 * 2.0 / 8.0;
            assert!(
                (got.bytes as f64 - bytes).abs() <= bytes * 0.01,
                "{p:?}: receiver {} bytes vs {bytes}\n{c}\n{s}",
                got.bytes
            );
            (52_428_800.0, 0.03)
        }
        Pairing2::PeerToOurs => (sent.bytes as f64 * 8.0 / 2.0, 0.01),
    };
    assert!(
        got.bps <= want * 1.01 && got.bps >= want * (1.0 - under),
        "{p:?}: receiver {} vs {want}\n{c}\n{s}",
        got.bps
    );
});

// The text rows of both sides parse with the same fields as the stock
// program's, and agree to the printed precision.
both_ways2!(iperf2_tcp_text_rows, |peer: &Path, p: Pairing2| {
    let (client, server) = p.programs(peer);
    let srv = Server2::start(&server, &["-i", "1"]);
    let out = srv.client(&client, &["-t", "2", "-i", "1", "-P", "2"]);
    out.assert_ok();
    let served = srv.stop();
    let (c, s) = (out.stdout, served.stdout);
    assert!(rows(&c).len() >= 6, "{c}");
    // Each stream's total, summed: a stock 2.2.1 client sometimes leaves out
    // its [SUM] rows when its streams end apart.
    let streams_total = |t: &str| -> f64 {
        ["1", "2"]
            .iter()
            .map(|id| {
                total(t, id)
                    .unwrap_or_else(|| panic!("no total of {id}:\n{t}"))
                    .bytes
            })
            .sum()
    };
    let (tc, ts) = (streams_total(&c), streams_total(&s));
    assert!((tc - ts).abs() <= tc * 0.01, "{c}\n{s}");
});

/// Raw bytes against our server: a silent client, a trickler, a header
/// announcing a million streams and one cut short each end their own
/// connection with a message naming why, and a real client is served at once.
#[test]
fn iperf2_tcp_hostile_first_bytes() {
    let srv = Server2::start(&ours(), &[]);
    let addr = ("127.0.0.1", srv.port);
    let _silent = TcpStream::connect(addr).unwrap();
    let mut trickle = TcpStream::connect(addr).unwrap();
    trickle
        .write_all(&[0x40, 0x01, 0x00, 0x80, 0, 0, 0, 1, 0, 0])
        .unwrap();
    let mut liar = TcpStream::connect(addr).unwrap();
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(&[0x40, 0x01, 0x00, 0x80]);
    h[4..8].copy_from_slice(&1_000_000u32.to_be_bytes());
    liar.write_all(&h).unwrap();
    let mut short = TcpStream::connect(addr).unwrap();
    short.write_all(&[0x40, 0x01, 0x00, 0x80, 0, 0]).unwrap();
    short.shutdown(std::net::Shutdown::Write).unwrap();
    let t = Instant::now();
    let out = srv.client(&ours(), &["-n", "1000000", "-y", "C"]);
    out.assert_ok();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(streams(&out.stdout), [1_000_000]);
    // The liar was answered by a close, not an ack.
    let mut b = [0u8; 64];
    liar.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(liar.read(&mut b).unwrap(), 0);
    // The header deadline (4 s) ends the silent client and the trickler.
    let wants = [
        "1000000 parallel streams requested, more than the limit of 256",
        "test header truncated: 6 of 64 bytes",
        "test header incomplete after 4.0 s (10 of 64 bytes)",
        "test header incomplete after 4.0 s (0 of 4 bytes)",
    ];
    let served = srv.stop_when(|all| wants.iter().all(|w| all.contains(w)));
    let all = format!("{}{}", served.stdout, served.stderr);
    for want in wants {
        assert!(all.contains(want), "{want}\n{all}");
    }
    assert_eq!(served.code(), Some(0), "{all}");
}

/// SIGINT ends our server during a stock client's test: its final row is
/// printed, it exits 0 (as iperf 2), and the client stops long before its -t.
#[test]
fn iperf2_tcp_sigint_flushes_the_server() {
    let _gate = crate::common::load::timed();
    let Some(peer) = crate::common::iperf2::iperf2_221() else {
        return;
    };
    let srv = Server2::start(&ours(), &["-y", "C", "-i", "0.2"]);
    let t = Instant::now();
    let client = crate::common::Proc::spawn(&peer, &srv.args(&["-t", "20", "-y", "C"]));
    // The session runs once its first interval row is out.
    assert!(srv.wait_output(|s| !csv(s).is_empty()), "no interval row");
    let served = srv.stop();
    assert_eq!(served.code(), Some(0), "{served}");
    // One stream; its final row (from 0 to the interrupt) is the largest.
    let rows = csv(&served.stdout);
    assert!(rows.iter().all(|r| r.id == rows[0].id), "{served}");
    let last = rows.last().expect("rows");
    assert!(
        last.interval.starts_with("0.0-") && last.bytes > 0,
        "{served}"
    );
    assert!(rows.iter().all(|r| r.bytes <= last.bytes), "{served}");
    let out = client.finish(Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // The client counted at least what the server read.
    assert!(
        streams(&out.stdout)
            .first()
            .is_some_and(|&c| c >= last.bytes),
        "{out}"
    );
}

/// `-I`: the client sends its standard input (after the header) and ends at
/// its end; the stock 2.2.1 server counts every byte.
#[test]
fn iperf2_tcp_stdin_input() {
    let Some(peer) = crate::common::iperf2::iperf2_221() else {
        return;
    };
    let path = crate::common::scratch_file("iperf2-stdin.bin");
    std::fs::write(&path, vec![b'x'; 500_001]).unwrap();
    let srv = Server2::start(&peer, &["-y", "C"]);
    let out = std::process::Command::new(ours())
        .args(srv.args(&["-I", "-t", "10", "-y", "C"]))
        .stdin(std::fs::File::open(&path).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let client = String::from_utf8_lossy(&out.stdout).into_owned();
    let served = srv.stop_when(|s| !streams(s).is_empty());
    assert_eq!(streams(&client), [500_065], "{client}");
    assert_eq!(streams(&served.stdout), [500_065], "{served}");
}
