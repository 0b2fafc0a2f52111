//! Result model and iperf3-compatible output: text, `-J` JSON and `--json-stream`.
//!
//! Drivers feed a [`Reporter`] the raw figures of a test ([`input`]); the
//! builders combine them into the result model ([`model`]) with iperf3's rules,
//! and the formatters print that model as iperf3 text or cJSON-style JSON.
//! The text reaches its destination through a [`queue`], so a reader that
//! stops reading never holds a test.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod bounceback;
mod cfmt;
pub mod cjson;
pub mod end;
mod history;
pub mod input;
pub mod interval;
pub mod iperf2;
mod latency;
pub mod model;
pub mod queue;
mod reporter;
pub mod rpm;
mod sink;
pub mod start;
pub mod text;
pub mod units;

#[cfg(test)]
mod golden_bounceback;
#[cfg(test)]
mod golden_data_owd;
#[cfg(test)]
mod golden_json;
#[cfg(test)]
mod golden_latency;
#[cfg(test)]
mod golden_replay;
#[cfg(test)]
mod golden_summary;
#[cfg(test)]
mod golden_text;
#[cfg(test)]
mod golden_text_udp;
#[cfg(test)]
mod testutil;

pub use reporter::{ReportOptions, Reporter, ServerOutput};
pub use sink::TimestampFn;
