//! The `rperf3` binary: argv, signals, exit codes.
#![forbid(unsafe_code)]

mod cli;

fn main() {}
