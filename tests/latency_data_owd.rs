//! `--latency` on UDP tests times the test's own datagrams between rperf3 ends:
//! on loopback (one clock) every delay is non-negative and shorter than the
//! round trips the probes measure; with the client's wall clock set back a
//! second (`faketime`), the delays of its datagrams read a second longer,
//! and with the server's set ahead, those the client receives are negative,
//! which the warning says, naming the direction (receive times are the
//! kernel's stamps, which faketime does not move).
//! The server's delays reach the client whole: every datagram or block it
//! counted, the last ones too.

use crate::common;

use common::{Output, Proc, Server};
use serde_json::Value;
use std::time::Duration;

/// A 1 s UDP test, 1000-byte datagrams at 2 Mbit/s each way (250 a second).
const ARGS: [&str; 11] = [
    "-u",
    "-b",
    "2M",
    "-l",
    "1000",
    "-t",
    "1",
    "--bidir",
    "--latency",
    "-J",
    "--forceflush",
];

fn data(doc: &Value) -> &Value {
    &doc["end"]["latency"]["data_one_way"]
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Datagrams the receiving end of each direction counted, as the peer's
/// results (up) and this client's own receiver (down) report them.
fn received(doc: &Value) -> (u64, u64) {
    let e = &doc["end"];
    let n = |k: &str| e[k]["packets"].as_u64().unwrap() - e[k]["lost_packets"].as_u64().unwrap();
    (n("sum_received"), n("sum_received_bidir_reverse"))
}

#[test]
fn udp_data_one_way_on_one_clock_is_positive_and_under_the_round_trip_issue18() {
    let srv = Server::start(&[]);
    let out = srv.client(&ARGS);
    out.assert_ok();
    let doc = out.json();
    let d = data(&doc);
    assert_eq!(d.get("clock_warning"), None, "{d}");
    let (up_rx, down_rx) = received(&doc);
    // The client times what it receives itself: every datagram.
    assert_eq!(d["down"]["count"].as_u64(), Some(down_rx), "{d}");
    // The server's: every datagram it counted, the last 100 ms too (its last
    // delays come after its streams are read to the end).
    assert_eq!(d["up"]["count"].as_u64(), Some(up_rx), "{d}");
    let loaded = &doc["end"]["latency"]["loaded"];
    for way in ["up", "down"] {
        let w = &d[way];
        assert!(f(&w["min_ms"]) >= 0.0, "{way}: {d}");
        assert!(f(&w["min_ms"]) <= f(&w["p50_ms"]) && f(&w["p50_ms"]) <= f(&w["max_ms"]));
        // One way is shorter than a round trip on the same path.
        assert!(
            f(&w["p50_ms"]) < f(&loaded["p50_ms"]),
            "{way} p50 {} vs round trip p50 {}",
            w["p50_ms"],
            loaded["p50_ms"]
        );
    }
    // Each interval carries its own share.
    let per: u64 = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["latency"]["data_one_way"]["down"]["count"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(per, down_rx);
    // Jitter comes from the same wall-clock stamps: loopback's is tiny.
    let jitter = f(&doc["end"]["sum_received_bidir_reverse"]["jitter_ms"]);
    assert!(jitter < 1.0, "jitter {jitter} ms");
}

/// The client under `faketime -1s`. Only the wall clock is set back: with a
/// faked monotonic clock too, libfaketime's sleeps leave a paced sender asleep.
fn skewed_client(srv: &Server, extra: &[&str]) -> Output {
    let mut args = vec![
        "FAKETIME_DONT_FAKE_MONOTONIC=1".to_string(),
        "faketime".into(),
        "-f".into(),
        "-1s".into(),
        common::rperf3().display().to_string(),
    ];
    args.extend(srv.args(extra));
    Proc::spawn("env", &args).finish(Duration::from_secs(20))
}

#[test]
fn udp_data_one_way_warns_which_clock_is_behind_issue18() {
    assert!(common::require_tool("faketime"), "faketime is needed");
    // The client's wall clock a second behind: its stamps are a second
    // early, so each delay of its datagrams reads a second longer, and
    // nothing shows it. What it receives is timed by the kernel, whose clock
    // faketime does not move: those delays stay true.
    let srv = Server::start(&[]);
    let out = skewed_client(&srv, &ARGS);
    out.assert_ok();
    let doc = out.json();
    let d = data(&doc);
    let up = f(&d["up"]["p50_ms"]);
    assert!((up - 1000.0).abs() < 20.0, "up p50 {up}: {d}");
    let (_, down_rx) = received(&doc);
    assert_eq!(d["down"]["count"].as_u64(), Some(down_rx), "{d}");
    let down = f(&d["down"]["p50_ms"]);
    assert!((0.0..20.0).contains(&down), "down p50 {down}: {d}");
    assert_eq!(d.get("clock_warning"), None, "{d}");

    // The server's wall clock a second ahead (the client's behind, as the
    // kernel that times the client's reads sees it): every delay of the
    // server's datagrams is negative, none is averaged, and the warning
    // names the direction.
    let srv = Server::start_faketime("+1s", &[]);
    let out = srv.client(&ARGS);
    out.assert_ok();
    let doc = out.json();
    let d = data(&doc);
    let (_, down_rx) = received(&doc);
    assert_eq!(d["down"]["count"].as_u64(), Some(0), "{d}");
    let w = d["clock_warning"].as_str().unwrap();
    let want = format!(
        "warning: {down_rx} one-way delays of the data server to client were negative (down to -"
    );
    assert!(w.starts_with(&want), "{w}");
    assert!(
        w.ends_with("the client's clock is behind the server's, data one-way figures are wrong"),
        "{w}"
    );
    // The text says it too, after the table.
    let text = srv.client(&["-u", "-b", "1M", "-t", "1", "-R", "--latency"]);
    text.assert_ok();
    assert!(
        text.stdout
            .contains("one-way delays of the data server to client were negative"),
        "{text}"
    );
}

/// TCP: each block is timed from its write to its read. The client times the
/// blocks it reads itself: every block whose stamp arrived, counted by bytes.
#[test]
fn tcp_data_one_way_times_every_block_read_issue18() {
    let srv = Server::start(&[]);
    let out = srv.client(&[
        "-b",
        "50M",
        "-l",
        "1000",
        "-t",
        "1",
        "--bidir",
        "--latency",
        "-J",
    ]);
    out.assert_ok();
    let doc = out.json();
    let d = data(&doc);
    assert_eq!(d.get("clock_warning"), None, "{d}");
    let bytes = doc["end"]["sum_received_bidir_reverse"]["bytes"]
        .as_u64()
        .unwrap();
    // Blocks of 1000 bytes; a last one is timed once its 12-byte stamp is in.
    let blocks = bytes / 1000 + u64::from(bytes % 1000 >= 12);
    assert_eq!(
        d["down"]["count"].as_u64(),
        Some(blocks),
        "{bytes} bytes: {d}"
    );
    // The server times every block it read, to the end of the test.
    let up_bytes = doc["end"]["sum_received"]["bytes"].as_u64().unwrap();
    let up_blocks = up_bytes / 1000 + u64::from(up_bytes % 1000 >= 12);
    assert_eq!(
        d["up"]["count"].as_u64(),
        Some(up_blocks),
        "{up_bytes} bytes: {d}"
    );
    for way in ["up", "down"] {
        assert!(f(&d[way]["min_ms"]) >= 0.0, "{way}: {d}");
        // Paced at half a percent of loopback's speed: nothing waits long.
        assert!(f(&d[way]["p50_ms"]) < 10.0, "{way}: {d}");
    }
}
