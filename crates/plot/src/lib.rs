//! SVG plots of test runs from iperf3-compatible `-J` and `--json-stream` output.
//!
//! People graph iperf3 results by hand; `rperf3 plot` draws them from the JSON
//! any iperf3 or rperf3 run already writes. [`extract`] turns JSON into a
//! [`model::Run`] (pure and unit-tested), [`render_svg`] draws runs: throughput
//! per stream and summed on top, then TCP retransmits, congestion window and RTT,
//! or UDP loss and jitter; with rperf3's `--latency` and `--bounceback`, their
//! round trips and the data's one-way delays below.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod extract;
pub mod model;
mod panels;
mod panels_delays;
mod render;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_delays;

pub use extract::parse_runs;
pub use render::render_svg;

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
    /// The drawing library failed.
    #[error("cannot draw the plot: {0}")]
    Draw(String),
}
