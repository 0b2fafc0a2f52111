//! Mesh lines to matrix, scales and numbers, against the mesh fixtures
//! (`tests/fixtures/mesh_*.jsonl`, described in their README).

use crate::mesh_model::{is_mesh, parse_mesh, Mesh, MeshTest, Metric};
use crate::mesh_scale::{format_bps, format_ms, format_percent, format_value, ramp, utc, Scale};
use crate::{parse_file, render_mesh_svg, Input, PlotError};

const SMALL: &str = include_str!("../tests/fixtures/mesh_small.jsonl");
const LOOPBACK: &str = include_str!("../tests/fixtures/mesh_loopback.jsonl");

fn mesh(text: &str) -> Mesh {
    Mesh::new(&parse_mesh(text).unwrap())
}

/// The latest test of `source -> destination`, by name.
fn cell<'m>(m: &'m Mesh, source: &str, destination: &str) -> Option<&'m MeshTest> {
    let at = |n: &str| m.nodes.iter().position(|x| x == n).unwrap();
    m.cells[at(source)][at(destination)].as_ref()
}

fn named(m: &Mesh, metric: Metric, n: usize) -> Vec<(String, f64)> {
    m.worst(metric, n)
        .into_iter()
        .map(|r| {
            let pair = format!("{}>{}", m.nodes[r.source], m.nodes[r.destination]);
            (pair, r.value)
        })
        .collect()
}

#[test]
fn mesh_lines_are_told_from_iperf3_output() {
    assert!(is_mesh(SMALL));
    assert!(is_mesh(&format!("\n\n{LOOPBACK}")));
    // A line missing some of the three keys is still a mesh file (then an error).
    assert!(is_mesh("{\"source\":\"a\",\"end\":2.0}\n"));
    assert!(!is_mesh(include_str!(
        "../tests/fixtures/tcp_json_stream.client.jsonl"
    )));
    assert!(!is_mesh(include_str!(
        "../tests/fixtures/tcp_P2.client.json"
    )));
    assert!(!is_mesh(""));
    assert!(!is_mesh("not json\n"));
    let kind = |t: &str| parse_file("f", t).map(|i| i.kind());
    assert_eq!(kind(SMALL), Ok("mesh lines"));
    assert_eq!(
        kind(include_str!("../tests/fixtures/udp.server.json")),
        Ok("iperf3 runs")
    );
    assert!(matches!(parse_file("f", SMALL), Ok(Input::Mesh(t)) if t.len() == 11));
}

#[test]
fn a_line_gives_its_figures() {
    let tests = parse_mesh(SMALL).unwrap();
    assert_eq!(tests.len(), 11);
    let t = &tests[0];
    assert_eq!((t.source.as_str(), t.destination.as_str()), ("a", "b"));
    assert_eq!(t.outcome, "ok");
    assert!(t.udp && t.measured());
    assert_eq!(t.cycle, Some(1));
    assert_eq!(t.end, 1_795_900_062.004);
    assert_eq!(t.throughput_bps, Some(941_200_000.0));
    assert_eq!(t.loaded_p50_ms, Some(1.5));
    assert_eq!(t.lost_percent, Some(0.25));
    let unreachable = &tests[4];
    assert_eq!(unreachable.outcome, "unreachable");
    assert!(!unreachable.measured());
    assert!(unreachable
        .error
        .as_deref()
        .unwrap()
        .starts_with("unable to connect"));
    assert_eq!(unreachable.throughput_bps, None);
    assert_eq!(Metric::Throughput.of(unreachable), None);
    let tcp = &parse_mesh(LOOPBACK).unwrap()[0];
    assert!(!tcp.udp);
    assert_eq!(tcp.lost_percent, None);
    assert_eq!(tcp.loaded_p50_ms, Some(0.095807));
}

#[test]
fn each_cell_is_the_pairs_latest_test_by_end() {
    let m = mesh(SMALL);
    // a -> b: the cycle 1 line comes first in the file, and is the latest.
    assert_eq!(cell(&m, "a", "b").unwrap().cycle, Some(1));
    assert_eq!(
        cell(&m, "a", "b").unwrap().throughput_bps,
        Some(941_200_000.0)
    );
    // a -> d: measured in cycle 0, unreachable since: the cell says so.
    let ad = cell(&m, "a", "d").unwrap();
    assert_eq!(ad.outcome, "unreachable");
    assert_eq!(Metric::Throughput.of(ad), None);
    // not_rperf3 is measured, with figures.
    let ca = cell(&m, "c", "a").unwrap();
    assert!(ca.measured());
    assert_eq!(Metric::Throughput.of(ca), Some(1_060_000_000.0));
    // Never tested, and the diagonal.
    assert!(cell(&m, "b", "d").is_none());
    assert!(cell(&m, "d", "b").is_none());
    assert!((0..m.nodes.len()).all(|i| m.cells[i][i].is_none()));
    assert_eq!(m.tests, 11);
    assert_eq!(m.cycles, Some((0, 1)));
    assert_eq!(m.pairs().count(), 9);
    assert!(m.has_udp());
    assert!(!mesh(LOOPBACK).has_udp());
}

#[test]
fn of_two_tests_ending_together_the_later_line_wins() {
    let line = |bps: f64| {
        format!(
            "{{\"source\":\"x\",\"destination\":\"y\",\"end\":5.0,\"outcome\":\"ok\",\"throughput_bps\":{bps}}}\n"
        )
    };
    let m = mesh(&format!("{}{}", line(1.0), line(2.0)));
    assert_eq!(cell(&m, "x", "y").unwrap().throughput_bps, Some(2.0));
    // A line without "end" is older than one with it.
    let m = mesh(&format!(
        "{}{{\"source\":\"x\",\"destination\":\"y\",\"outcome\":\"busy\"}}\n",
        line(1.0)
    ));
    assert_eq!(cell(&m, "x", "y").unwrap().outcome, "ok");
    assert_eq!(m.ends, Some((5.0, 5.0)));
}

#[test]
fn nodes_are_every_name_sorted() {
    let m = mesh(LOOPBACK);
    assert_eq!(m.nodes, ["n1", "n2", "n3", "n4", "n5"]);
    // n5 never ran: a row with no test, a column of unreachable.
    assert!(m.cells[4].iter().all(Option::is_none));
    for s in 0..4 {
        assert_eq!(m.cells[s][4].as_ref().unwrap().outcome, "unreachable");
    }
    assert_eq!(m.pairs().count(), 16);
    let m = mesh(
        "{\"source\":\"zeta\",\"destination\":\"alpha\",\"outcome\":\"ok\"}\n\
         {\"source\":\"mu\",\"destination\":\"zeta\",\"outcome\":\"ok\"}\n",
    );
    assert_eq!(m.nodes, ["alpha", "mu", "zeta"]);
}

#[test]
fn the_worst_pairs_come_first() {
    let m = mesh(SMALL);
    let tp = named(&m, Metric::Throughput, 5);
    let pairs: Vec<&str> = tp.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(pairs, ["b>a", "d>a", "a>b", "c>a", "c>b"]);
    assert_eq!(tp[0].1, 48_700_000.0);
    let lat = named(&m, Metric::Latency, 2);
    assert_eq!(lat, [("b>a".to_string(), 35.0), ("c>a".to_string(), 3.2)]);
    // No loss is not among the worst.
    let loss = named(&m, Metric::Loss, 5);
    let pairs: Vec<&str> = loss.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(pairs, ["b>a", "c>b", "a>b"]);
    let lo = mesh(LOOPBACK);
    assert_eq!(named(&lo, Metric::Throughput, 1)[0].0, "n2>n1");
    assert_eq!(named(&lo, Metric::Latency, 1)[0].0, "n4>n1");
    assert!(named(&lo, Metric::Loss, 5).is_empty());
    assert_eq!(named(&lo, Metric::Throughput, 50).len(), 12);
}

#[test]
fn unmeasured_pairs_group_by_outcome() {
    let groups = mesh(SMALL).unmeasured();
    let outcomes: Vec<(&str, usize)> = groups.iter().map(|(o, p)| (o.as_str(), p.len())).collect();
    assert_eq!(outcomes, [("unreachable", 1), ("busy", 1), ("timeout", 1)]);
    let lo = mesh(LOOPBACK).unmeasured();
    assert_eq!(lo.len(), 1);
    assert_eq!(lo[0].1, [(0, 4), (1, 4), (2, 4), (3, 4)]);
}

#[test]
fn a_worse_figure_never_gets_a_better_colour() {
    // The ramp's green falls steadily from best to worst.
    let greens: Vec<u8> = (0..=20).map(|i| ramp(f64::from(i) / 20.0).1).collect();
    assert!(greens.windows(2).all(|w| w[0] >= w[1]), "{greens:?}");
    assert!(greens[0] > greens[20] + 150);
    let tp = [48.7e6, 777e6, 941e6, 1.06e9, 9.43e9];
    let s = Scale::new(Metric::Throughput, &tp).unwrap();
    assert_eq!((s.min, s.max), (48.7e6, 9.43e9));
    assert_eq!(s.badness(9.43e9), 0.0);
    assert_eq!(s.badness(48.7e6), 1.0);
    for w in tp.windows(2) {
        assert!(s.badness(w[0]) > s.badness(w[1]), "{w:?}");
        assert!(s.color(w[0]).1 < s.color(w[1]).1, "{w:?}");
    }
    let lat = [0.25, 0.8, 1.5, 35.0];
    let s = Scale::new(Metric::Latency, &lat).unwrap();
    for w in lat.windows(2) {
        assert!(s.badness(w[0]) < s.badness(w[1]), "{w:?}");
    }
    let s = Scale::new(Metric::Loss, &[0.0, 0.25, 12.5]).unwrap();
    assert_eq!(s.badness(0.0), 0.0);
    assert!(s.badness(0.25) < s.badness(12.5));
    assert!(Scale::new(Metric::Throughput, &[]).is_none());
}

#[test]
fn close_figures_are_not_alarming() {
    // Every pair within 30 %: the worst is not drawn red.
    let s = Scale::new(Metric::Throughput, &[36.6e9, 47.4e9]).unwrap();
    assert!(s.badness(36.6e9) < 0.5, "{}", s.badness(36.6e9));
    let s = Scale::new(Metric::Latency, &[0.06, 0.14]).unwrap();
    assert!(s.badness(0.14) < 0.5);
    let s = Scale::new(Metric::Loss, &[0.0, 0.1]).unwrap();
    assert!(s.badness(0.1) < 0.2);
    // One value, or nothing through at all.
    let s = Scale::new(Metric::Throughput, &[1e9]).unwrap();
    assert_eq!(s.badness(1e9), 0.0);
    let s = Scale::new(Metric::Throughput, &[0.0, 0.0]).unwrap();
    assert_eq!(s.badness(0.0), 1.0);
    let s = Scale::new(Metric::Throughput, &[0.0, 1e9]).unwrap();
    assert_eq!(s.badness(0.0), 1.0);
    // The legend runs from the data's lowest to its highest, geometrically.
    let s = Scale::new(Metric::Throughput, &[1e6, 1e8]).unwrap();
    assert!((s.along(0.5) - 1e7).abs() < 1.0);
    assert!((s.along(0.0) - 1e6).abs() < 1e-3 && (s.along(1.0) - 1e8).abs() < 1e-3);
}

#[test]
fn numbers_read_short() {
    let cases = [
        (941.2e6, "941M"),
        (9.431e9, "9.43G"),
        (9.4e9, "9.40G"),
        (47.42e9, "47.4G"),
        (36.6e9, "36.6G"),
        (999.7e6, "1.00G"),
        (999.4e6, "999M"),
        (48.7e6, "48.7M"),
        (1.06e9, "1.06G"),
        (2.5e12, "2.50T"),
        (12_345.0, "12.3k"),
        (512.0, "512"),
        (0.4, "0.40"),
        (0.0, "0"),
    ];
    for (v, s) in cases {
        assert_eq!(format_bps(v), s, "{v}");
    }
    for (v, s) in [
        (0.095807, "0.096"),
        (0.020351, "0.020"),
        (4.00218, "4.00"),
        (35.0, "35.0"),
        (150.2, "150"),
    ] {
        assert_eq!(format_ms(v), s, "{v}");
    }
    for (v, s) in [
        (0.0, "0"),
        (0.001, "<0.01"),
        (0.25, "0.25"),
        (1.5, "1.50"),
        (12.5, "12.5"),
        (100.0, "100"),
    ] {
        assert_eq!(format_percent(v), s, "{v}");
    }
    assert_eq!(format_value(Metric::Throughput, 941.2e6), "941M");
    assert_eq!(utc(1_795_810_606.0), "2026-11-27 20:16:46");
    assert_eq!(utc(0.0), "1970-01-01 00:00:00");
    assert_eq!(utc(951_827_696.5), "2000-02-29 12:34:56");
}

#[test]
fn bad_lines_are_named() {
    let good = SMALL.lines().next().unwrap();
    let err = |text: &str| parse_mesh(text).unwrap_err();
    assert!(matches!(
        err(&format!("{good}\n{good}\nnot json\n")),
        PlotError::Malformed { line: 3, .. }
    ));
    assert!(matches!(
        err(&format!("{good}\n{}\n", &good[..40])),
        PlotError::Truncated { line: 2, .. }
    ));
    let missing = err(&format!(
        "{good}\n\n{}\n",
        good.replace("\"outcome\"", "\"result\"")
    ));
    assert_eq!(
        missing.to_string(),
        "line 3: not a mesh test line: no \"outcome\" (each needs \"source\", \"destination\" and \"outcome\")"
    );
    assert_eq!(
        err(&format!("{good}\n[1, 2]\n")).to_string(),
        "line 2: not a mesh test line: not a JSON object"
    );
    assert_eq!(
        err(&good.replace("\"source\":\"a\"", "\"source\":7")).to_string(),
        "line 1: \"source\" is not a string"
    );
    assert_eq!(err(""), PlotError::Empty);
    assert_eq!(parse_file("f", "  \n"), Err(PlotError::Empty));
}

#[test]
fn the_svg_has_a_cell_per_pair_and_names_the_worst() {
    let m = mesh(SMALL);
    let svg = render_mesh_svg(&m, &["mesh_small.jsonl".to_string()], None).unwrap();
    assert!(svg.contains(">\nMesh: 4 nodes, 11 tests\n<"), "{svg}");
    // Three matrices (UDP adds loss) of 4 x 4 cells.
    assert_eq!(svg.matches("width=\"84\" height=\"38\"").count(), 48);
    for text in [
        "941M",
        "9.43G",
        "unreachable",
        "busy",
        "timeout",
        "12.5",
        "1. b → a: 48.7M",
    ] {
        assert!(svg.contains(&format!(">\n{text}\n<")), "{text}");
    }
    let tcp = render_mesh_svg(&mesh(LOOPBACK), &[], Some("loopback")).unwrap();
    // Throughput, latency and retransmits, 5 x 5 cells each.
    assert_eq!(tcp.matches("width=\"84\" height=\"38\"").count(), 75);
    assert!(tcp.contains(">\nTCP retransmits\n<"));
    assert!(tcp.contains(">\nloopback\n<"));
    assert!(!tcp.contains("UDP loss"));
}
