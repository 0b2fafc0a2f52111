//! `rperf3 -c HOST --rpm` end to end: against an rperf3 server every stage runs
//! as its own iperf3 test and is reported; against a stock iperf3 server the
//! client stops before any data or load connection with a clear error.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::interop::iperf3_312;
use common::stock_refusal;
use common::Server;

/// Round-trip fields as `--latency` prints them.
fn assert_round_trips(stage: &str, v: &serde_json::Value) {
    let count = v["count"].as_u64().unwrap_or(0);
    assert!(count > 0, "{stage}: no round trips in {v}");
    let f = |k: &str| {
        v[k].as_f64()
            .unwrap_or_else(|| panic!("{stage}: no {k} in {v}"))
    };
    let (min, p50, p90, p99, max) = (
        f("min_ms"),
        f("p50_ms"),
        f("p90_ms"),
        f("p99_ms"),
        f("max_ms"),
    );
    assert!(
        0.0 < min && min <= p50 && p50 <= p90 && p90 <= p99 && p99 <= max,
        "{stage}: {v}"
    );
}

#[test]
fn rpm_runs_every_stage_against_an_rperf3_server_issue18() {
    let srv = Server::start(&[]);
    let t = Instant::now();
    let out = srv.client(&["--rpm", "-J", "--rpm-time", "3"]);
    let took = t.elapsed();
    out.assert_ok();
    // Each stage: at most its budget and half an interval, plus the idle
    // round trips and the set-up of its control connection.
    assert!(took < Duration::from_secs(3 * (3 + 1)), "took {took:?}");
    let j = out.json();
    assert!(j.get("error").is_none(), "{j}");
    for stage in ["downlink", "uplink", "bidirectional"] {
        let s = &j[stage];
        assert!(
            s["throughput_bps"].as_f64().unwrap_or(0.0) > 0.0,
            "{stage}: {s}"
        );
        assert!(s["rpm"].as_f64().unwrap_or(0.0) > 0.0, "{stage}: {s}");
        assert!(s["connections"].as_u64().unwrap_or(0) >= 1, "{stage}: {s}");
        assert_round_trips(stage, &s["idle"]);
        assert_round_trips(stage, &s["loaded"]);
        assert_round_trips(stage, &s["loaded"]["foreign"]);
        assert_round_trips(stage, &s["loaded"]["self"]);
    }
    // Each stage was an iperf3 test of its own at the server.
    assert!(
        srv.wait_banners(4, Duration::from_secs(5)),
        "{}",
        srv.stdout()
    );
}

#[test]
fn rpm_text_says_responsiveness_per_stage_issue18() {
    let srv = Server::start(&[]);
    let out = srv.client(&["--rpm", "--rpm-time", "2", "--rpm-stages", "down,up"]);
    out.assert_ok();
    for stage in ["downlink:", "uplink:"] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(stage))
            .unwrap_or_else(|| panic!("no {stage} line in:\n{}", out.stdout));
        let rest = &line[line.find("Responsiveness: ").expect(line) + 16..];
        let (n, band) = rest.split_once(" RPM, ").expect(line);
        assert!(n.parse::<u64>().expect(line) > 0, "{line}");
        assert!(
            ["High", "Medium", "Low"]
                .iter()
                .any(|b| band.starts_with(b)),
            "{line}"
        );
    }
}

fn against_stock(peer: &Path) {
    stock_refusal::refused_by_stock(
        peer,
        &["--rpm", "--rpm-time", "3"],
        "the server does not run the responsiveness test (it is not rperf3)",
    );
}

#[test]
fn rpm_against_a_stock_3_12_server_is_a_clear_error_issue18() {
    if let Some(peer) = iperf3_312() {
        against_stock(&peer);
    }
}

#[test]
fn rpm_against_a_stock_3_21_server_is_a_clear_error_issue18() {
    if let Some(peer) = common::iperf3_321() {
        against_stock(&peer);
    }
}

#[test]
fn rpm_interrupted_ends_at_once_with_the_stages_measured_issue18() {
    let srv = Server::start(&[]);
    let client = srv.spawn_client(&["--rpm", "--rpm-time", "5", "--rpm-stages", "down,up"]);
    // Into the uplink stage: the server has served the downlink's test and
    // taken the uplink's.
    assert!(
        srv.wait_stdout_until(Duration::from_secs(15), |s| {
            s.matches("Accepted connection").count() >= 2
        }),
        "{}",
        srv.stdout()
    );
    std::thread::sleep(Duration::from_millis(1500));
    let t = Instant::now();
    client.signal(common::Signal::SIGINT);
    let out = client.finish(Duration::from_secs(5));
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(out.code(), Some(0), "{out}");
    assert!(out.stderr.is_empty(), "{out}");
    for stage in ["downlink:", "uplink:"] {
        assert!(out.stdout.lines().any(|l| l.starts_with(stage)), "{out}");
    }
    // The server is back to listening.
    assert!(
        srv.wait_banners(3, Duration::from_secs(5)),
        "{}",
        srv.stdout()
    );
}

/// A server that takes one test (`-1`) serves the first stage only: the
/// client says so, after the error of the stage it could not run, instead of
/// only "Connection reset by peer".
#[test]
fn rpm_against_a_one_test_server_says_why_the_next_stage_failed_issue24() {
    let srv = Server::start(&["-1"]);
    let out = srv.client(&["--rpm", "--rpm-time", "2", "--rpm-stages", "down,up"]);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stdout.lines().any(|l| l.starts_with("downlink:")),
        "{out}"
    );
    assert!(
        out.stderr.contains(
            "(the server ran the downlink stage but not the uplink stage: each stage is a test \
             of its own, and a server started with -1 serves one test)"
        ),
        "{out}"
    );
}
