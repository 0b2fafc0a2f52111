//! The iperf 2 personality's client and server: iperf 2's in-band test header
//! (`rperf3-proto2`), the shared engine's workers, and iperf 2's reports
//! (`rperf3_report::iperf2`).

mod client_header;
pub mod config;
mod connect_back;
mod flow_stats;
mod interval;
mod tcp_bounceback;
mod tcp_bursts;
mod tcp_client;
mod tcp_connect_only;
mod tcp_io;
mod tcp_isoch;
mod tcp_server;
#[cfg(test)]
mod tcp_server_tests;
mod tcp_session;
mod tcp_setup;
mod tcp_shared;
#[cfg(test)]
mod tcp_tests;
mod tcp_trip;
mod tcp_wtimer;
mod workers;

use std::sync::Arc;

use rperf3_report::iperf2::Report2;

use crate::Interrupt;
use config::{Config2, Role2, Transport2};

// The UDP client and server (apart from the TCP ones, so that each side's
// modules are listed on their own).
mod udp_back;
mod udp_client;
mod udp_common;
mod udp_flow;
mod udp_group;
mod udp_isoch;
mod udp_jitter;
mod udp_send;
mod udp_server;
#[cfg(test)]
mod udp_tests;
mod udp_wire;

/// What 2.2.1's server says when a signal finds tests running (each then
/// ends at once with its final row; a UDP flow sends its client the report
/// of what arrived).
const WAITING: &str = "Waiting for server threads to complete. Interrupt again to force quit.";

/// How an iperf 2 run ends: iperf 2's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome2 {
    /// The exit status.
    pub status: i32,
}

/// Runs the configured client or server; events go to `report`, which prints
/// them in iperf 2's layouts.
pub fn run(cfg: &Config2, report: Arc<dyn Report2>, intr: Interrupt) -> Outcome2 {
    match (&cfg.role, cfg.common.transport) {
        (Role2::Client(_), Transport2::Tcp) => tcp_client(cfg, report, intr),
        (Role2::Client(_), Transport2::Udp) => udp_client(cfg, report, intr),
        (Role2::Server(_), Transport2::Tcp) => tcp_server(cfg, report, intr),
        (Role2::Server(_), Transport2::Udp) => udp_server(cfg, report, intr),
    }
}

fn unbuilt(report: &dyn Report2) -> Outcome2 {
    report.event(rperf3_report::iperf2::model::Event2::Message(
        "ERROR: not supported yet".into(),
    ));
    Outcome2 { status: 1 }
}

fn tcp_client(cfg: &Config2, report: Arc<dyn Report2>, intr: Interrupt) -> Outcome2 {
    tcp_client::run(cfg, report, intr)
}

fn udp_client(cfg: &Config2, report: Arc<dyn Report2>, intr: Interrupt) -> Outcome2 {
    match &cfg.role {
        Role2::Client(c) => udp_client::run(cfg, c, report, intr),
        Role2::Server(_) => unbuilt(&*report),
    }
}

fn tcp_server(cfg: &Config2, report: Arc<dyn Report2>, intr: Interrupt) -> Outcome2 {
    tcp_server::run(cfg, report, intr)
}

fn udp_server(cfg: &Config2, report: Arc<dyn Report2>, intr: Interrupt) -> Outcome2 {
    match &cfg.role {
        Role2::Server(s) => udp_server::run(cfg, s, report, intr),
        Role2::Client(_) => unbuilt(&*report),
    }
}
