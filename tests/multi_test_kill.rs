//! `--max-tests 2` with one client SIGKILLed mid-test: the test beside it runs
//! on as if alone, both of its documents are whole, and the server goes on
//! serving.

use crate::common;

use std::time::Duration;

use common::json::{arr, assert_no_error, num, string};
use common::*;
use serde_json::Value;

/// The survivor: paced, so what it moves is set by its clock, not by how much
/// CPU the neighbour leaves it; a solo run is then a fair reference.
const SURVIVOR: &[&str] = &["-t", "2", "-b", "100M", "-J"];
/// One TCP block: the pacer's step.
const BLOCK: f64 = 128.0 * 1024.0;

/// JSON documents back to back on one stream.
fn docs(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect()
}

/// The server's documents once `n` are whole.
fn server_docs(srv: &Server, n: usize) -> Vec<Value> {
    assert!(
        srv.wait_stdout_until(Duration::from_secs(10), |s| docs(s).len() >= n),
        "{}",
        srv.stdout()
    );
    docs(&srv.stdout())
}

/// Received bytes of the whole test and of each interval.
type Received = (f64, Vec<f64>);

/// The whole (about one second) intervals of a document. A side whose end
/// comes just after its last tick (the server, when TEST_END arrives a
/// millisecond late) also reports that sliver, as iperf3 does.
fn whole_intervals(doc: &Value) -> Vec<&Value> {
    arr(doc, "intervals")
        .iter()
        .filter(|i| num(i, "sum.seconds") > 0.5)
        .collect()
}

/// What the receiving server measured, from its own document.
fn received(server_doc: &Value) -> Received {
    let per_interval = whole_intervals(server_doc)
        .iter()
        .map(|i| num(i, "sum.bytes"))
        .collect();
    (num(server_doc, "end.sum_received.bytes"), per_interval)
}

/// A document a test wrote to its end: its start, two whole intervals (and at
/// most a sliver after them), the stream's totals and the CPU figures.
fn assert_whole(doc: &Value, who: &str) {
    assert_no_error(doc);
    assert_eq!(whole_intervals(doc).len(), 2, "{who}: {doc:#}");
    let slivers: Vec<f64> = arr(doc, "intervals")
        .iter()
        .map(|i| num(i, "sum.seconds"))
        .filter(|&s| s <= 0.5)
        .collect();
    assert!(
        slivers.len() <= 1 && slivers.iter().all(|&s| s < 0.1),
        "{who}: {doc:#}"
    );
    assert_eq!(arr(doc, "end.streams").len(), 1, "{who}: {doc:#}");
    for p in [
        "end.sum_sent.bytes",
        "end.sum_received.bytes",
        "end.cpu_utilization_percent.host_total",
        "end.cpu_utilization_percent.remote_total",
    ] {
        assert!(num(doc, p) >= 0.0, "{who}: {p}");
    }
}

#[test]
fn issue16_a_killed_neighbour_leaves_the_other_test_unharmed() {
    let srv = Server::start(&["--max-tests", "2", "-J"]);
    // Two solo runs: the reference and its run-to-run spread.
    let solo: Vec<Received> = (1..=2)
        .map(|n| {
            srv.client(SURVIVOR).assert_ok();
            let s = server_docs(&srv, n);
            received(&s[n - 1])
        })
        .collect();

    let survivor = srv.spawn_client(SURVIVOR);
    // The neighbour: the server sends to it, fast; it dies after its first
    // interval, in the middle of the survivor's test.
    let victim = srv.spawn_client(&["-t", "10", "-R", "-b", "2G"]);
    assert!(
        victim.wait_stdout("sec", Duration::from_secs(5)),
        "the neighbour never reported an interval:\n{}",
        victim.stdout()
    );
    victim.signal(Signal::SIGKILL);
    let killed = victim.finish(CLIENT_TIMEOUT);
    assert_eq!(killed.code(), None, "{killed}");
    let out = survivor.finish(CLIENT_TIMEOUT);
    let client_doc = out.assert_ok().json();
    assert_whole(&client_doc, "survivor's client");

    let all = server_docs(&srv, 4);
    let cookie = string(&client_doc, "start.cookie");
    let mine = all
        .iter()
        .find(|d| d["start"]["cookie"] == cookie)
        .expect("the survivor's server document");
    assert_whole(mine, "survivor's server");
    // The neighbour's document says how it ended.
    let other = all
        .iter()
        .skip(2)
        .find(|d| d["start"]["cookie"] != cookie)
        .expect("the neighbour's server document");
    assert_eq!(
        string(other, "error"),
        "the client has unexpectedly closed the connection",
        "{other:#}"
    );

    // Run to run, two solo runs differ by `spread`; the survivor must be no
    // further from either than that, plus one pacing step each way.
    let (total, intervals) = received(mine);
    let spread = |f: &dyn Fn(&Received) -> f64| {
        let (a, b) = (f(&solo[0]), f(&solo[1]));
        (
            a.min(b) - (a - b).abs() - BLOCK,
            a.max(b) + (a - b).abs() + BLOCK,
        )
    };
    let (lo, hi) = spread(&|s| s.0);
    eprintln!(
        "solo {:?}; survivor {total} {intervals:?}",
        solo.iter().map(|s| (s.0, s.1.clone())).collect::<Vec<_>>()
    );
    assert!(
        (lo..=hi).contains(&total),
        "survivor received {total} bytes, solo runs {lo}..{hi}"
    );
    for (i, got) in intervals.iter().enumerate() {
        let (lo, hi) = spread(&|s| s.1[i]);
        assert!(
            (lo..=hi).contains(got),
            "survivor's interval {i}: {got} bytes, solo runs {lo}..{hi}"
        );
    }
    // The client's view of the same test agrees with the server's.
    assert_eq!(num(&client_doc, "end.sum_received.bytes"), total);

    // And the server serves the next client.
    srv.client(&["-n", "1M"]).assert_ok();
}
