//! `--latency` against stock iperf3 servers (3.12 and 3.21): no probe
//! connections, the test runs as without it, and the client reports what it
//! measures alone (its own streams' round trips, connect times).

use crate::common;

use std::path::Path;

use common::interop::iperf3_312;
use common::Server;

/// The client's "latency total (client alone): ..." counts: idle, foreign, self.
fn alone_counts(stderr: &str) -> (u64, u64, u64) {
    let l = stderr
        .lines()
        .find(|l| l.contains("latency total"))
        .unwrap_or_else(|| panic!("no total in:\n{stderr}"));
    assert!(l.contains("(client alone)"), "{l}");
    let n = |k: &str| -> u64 {
        let s = &l[l.find(&format!(" {k} n=")).unwrap() + k.len() + 4..];
        s[..s.find(' ').unwrap()].parse().unwrap()
    };
    (n("idle"), n("foreign"), n("self"))
}

fn against(peer: &Path) {
    let srv = Server::start_program(peer, &[]);
    // TCP: the control and one data handshake are idle round trips, the
    // sending stream's TCP_INFO the self probes (10 a second).
    let out = srv.client(&["-t", "2", "--latency", "-d", "-J"]);
    out.assert_ok();
    let (idle, foreign, own) = alone_counts(&out.stderr);
    assert_eq!((idle, foreign), (2, 0), "{}", out.stderr);
    assert!((15..=22).contains(&own), "self {own}");
    // The server saw an ordinary test: its JSON has it, with our bytes.
    let j = out.json();
    assert!(j["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
    // -R: the client only receives: no round trips of its own to sample.
    let out = srv.client(&["-t", "1", "-R", "-P", "2", "--latency", "-d"]);
    out.assert_ok();
    assert_eq!(alone_counts(&out.stderr), (3, 0, 0), "{}", out.stderr);
    // UDP: only the control connection has a handshake.
    let out = srv.client(&["-u", "-b", "7M", "-P", "4", "-t", "1", "--latency", "-d"]);
    out.assert_ok();
    assert_eq!(alone_counts(&out.stderr), (1, 0, 0), "{}", out.stderr);
}

#[test]
fn latency_against_a_stock_3_12_server() {
    if let Some(peer) = iperf3_312() {
        against(&peer);
    }
}

#[test]
fn latency_against_a_stock_3_21_server() {
    if let Some(peer) = common::iperf3_321() {
        against(&peer);
    }
}
