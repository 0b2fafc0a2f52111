//! Client and server drivers: protocol, engine and report tied together.
//!
//! The binary hands over a validated [`config::Config`], a reporter factory and the
//! signal pipe; the drivers return the process outcome.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod auth;
mod client;
pub mod config;
mod exclusive;
mod interrupt;
pub mod iperf2;
mod latency;
mod measurement;
pub mod rpm;
mod server;

pub use auth::{ClientAuth, ServerAuth};
pub use client::run as run_client;
pub use exclusive::{Exclusive, Held};
pub use interrupt::Interrupt;
pub use measurement::setup::{client_params, version_string};
/// The trait an embedder's metrics implement ([`ServeHooks::extra_metrics`]).
pub use prometheus_client::collector::Collector;
pub use server::{serve, serve_with, Answer, ServeHooks, SideService, StartSide, TestGate};

use rperf3_proto::IperfError;
use rperf3_report::Reporter;

/// How the process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The exit status.
    pub status: i32,
}

impl Outcome {
    /// Reports `err` (if any), flushes the report, and picks the exit status.
    pub fn finish(rep: &mut Reporter, err: Option<IperfError>) -> Self {
        let status = match &err {
            Some(e) => {
                rep.error(&e.text());
                1
            }
            None => 0,
        };
        let _ = rep.finish();
        Self { status }
    }

    /// A run ended by SIGINT/SIGTERM/SIGHUP: "interrupt - <text>", exit 0 as
    /// iperf3 3.19 and later.
    pub fn interrupted(rep: &mut Reporter, code: i32) -> Self {
        rep.interrupted(&IperfError::new(code).text());
        let _ = rep.finish();
        Self { status: 0 }
    }
}
