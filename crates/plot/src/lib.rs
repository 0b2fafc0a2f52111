//! SVG plots of test runs from iperf3-compatible `-J` and `--json-stream` output.
//!
//! People graph iperf3 results by hand; `rperf3 plot` draws them from the JSON
//! any iperf3 or rperf3 run already writes. [`extract`] turns JSON into a
//! [`model::Run`] (pure and unit-tested), [`render_svg`] draws runs: throughput
//! per stream and summed on top, then TCP retransmits, congestion window and RTT,
//! or UDP loss and jitter; with rperf3's `--latency` and `--bounceback`, their
//! round trips and the data's one-way delays below.
//!
//! The JSON lines of `rperf3 mesh -J` (one test of a pair per line) draw as a
//! mesh instead: [`mesh_model`] turns them into a source × destination matrix
//! of each pair's latest test (pure and unit-tested), [`render_mesh_svg`]
//! draws throughput, loaded latency and UDP loss as heat maps. [`parse_file`]
//! tells the two kinds of file apart.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod extract;
pub mod mesh_model;
mod mesh_render;
mod mesh_scale;
pub mod model;
mod panel;
mod panels;
mod panels_delays;
mod render;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_delays;
#[cfg(test)]
mod tests_mesh;

pub use extract::parse_runs;
pub use mesh_model::{parse_mesh, Mesh, MeshTest};
pub use mesh_render::render_mesh_svg;
pub use render::render_svg;

/// What one file holds: a file is either iperf3 runs or mesh lines.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// iperf3 or rperf3 `-J` documents or a `--json-stream`.
    Runs(Vec<model::Run>),
    /// `rperf3 mesh -J` lines.
    Mesh(Vec<MeshTest>),
}

impl Input {
    /// What the file holds, as messages name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Runs(_) => "iperf3 runs",
            Self::Mesh(_) => "mesh lines",
        }
    }
}

/// Reads one file's text: mesh lines when its first line is one
/// ([`mesh_model::is_mesh`]), else iperf3 runs ([`parse_runs`], `label`
/// naming them).
pub fn parse_file(label: &str, text: &str) -> Result<Input, PlotError> {
    if mesh_model::is_mesh(text) {
        parse_mesh(text).map(Input::Mesh)
    } else {
        parse_runs(label, text).map(Input::Runs)
    }
}

/// Why a file cannot be plotted. The binary prefixes the file's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlotError {
    /// The file holds nothing.
    #[error("the file is empty")]
    Empty,
    /// The JSON stops in the middle of a value.
    #[error("the JSON ends early (truncated at line {line}, column {column})")]
    Truncated {
        /// 1-based line of the end.
        line: usize,
        /// 1-based column of the end.
        column: usize,
    },
    /// Not JSON.
    #[error("malformed JSON at line {line}, column {column}: {msg}")]
    Malformed {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The parser's complaint.
        msg: String,
    },
    /// JSON, but not an iperf3 report.
    #[error("not an iperf3 JSON report (no \"intervals\")")]
    NotAReport,
    /// The run failed before its first interval; the document's `"error"`.
    #[error("the run failed: {0}")]
    RunFailed(String),
    /// A report without intervals.
    #[error("no intervals to plot (a run with -i 0 reports none)")]
    NoIntervals,
    /// A line of a mesh file that is JSON but not a mesh test.
    #[error("line {line}: {msg}")]
    MeshLine {
        /// 1-based line.
        line: usize,
        /// What is wrong with it.
        msg: String,
    },
    /// Files of both kinds in one plot.
    #[error("it holds {kind}, but {other_file} holds {other_kind}: plot each kind on its own")]
    Mixed {
        /// What this file holds.
        kind: &'static str,
        /// An earlier file of the other kind.
        other_file: String,
        /// What that one holds.
        other_kind: &'static str,
    },
    /// The drawing library failed.
    #[error("cannot draw the plot: {0}")]
    Draw(String),
}
