//! Ctrl-C on our UDP server in the middle of a test: as 2.2.1's server does,
//! it says it is waiting for its flows, ends each at once with its final
//! row, and sends the client the Server Report of what arrived, which the
//! client (stock 2.2.1 or ours) prints after its FIN; then it exits 0. A TCP
//! server says the same line.

use std::time::{Duration, Instant};

use crate::common::iperf2::{iperf2_221, ours, server_report, total, Server2};
use crate::common::{Proc, CLIENT_TIMEOUT};

const WAITING: &str = "Waiting for server threads to complete. Interrupt again to force quit.";

fn interrupted_mid_test(client: &std::path::Path) {
    let srv = Server2::start(&ours(), &["-u", "-i", "0.5"]);
    let args = srv.args(&["-u", "-t", "3"]);
    let cli = Proc::spawn(client, &args);
    // Mid-test: the server has printed its first half-second row.
    assert!(
        srv.wait_output(|o| o.contains("0.00-0.50 sec")),
        "no first row"
    );
    let t = Instant::now();
    let s = srv.stop();
    let stopped_in = t.elapsed();
    let c = cli.finish(CLIENT_TIMEOUT);
    let ctx = format!("stopped in {stopped_in:?}\n--- client:\n{c}\n--- server:\n{s}");
    assert_eq!((s.code(), c.code()), (Some(0), Some(0)), "{ctx}");
    assert!(stopped_in < Duration::from_secs(2), "{ctx}");
    assert!(s.stderr.contains(WAITING), "{ctx}");
    let got = total(&s.stdout, "1").unwrap_or_else(|| panic!("no server total\n{ctx}"));
    assert!(got.end < 2.5, "the flow outlived the signal\n{ctx}");
    let rep = server_report(&c.stdout).unwrap_or_else(|| panic!("no Server Report\n{ctx}"));
    assert_eq!(
        (rep.lost, rep.total),
        (got.lost, got.total),
        "the report is not the server's final row\n{ctx}"
    );
    assert!(got.total.unwrap_or(0) > 40, "{ctx}");
}

#[test]
fn iperf2_udp_server_interrupted_sends_a_stock_client_its_report() {
    let Some(stock) = iperf2_221() else { return };
    interrupted_mid_test(&stock);
}

#[test]
fn iperf2_udp_server_interrupted_sends_our_client_its_report() {
    interrupted_mid_test(&ours());
}

/// A TCP server interrupted mid-test says it waits for its tests (2.2.1's
/// line), ends the test at once with its final row and exits 0; stopped
/// once its test has ended, it says nothing of the kind.
#[test]
fn iperf2_tcp_server_interrupted_mid_test_says_it_waits() {
    let client = iperf2_221().unwrap_or_else(ours);
    let srv = Server2::start(&ours(), &["-i", "0.5"]);
    let cli = Proc::spawn(&client, &srv.args(&["-t", "3", "-b", "10M"]));
    assert!(
        srv.wait_output(|o| o.contains("0.00-0.50 sec")),
        "no first row"
    );
    let s = srv.stop();
    let c = cli.finish(CLIENT_TIMEOUT);
    let ctx = format!("--- client:\n{c}\n--- server:\n{s}");
    assert_eq!(s.code(), Some(0), "{ctx}");
    assert!(s.stderr.contains(WAITING), "{ctx}");
    let got = total(&s.stdout, "1").unwrap_or_else(|| panic!("no server total\n{ctx}"));
    assert!(got.end < 2.5, "the test outlived the signal\n{ctx}");

    let srv = Server2::start(&ours(), &[]);
    let c = srv.client(&client, &["-t", "0.3", "-b", "10M"]);
    assert_eq!(c.code(), Some(0), "{c}");
    let s = srv.stop_when(|o| o.contains(" sec "));
    assert!(!s.stderr.contains(WAITING), "{s}");
}
