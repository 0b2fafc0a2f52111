//! The panels of the data's one-way delays and of `--bounceback` round trips,
//! against rperf3's own documents (`tests/fixtures/udp_bidir_latency.client.json`,
//! `bounceback.client.json`): every point is the document's own figure.

use serde_json::Value;

use crate::model::Points;
use crate::panels::panels;
use crate::render_svg;
use crate::tests::{from_pixel, one, svg_panels};

const DATA_OWD: &str = include_str!("../tests/fixtures/udp_bidir_latency.client.json");
const BOUNCEBACK: &str = include_str!("../tests/fixtures/bounceback.client.json");
const TCP: &str = include_str!("../tests/fixtures/tcp_P2.client.json");

/// `(middle of the interval, value at pointer)` for every interval.
fn doc_points(text: &str, pointer: &str) -> Points {
    let doc: Value = serde_json::from_str(text).unwrap();
    doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|iv| {
            let s = &iv["sum"];
            let t = (s["start"].as_f64().unwrap() + s["end"].as_f64().unwrap()) / 2.0;
            (t, iv.pointer(pointer).unwrap().as_f64().unwrap())
        })
        .collect()
}

/// The first solid lines drawn in the panel at `k`, read back through its
/// axes, are `want` (a dashed line is drawn in pieces, each a polyline).
fn drawn_as(svg: &str, k: usize, want: &[&Points]) {
    let drawn = svg_panels(svg);
    let panel = &drawn[k];
    assert!(panel.lines.len() >= want.len(), "panel {k}");
    for (line, points) in panel.lines.iter().zip(want) {
        assert_eq!(line.len(), points.len());
        for (&(px, py), &(t, v)) in line.iter().zip(points.iter()) {
            let (x, x_px) = from_pixel(&panel.x_ticks, px);
            let (y, y_px) = from_pixel(&panel.y_ticks, py);
            assert!((x - t).abs() <= 1.5 * x_px, "panel {k}: x {x} for {t}");
            assert!((y - v).abs() <= 1.5 * y_px, "panel {k}: y {y} for {v}");
        }
    }
}

#[test]
fn data_one_way_panel_has_each_direction_p50_and_p99_issue18() {
    let run = one(DATA_OWD);
    let d = run.data_one_way.clone().expect("data delays read");
    let base = "/latency/data_one_way";
    assert_eq!(
        d.up.p50_ms,
        doc_points(DATA_OWD, &format!("{base}/up/p50_ms"))
    );
    assert_eq!(
        d.up.p99_ms,
        doc_points(DATA_OWD, &format!("{base}/up/p99_ms"))
    );
    assert_eq!(
        d.down.p50_ms,
        doc_points(DATA_OWD, &format!("{base}/down/p50_ms"))
    );
    assert_eq!(
        d.down.p99_ms,
        doc_points(DATA_OWD, &format!("{base}/down/p99_ms"))
    );
    assert_eq!(d.up.p50_ms.len(), 3);
    assert_eq!(run.bounceback, None);
    let p = panels(std::slice::from_ref(&run));
    // UDP: throughput, loss, jitter; then round trips, then the data's delays.
    let names: Vec<&str> = p.iter().map(|p| p.y_desc.as_str()).collect();
    assert_eq!(
        names[3..],
        ["Round trip (ms)", "Data one-way delay (ms)"],
        "{names:?}"
    );
    let owd = &p[4];
    let lines: Vec<_> = owd
        .lines
        .iter()
        .map(|l| (l.name.clone().unwrap(), l.dashed))
        .collect();
    assert_eq!(
        lines,
        [
            ("data up p50".to_string(), false),
            ("data up p99".to_string(), false),
            ("data down p50".to_string(), true),
            ("data down p99".to_string(), true),
        ]
    );
    let svg = render_svg(std::slice::from_ref(&run), None).unwrap();
    drawn_as(&svg, 4, &[&d.up.p50_ms, &d.up.p99_ms]);
    // The dashed lines down: in pieces, more than one point each.
    assert!(svg_panels(&svg)[4].lines.len() > 2);
}

#[test]
fn bounceback_panel_has_the_round_trips_p50_and_p99_issue18() {
    let run = one(BOUNCEBACK);
    let b = run.bounceback.clone().expect("bounceback read");
    assert_eq!(b.p50_ms, doc_points(BOUNCEBACK, "/bounceback/p50_ms"));
    assert_eq!(b.p99_ms, doc_points(BOUNCEBACK, "/bounceback/p99_ms"));
    assert_eq!(
        (run.latency.is_some(), run.data_one_way.is_some()),
        (false, false)
    );
    let p = panels(std::slice::from_ref(&run));
    let last = p.last().unwrap();
    assert_eq!(last.y_desc, "Bounceback round trip (ms)");
    let names: Vec<_> = last.lines.iter().map(|l| l.name.clone().unwrap()).collect();
    assert_eq!(names, ["bounceback p50", "bounceback p99"]);
    let svg = render_svg(std::slice::from_ref(&run), None).unwrap();
    drawn_as(&svg, p.len() - 1, &[&b.p50_ms, &b.p99_ms]);
}

#[test]
fn runs_without_the_figures_have_no_such_panels_and_compare_by_label_issue18() {
    let plain = one(TCP);
    assert_eq!(
        (plain.data_one_way.clone(), plain.bounceback.clone()),
        (None, None)
    );
    let descs = |runs: &[crate::model::Run]| -> Vec<String> {
        panels(runs).into_iter().map(|p| p.y_desc).collect()
    };
    let d = descs(std::slice::from_ref(&plain));
    assert!(
        !d.iter()
            .any(|y| y.contains("one-way") || y.contains("Bounceback")),
        "{d:?}"
    );
    // A server's bounceback document times nothing: no panel from it.
    let mut server: Value = serde_json::from_str(BOUNCEBACK).unwrap();
    for iv in server["intervals"].as_array_mut().unwrap() {
        iv["bounceback"] = serde_json::json!({"answered": 10, "tps": 10.0});
    }
    assert_eq!(one(&server.to_string()).bounceback, None);
    // Compared: each run's lines carry its label; a run without them adds none.
    let mut runs = crate::parse_runs("a", DATA_OWD).unwrap();
    runs.extend(crate::parse_runs("b", BOUNCEBACK).unwrap());
    runs.push(plain);
    let p = panels(&runs);
    let owd = p
        .iter()
        .find(|p| p.y_desc == "Data one-way delay (ms)")
        .unwrap();
    assert_eq!(owd.lines.len(), 4);
    assert!(owd
        .lines
        .iter()
        .all(|l| l.name.as_deref().unwrap().starts_with("a data ")));
    let bb = p.last().unwrap();
    assert_eq!(bb.y_desc, "Bounceback round trip (ms)");
    let names: Vec<_> = bb.lines.iter().map(|l| l.name.clone().unwrap()).collect();
    assert_eq!(names, ["b bounceback p50", "b bounceback p99"]);
}
