//! Result model and iperf3-compatible output: text, `-J` JSON and `--json-stream`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod input;
