//! Stream workers, pacing, counters and end conditions.
//!
//! Workers only move bytes and bump per-stream counters; they never format or print.
//! The drivers sample the counters at interval ticks.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod budget;
pub mod control;
pub mod counters;
pub mod file;
pub mod pacing;
pub mod payload;
pub mod tcp;
pub mod tcp_owd;
pub mod udp;
pub mod udp_owd;
pub mod worker;
