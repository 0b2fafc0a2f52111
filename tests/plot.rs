//! `rperf3 plot` as a user runs it: the SVG renders with a real renderer
//! (librsvg's `rsvg-convert`), and its structure, read with an XML parser, holds
//! a line per stream plus the sum, axis titles with units, and a legend entry
//! for each line. Broken input fails with a message and exit status 1.
//! Mesh lines (`rperf3 mesh -J`) draw as matrices: [`mesh`].

use crate::common;

mod mesh;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{require_tool, run_client, run_program, scratch_file, Server};

const TIMEOUT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/plot/tests/fixtures");
    dir.join(name).display().to_string()
}

fn iperf_fixture(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/iperf-3.21");
    dir.join(name).display().to_string()
}

/// A line drawn in the SVG: colour, width and points.
#[derive(Debug)]
struct Polyline {
    stroke: String,
    width: String,
    points: Vec<(f64, f64)>,
}

/// A rectangle drawn in the SVG (a filled one has stroke "none").
#[derive(Debug, Clone)]
struct Rect {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    fill: String,
}

struct Svg {
    texts: Vec<(f64, f64, String)>,
    lines: Vec<Polyline>,
    rects: Vec<Rect>,
    size: (u32, u32),
}

fn read_svg(path: &Path) -> Svg {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    let dim = |a: &str| root.attribute(a).unwrap().parse::<u32>().unwrap();
    let num = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap().parse::<f64>().unwrap();
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| {
            (
                num(&n, "x"),
                num(&n, "y"),
                n.text().unwrap_or_default().trim().to_string(),
            )
        })
        .collect();
    let lines = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .map(|n| Polyline {
            stroke: n.attribute("stroke").unwrap().to_string(),
            width: n.attribute("stroke-width").unwrap().to_string(),
            points: n
                .attribute("points")
                .unwrap()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect(),
        })
        .collect();
    let rects = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .map(|n| Rect {
            x: num(&n, "x"),
            y: num(&n, "y"),
            w: num(&n, "width"),
            h: num(&n, "height"),
            fill: n.attribute("fill").unwrap().to_string(),
        })
        .collect();
    Svg {
        texts,
        lines,
        rects,
        size: (dim("width"), dim("height")),
    }
}

impl Svg {
    fn has_text(&self, t: &str) -> bool {
        self.texts.iter().any(|x| x.2 == t)
    }

    /// Legend entries (text at the right, beside a short swatch line): name and
    /// the swatch's colour and width.
    fn legend(&self) -> Vec<(String, String, String)> {
        self.texts
            .iter()
            .filter(|t| t.0 > 900.0)
            .map(|(_, y, name)| {
                let swatch = self
                    .lines
                    .iter()
                    .find(|l| l.points.len() == 2 && l.points[0].1 == *y && l.points[0].0 > 900.0)
                    .unwrap_or_else(|| panic!("no swatch for legend entry {name}"));
                (name.clone(), swatch.stroke.clone(), swatch.width.clone())
            })
            .collect()
    }

    /// Tick labels of the panel titled `title` as (value, pixel): along x (under
    /// the panel) and along y (right-aligned left of the axis, x < 87). A panel's
    /// texts run from its title (at x = 10) to the next panel's.
    fn ticks(&self, title: &str) -> (Ticks, Ticks) {
        let at = self.texts.iter().position(|t| t.2 == title).expect(title);
        let (mut xs, mut ys) = (Vec::new(), Vec::new());
        for (x, y, text) in self.texts[at + 1..].iter().take_while(|t| t.0 != 10.0) {
            if let Ok(v) = text.parse::<f64>() {
                if *x < 87.0 {
                    ys.push((v, *y));
                } else {
                    xs.push((v, *x));
                }
            }
        }
        (xs, ys)
    }

    /// The first data line (the throughput panel's) drawn in this style.
    fn series(&self, stroke: &str, width: &str) -> &Polyline {
        self.lines
            .iter()
            .find(|l| l.stroke == stroke && l.width == width && l.points[0].0 < 900.0)
            .unwrap_or_else(|| panic!("no series drawn in {stroke} width {width}"))
    }
}

/// Plots, renders the SVG to PNG with rsvg-convert, and returns the SVG read back.
fn plot_and_render(inputs: &[String], extra: &[&str]) -> Option<Svg> {
    if !require_tool("rsvg-convert") {
        return None;
    }
    let svg = scratch_file("plot.svg");
    let png = scratch_file("plot.png");
    let mut args = vec!["plot".to_string()];
    args.extend(inputs.iter().cloned());
    args.extend(["-o".to_string(), svg.display().to_string()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let out = run_client(&args, TIMEOUT);
    out.assert_ok();
    assert_eq!(out.stdout, "");
    let svg_path = svg.display().to_string();
    let png_path = png.display().to_string();
    run_program(
        "rsvg-convert",
        &["-f", "png", "-o", &png_path, &svg_path],
        TIMEOUT,
    )
    .assert_ok();
    let parsed = read_svg(&svg);
    // The renderer drew the whole canvas: the PNG's IHDR has the SVG's size.
    let bytes = std::fs::read(&png).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    assert_eq!((be(16), be(20)), parsed.size);
    Some(parsed)
}

/// An axis's tick labels as (value, pixel).
type Ticks = Vec<(f64, f64)>;

/// The value at pixel `at` on an axis with these ticks (linear, from the two
/// outermost), and how much value one pixel is.
fn from_pixel(ticks: &[(f64, f64)], at: f64) -> (f64, f64) {
    let (v0, p0) = ticks[0];
    let (v1, p1) = ticks[ticks.len() - 1];
    let per_pixel = (v1 - v0) / (p1 - p0);
    (v0 + (at - p0) * per_pixel, per_pixel.abs())
}

/// The document's interval count (non-omitted), for the series' lengths.
fn intervals(path: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    if path.ends_with(".jsonl") {
        text.lines()
            .filter(|l| l.starts_with("{\"event\":\"interval\""))
            .count()
    } else {
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["intervals"].as_array().unwrap().len()
    }
}

#[test]
fn tcp_parallel_plot_has_each_stream_and_the_sum() {
    let input = fixture("tcp_P2.client.json");
    let Some(svg) = plot_and_render(std::slice::from_ref(&input), &[]) else {
        return;
    };
    let legend = svg.legend();
    let names: Vec<&str> = legend.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(names, ["stream 1", "stream 2", "sum"]);
    let n = intervals(&input);
    let series: Vec<&Polyline> = legend.iter().map(|(_, s, w)| svg.series(s, w)).collect();
    for s in &series {
        assert_eq!(s.points.len(), n, "{s:?}");
    }
    // Each stream's colour differs; the sum lies above both (SVG y grows down).
    assert_ne!(series[0].stroke, series[1].stroke);
    for i in 0..n {
        assert!(series[2].points[i].1 < series[0].points[i].1.min(series[1].points[i].1));
    }
    // Read back through the axes' tick labels, every point is the document's
    // own rate in Gbit/s at the middle of its interval (to the pixel it was
    // rounded to, as were the ticks).
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&input).unwrap()).unwrap();
    let (xs, ys) = svg.ticks("Throughput (Gbit/s)");
    for (k, iv) in doc["intervals"].as_array().unwrap().iter().enumerate() {
        let rows = [&iv["streams"][0], &iv["streams"][1], &iv["sum"]];
        for (row, line) in rows.iter().zip(&series) {
            let f = |key: &str| row[key].as_f64().unwrap();
            let (t, gbps) = ((f("start") + f("end")) / 2.0, f("bits_per_second") / 1e9);
            let (x, x_px) = from_pixel(&xs, line.points[k].0);
            let (y, y_px) = from_pixel(&ys, line.points[k].1);
            assert!((x - t).abs() <= 1.5 * x_px, "interval {k}: x {x} for {t}");
            assert!(
                (y - gbps).abs() <= 1.5 * y_px,
                "interval {k}: {y} Gbit/s for {gbps}"
            );
        }
    }
    for t in [
        "Throughput (Gbit/s)",
        "Retransmits",
        "RTT (ms)",
        "Time (s)",
        "tcp_P2.client.json",
    ] {
        assert!(svg.has_text(t), "{t}");
    }
    assert!(
        svg.texts.iter().any(|t| t.2.starts_with("Cwnd (")),
        "cwnd axis"
    );
}

#[test]
fn udp_plot_has_loss_and_jitter() {
    let input = fixture("udp.server.json");
    let Some(svg) = plot_and_render(std::slice::from_ref(&input), &["--title", "UDP <10M>"]) else {
        return;
    };
    for t in [
        "UDP <10M>",
        "Throughput (Mbit/s)",
        "Loss (%)",
        "Jitter (ms)",
        "Time (s)",
    ] {
        assert!(svg.has_text(t), "{t}");
    }
    assert!(!svg.has_text("RTT (ms)"));
    let legend = svg.legend();
    assert_eq!(legend.len(), 1);
    assert_eq!(legend[0].0, "stream 1");
    // The stream's line in each of the three panels.
    let drawn = svg
        .lines
        .iter()
        .filter(|l| l.stroke == legend[0].1 && l.points.len() > 2);
    assert_eq!(drawn.count(), 3);
}

#[test]
fn json_stream_plot_matches_its_intervals() {
    let input = fixture("tcp_json_stream.client.jsonl");
    let Some(svg) = plot_and_render(std::slice::from_ref(&input), &[]) else {
        return;
    };
    let legend = svg.legend();
    assert_eq!(legend.len(), 1, "one stream: its sum is the stream");
    assert_eq!(
        svg.series(&legend[0].1, &legend[0].2).points.len(),
        intervals(&input)
    );
}

#[test]
fn compare_runs_one_line_each() {
    let inputs = [
        fixture("tcp_P2.client.json"),
        iperf_fixture("tcp.client.json"),
    ];
    let Some(svg) = plot_and_render(&inputs, &[]) else {
        return;
    };
    let legend = svg.legend();
    let names: Vec<&str> = legend.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(names, ["tcp_P2.client.json", "tcp.client.json"]);
    assert_ne!(legend[0].1, legend[1].1);
    assert!(svg.has_text("2 runs compared"));
}

#[test]
fn live_parallel_run_plots() {
    if !require_tool("rsvg-convert") {
        return;
    }
    let srv = Server::start(&["-1"]);
    let out = srv.client(&["-t", "2", "-P", "3", "-R", "-J"]);
    out.assert_ok();
    let json = scratch_file("live.json");
    std::fs::write(&json, &out.stdout).unwrap();
    let path = json.display().to_string();
    let Some(svg) = plot_and_render(std::slice::from_ref(&path), &[]) else {
        return;
    };
    let names: Vec<String> = svg.legend().into_iter().map(|l| l.0).collect();
    assert_eq!(names, ["stream 1", "stream 2", "stream 3", "sum"]);
    assert!(svg
        .texts
        .iter()
        .any(|t| t.2.contains("3 streams, reverse, client to 127.0.0.1")));
}

fn plot_fails(args: &[&str], expected: &str) {
    let out = run_client(args, TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(out.stderr.contains(expected), "wanted {expected:?}:\n{out}");
    assert!(!out.stderr.contains("panicked"), "{out}");
}

#[test]
fn broken_input_fails_with_a_message() {
    let svg = scratch_file("never.svg");
    let o = svg.display().to_string();
    plot_fails(
        &["plot", "/nonexistent/run.json", "-o", &o],
        "rperf3: plot: /nonexistent/run.json: No such file or directory",
    );
    let full = std::fs::read_to_string(fixture("tcp_P2.client.json")).unwrap();
    let cut = scratch_file("cut.json");
    std::fs::write(&cut, &full[..full.len() / 2]).unwrap();
    let c = cut.display().to_string();
    plot_fails(
        &["plot", &c, "-o", &o],
        &format!("{c}: the JSON ends early (truncated at line"),
    );
    let bad = scratch_file("bad.json");
    std::fs::write(&bad, "{\"start\": nope}").unwrap();
    let b = bad.display().to_string();
    plot_fails(
        &["plot", &b, "-o", &o],
        "malformed JSON at line 1, column 12: expected ident",
    );
    let busy = iperf_fixture("error_server_busy.client.json");
    plot_fails(
        &["plot", &busy, "-o", &o],
        "the run failed: the server is busy running a test. try again later",
    );
    // A good file and a bad one: nothing is written.
    let good = fixture("udp.server.json");
    plot_fails(&["plot", &good, &c, "-o", &o], "truncated");
    assert!(!PathBuf::from(&o).exists());
    plot_fails(&["plot"], "rperf3: plot: no input file");
    plot_fails(
        &["plot", "--bogus", &good],
        "rperf3: plot: unknown option '--bogus'",
    );
}

#[test]
fn plot_is_a_command_only_as_the_first_argument() {
    // Elsewhere it is an operand of iperf3's command line: -v still decides.
    let out = run_client(&["-v", "plot"], TIMEOUT);
    out.assert_ok();
    assert!(out.stdout.starts_with("rperf3 "), "{out}");
    let help = run_client(&["plot", "--help"], TIMEOUT);
    help.assert_ok();
    assert!(help
        .stdout
        .starts_with("Usage: rperf3 plot [options] RUN.json"));
}
