//! Stream workers, pacing, counters, end conditions and the TCP and UDP loops
//! both personalities run.
//!
//! Workers only move bytes and bump per-stream counters; they never format or print.
//! The drivers sample the counters at interval ticks. The engine knows no wire
//! format: what a block or datagram carries and what a receiver makes of it
//! are the personalities' adapters, behind the loops' traits (`Blocks`,
//! `SendTally`, `RecvTally`, `Stamp`, the receive batches' closure).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod budget;
pub mod control;
pub mod counters;
pub mod file;
pub mod mux;
pub mod pacing;
pub mod payload;
pub mod readbuf;
pub mod tcp;
pub mod udp;
pub mod worker;
