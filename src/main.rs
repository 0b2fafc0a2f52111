//! The `rperf3` binary: argv, signals, exit codes.
#![forbid(unsafe_code)]

fn main() {}
