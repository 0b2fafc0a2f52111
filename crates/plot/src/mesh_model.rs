//! `rperf3 mesh -J` lines in, a source × destination matrix out: no files, no
//! drawing, so the choice of what each cell shows is unit-tested.
//!
//! A mesh agent writes one JSON object per test, and a fleet's lines are
//! usually concatenated (several agents, several cycles, several files). What
//! a reader wants to see is the state of each ordered pair now, so a cell holds
//! the pair's latest test (by `"end"`): its figures when it was measured
//! (`ok`, or `not_rperf3`, which still has figures), else its outcome. The
//! worst pairs are ranked here too, so the list under the drawing and the cells
//! it outlines come from one rule.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::PlotError;

/// One line of `rperf3 mesh -J`: one test of an ordered pair, with the figures
/// a mesh plot shows (the line has more).
#[derive(Debug, Clone, PartialEq)]
pub struct MeshTest {
    /// The agent that ran the client.
    pub source: String,
    /// The agent it tested.
    pub destination: String,
    /// Unix time the test ended, seconds; minus infinity when the line has
    /// none (older than any line that has one).
    pub end: f64,
    /// `ok`, `not_rperf3`, `unreachable`, `busy`, …, as the line says it.
    pub outcome: String,
    /// The error text of a test that failed or did not run.
    pub error: Option<String>,
    /// The schedule's cycle, when the line has one.
    pub cycle: Option<u64>,
    /// `"protocol": "udp"`.
    pub udp: bool,
    /// Bits per second as the receiver counted them.
    pub throughput_bps: Option<f64>,
    /// Median round trip under load, `latency.loaded.p50_ms`.
    pub loaded_p50_ms: Option<f64>,
    /// UDP: datagrams lost, percent.
    pub lost_percent: Option<f64>,
    /// TCP: segments the source retransmitted.
    pub retransmits: Option<f64>,
}

impl MeshTest {
    /// Whether the test ran, so its figures mean something.
    pub fn measured(&self) -> bool {
        matches!(self.outcome.as_str(), "ok" | "not_rperf3")
    }
}

/// A figure a matrix shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Bits per second: low is bad.
    Throughput,
    /// Loaded round trip p50, ms: high is bad.
    Latency,
    /// UDP loss, percent: high is bad.
    Loss,
    /// TCP retransmits: high is bad (a lossy path shows here first).
    Retransmits,
}

impl Metric {
    /// The figure of a measured test, if it has one.
    pub fn of(self, t: &MeshTest) -> Option<f64> {
        if !t.measured() {
            return None;
        }
        let v = match self {
            Self::Throughput => t.throughput_bps,
            Self::Latency => t.loaded_p50_ms,
            Self::Loss => t.lost_percent.filter(|_| t.udp),
            Self::Retransmits => t.retransmits.filter(|_| !t.udp),
        };
        v.filter(|v| v.is_finite())
    }

    /// Whether a higher value is the worse one.
    pub fn higher_is_worse(self) -> bool {
        !matches!(self, Self::Throughput)
    }
}

/// A pair ranked among the worst for a metric.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Row: index of the source in [`Mesh::nodes`].
    pub source: usize,
    /// Column: index of the destination.
    pub destination: usize,
    /// The figure.
    pub value: f64,
}

/// The whole mesh as the plot shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// Every name seen as a source or a destination, sorted: the rows and the
    /// columns alike, so a member that only appears as a destination (one that
    /// never ran, as an unreachable one) still has its row.
    pub nodes: Vec<String>,
    /// The lines read.
    pub tests: usize,
    /// Lowest and highest `"cycle"`.
    pub cycles: Option<(u64, u64)>,
    /// Earliest and latest `"end"`.
    pub ends: Option<(f64, f64)>,
    /// `cells[source][destination]`: the pair's latest test. The diagonal is
    /// always `None` (an agent does not test itself).
    pub cells: Vec<Vec<Option<MeshTest>>>,
}

fn line_error(line: usize, msg: impl Into<String>) -> PlotError {
    PlotError::MeshLine {
        line,
        msg: msg.into(),
    }
}

/// Whether `text` holds mesh lines: its first line is a JSON object with
/// `"source"`, `"destination"` or `"outcome"` and none of an iperf3 document's
/// or event's keys. A line missing some of the three is then an error naming
/// it, rather than "not an iperf3 report".
pub fn is_mesh(text: &str) -> bool {
    let Some(first) = text.lines().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(first) else {
        return false;
    };
    let mesh_key = ["source", "destination", "outcome"]
        .iter()
        .any(|k| o.contains_key(*k));
    let iperf_key = o.contains_key("event") || o.contains_key("intervals");
    mesh_key && !iperf_key
}

fn string(o: &Map<String, Value>, key: &str, line: usize) -> Result<String, PlotError> {
    match o.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(line_error(line, format!("\"{key}\" is not a string"))),
        None => Err(line_error(
            line,
            format!(
                "not a mesh test line: no \"{key}\" (each needs \"source\", \"destination\" and \"outcome\")"
            ),
        )),
    }
}

fn number(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
}

/// Reads every line of `text` (blank lines skipped). Errors name the line,
/// counted from 1 in this text.
pub fn parse_mesh(text: &str) -> Result<Vec<MeshTest>, PlotError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(raw).map_err(|e| crate::extract::json_error(&e, Some(line)))?;
        let Value::Object(o) = v else {
            return Err(line_error(line, "not a mesh test line: not a JSON object"));
        };
        let source = string(&o, "source", line)?;
        let destination = string(&o, "destination", line)?;
        let outcome = string(&o, "outcome", line)?;
        let error = o.get("error").and_then(Value::as_str).map(String::from);
        out.push(MeshTest {
            source,
            destination,
            end: number(o.get("end")).unwrap_or(f64::NEG_INFINITY),
            outcome,
            error,
            cycle: o.get("cycle").and_then(Value::as_u64),
            udp: o.get("protocol").and_then(Value::as_str) == Some("udp"),
            throughput_bps: number(o.get("throughput_bps")),
            loaded_p50_ms: number(o.get("latency").and_then(|l| l.pointer("/loaded/p50_ms"))),
            lost_percent: number(o.get("lost_percent")),
            retransmits: number(o.get("retransmits")),
        });
    }
    if out.is_empty() {
        return Err(PlotError::Empty);
    }
    Ok(out)
}

/// The smallest and largest of some values.
fn span<T: PartialOrd + Copy>(values: impl Iterator<Item = T>) -> Option<(T, T)> {
    values.fold(None, |acc, v| match acc {
        None => Some((v, v)),
        Some((lo, hi)) => Some((if v < lo { v } else { lo }, if v > hi { v } else { hi })),
    })
}

impl Mesh {
    /// The matrix of `tests` (in input order: of two tests of a pair with the
    /// same end, the later line wins).
    pub fn new(tests: &[MeshTest]) -> Self {
        let names: BTreeSet<&str> = tests
            .iter()
            .flat_map(|t| [t.source.as_str(), t.destination.as_str()])
            .collect();
        let nodes: Vec<String> = names.into_iter().map(String::from).collect();
        let index = |name: &str| nodes.binary_search_by(|n| n.as_str().cmp(name)).ok();
        let mut cells: Vec<Vec<Option<MeshTest>>> = vec![vec![None; nodes.len()]; nodes.len()];
        for t in tests {
            let (Some(s), Some(d)) = (index(&t.source), index(&t.destination)) else {
                continue;
            };
            if s == d {
                continue;
            }
            let cell = &mut cells[s][d];
            if cell.as_ref().is_none_or(|old| t.end >= old.end) {
                *cell = Some(t.clone());
            }
        }
        Self {
            cycles: span(tests.iter().filter_map(|t| t.cycle)),
            ends: span(tests.iter().map(|t| t.end).filter(|e| e.is_finite())),
            tests: tests.len(),
            nodes,
            cells,
        }
    }

    /// Every tested pair: `(source, destination, latest test)`, row by row.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, usize, &MeshTest)> {
        self.cells.iter().enumerate().flat_map(|(s, row)| {
            row.iter()
                .enumerate()
                .filter_map(move |(d, c)| c.as_ref().map(|t| (s, d, t)))
        })
    }

    /// Whether any pair's latest measured test used UDP: the plot then adds a
    /// loss matrix.
    pub fn has_udp(&self) -> bool {
        self.pairs().any(|(_, _, t)| t.measured() && t.udp)
    }

    /// Whether any pair's latest measured test used TCP: the plot then adds a
    /// retransmits matrix.
    pub fn has_tcp(&self) -> bool {
        self.pairs().any(|(_, _, t)| t.measured() && !t.udp)
    }

    /// The figures of `metric` of every pair that has one.
    pub fn values(&self, metric: Metric) -> Vec<f64> {
        self.pairs().filter_map(|(_, _, t)| metric.of(t)).collect()
    }

    /// At most `n` pairs with the worst figures of `metric`, worst first (ties
    /// in row order). A loss (or retransmit count) of zero is none, so never
    /// among the worst.
    pub fn worst(&self, metric: Metric, n: usize) -> Vec<Ranked> {
        let mut ranked: Vec<Ranked> = self
            .pairs()
            .filter_map(|(source, destination, t)| {
                let value = metric.of(t)?;
                let counted = matches!(metric, Metric::Loss | Metric::Retransmits);
                (!counted || value > 0.0).then_some(Ranked {
                    source,
                    destination,
                    value,
                })
            })
            .collect();
        ranked.sort_by(|a, b| {
            let order = a.value.total_cmp(&b.value);
            if metric.higher_is_worse() {
                order.reverse()
            } else {
                order
            }
        });
        ranked.truncate(n);
        ranked
    }

    /// The pairs whose latest test was not measured, grouped by outcome (in
    /// order of first appearance, row by row).
    pub fn unmeasured(&self) -> Vec<(String, Vec<(usize, usize)>)> {
        let mut out: Vec<(String, Vec<(usize, usize)>)> = Vec::new();
        for (s, d, t) in self.pairs().filter(|p| !p.2.measured()) {
            match out.iter_mut().find(|(o, _)| *o == t.outcome) {
                Some((_, pairs)) => pairs.push((s, d)),
                None => out.push((t.outcome.clone(), vec![(s, d)])),
            }
        }
        out
    }
}
