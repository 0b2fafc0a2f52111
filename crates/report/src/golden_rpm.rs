//! The responsiveness test's text and `-J` output from made-up stage results,
//! compared with exact strings.

use super::*;
use rperf3_latency::{Confidence, Kind, Samples, Stage};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Idle round trips of `idle_us`, then `n` foreign handshakes, foreign requests
/// and self probes of the given milliseconds.
fn figures(idle_us: u64, tcp_f: u64, req_f: u64, self_l: u64, n: u64) -> rperf3_latency::Figures {
    let mut s = Samples::default();
    for i in 0..10 {
        s.record(Kind::Idle, (idle_us + i) * 1000);
    }
    for i in 0..n {
        s.record(Kind::ForeignConnect, tcp_f * MS + i * 10_000);
        s.record(Kind::ForeignRequest, req_f * MS + i * 10_000);
        s.record(Kind::SelfLoaded, self_l * MS + i * 10_000);
    }
    s.figures()
}

fn run() -> RpmRun {
    let down = StageResult {
        stage: Stage::Downlink,
        throughput_bps: 94.1e6,
        downlink_bps: 94.1e6,
        uplink_bps: 0.0,
        confidence: Confidence::High,
        throughput_confidence: Confidence::High,
        connections: 7,
        intervals: 10,
        figures: figures(50, 40, 80, 120, 100),
    };
    let up = StageResult {
        stage: Stage::Uplink,
        throughput_bps: 9.5e6,
        downlink_bps: 0.0,
        uplink_bps: 9.5e6,
        confidence: Confidence::Medium,
        throughput_confidence: Confidence::High,
        connections: 9,
        intervals: 15,
        figures: figures(48, 150, 160, 240, 50),
    };
    let both = StageResult {
        stage: Stage::Bidirectional,
        throughput_bps: 103.6e6,
        downlink_bps: 94.1e6,
        uplink_bps: 9.5e6,
        confidence: Confidence::Low,
        throughput_confidence: Confidence::Low,
        connections: 4,
        intervals: 3,
        figures: figures(52, 2, 3, 4, 20),
    };
    RpmRun {
        params: Params::default(),
        budget: Duration::from_secs(15),
        stages: vec![down, up, both],
    }
}

fn start() -> RpmStart {
    RpmStart {
        host: "192.0.2.1".into(),
        port: 5201,
        version: "rperf3 0.1.0".into(),
        system_info: "Linux test".into(),
        timestamp_millis: 1_764_109_000_123,
        url: None,
    }
}

#[test]
fn text_reads_at_a_glance() {
    let got = text(&start(), &run(), 'a').join("\n");
    // Checked by hand: downlink foreign TM (40.47 + 80.47) / 2 -> 992 RPM, self
    // TM 120.47 -> 498 RPM, their mean 745; the loaded p90 is the 270th of 300 (120.69, to the
    // histogram's precision).
    let want = "\
Responsiveness test with 192.0.2.1 port 5201: ID 1 s, MAD 4, TMP 95%, SDT 5%, INP 1, INC 1, MNP 16, MPS 100, PTC 5%, up to 15 s per stage
downlink:      Responsiveness: 745 RPM, Medium (confidence High); 94.1 Mbits/sec with 7 connections (confidence High), idle latency 0.054 ms
    ms         count       min       p50       p90       p99       max
    idle          10     0.050     0.054     0.058     0.059     0.059
    loaded       300    40.000    80.544   120.717   120.979   120.990
    foreign      200    40.000    40.993    80.806    80.990    80.990
    self         100   120.000   120.521   120.914   120.990   120.990
uplink:        Responsiveness: 318 RPM, Medium (confidence Medium); 9.50 Mbits/sec with 9 connections (confidence High), idle latency 0.052 ms
    ms         count       min       p50       p90       p99       max
    idle          10     0.048     0.052     0.056     0.057     0.057
    loaded       150   150.000   160.301   240.386   240.490   240.490
    foreign      100   150.000   150.602   160.432   160.490   160.490
    self          50   240.000   240.255   240.490   240.490   240.490
bidirectional: Responsiveness: 18918 RPM, High (confidence Low); 104 Mbits/sec with 4 connections (confidence Low), idle latency 0.056 ms
    ms         count       min       p50       p90       p99       max
    idle          10     0.052     0.056     0.060     0.061     0.061
    loaded        60     2.000     3.090     4.131     4.190     4.190
    foreign       40     2.000     2.191     3.152     3.190     3.190
    self          20     4.000     4.092     4.172     4.190     4.190";
    assert_eq!(got, want, "\n{got}");
}

#[test]
fn over_http2_the_url_and_protocol_are_said() {
    let mut st = start();
    st.url = Some("https://192.0.2.1:4443/api/v1/config".into());
    let first = text(&st, &run(), 'a').remove(0);
    assert!(
        first.starts_with(
            "Responsiveness test with https://192.0.2.1:4443/api/v1/config over HTTP/2: ID 1 s,"
        ),
        "{first}"
    );
    let doc = json(&st, &run(), None);
    let keys: Vec<&str> = doc["start"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "version",
            "system_info",
            "timestamp",
            "connecting_to",
            "url",
            "protocol"
        ]
    );
    assert_eq!(doc["start"]["url"], "https://192.0.2.1:4443/api/v1/config");
    assert_eq!(doc["start"]["protocol"], "h2");
    // Without a URL the document is as before.
    assert!(json(&start(), &run(), None)["start"].get("url").is_none());
}

#[test]
fn json_has_each_stage_with_its_round_trips_and_the_parameters() {
    let v = json(&start(), &run(), None);
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["start", "parameters", "downlink", "uplink", "bidirectional"]
    );
    let down = &v["downlink"];
    let fields: Vec<&str> = down
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "throughput_bps",
            "rpm",
            "band",
            "confidence",
            "throughput_confidence",
            "foreign_rpm",
            "loaded_rpm",
            "connections",
            "intervals",
            "idle",
            "loaded"
        ]
    );
    let summary = ["count", "min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"];
    let keys_of = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys_of(&down["idle"]), summary);
    let mut loaded = summary.to_vec();
    loaded.extend(["foreign", "self"]);
    assert_eq!(keys_of(&down["loaded"]), loaded);
    assert_eq!(keys_of(&down["loaded"]["foreign"]), summary);
    assert_eq!(keys_of(&down["loaded"]["self"]), summary);
    assert_eq!(down["loaded"]["self"]["count"], 100);
    assert_eq!(down["confidence"], "High");
    assert_eq!(v["bidirectional"]["downlink_bps"], 94.1e6);
    assert_eq!(v["bidirectional"]["uplink_bps"], 9.5e6);
    assert!(v["uplink"].get("downlink_bps").is_none());
    assert!(v.get("error").is_none());
    let with_error = json(&start(), &run(), Some("the server is not rperf3"));
    assert_eq!(with_error["error"], "the server is not rperf3");
}

#[test]
fn json_document_golden() {
    let mut r = run();
    r.stages.truncate(1);
    let got = cjson::to_pretty(&json(&start(), &r, None));
    let want = "{
\t\"start\":\t{
\t\t\"version\":\t\"rperf3 0.1.0\",
\t\t\"system_info\":\t\"Linux test\",
\t\t\"timestamp\":\t{
\t\t\t\"time\":\t\"Tue, 25 Nov 2025 22:16:40 GMT\",
\t\t\t\"timesecs\":\t1764109000,
\t\t\t\"timemillisecs\":\t1764109000123
\t\t},
\t\t\"connecting_to\":\t{
\t\t\t\"host\":\t\"192.0.2.1\",
\t\t\t\"port\":\t5201
\t\t}
\t},
\t\"parameters\":\t{
\t\t\"mad\":\t4,
\t\t\"id_s\":\t1,
\t\t\"tmp\":\t0.95,
\t\t\"sdt\":\t0.05,
\t\t\"inp\":\t1,
\t\t\"inc\":\t1,
\t\t\"mnp\":\t16,
\t\t\"mps\":\t100,
\t\t\"ptc\":\t0.05,
\t\t\"stage_budget_s\":\t15
\t},
\t\"downlink\":\t{
";
    assert!(got.starts_with(want), "\n{got}");
    let d = &json(&start(), &r, None)["downlink"];
    assert_eq!(
        d["rpm"],
        d["foreign_rpm"].as_f64().unwrap() / 2.0 + d["loaded_rpm"].as_f64().unwrap() / 2.0
    );
    assert_eq!(d["band"], "Medium");
}

#[test]
fn a_stage_without_probes_says_so() {
    let mut r = run();
    r.stages.truncate(1);
    r.stages[0].figures = Samples::default().figures();
    let got = text(&start(), &r, 'm');
    assert_eq!(
        got[1],
        "downlink:      Responsiveness: no round trips (confidence High); \
         94.1 Mbits/sec with 7 connections (confidence High)"
    );
    assert_eq!(got[3], "    idle           0");
}
