//! `--txdelay-time`: the client waits between connecting and its first data,
//! and its test's clock starts after the wait, as a stock iperf 2.2.1 server
//! shows: over TCP the header arrives at once and the data a second later
//! (the server's clock runs from the header, as with a stock client); over
//! UDP nothing is sent before the wait, so the server's test is the data's.

use std::time::{Duration, Instant};

use crate::common::iperf2::{iperf2_221, ours, rows, total, Server2};
use crate::common::Output;

fn timed(srv: &Server2, args: &[&str]) -> (Output, Duration) {
    let t = Instant::now();
    let out = srv.client(&ours(), args);
    (out, t.elapsed())
}

#[test]
fn iperf2_txdelay_tcp_sends_the_header_then_waits() {
    let Some(stock) = iperf2_221() else { return };
    let srv = Server2::start(&stock, &["-i", "1"]);
    let (out, took) = timed(
        &srv,
        &["-t", "1", "-i", "1", "-b", "100M", "--txdelay-time", "1"],
    );
    let s = srv.stop();
    let ctx = format!("took {took:?}\n--- client:\n{out}\n--- server:\n{s}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(
        out.stdout
            .contains("[  1] Client traffic to start in 1 seconds at "),
        "{ctx}"
    );
    assert!(took >= Duration::from_secs(2), "{ctx}");
    let server_rows: Vec<_> = rows(&s.stdout)
        .into_iter()
        .filter(|r| r.tag == "1")
        .collect();
    // The server's first second holds the header alone; the data follows.
    let first = server_rows
        .first()
        .unwrap_or_else(|| panic!("no rows\n{ctx}"));
    assert_eq!((first.start, first.end), (0.0, 1.0), "{ctx}");
    assert!(first.bytes < 1000.0, "data before the delay ended\n{ctx}");
    let sent = total(&out.stdout, "1").unwrap_or_else(|| panic!("no client total\n{ctx}"));
    let got = total(&s.stdout, "1").unwrap_or_else(|| panic!("no server total\n{ctx}"));
    assert!(got.end >= 2.0, "{ctx}");
    // 100 Mbit/s for the client's one second after the wait.
    assert!((sent.end - 1.0).abs() < 0.1, "{ctx}");
    assert!((got.bytes - sent.bytes).abs() <= sent.bytes * 0.01, "{ctx}");
}

#[test]
fn iperf2_txdelay_udp_sends_nothing_before_the_wait() {
    let Some(stock) = iperf2_221() else { return };
    let srv = Server2::start(&stock, &["-u", "-i", "1"]);
    let (out, took) = timed(
        &srv,
        &["-u", "-b", "10m", "-t", "1", "--txdelay-time", "0.8"],
    );
    let s = srv.stop();
    let ctx = format!("took {took:?}\n--- client:\n{out}\n--- server:\n{s}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(took >= Duration::from_millis(1800), "{ctx}");
    let got = total(&s.stdout, "1").unwrap_or_else(|| panic!("no server total\n{ctx}"));
    // A datagram before the wait would stretch the server's test to 1.8 s.
    assert!(got.end < 1.2, "the server's test includes the wait\n{ctx}");
    assert_eq!(got.lost, Some(0), "{ctx}");
    assert!(got.total.unwrap_or(0) > 800, "{ctx}");
}
