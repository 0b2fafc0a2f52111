//! The fleet mesh's decisions, without sockets or clocks: who tests whom and
//! when (a round-robin tournament in time slots every agent computes alike from
//! the membership it sees), what a peers file says, what one test's record
//! holds, and the per-pair Prometheus series an agent keeps.
//!
//! The agent (`rperf3 mesh`) does the I/O: discovery, the server, the tests;
//! it asks this crate what to do and hands it what happened.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod peers;
pub mod record;
pub mod schedule;
pub mod series;

pub use peers::{parse_peers, Member, PeersError};
pub use record::{Outcome, TestRecord};
pub use schedule::{CyclePlan, Mode, Timing};
pub use series::Series;
