//! `rperf3 -c HOST --bounceback` end to end on loopback: the client's count of
//! transactions against the server's count of requests it answered, the hold
//! and period against the clock, the sizes against a capture of the wire, and
//! a stock iperf3 server refused before any data connection.

use crate::common;

use std::path::Path;

use common::capture::{Capture, Packet};
use common::interop::iperf3_312;
use common::stock_refusal;
use common::Server;
use serde_json::Value;

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("no {k} in {v}"))
}

/// Round-trip fields in order, all positive.
fn assert_ordered(v: &Value) {
    let (min, p50, p90, p99, max) = (
        f(v, "min_ms"),
        f(v, "p50_ms"),
        f(v, "p90_ms"),
        f(v, "p99_ms"),
        f(v, "max_ms"),
    );
    let mean = f(v, "mean_ms");
    assert!(
        0.0 < min && min <= p50 && p50 <= p90 && p90 <= p99 && p99 <= max,
        "{v}"
    );
    assert!(min <= mean && mean <= max, "{v}");
}

/// The server's count of requests it answered, from its own report carried
/// back by `--get-server-output`.
fn answered(j: &Value) -> u64 {
    let text = j["server_output_text"].as_str().unwrap_or("");
    let line = text
        .lines()
        .find(|l| l.starts_with("Bounceback: "))
        .unwrap_or_else(|| panic!("no Bounceback line in:\n{text}"));
    let n = line["Bounceback: ".len()..].split(' ').next().unwrap();
    n.parse().unwrap_or_else(|_| panic!("{line}"))
}

#[test]
fn bounceback_transactions_equal_the_requests_the_server_answered_issue18() {
    let srv = Server::start(&[]);
    let out = srv.client(&[
        "--bounceback",
        "-t",
        "1",
        "-P",
        "2",
        "-J",
        "--get-server-output",
    ]);
    out.assert_ok();
    let j = out.json();
    let bb = &j["end"]["bounceback"];
    let count = bb["count"].as_u64().unwrap();
    assert!(count > 100, "{bb}");
    assert_ordered(bb);
    assert_eq!(count, answered(&j));
    // The intervals add up to the end.
    let per_interval: u64 = j["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["bounceback"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(per_interval, count);
    // Without the option not one new key.
    let plain = srv.client(&["-t", "1", "-J"]);
    assert!(!plain.stdout.contains("bounceback"), "{plain}");
}

#[test]
fn bounceback_hold_bounds_every_round_trip_and_the_rate_issue18() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let out = srv.client(&["--bounceback", "--bounceback-hold", "0.01", "-t", "1", "-J"]);
    out.assert_ok();
    let bb = &out.json()["end"]["bounceback"];
    // The server holds each request 10 ms: no round trip is shorter, and one
    // stream completes at most 100 a second.
    assert!(f(bb, "min_ms") >= 10.0, "{bb}");
    let tps = f(bb, "tps");
    assert!(tps <= 100.0, "{bb}");
    assert!(bb["count"].as_u64().unwrap() > 0, "{bb}");
    assert_ordered(bb);
}

/// Payload lengths of the captured segments from `src` port to `dst` port.
fn payloads(seen: &[Packet], src: u16, dst: u16) -> Vec<u64> {
    seen.iter()
        .filter(|p| p.src == src && p.dst == dst && p.len > 0)
        .map(|p| p.len)
        .collect()
}

#[test]
fn bounceback_period_and_sizes_as_the_wire_carries_them_issue18() {
    if !common::require_tool("dumpcap") {
        return;
    }
    let srv = Server::start(&[]);
    let capture = Capture::start(&format!("tcp port {}", srv.port));
    let out = srv.client(&[
        "--bounceback",
        "--bounceback-period",
        "0.05",
        "--bounceback-request",
        "200",
        "--bounceback-reply",
        "3000",
        "-t",
        "1",
        "-J",
        "--get-server-output",
    ]);
    out.assert_ok();
    let seen = capture.stop();
    let j = out.json();
    let count = j["end"]["bounceback"]["count"].as_u64().unwrap();
    // Starts every 50 ms for 1 s: about 20.
    assert!((18..=21).contains(&count), "{}", j["end"]["bounceback"]);
    let local = j["start"]["connected"][0]["local_port"].as_u64().unwrap() as u16;
    let requests = payloads(&seen, local, srv.port);
    let replies = payloads(&seen, srv.port, local);
    // The cookie, then one 200-byte segment per request (TCP_NODELAY, one
    // write each); one 3000-byte segment per reply.
    assert_eq!(requests.first(), Some(&37), "{requests:?}");
    assert!(requests[1..].iter().all(|&n| n == 200), "{requests:?}");
    assert!(replies.iter().all(|&n| n == 3000), "{replies:?}");
    assert_eq!(requests.len() as u64 - 1, count, "{requests:?}");
    assert_eq!(replies.len() as u64, count, "{replies:?}");
    assert_eq!(answered(&j), count);
}

#[test]
fn bounceback_load_runs_in_the_direction_asked_issue18() {
    let srv = Server::start(&[]);
    let out = srv.client(&["--bounceback", "--bounceback-load", "down", "-t", "1", "-J"]);
    out.assert_ok();
    let bb = &out.json()["end"]["bounceback"];
    assert!(bb["count"].as_u64().unwrap() > 0, "{bb}");
    assert_ordered(bb);
    // Loopback carries gigabits; none of it up.
    assert!(f(bb, "load_down_bps") > 1e8, "{bb}");
    assert_eq!(f(bb, "load_up_bps"), 0.0, "{bb}");
}

fn against_stock(peer: &Path) {
    stock_refusal::refused_by_stock(
        peer,
        &["--bounceback", "-t", "1"],
        "test initialization failed: the server is not rperf3 \
         (--bounceback needs an rperf3 server)",
    );
}

#[test]
fn bounceback_against_a_stock_3_12_server_is_a_clear_error_issue18() {
    if let Some(peer) = iperf3_312() {
        against_stock(&peer);
    }
}

#[test]
fn bounceback_against_a_stock_3_21_server_is_a_clear_error_issue18() {
    if let Some(peer) = common::iperf3_321() {
        against_stock(&peer);
    }
}
