//! Which panels a plot has and which lines each holds, in plot units.
//!
//! One run shows every stream and the sum; several runs show each run's sum (and
//! the mean of its streams where a sum means nothing, cwnd and RTT), one colour
//! per run, so runs compare at a glance. Kept apart from the drawing so the
//! choice of lines is testable without parsing SVG.

use crate::model::{Points, Protocol, Run, Series};
use crate::panel::{Line, Panel, PALETTE};

const BLACK: (u8, u8, u8) = (0, 0, 0);
const GREY: (u8, u8, u8) = (170, 170, 170);

/// Above this many streams, one run's streams are drawn thin and grey with one
/// legend entry: a legend of 100 colours helps nobody.
const MAX_NAMED_STREAMS: usize = 8;

#[derive(Clone, Copy)]
enum Figure {
    Throughput,
    Retransmits,
    Cwnd,
    Rtt,
    Loss,
    Jitter,
}

impl Figure {
    fn of(self, s: &Series) -> &Points {
        match self {
            Self::Throughput => &s.throughput,
            Self::Retransmits => &s.retransmits,
            Self::Cwnd => &s.cwnd,
            Self::Rtt => &s.rtt_ms,
            Self::Loss => &s.lost_percent,
            Self::Jitter => &s.jitter_ms,
        }
    }

    /// Whether the sum of a direction means something for this figure.
    fn has_sum(self) -> bool {
        !matches!(self, Self::Cwnd | Self::Rtt)
    }
}

/// The mean of the streams' values, interval by interval.
fn mean(streams: &[&Points]) -> Points {
    let n = streams.iter().map(|p| p.len()).min().unwrap_or(0);
    (0..n)
        .map(|i| {
            let t = streams.iter().map(|p| p[i].0).sum::<f64>() / streams.len() as f64;
            let v = streams.iter().map(|p| p[i].1).sum::<f64>() / streams.len() as f64;
            (t, v)
        })
        .collect()
}

fn single_run_lines(run: &Run, fig: Figure) -> Vec<Line> {
    let mut lines = Vec::new();
    let many = run.streams.len() > MAX_NAMED_STREAMS;
    for (i, s) in run.streams.iter().enumerate() {
        let points = fig.of(s);
        if points.is_empty() {
            continue;
        }
        let name = if !many {
            Some(s.name.clone())
        } else if i == 0 {
            Some(format!("streams 1-{}", run.streams.len()))
        } else {
            None
        };
        lines.push(Line {
            name,
            color: if many {
                GREY
            } else {
                PALETTE[i % PALETTE.len()]
            },
            width: if many { 1 } else { 2 },
            dashed: false,
            points: points.clone(),
        });
    }
    if fig.has_sum() {
        for s in &run.sums {
            // A direction of one stream: its sum is that stream (iperf3 prints no
            // SUM line either), and would hide it.
            let alone = run.streams.iter().filter(|t| t.sends == s.sends).count() == 1;
            if !alone && !fig.of(s).is_empty() {
                lines.push(Line {
                    name: Some(s.name.clone()),
                    color: BLACK,
                    width: 3,
                    dashed: !s.sends && run.sums.len() > 1,
                    points: fig.of(s).clone(),
                });
            }
        }
    }
    lines
}

fn compare_lines(runs: &[Run], fig: Figure) -> Vec<Line> {
    let mut lines = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let bidir = run.sums.len() > 1;
        for sends in [true, false] {
            let direction = match (bidir, sends) {
                (false, _) => "",
                (true, true) => " (send)",
                (true, false) => " (receive)",
            };
            let points = if fig.has_sum() {
                let Some(s) = run.sums.iter().find(|s| s.sends == sends) else {
                    continue;
                };
                fig.of(s).clone()
            } else {
                let ps: Vec<&Points> = run
                    .streams
                    .iter()
                    .filter(|s| s.sends == sends)
                    .map(|s| fig.of(s))
                    .filter(|p| !p.is_empty())
                    .collect();
                if ps.is_empty() {
                    continue;
                }
                mean(&ps)
            };
            if points.is_empty() {
                continue;
            }
            lines.push(Line {
                name: Some(format!("{}{direction}", run.label)),
                color,
                width: 3,
                dashed: bidir && !sends,
                points,
            });
        }
    }
    lines
}

fn max_of(lines: &[Line]) -> f64 {
    lines
        .iter()
        .flat_map(|l| &l.points)
        .map(|p| p.1)
        .fold(0.0, f64::max)
}

/// A unit for values up to `max`: the divisor and its name.
fn unit(max: f64, base: f64, names: &[&'static str]) -> (f64, &'static str) {
    let mut div = 1.0;
    let mut i = 0;
    while i + 1 < names.len() && max >= div * base {
        div *= base;
        i += 1;
    }
    (div, names[i])
}

const SENDER_NOTE: &str =
    "no sender figures here: plot the sending side's JSON, or use --get-server-output";
const RECEIVER_NOTE: &str =
    "no receiver figures here: plot the receiving side's JSON, or use --get-server-output";

/// The panels for these runs, top to bottom.
pub(crate) fn panels(runs: &[Run]) -> Vec<Panel> {
    let lines = |fig: Figure| match runs {
        [one] => single_run_lines(one, fig),
        _ => compare_lines(runs, fig),
    };
    let panel = |fig: Figure, weight: u32| {
        let lines = lines(fig);
        let max = max_of(&lines);
        let (divisor, y_desc, note) = match fig {
            Figure::Throughput => {
                let (d, u) = unit(
                    max,
                    1000.0,
                    &["bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"],
                );
                (d, format!("Throughput ({u})"), "")
            }
            Figure::Retransmits => (1.0, "Retransmits".into(), SENDER_NOTE),
            Figure::Cwnd => {
                let (d, u) = unit(max, 1024.0, &["bytes", "KiB", "MiB", "GiB"]);
                (d, format!("Cwnd ({u})"), SENDER_NOTE)
            }
            Figure::Rtt => (1.0, "RTT (ms)".into(), SENDER_NOTE),
            Figure::Loss => (1.0, "Loss (%)".into(), RECEIVER_NOTE),
            Figure::Jitter => (1.0, "Jitter (ms)".into(), RECEIVER_NOTE),
        };
        Panel {
            y_desc,
            divisor,
            lines,
            empty_note: note,
            weight,
            integer: matches!(fig, Figure::Retransmits),
        }
    };
    let mut out = vec![panel(Figure::Throughput, 2)];
    if runs.iter().any(|r| r.protocol != Protocol::Udp) {
        out.extend([Figure::Retransmits, Figure::Cwnd, Figure::Rtt].map(|f| panel(f, 1)));
    }
    if runs.iter().any(|r| r.protocol == Protocol::Udp) {
        out.extend([Figure::Loss, Figure::Jitter].map(|f| panel(f, 1)));
    }
    if runs.iter().any(|r| r.latency.is_some()) {
        out.push(latency_panel(runs));
    }
    if runs.iter().any(|r| r.data_one_way.is_some()) {
        out.push(crate::panels_delays::data_one_way_panel(runs));
    }
    if runs.iter().any(|r| r.bounceback.is_some()) {
        out.push(crate::panels_delays::bounceback_panel(runs));
    }
    out
}

const LATENCY_NOTE: &str = "no latency figures here: run the client with --latency";

/// Loaded round trips (p50 and p99) per interval, the idle median as a flat
/// reference line across the run. Several runs: one colour each, p99 thinner.
fn latency_panel(runs: &[Run]) -> Panel {
    let single = runs.len() == 1;
    let mut lines = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(l) = &run.latency else { continue };
        let (prefix, p50_color, p99_color) = if single {
            (String::new(), PALETTE[0], PALETTE[3])
        } else {
            let c = PALETTE[i % PALETTE.len()];
            (format!("{} ", run.label), c, c)
        };
        let mut add = |name: &str, color, width, dashed, points: &Points| {
            if !points.is_empty() {
                lines.push(Line {
                    name: Some(format!("{prefix}{name}")),
                    color,
                    width,
                    dashed,
                    points: points.clone(),
                });
            }
        };
        add("loaded p50", p50_color, 3, false, &l.p50_ms);
        add(
            "loaded p99",
            p99_color,
            if single { 2 } else { 1 },
            false,
            &l.p99_ms,
        );
        if let Some(idle) = l.idle_p50_ms {
            let color = if single { GREY } else { p50_color };
            add(
                "idle p50",
                color,
                2,
                true,
                &vec![(0.0, idle), (run.end_secs, idle)],
            );
        }
    }
    Panel {
        y_desc: "Round trip (ms)".into(),
        divisor: 1.0,
        lines,
        empty_note: LATENCY_NOTE,
        weight: 1,
        integer: false,
    }
}

/// Legend entries of all panels, first occurrence of each name, in order.
pub(crate) fn legend(panels: &[Panel]) -> Vec<&Line> {
    let mut seen: Vec<&Line> = Vec::new();
    for l in panels.iter().flat_map(|p| &p.lines) {
        if let Some(n) = &l.name {
            if !seen.iter().any(|s| s.name.as_ref() == Some(n)) {
                seen.push(l);
            }
        }
    }
    seen
}
