//! Extraction and panel rules against rperf3's own runs (`tests/fixtures/`) and
//! iperf3 3.21's (`crates/report/tests/fixtures/iperf-3.21/`).

use serde_json::Value;

use crate::model::{Protocol, Run};
use crate::panels::{legend, panels};
use crate::{parse_runs, render_svg, PlotError};

macro_rules! ours {
    ($name:literal) => {
        include_str!(concat!("../tests/fixtures/", $name))
    };
}
macro_rules! iperf {
    ($name:literal) => {
        include_str!(concat!("../../report/tests/fixtures/iperf-3.21/", $name))
    };
}

pub(crate) fn one(text: &str) -> Run {
    let mut runs = parse_runs("r", text).unwrap();
    assert_eq!(runs.len(), 1);
    runs.remove(0)
}

fn names(run: &Run) -> (Vec<&str>, Vec<&str>) {
    (
        run.streams.iter().map(|s| s.name.as_str()).collect(),
        run.sums.iter().map(|s| s.name.as_str()).collect(),
    )
}

/// The document's own figures, to compare the series with.
fn doc_values(text: &str, stream: usize, key: &str) -> Vec<f64> {
    let doc: Value = serde_json::from_str(text).unwrap();
    doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|iv| !iv["streams"][stream]["omitted"].as_bool().unwrap_or(false))
        .map(|iv| iv["streams"][stream][key].as_f64().unwrap())
        .collect()
}

#[test]
fn tcp_parallel_client_has_each_stream_and_the_sum_with_sender_figures() {
    let text = ours!("tcp_P2.client.json");
    let run = one(text);
    assert_eq!(run.protocol, Protocol::Tcp);
    assert_eq!(names(&run), (vec!["stream 1", "stream 2"], vec!["sum"]));
    for (i, s) in run.streams.iter().enumerate() {
        let bps: Vec<f64> = s.throughput.iter().map(|p| p.1).collect();
        assert_eq!(bps, doc_values(text, i, "bits_per_second"));
        let rtt: Vec<f64> = s.rtt_ms.iter().map(|p| p.1 * 1000.0).collect();
        assert_eq!(rtt, doc_values(text, i, "rtt"));
        assert_eq!(s.cwnd.len(), 3);
        assert_eq!(s.retransmits.len(), 3);
        assert!(s.lost_percent.is_empty() && s.jitter_ms.is_empty());
    }
    // Plotted at the middle of each interval.
    let doc: Value = serde_json::from_str(text).unwrap();
    let iv = &doc["intervals"][1]["sum"];
    let mid = (iv["start"].as_f64().unwrap() + iv["end"].as_f64().unwrap()) / 2.0;
    assert_eq!(run.sums[0].throughput[1].0, mid);
    assert!(run
        .description
        .starts_with("TCP, 2 streams, client to 127.0.0.1 port "));
    assert!((run.end_secs - 3.0).abs() < 0.2, "{}", run.end_secs);
}

#[test]
fn tcp_receiver_side_has_no_sender_figures() {
    let run = one(ours!("tcp_P2.server.json"));
    assert_eq!(run.streams.len(), 2);
    assert!(run
        .streams
        .iter()
        .all(|s| s.rtt_ms.is_empty() && s.cwnd.is_empty()));
    assert!(run.description.contains("server, client 127.0.0.1 port "));
    let p = panels(std::slice::from_ref(&run));
    assert!(p[1].lines.is_empty() && !p[1].empty_note.is_empty());
}

#[test]
fn iperf3_documents_read_the_same_way() {
    let run = one(iperf!("tcp_P2.client.json"));
    assert_eq!(names(&run), (vec!["stream 1", "stream 2"], vec!["sum"]));
    let bidir = one(iperf!("tcp_bidir.client.json"));
    assert_eq!(
        names(&bidir),
        (
            vec!["stream 1 (send)", "stream 2 (receive)"],
            vec!["sum (send)", "sum (receive)"]
        )
    );
    assert!(bidir.description.contains("bidirectional"));
    let udp = one(iperf!("udp_bidir_P2.client.json"));
    assert_eq!(udp.protocol, Protocol::Udp);
    assert_eq!(udp.streams.len(), 4);
    // Loss and jitter exist for the receiving streams only.
    let with_jitter: Vec<bool> = udp
        .streams
        .iter()
        .map(|s| !s.jitter_ms.is_empty())
        .collect();
    assert_eq!(with_jitter, [false, false, true, true]);
}

#[test]
fn omitted_intervals_are_left_out() {
    let text = iperf!("tcp_omit.client.json");
    let run = one(text);
    assert_eq!(run.streams[0].throughput.len(), 2);
    assert_eq!(
        run.streams[0]
            .throughput
            .iter()
            .map(|p| p.1)
            .collect::<Vec<_>>(),
        doc_values(text, 0, "bits_per_second")
    );
}

#[test]
fn udp_receiver_figures_from_either_side() {
    let server = one(ours!("udp.server.json"));
    assert_eq!(server.protocol, Protocol::Udp);
    assert_eq!(server.streams[0].jitter_ms.len(), 3);
    assert_eq!(server.streams[0].lost_percent.len(), 3);
    let client = one(ours!("udp.client.json"));
    assert!(client.streams[0].jitter_ms.is_empty());
    // --get-server-output: the server's intervals give the client's stream its
    // receiver figures.
    let text = ours!("udp_get_server_output.client.json");
    let doc: Value = serde_json::from_str(text).unwrap();
    let jitter: Vec<f64> = doc["server_output_json"]["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| iv["streams"][0]["jitter_ms"].as_f64().unwrap())
        .collect();
    let run = one(text);
    assert_eq!(
        run.streams[0]
            .jitter_ms
            .iter()
            .map(|p| p.1)
            .collect::<Vec<_>>(),
        jitter
    );
    assert_eq!(run.sums[0].lost_percent.len(), jitter.len());
}

#[test]
fn json_stream_reads_like_the_document() {
    let run = one(ours!("tcp_json_stream.client.jsonl"));
    assert_eq!(run.protocol, Protocol::Tcp);
    assert_eq!(names(&run), (vec!["stream 1"], vec!["sum"]));
    assert_eq!(run.streams[0].throughput.len(), 3);
    assert_eq!(run.streams[0].rtt_ms.len(), 3);
    let theirs = one(iperf!("tcp_json_stream_get_server_output.client.jsonl"));
    assert_eq!(theirs.streams[0].throughput.len(), 2);
    let udp = one(iperf!("udp_json_stream.client.jsonl"));
    assert_eq!(udp.protocol, Protocol::Udp);
    // --json-stream-full-output: events, then the whole document; one run.
    let full = one(iperf!("tcp_json_stream_full_output.client.txt"));
    assert_eq!(names(&full), (vec!["stream 1"], vec!["sum"]));
    assert_eq!(full.streams[0].throughput.len(), 2);
}

#[test]
fn an_sctp_run_is_named_sctp_with_the_tcp_panels() {
    let tcp = ours!("tcp_P2.client.json");
    let sctp = tcp.replace("\"protocol\":\t\"TCP\"", "\"protocol\":\t\"SCTP\"");
    assert_ne!(sctp, tcp);
    let run = one(&sctp);
    assert_eq!(run.protocol, Protocol::Sctp);
    assert!(
        run.description.starts_with("SCTP, 2 streams"),
        "{}",
        run.description
    );
    let shown = |r: &Run| panels(std::slice::from_ref(r)).len();
    assert_eq!(shown(&run), shown(&one(tcp)));
}

#[test]
fn a_log_of_several_documents_is_several_runs() {
    let text = format!(
        "{}\n{}",
        ours!("udp.server.json"),
        ours!("tcp_P2.server.json")
    );
    let runs = parse_runs("log.json", &text).unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r.label.as_str()).collect();
    assert_eq!(labels, ["log.json #1", "log.json #2"]);
    assert_eq!(runs[1].protocol, Protocol::Tcp);
}

#[test]
fn failed_and_broken_input_say_why() {
    let busy = "the server is busy running a test. try again later";
    for text in [
        iperf!("error_server_busy.client.json"),
        iperf!("error_server_busy.client.jsonl"),
    ] {
        assert_eq!(
            parse_runs("x", text),
            Err(PlotError::RunFailed(busy.into()))
        );
    }
    let full = ours!("tcp_P2.client.json");
    let cut = &full[..full.len() / 2];
    let line = cut.lines().count();
    assert!(matches!(parse_runs("x", cut), Err(PlotError::Truncated { line: l, .. }) if l == line));
    let stream = ours!("tcp_json_stream.client.jsonl");
    let cut = &stream[..stream.len() - 40];
    let lines = cut.lines().count();
    assert!(
        matches!(parse_runs("x", cut), Err(PlotError::Truncated { line: l, .. }) if l == lines)
    );
    assert!(matches!(
        parse_runs("x", "{\"start\": {}, \"intervals\": [}"),
        Err(PlotError::Malformed {
            line: 1,
            column: 29,
            ..
        })
    ));
    assert_eq!(parse_runs("x", " \n"), Err(PlotError::Empty));
    assert_eq!(parse_runs("x", "[1, 2]"), Err(PlotError::NotAReport));
    assert_eq!(
        parse_runs("x", "{\"start\": {}}"),
        Err(PlotError::NotAReport)
    );
    assert_eq!(
        parse_runs("x", "{\"start\": {}, \"intervals\": [], \"end\": {}}"),
        Err(PlotError::NoIntervals)
    );
    assert_eq!(
        PlotError::Truncated { line: 3, column: 1 }.to_string(),
        "the JSON ends early (truncated at line 3, column 1)"
    );
}

#[test]
fn one_stream_directions_draw_no_separate_sum() {
    let bidir = one(iperf!("tcp_bidir.client.json"));
    let p = panels(std::slice::from_ref(&bidir));
    let names: Vec<_> = p[0].lines.iter().map(|l| l.name.clone().unwrap()).collect();
    assert_eq!(names, ["stream 1 (send)", "stream 2 (receive)"]);
    let p2 = panels(&[one(ours!("tcp_P2.client.json"))]);
    assert_eq!(p2[0].lines.len(), 3);
    assert_eq!(p2[0].y_desc, "Throughput (Gbit/s)");
    assert_eq!(p2.len(), 4, "throughput, retransmits, cwnd, RTT");
}

#[test]
fn comparing_runs_draws_one_colour_per_run() {
    let runs = vec![
        one(ours!("tcp_P2.client.json")),
        one(iperf!("tcp_bidir.client.json")),
        one(ours!("udp.server.json")),
    ];
    let p = panels(&runs);
    assert_eq!(p.len(), 6, "TCP and UDP panels");
    let top: Vec<_> = p[0]
        .lines
        .iter()
        .map(|l| (l.name.clone().unwrap(), l.dashed))
        .collect();
    assert_eq!(
        top,
        [
            ("r".to_string(), false),
            ("r (send)".to_string(), false),
            ("r (receive)".to_string(), true),
            ("r".to_string(), false)
        ]
    );
    assert_eq!(p[0].lines[1].color, p[0].lines[2].color);
    assert_ne!(p[0].lines[0].color, p[0].lines[1].color);
    // cwnd: the mean of the run's two streams.
    let s = &runs[0].streams;
    let mean = (s[0].cwnd[0].1 + s[1].cwnd[0].1) / 2.0;
    assert_eq!(p[2].lines[0].points[0].1, mean);
}

#[test]
fn many_streams_share_one_legend_entry() {
    let mut run = one(ours!("tcp_P2.client.json"));
    let s = run.streams[0].clone();
    run.streams = (0..20).map(|_| s.clone()).collect();
    let p = panels(std::slice::from_ref(&run));
    let entries: Vec<_> = legend(&p).iter().map(|l| l.name.clone().unwrap()).collect();
    assert_eq!(entries, ["streams 1-20", "sum"]);
}

#[test]
fn svg_has_the_axes_and_legend_as_text() {
    let svg = render_svg(&[one(ours!("udp.server.json"))], Some("A & B")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect();
    for t in [
        "A & B",
        "Throughput (Mbit/s)",
        "Loss (%)",
        "Jitter (ms)",
        "Time (s)",
        "stream 1",
    ] {
        assert!(texts.iter().any(|x| x == t), "{t} in {texts:?}");
    }
    assert_eq!(render_svg(&[], None), Err(PlotError::NoIntervals));
}

/// One panel of a rendered SVG: its axis ticks as (value, pixel) and its data
/// lines as pixel points.
#[derive(Default)]
pub(crate) struct SvgPanel {
    pub(crate) x_ticks: Vec<(f64, f64)>,
    pub(crate) y_ticks: Vec<(f64, f64)>,
    pub(crate) lines: Vec<Vec<(f64, f64)>>,
}

/// The panels of `svg`, in order: each starts at its rotated y-axis title; its
/// lines are the coloured polylines inside its x axis (the legend's swatches
/// lie right of it).
pub(crate) fn svg_panels(svg: &str) -> Vec<SvgPanel> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let mut panels: Vec<SvgPanel> = Vec::new();
    let mut axis_end = f64::MAX;
    let attr = |n: &roxmltree::Node, k: &str| n.attribute(k).unwrap_or_default().to_string();
    let px = |n: &roxmltree::Node, k: &str| n.attribute(k).unwrap().parse::<f64>().unwrap();
    for n in doc.descendants() {
        if n.has_tag_name("text") {
            let text = n.text().unwrap_or_default().trim();
            if attr(&n, "transform").starts_with("rotate(270") {
                panels.push(SvgPanel::default());
            } else if let (Some(p), Ok(v)) = (panels.last_mut(), text.parse::<f64>()) {
                match attr(&n, "text-anchor").as_str() {
                    "end" => p.y_ticks.push((v, px(&n, "y"))),
                    "middle" => p.x_ticks.push((v, px(&n, "x"))),
                    _ => {}
                }
            }
        } else if n.has_tag_name("polyline") {
            let points: Vec<(f64, f64)> = attr(&n, "points")
                .split_whitespace()
                .map(|xy| {
                    let (x, y) = xy.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            let Some(p) = panels.last_mut() else { continue };
            if attr(&n, "stroke") == "#000000" {
                // The x axis: the long horizontal black line.
                if let [a, b] = points[..] {
                    if a.1 == b.1 && b.0 - a.0 > 300.0 {
                        axis_end = b.0;
                    }
                }
            } else if points.iter().all(|q| q.0 <= axis_end) {
                p.lines.push(points);
            }
        }
    }
    panels
}

/// The value at pixel `at` on an axis with these ticks (linear, from the two
/// outermost), and how much value one pixel is.
pub(crate) fn from_pixel(ticks: &[(f64, f64)], at: f64) -> (f64, f64) {
    let (v0, p0) = ticks[0];
    let (v1, p1) = ticks[ticks.len() - 1];
    let per_pixel = (v1 - v0) / (p1 - p0);
    (v0 + (at - p0) * per_pixel, per_pixel.abs())
}

/// Every point drawn, read back through the axes' tick labels, is the
/// document's own figure (within the pixel it was rounded to): throughput in
/// Mbit/s, loss and jitter at the middle of each interval.
#[test]
fn plotted_points_read_back_as_the_documents_figures() {
    let text = ours!("udp.server.json");
    let svg = render_svg(&[one(text)], None).unwrap();
    let panels = svg_panels(&svg);
    assert_eq!(panels.len(), 3, "throughput, loss, jitter");
    let doc: Value = serde_json::from_str(text).unwrap();
    let ivs = doc["intervals"].as_array().unwrap();
    let want = |key: &str, scale: f64| -> Vec<(f64, f64)> {
        ivs.iter()
            .map(|iv| {
                let s = &iv["streams"][0];
                let mid = (s["start"].as_f64().unwrap() + s["end"].as_f64().unwrap()) / 2.0;
                (mid, s[key].as_f64().unwrap() * scale)
            })
            .collect()
    };
    let expected = [
        want("bits_per_second", 1e-6),
        want("lost_percent", 1.0),
        want("jitter_ms", 1.0),
    ];
    for (k, (panel, data)) in panels.iter().zip(&expected).enumerate() {
        assert_eq!(panel.lines.len(), 1, "panel {k}: one stream");
        let line = &panel.lines[0];
        assert_eq!(line.len(), data.len(), "panel {k}: one point per interval");
        for (&(px, py), &(t, v)) in line.iter().zip(data) {
            let (x, x_px) = from_pixel(&panel.x_ticks, px);
            let (y, y_px) = from_pixel(&panel.y_ticks, py);
            // Points and ticks are both rounded to whole pixels.
            assert!((x - t).abs() <= 1.5 * x_px, "panel {k}: x {x} for {t}");
            assert!((y - v).abs() <= 1.5 * y_px, "panel {k}: y {y} for {v}");
        }
    }
}

/// A summary object of `intervals[].latency` / `end.latency` with this median and
/// 99th percentile.
fn lat_summary(count: u64, p50: f64, p99: f64) -> Value {
    serde_json::json!({"count": count, "min_ms": p50 / 2.0, "p50_ms": p50,
        "p90_ms": (p50 + p99) / 2.0, "p99_ms": p99, "max_ms": p99 * 1.1})
}

/// rperf3's client document with `--latency` figures in each interval and the end:
/// loaded p50 20, 30, 40 ms and p99 50, 60, 70 ms; idle median 5 ms.
fn with_latency(text: &str) -> Value {
    let mut doc: Value = serde_json::from_str(text).unwrap();
    for (k, iv) in doc["intervals"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .enumerate()
    {
        let k = k as f64;
        let loaded = lat_summary(10, 20.0 + 10.0 * k, 50.0 + 10.0 * k);
        iv["latency"] = serde_json::json!({"idle": lat_summary(0, 0.0, 0.0),
            "loaded": loaded, "rpm": 2000});
    }
    doc["end"]["latency"] = serde_json::json!({"idle": lat_summary(4, 5.0, 6.0),
        "loaded": lat_summary(30, 30.0, 70.0), "rpm": 2000, "with_server": true});
    doc
}

#[test]
fn latency_panel_shows_loaded_percentiles_and_the_idle_reference_issue18() {
    let doc = with_latency(ours!("tcp_P2.client.json"));
    let run = one(&doc.to_string());
    let l = run.latency.clone().expect("latency read");
    let mids: Vec<f64> = run.sums[0].throughput.iter().map(|p| p.0).collect();
    let p50: Vec<(f64, f64)> = mids
        .iter()
        .zip([20.0, 30.0, 40.0])
        .map(|(t, v)| (*t, v))
        .collect();
    assert_eq!(l.p50_ms, p50);
    assert_eq!(
        l.p99_ms.iter().map(|p| p.1).collect::<Vec<_>>(),
        [50.0, 60.0, 70.0]
    );
    assert_eq!(l.idle_p50_ms, Some(5.0));
    let p = panels(std::slice::from_ref(&run));
    assert_eq!(p.len(), 5, "throughput, retransmits, cwnd, RTT, latency");
    let lat = &p[4];
    assert_eq!(lat.y_desc, "Round trip (ms)");
    let names: Vec<_> = lat
        .lines
        .iter()
        .map(|l| (l.name.clone().unwrap(), l.dashed))
        .collect();
    assert_eq!(
        names,
        [
            ("loaded p50".to_string(), false),
            ("loaded p99".to_string(), false),
            ("idle p50".to_string(), true)
        ]
    );
    assert_eq!(lat.lines[2].points, [(0.0, 5.0), (run.end_secs, 5.0)]);
    // Drawn: the p50 line reads back through the panel's axes.
    let svg = render_svg(std::slice::from_ref(&run), None).unwrap();
    let drawn = svg_panels(&svg);
    assert_eq!(drawn.len(), 5);
    let panel = &drawn[4];
    for (&(px, py), &(t, v)) in panel.lines[0].iter().zip(&p50) {
        let (x, x_px) = from_pixel(&panel.x_ticks, px);
        let (y, y_px) = from_pixel(&panel.y_ticks, py);
        assert!((x - t).abs() <= 1.5 * x_px, "x {x} for {t}");
        assert!((y - v).abs() <= 1.5 * y_px, "y {y} for {v}");
    }
    // The same run as --json-stream events reads the same.
    let mut events = vec![serde_json::json!({"event": "start", "data": doc["start"]})];
    for iv in doc["intervals"].as_array().unwrap() {
        events.push(serde_json::json!({"event": "interval", "data": iv}));
    }
    events.push(serde_json::json!({"event": "end", "data": doc["end"]}));
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    assert_eq!(one(&lines.join("\n")).latency, Some(l));
}

#[test]
fn runs_without_latency_have_no_latency_panel_issue18() {
    let plain = one(ours!("tcp_P2.client.json"));
    assert_eq!(plain.latency, None);
    assert!(panels(std::slice::from_ref(&plain))
        .iter()
        .all(|p| p.y_desc != "Round trip (ms)"));
    // Compared with a run that has it: the panel is there, with the plain run's
    // lines absent rather than zero.
    let with = one(&with_latency(ours!("tcp_P2.client.json")).to_string());
    let p = panels(&[plain, with]);
    let lat = p.last().unwrap();
    assert_eq!(lat.y_desc, "Round trip (ms)");
    assert_eq!(lat.lines.len(), 3);
    assert!(lat
        .lines
        .iter()
        .all(|l| l.name.as_deref().unwrap().starts_with("r ")));
}
