//! The iperf3 wire protocol without sockets or clocks.
//!
//! Everything here is a pure function or a state machine fed with bytes and times by
//! its caller, so the protocol can be tested byte for byte against captures of real
//! iperf3 traffic without a network: control framing and state codes, the cookie,
//! the parameters and results documents, iperf3's numbered errors and their texts,
//! the UDP datagram header and handshake, the UDP receiver statistics, the
//! authentication token and users file, and the client and server
//! control-connection machines.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod auth;
pub mod bounceback;
mod client_machine;
pub mod constants;
mod cookie;
mod deadline;
mod error;
mod error_codes;
mod framing;
#[cfg(test)]
mod json_gen;
mod json_num;
mod msg;
mod params;
mod params_check;
pub mod probe;
mod results;
mod server_machine;
pub mod tcp_stamp;
mod transmit;
mod udp;
mod udp_stats;

pub use client_machine::{ClientEvent, ClientMachine, ClientPhase};
pub use constants::*;
pub use cookie::{
    cookie_marker, cookie_matches, cookie_str, make_cookie, marked_cookie, COOKIE_ALPHABET,
    COOKIE_LEN,
};
pub use deadline::PhaseLimits;
pub use error::{server_error_bytes, strerror, IperfError, CLIENT_CLOSED};
pub use error_codes::*;
pub use framing::{encode_json, ControlDecoder, Expect, FramingError, Unit};
pub use msg::Msg;
pub use params::{Direction, LatencyOffer, Protocol, TestParams};
pub use params_check::ServerLimits;
pub use results::{StreamResult, TestResults};
pub use server_machine::{ServerEvent, ServerMachine, ServerPhase, ACCESS_DENIED_BYTES};
pub use transmit::Transmit;
pub use udp::{
    is_connect_reply, UdpHeader, UDP_CONNECT_MSG, UDP_CONNECT_REPLY, UDP_CONNECT_REPLY_LEGACY,
    UDP_CONNECT_REPLY_LEGACY_SWAPPED, UDP_HEADER_LEN_32, UDP_HEADER_LEN_64,
};
pub use udp_stats::UdpRecvStats;
