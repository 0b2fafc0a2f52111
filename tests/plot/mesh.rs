//! `rperf3 plot` of mesh lines, as a user runs it: the SVG renders with
//! rsvg-convert, and read back with an XML parser each matrix has a cell per
//! ordered pair, placed under its row's and column's node names, whose text is
//! the figure of the pair's latest line in the input (or its outcome); the
//! worst pair is listed and outlined. Bad mesh input fails naming the line.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::{fixture, plot_and_render, plot_fails, Rect, Svg};
use crate::common::scratch_file;

const THROUGHPUT: &str = "Throughput, bit/s (log colour scale)";
const LATENCY: &str = "Loaded latency p50, ms (log colour scale)";
const LOSS: &str = "UDP loss, %";
const RETRANSMITS: &str = "TCP retransmits";

/// A matrix cell read back: its matrix (title), pair, text and rectangle.
#[derive(Debug)]
struct Cell {
    matrix: String,
    source: String,
    destination: String,
    text: String,
    rect: Rect,
}

/// Every cell of the matrices titled `titles`. A cell is a filled rectangle of
/// the size most rectangles at least 20 px on each side have (the colour
/// legends are rows of narrow ones); its text is centred on it, its row's name is
/// the nearest node name left of it at the same height, its column's the
/// nearest above it at the same x, its matrix the nearest title above-left.
fn cells(svg: &Svg, nodes: &[String], titles: &[&str]) -> Vec<Cell> {
    let mut sizes: BTreeMap<(i64, i64), usize> = BTreeMap::new();
    for r in svg
        .rects
        .iter()
        .filter(|r| r.fill != "none" && r.w >= 20.0 && r.h >= 20.0)
    {
        *sizes.entry((r.w as i64, r.h as i64)).or_default() += 1;
    }
    let (size, _) = sizes.iter().max_by_key(|e| e.1).unwrap();
    let is_node = |t: &str| nodes.iter().any(|n| n == t);
    let near = |a: f64, b: f64| (a - b).abs() < 1.0;
    svg.rects
        .iter()
        .filter(|r| r.fill != "none" && (r.w as i64, r.h as i64) == *size)
        .map(|r| {
            let (cx, cy) = (r.x + r.w / 2.0, r.y + r.h / 2.0);
            let text = svg
                .texts
                .iter()
                .find(|t| near(t.0, cx) && near(t.1, cy))
                .map_or(String::new(), |t| t.2.clone());
            let nearest = |found: Option<&(f64, f64, String)>| found.expect("a label").2.clone();
            let source = nearest(
                svg.texts
                    .iter()
                    .filter(|t| is_node(&t.2) && near(t.1, cy) && t.0 < r.x)
                    .max_by(|a, b| a.0.total_cmp(&b.0)),
            );
            let destination = nearest(
                svg.texts
                    .iter()
                    .filter(|t| is_node(&t.2) && near(t.0, cx) && t.1 < r.y)
                    .max_by(|a, b| a.1.total_cmp(&b.1)),
            );
            let matrix = nearest(
                svg.texts
                    .iter()
                    .filter(|t| titles.contains(&t.2.as_str()) && t.1 < r.y && t.0 <= r.x)
                    .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.total_cmp(&b.0))),
            );
            Cell {
                matrix,
                source,
                destination,
                text,
                rect: r.clone(),
            }
        })
        .collect()
}

/// Each ordered pair's latest line (by "end"; the later line on a tie), and
/// every node name, read from the mesh files.
fn latest(paths: &[String]) -> (BTreeMap<(String, String), Value>, Vec<String>, usize) {
    let mut pairs: BTreeMap<(String, String), Value> = BTreeMap::new();
    let mut lines = 0;
    for path in paths {
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            lines += 1;
            let key = (
                v["source"].as_str().unwrap().to_string(),
                v["destination"].as_str().unwrap().to_string(),
            );
            let newer = pairs
                .get(&key)
                .is_none_or(|old| v["end"].as_f64() >= old["end"].as_f64());
            if newer {
                pairs.insert(key, v);
            }
        }
    }
    let mut nodes: Vec<String> = pairs
        .keys()
        .flat_map(|k| [k.0.clone(), k.1.clone()])
        .collect();
    nodes.sort();
    nodes.dedup();
    (pairs, nodes, lines)
}

/// A cell's number ("36.6G", "0.096", "12.5") and how far from the figure it
/// may be: half its last digit.
fn read_number(text: &str) -> (f64, f64) {
    let (digits, scale) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1e3),
        Some('M') => (&text[..text.len() - 1], 1e6),
        Some('G') => (&text[..text.len() - 1], 1e9),
        Some('T') => (&text[..text.len() - 1], 1e12),
        _ => (text, 1.0),
    };
    let decimals = digits.split_once('.').map_or(0, |(_, d)| d.len());
    let value: f64 = digits
        .parse()
        .unwrap_or_else(|_| panic!("a number: {text}"));
    (
        value * scale,
        0.5 * 10f64.powi(-(decimals as i32)) * scale * 1.0001,
    )
}

fn measured(line: &Value) -> bool {
    matches!(line["outcome"].as_str(), Some("ok" | "not_rperf3"))
}

/// Checks every cell of every matrix against the input's latest lines, and
/// returns the cells.
fn check_against_input(svg: &Svg, paths: &[String], titles: &[&str]) -> Vec<Cell> {
    let (pairs, nodes, lines) = latest(paths);
    assert!(
        svg.has_text(&format!("Mesh: {} nodes, {lines} tests", nodes.len())),
        "title"
    );
    let cells = cells(svg, &nodes, titles);
    assert_eq!(cells.len(), titles.len() * nodes.len() * nodes.len());
    for title in titles {
        assert_eq!(
            cells.iter().filter(|c| c.matrix == *title).count(),
            nodes.len() * nodes.len(),
            "{title}"
        );
    }
    for c in &cells {
        let what = format!(
            "{}: {} -> {} shows {:?}",
            c.matrix, c.source, c.destination, c.text
        );
        let Some(line) = pairs.get(&(c.source.clone(), c.destination.clone())) else {
            // The diagonal, or a pair never tested: blank.
            assert_eq!(c.text, "", "{what}");
            continue;
        };
        if !measured(line) {
            assert_eq!(c.text, line["outcome"].as_str().unwrap(), "{what}");
            continue;
        }
        let figure = match c.matrix.as_str() {
            THROUGHPUT => &line["throughput_bps"],
            LATENCY => &line["latency"]["loaded"]["p50_ms"],
            RETRANSMITS => &line["retransmits"],
            _ => &line["lost_percent"],
        };
        let figure = figure.as_f64().unwrap();
        let (shown, tolerance) = read_number(&c.text);
        assert!(
            (shown - figure).abs() <= tolerance,
            "{what}, the line has {figure}"
        );
    }
    cells
}

/// The lines of a list under the matrices, after its heading.
fn list(svg: &Svg, heading: &str) -> Vec<String> {
    let at = svg
        .texts
        .iter()
        .position(|t| t.2 == heading)
        .expect(heading);
    let x = svg.texts[at].0;
    svg.texts[at + 1..]
        .iter()
        .take_while(|t| t.0 == x && t.2.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .map(|t| t.2.clone())
        .collect()
}

/// Whether a thick outline is drawn around the cell.
fn outlined(svg: &Svg, cell: &Cell) -> bool {
    let r = &cell.rect;
    svg.lines.iter().any(|l| {
        l.width == "3"
            && l.points.len() == 5
            && l.points[0] == (r.x, r.y)
            && l.points[2] == (r.x + r.w, r.y + r.h)
    })
}

#[test]
fn mesh_plot_shows_each_pairs_latest_test() {
    let input = fixture("mesh_loopback.jsonl");
    let Some(svg) = plot_and_render(std::slice::from_ref(&input), &[]) else {
        return;
    };
    let cells = check_against_input(
        &svg,
        std::slice::from_ref(&input),
        &[THROUGHPUT, LATENCY, RETRANSMITS],
    );
    assert!(!svg.has_text(LOSS), "TCP only: no loss matrix");
    let unreachable: Vec<&Cell> = cells.iter().filter(|c| c.text == "unreachable").collect();
    // Three matrices, four sources each.
    assert_eq!(unreachable.len(), 3 * 4);
    assert!(unreachable.iter().all(|c| c.destination == "n5"));
    // The lowest throughput in the file heads the list, and its cell is outlined.
    let (pairs, _, _) = latest(std::slice::from_ref(&input));
    let lowest = pairs
        .iter()
        .filter(|(_, v)| measured(v))
        .min_by(|a, b| {
            let bps = |v: &Value| v["throughput_bps"].as_f64().unwrap();
            bps(a.1).total_cmp(&bps(b.1))
        })
        .unwrap()
        .0;
    assert_eq!(lowest, &("n2".to_string(), "n1".to_string()));
    let worst = list(&svg, "Lowest throughput (bit/s)");
    assert_eq!(worst.len(), 5);
    assert!(worst[0].starts_with("1. n2 → n1: "), "{worst:?}");
    let cell = cells
        .iter()
        .find(|c| c.matrix == THROUGHPUT && (&c.source, &c.destination) == (&lowest.0, &lowest.1))
        .unwrap();
    assert!(worst[0].ends_with(&format!(": {}", cell.text)), "{worst:?}");
    assert!(outlined(&svg, cell));
    assert_eq!(
        cells
            .iter()
            .filter(|c| c.matrix == THROUGHPUT && outlined(&svg, c))
            .count(),
        5
    );
    assert_eq!(list(&svg, "Highest loaded latency p50 (ms)").len(), 5);
    assert!(svg
        .texts
        .iter()
        .any(|t| t.2 == "unreachable (4): n1 → n5, n2 → n5, n3 → n5, n4 → n5"));
}

#[test]
fn udp_mesh_adds_a_loss_matrix_and_shows_outcomes() {
    let input = fixture("mesh_small.jsonl");
    let Some(svg) = plot_and_render(std::slice::from_ref(&input), &["--title", "small <mesh>"])
    else {
        return;
    };
    assert!(svg.has_text("small <mesh>"));
    let titles = [THROUGHPUT, LATENCY, LOSS];
    // The title is the user's: count the cells here instead.
    let (_, nodes, _) = latest(std::slice::from_ref(&input));
    let cells = cells(&svg, &nodes, &titles);
    assert_eq!(cells.len(), 3 * 16);
    let shown = |matrix: &str, s: &str, d: &str| {
        let c = cells
            .iter()
            .find(|c| c.matrix == matrix && c.source == s && c.destination == d)
            .unwrap();
        c.text.clone()
    };
    // a -> b's newer line comes first in the file; it is the one shown.
    assert_eq!(shown(THROUGHPUT, "a", "b"), "941M");
    assert_eq!(shown(THROUGHPUT, "a", "c"), "9.43G");
    assert_eq!(
        shown(THROUGHPUT, "c", "a"),
        "1.06G",
        "not_rperf3 has figures"
    );
    assert_eq!(shown(THROUGHPUT, "a", "d"), "unreachable");
    assert_eq!(shown(LOSS, "a", "d"), "unreachable");
    assert_eq!(shown(THROUGHPUT, "b", "c"), "busy");
    assert_eq!(shown(LATENCY, "c", "d"), "timeout");
    assert_eq!(shown(THROUGHPUT, "b", "d"), "", "never tested");
    assert_eq!(shown(LOSS, "b", "a"), "12.5");
    assert_eq!(shown(LATENCY, "b", "a"), "35.0");
    assert_eq!(
        list(&svg, "Lowest throughput (bit/s)")[0],
        "1. b → a: 48.7M"
    );
    assert_eq!(
        list(&svg, "Highest UDP loss (%)"),
        ["1. b → a: 12.5", "2. c → b: 1.50", "3. a → b: 0.25"]
    );
}

#[test]
fn several_mesh_files_plot_as_one_mesh() {
    // Two agents' files, one with long names (the column labels stand upright).
    let text = std::fs::read_to_string(fixture("mesh_loopback.jsonl"))
        .unwrap()
        .replace("\"n1\"", "\"node-one.example\"");
    let lines: Vec<&str> = text.lines().collect();
    let (a, b) = (scratch_file("mesh-a.jsonl"), scratch_file("mesh-b.jsonl"));
    std::fs::write(&a, lines[..7].join("\n")).unwrap();
    std::fs::write(&b, lines[7..].join("\n") + "\n").unwrap();
    let paths = [a.display().to_string(), b.display().to_string()];
    let Some(svg) = plot_and_render(&paths, &[]) else {
        return;
    };
    check_against_input(&svg, &paths, &[THROUGHPUT, LATENCY, RETRANSMITS]);
}

#[test]
fn bad_mesh_input_fails_naming_the_line() {
    let svg = scratch_file("never-mesh.svg");
    let o = svg.display().to_string();
    let good = std::fs::read_to_string(fixture("mesh_loopback.jsonl")).unwrap();
    let first: Vec<&str> = good.lines().take(2).collect();
    let write = |name: &str, text: String| {
        let p = scratch_file(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let not_json = write(
        "notjson.jsonl",
        format!("{}\n{}\n{{oops\n", first[0], first[1]),
    );
    plot_fails(
        &["plot", &not_json, "-o", &o],
        &format!("rperf3: plot: {not_json}: malformed JSON at line 3, column 2"),
    );
    let no_outcome = first[1].replace("\"outcome\"", "\"status\"");
    let missing = write("missing.jsonl", format!("{}\n{no_outcome}\n", first[0]));
    plot_fails(
        &["plot", &missing, "-o", &o],
        &format!("rperf3: plot: {missing}: line 2: not a mesh test line: no \"outcome\""),
    );
    let empty = write("empty.jsonl", String::new());
    plot_fails(
        &["plot", &empty, "-o", &o],
        &format!("rperf3: plot: {empty}: the file is empty"),
    );
    // Mesh lines and an iperf3 run, in either order.
    let mesh = fixture("mesh_small.jsonl");
    let run = fixture("udp.server.json");
    plot_fails(
        &["plot", &mesh, &run, "-o", &o],
        &format!(
            "rperf3: plot: {run}: it holds iperf3 runs, but {mesh} holds mesh lines: plot each kind on its own"
        ),
    );
    plot_fails(
        &["plot", &run, &mesh, "-o", &o],
        &format!("rperf3: plot: {mesh}: it holds mesh lines, but {run} holds iperf3 runs"),
    );
    assert!(!PathBuf::from(&o).exists());
}
