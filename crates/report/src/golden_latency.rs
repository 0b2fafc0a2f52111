//! Golden tests of `--latency` in the text, `-J` and `--json-stream` outputs, from
//! made-up figures: exact strings, and the rest of the output the same as without.

use rperf3_latency::{Figures, Responsiveness, Summary};
use serde_json::Value;

use crate::cjson;
use crate::input::*;
use crate::testutil::*;

pub(crate) fn summary(count: u64, v: [f64; 6]) -> Summary {
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

/// One interval under load: foreign and self probes, no idle round trips.
fn interval_figures() -> Figures {
    Figures {
        loaded: summary(42, [10.1, 13.0, 12.3, 15.1, 20.0, 22.0]),
        foreign: summary(20, [10.1, 12.0, 11.5, 14.0, 16.0, 16.5]),
        self_loaded: summary(22, [11.0, 14.0, 13.1, 15.9, 21.7, 22.0]),
        responsiveness: Responsiveness {
            foreign_rpm: 5000.0,
            loaded_rpm: 4286.4,
            rpm: 4643.2,
        },
        ..Figures::default()
    }
}

/// The whole test, with idle round trips and one-way delays up.
fn end_figures() -> Figures {
    Figures {
        idle: summary(10, [0.045, 0.05, 0.05, 0.061, 0.07, 0.072]),
        loaded: summary(840, [9.9, 150.2, 151.234, 160.5, 170.25, 180.0]),
        foreign: summary(400, [9.9, 149.0, 150.5, 159.0, 169.0, 175.0]),
        self_loaded: summary(440, [10.0, 151.0, 152.0, 161.0, 171.0, 180.0]),
        responsiveness: Responsiveness {
            foreign_rpm: 400.0,
            loaded_rpm: 396.0,
            rpm: 398.0,
        },
        up: summary(500, [1.0, 2.5, 2.0, 4.0, 6.0, 7.25]),
        ..Figures::default()
    }
}

pub(crate) struct Run {
    pub(crate) text_or_doc: String,
    pub(crate) err: String,
}

/// A client TCP test of two intervals; `lat` adds `--latency` figures to both
/// intervals and the end.
pub(crate) fn client_run(
    opts: impl FnOnce(&mut crate::ReportOptions),
    bidir: bool,
    lat: Option<LatencyFinal>,
) -> Run {
    let (mut r, out, err) = reporter(opts, Side::Client);
    let t = TestInfo {
        bidir,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:41268", "127.0.0.1:27911"));
    if bidir {
        r.stream_connected(&stream(6, 2, false, "127.0.0.1:41270", "127.0.0.1:27911"));
    }
    r.start(&si, &t);
    let with = |mut i: IntervalInput| {
        i.latency = lat.as_ref().map(|_| Box::new(interval_figures()));
        i
    };
    let samples = |k: f64| {
        let mut v = vec![tcp_tx(k, k + 1.0, 1_850_000_000, 0, 1023 * 1024)];
        if bidir {
            v.push(plain(k, k + 1.0, 1_000_000_000));
        }
        v
    };
    r.interval(&with(iv(samples(0.0))));
    r.interval(&with(iv(samples(1.0))));
    let mut streams = vec![tcp_fin(3_700_000_000, 2.0, 0)];
    let mut peers = vec![peer(1, 3_700_000_000, -1, 2.0)];
    if bidir {
        streams.push(fin(2_000_000_000, 2.0));
        peers.push(peer(2, 2_000_000_000, 0, 2.0));
    }
    r.end(&FinalInput {
        latency: lat,
        bounceback: None,
        streams,
        cpu: Cpu::default(),
        congestion: Some("cubic".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            sender_has_retransmits: -1,
            congestion: Some("cubic".into()),
            streams: peers,
            ..Default::default()
        }),
        diskfile: None,
    });
    r.finish().unwrap();
    Run {
        text_or_doc: out.text(),
        err: err.text(),
    }
}

pub(crate) fn with_server(with_server: bool) -> Option<LatencyFinal> {
    Some(LatencyFinal {
        figures: end_figures(),
        with_server,
        data_note: None,
    })
}

const INTERVAL_LINE: &str = "[LAT]   0.00-1.00   sec  rtt min/p50/p90/p99/max \
                             10.100/12.300/15.100/20.000/22.000 ms, 42 probes, 4643 RPM\n";

const TABLE: &str = "\
- - - - - - - - - - - - - - - - - - - - - - - - -
Latency (ms)        count       min       p50       p90       p99       max
  idle                 10     0.045     0.050     0.061     0.070     0.072
  loaded              840     9.900   151.234   160.500   170.250   180.000
    foreign           400     9.900   150.500   159.000   169.000   175.000
    self              440    10.000   152.000   161.000   171.000   180.000
  one-way up          500     1.000     2.000     4.000     6.000     7.250
Responsiveness: 398 RPM, Medium
";

#[test]
fn latency_text_lines_follow_each_interval_and_the_summary_issue18() {
    let with = client_run(|_| {}, false, with_server(true)).text_or_doc;
    let without = client_run(|_| {}, false, None).text_or_doc;
    let second = INTERVAL_LINE.replace("0.00-1.00", "1.00-2.00");
    // Each [LAT] line right after its interval's row, the table after the summary.
    let rows: Vec<&str> = with.split_inclusive('\n').collect();
    let at = |needle: &str| rows.iter().position(|l| *l == needle).unwrap();
    let first = at(INTERVAL_LINE);
    assert!(
        rows[first - 1].starts_with("[  4]   0.00-1.00   sec"),
        "{with}"
    );
    assert!(rows[at(&second) - 1].starts_with("[  4]   1.00-2.00   sec"));
    assert!(with.contains(&format!("{TABLE}\niperf Done.\n")), "{with}");
    // Everything else is the output without --latency, byte for byte.
    let stripped = with
        .replace(INTERVAL_LINE, "")
        .replace(&second, "")
        .replace(TABLE, "");
    assert_eq!(stripped, without);
    assert!(!without.contains("[LAT]") && !without.contains("Latency"));
}

#[test]
fn latency_text_says_when_the_server_is_stock_and_when_clocks_disagree_issue18() {
    let mut lat = with_server(false).unwrap();
    lat.figures.clock_warning = Some("warning: clocks differ".into());
    lat.figures.up = Summary::default();
    lat.figures.responsiveness = Responsiveness::default();
    let text = client_run(|_| {}, true, Some(lat)).text_or_doc;
    let tail = "Responsiveness: not measured (no loaded round trips)\n\
                Server is not rperf3: round trips of this client's own TCP streams only\n\
                warning: clocks differ\n\niperf Done.\n";
    assert!(text.ends_with(tail), "{text}");
    assert!(!text.contains("one-way up"), "{text}");
    // --bidir: the role column is blank, the times line up with the rows above.
    let lat_line = text.lines().find(|l| l.starts_with("[LAT]")).unwrap();
    let row = text.lines().find(|l| l.starts_with("[  4][TX-C]")).unwrap();
    assert_eq!(lat_line.find("0.00-1.00"), row.find("0.00-1.00"), "{text}");
    assert!(lat_line.starts_with("[LAT]         0.00-1.00   sec  rtt "));
}

const INTERVAL_JSON: &str = r#"{"idle":{"count":0,"min_ms":0,"p50_ms":0,"p90_ms":0,"p99_ms":0,"max_ms":0},"loaded":{"count":42,"min_ms":10.1,"p50_ms":12.3,"p90_ms":15.1,"p99_ms":20,"max_ms":22,"foreign":{"count":20,"min_ms":10.1,"p50_ms":11.5,"p90_ms":14,"p99_ms":16,"max_ms":16.5},"self":{"count":22,"min_ms":11,"p50_ms":13.1,"p90_ms":15.9,"p99_ms":21.7,"max_ms":22}},"rpm":4643.2}"#;

const END_JSON: &str = r#"{"idle":{"count":10,"min_ms":0.045,"p50_ms":0.05,"p90_ms":0.061,"p99_ms":0.07,"max_ms":0.072},"loaded":{"count":840,"min_ms":9.9,"p50_ms":151.234,"p90_ms":160.5,"p99_ms":170.25,"max_ms":180,"foreign":{"count":400,"min_ms":9.9,"p50_ms":150.5,"p90_ms":159,"p99_ms":169,"max_ms":175},"self":{"count":440,"min_ms":10,"p50_ms":152,"p90_ms":161,"p99_ms":171,"max_ms":180}},"rpm":398,"one_way":{"up":{"count":500,"min_ms":1,"mean_ms":2.5,"p99_ms":6,"max_ms":7.25},"down":{"count":0,"min_ms":0,"mean_ms":0,"p99_ms":0,"max_ms":0}},"with_server":true}"#;

pub(crate) fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

#[test]
fn latency_json_objects_have_the_issue_keys_in_order_issue18() {
    let doc: Value =
        serde_json::from_str(&client_run(|o| o.json = true, false, with_server(true)).text_or_doc)
            .unwrap();
    for iv in doc["intervals"].as_array().unwrap() {
        assert_eq!(keys(iv), ["streams", "sum", "latency"]);
        assert_eq!(cjson::to_compact(&iv["latency"]), INTERVAL_JSON);
    }
    let end = &doc["end"];
    assert_eq!(keys(end).last(), Some(&"latency"));
    assert_eq!(cjson::to_compact(&end["latency"]), END_JSON);
    // Without --latency not one new key anywhere.
    let plain = client_run(|o| o.json = true, false, None).text_or_doc;
    assert!(!plain.contains("latency"), "{plain}");
}

#[test]
fn latency_json_carries_the_clock_warning_under_one_way_issue18() {
    let mut lat = with_server(false).unwrap();
    lat.figures.clock_warning = Some("warning: clocks differ".into());
    let doc: Value =
        serde_json::from_str(&client_run(|o| o.json = true, false, Some(lat)).text_or_doc).unwrap();
    let l = &doc["end"]["latency"];
    assert_eq!(keys(&l["one_way"]), ["up", "down", "clock_warning"]);
    assert_eq!(l["one_way"]["clock_warning"], "warning: clocks differ");
    assert_eq!(l["with_server"], false);
}

#[test]
fn latency_json_stream_events_carry_the_same_objects_issue18() {
    let run = client_run(|o| o.json_stream = true, false, with_server(true));
    assert_eq!(run.err, "");
    let events = json_lines(&run.text_or_doc);
    let of = |name: &str| event_data(&events, name);
    let intervals = of("interval");
    assert_eq!(intervals.len(), 2);
    for d in intervals {
        assert_eq!(cjson::to_compact(&d["latency"]), INTERVAL_JSON);
    }
    assert_eq!(cjson::to_compact(&of("end")[0]["latency"]), END_JSON);
    let plain = client_run(|o| o.json_stream = true, false, None).text_or_doc;
    assert!(!plain.contains("latency"), "{plain}");
}

#[test]
fn latency_interval_lines_for_one_way_no_probes_and_omitted_issue18() {
    let (mut r, out, _) = reporter(|_| {}, Side::Client);
    let t = TestInfo {
        omit: 1,
        ..test_info(Side::Client, Protocol::Udp)
    };
    let si = start_info(Side::Client, false);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:41268", "127.0.0.1:27911"));
    r.start(&si, &t);
    let mut first = iv(vec![udp_tx(0.0, 1.0, 131_400, 100)]);
    first.streams[0].omitted = true;
    first.latency = Some(Box::new(Figures {
        up: summary(100, [1.5, 2.25, 2.0, 3.0, 4.125, 5.0]),
        ..Figures::default()
    }));
    r.interval(&first);
    let text = out.text();
    let lat: Vec<&str> = text.lines().filter(|l| l.starts_with("[LAT]")).collect();
    assert_eq!(
        lat,
        [
            "[LAT]   0.00-1.00   sec  rtt: no round trips  (omitted)",
            "[LAT]   0.00-1.00   sec  one-way up min/mean/p99/max \
             1.500/2.250/4.125/5.000 ms, 100 samples  (omitted)",
        ],
        "{text}"
    );
}
