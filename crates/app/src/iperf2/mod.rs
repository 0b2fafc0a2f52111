//! The iperf 2 personality's client and server: iperf 2's in-band test header
//! (`rperf3-proto2`), the shared engine's workers, and iperf 2's reports
//! (`rperf3_report::iperf2`).

pub mod config;
