//! Golden tests of `--bounceback` in the text, `-J` and `--json-stream` outputs,
//! from made-up figures: exact strings, and the rest of the output the same as
//! without.

use rperf3_latency::Summary;
use serde_json::Value;

use crate::cjson;
use crate::input::*;
use crate::testutil::*;

fn rtt(count: u64, v: [f64; 6]) -> Summary {
    let [min_ms, mean_ms, p50_ms, p90_ms, p99_ms, max_ms] = v;
    Summary {
        count,
        min_ms,
        mean_ms,
        p50_ms,
        p90_ms,
        p99_ms,
        max_ms,
    }
}

fn interval_figures(load: bool) -> BouncebackFigures {
    BouncebackFigures {
        count: 14021,
        tps: 14021.0,
        rtt: Some(rtt(14021, [0.052, 0.071, 0.066, 0.081, 0.12, 0.95])),
        load_bps: load.then_some((0.0, 9.41e9)),
    }
}

fn end_figures(load: bool) -> BouncebackFigures {
    BouncebackFigures {
        count: 28000,
        tps: 14000.0,
        rtt: Some(rtt(28000, [0.05, 0.0714, 0.066, 0.082, 0.121, 1.5])),
        load_bps: load.then_some((0.0, 9.4e9)),
    }
}

/// A client TCP test of two intervals, with `bb` figures when given.
fn client_run(
    opts: impl FnOnce(&mut crate::ReportOptions),
    side: Side,
    bb: Option<(BouncebackFigures, BouncebackFigures)>,
) -> String {
    let (mut r, out, _) = reporter(opts, side);
    let t = test_info(side, Protocol::Tcp);
    let si = start_info(side, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:41268", "127.0.0.1:27911"));
    r.start(&si, &t);
    for k in [0.0, 1.0] {
        let mut i = iv(vec![tcp_tx(k, k + 1.0, 1_402_100, 0, 1023 * 1024)]);
        i.bounceback = bb.as_ref().map(|(i, _)| Box::new(i.clone()));
        r.interval(&i);
    }
    r.end(&FinalInput {
        latency: None,
        bounceback: bb.map(|(_, e)| e),
        streams: vec![tcp_fin(2_804_200, 2.0, 0)],
        cpu: Cpu::default(),
        congestion: Some("cubic".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            sender_has_retransmits: -1,
            congestion: Some("cubic".into()),
            streams: vec![peer(1, 2_804_200, -1, 2.0)],
            ..Default::default()
        }),
        diskfile: None,
    });
    r.finish().unwrap();
    out.text()
}

const INTERVAL_LINE: &str = "[ BB]   0.00-1.00   sec  14021 trans  14021 trans/sec  \
     rtt min/p50/p90/p99/max 0.052/0.066/0.081/0.120/0.950 ms\n";

const TABLE: &str = "\
- - - - - - - - - - - - - - - - - - - - - - - - -
Bounceback (ms)     count       min      mean       p50       p90       p99       max
  round trips       28000     0.050     0.071     0.066     0.082     0.121     1.500
14000 transactions/sec, mean 0.071 ms
";

#[test]
fn bounceback_text_follows_each_interval_and_the_summary_issue18() {
    let with = client_run(
        |_| {},
        Side::Client,
        Some((interval_figures(false), end_figures(false))),
    );
    let without = client_run(|_| {}, Side::Client, None);
    let second = INTERVAL_LINE.replace("0.00-1.00", "1.00-2.00");
    let rows: Vec<&str> = with.split_inclusive('\n').collect();
    let at = |needle: &str| rows.iter().position(|l| *l == needle).unwrap();
    assert!(
        rows[at(INTERVAL_LINE) - 1].starts_with("[  4]   0.00-1.00   sec"),
        "{with}"
    );
    assert!(rows[at(&second) - 1].starts_with("[  4]   1.00-2.00   sec"));
    assert!(with.contains(&format!("{TABLE}\niperf Done.\n")), "{with}");
    let stripped = with
        .replace(INTERVAL_LINE, "")
        .replace(&second, "")
        .replace(TABLE, "");
    assert_eq!(stripped, without);
    assert!(!without.contains("BB") && !without.contains("Bounceback"));
}

#[test]
fn bounceback_text_with_a_load_and_on_the_server_issue18() {
    let with = client_run(
        |_| {},
        Side::Client,
        Some((interval_figures(true), end_figures(true))),
    );
    assert!(
        with.contains("0.950 ms, load up 0.00 bits/sec down 9.41 Gbits/sec\n"),
        "{with}"
    );
    assert!(
        with.contains(
            "14000 transactions/sec, mean 0.071 ms, load up 0.00 bits/sec down 9.40 Gbits/sec\n"
        ),
        "{with}"
    );
    let answered = BouncebackFigures {
        count: 28000,
        tps: 14000.0,
        rtt: None,
        load_bps: None,
    };
    let per_interval = BouncebackFigures {
        count: 14021,
        tps: 14021.0,
        ..answered.clone()
    };
    let srv = client_run(|_| {}, Side::Server, Some((per_interval, answered)));
    assert!(
        srv.contains("[ BB]   0.00-1.00   sec  14021 requests answered  14021/sec\n"),
        "{srv}"
    );
    assert!(
        srv.contains("Bounceback: 28000 requests answered, 14000/sec\n"),
        "{srv}"
    );
}

const INTERVAL_JSON: &str = r#"{"count":14021,"tps":14021,"min_ms":0.052,"mean_ms":0.071,"p50_ms":0.066,"p90_ms":0.081,"p99_ms":0.12,"max_ms":0.95}"#;
const END_JSON: &str = r#"{"count":28000,"tps":14000,"min_ms":0.05,"mean_ms":0.0714,"p50_ms":0.066,"p90_ms":0.082,"p99_ms":0.121,"max_ms":1.5,"load_up_bps":0,"load_down_bps":9400000000}"#;

#[test]
fn bounceback_json_has_its_keys_only_with_the_option_issue18() {
    let text = client_run(
        |o| o.json = true,
        Side::Client,
        Some((interval_figures(false), end_figures(true))),
    );
    let doc: Value = serde_json::from_str(&text).unwrap();
    for iv in doc["intervals"].as_array().unwrap() {
        let keys: Vec<&str> = iv.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["streams", "sum", "bounceback"]);
        assert_eq!(cjson::to_compact(&iv["bounceback"]), INTERVAL_JSON);
    }
    assert_eq!(cjson::to_compact(&doc["end"]["bounceback"]), END_JSON);
    let plain = client_run(|o| o.json = true, Side::Client, None);
    assert!(!plain.contains("bounceback"), "{plain}");
    // The server's own -J (what --get-server-output carries back).
    let srv_fig = BouncebackFigures {
        count: 7,
        tps: 3.5,
        rtt: None,
        load_bps: None,
    };
    let srv = client_run(
        |o| o.json = true,
        Side::Server,
        Some((srv_fig.clone(), srv_fig)),
    );
    let doc: Value = serde_json::from_str(&srv).unwrap();
    assert_eq!(
        cjson::to_compact(&doc["end"]["bounceback"]),
        r#"{"answered":7,"tps":3.5}"#
    );
}

#[test]
fn bounceback_json_stream_events_carry_the_same_objects_issue18() {
    let text = client_run(
        |o| o.json_stream = true,
        Side::Client,
        Some((interval_figures(false), end_figures(true))),
    );
    let events = json_lines(&text);
    let of = |name: &str| event_data(&events, name);
    let intervals = of("interval");
    assert_eq!(intervals.len(), 2);
    for d in intervals {
        assert_eq!(cjson::to_compact(&d["bounceback"]), INTERVAL_JSON);
    }
    assert_eq!(cjson::to_compact(&of("end")[0]["bounceback"]), END_JSON);
}
