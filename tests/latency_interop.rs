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
    assert_eq!(j["end"]["latency"]["with_server"], serde_json::json!(false));
    assert_eq!(j["end"]["latency"]["idle"]["count"], serde_json::json!(2));
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

/// The interop suite's own checks (clean exits, stream counts, delivery, duration)
/// on `rperf3 -c ... --latency` against a stock server: nothing else changes.
fn unchanged(peer: &Path) {
    use common::interop::{run_with, Mode, Pairing};
    let cases: [(&[&str], Mode, usize); 4] = [
        (&["-t", "1", "--latency"], Mode::Normal, 1),
        (&["-t", "1", "-R", "--latency"], Mode::Reverse, 1),
        (&["-t", "1", "--bidir", "--latency"], Mode::Bidir, 2),
        (&["-t", "1", "-P", "4", "--latency=100"], Mode::Normal, 4),
    ];
    for (args, mode, streams) in cases {
        let mut r = run_with(peer, Pairing::OursToIperf3, args);
        r.assert_clean();
        r.check_stream_counts(streams);
        r.check_tcp_delivery(mode, streams);
        r.check_duration(1.0);
        r.assert_clean();
        // The stock server's document has no trace of it.
        assert!(r.server["end"].get("latency").is_none(), "{args:?}");
        assert_eq!(
            r.client["end"]["latency"]["with_server"],
            serde_json::json!(false)
        );
    }
    let mut r = run_with(peer, Pairing::OursToIperf3, &["-u", "-t", "1", "--latency"]);
    r.assert_clean();
    r.check_udp_accounting(Mode::Normal);
    r.assert_clean();
}

#[test]
fn interop_checks_hold_with_latency_against_3_12() {
    if let Some(peer) = iperf3_312() {
        unchanged(&peer);
    }
}

#[test]
fn interop_checks_hold_with_latency_against_3_21() {
    if let Some(peer) = common::iperf3_321() {
        unchanged(&peer);
    }
}
