//! The iperf 2 wire protocol (2.1.8 and 2.2.1) without sockets or clocks.
//!
//! iperf 2 carries its whole test request in-band: the first bytes of each TCP
//! stream, or the first bytes of every UDP datagram. This crate holds those
//! formats as pure functions over bytes, and the wall-clock times its checks
//! need come from the caller: the flag words, the TCP test header in both
//! versions' layouts, the header ack, the UDP datagram and test headers (full
//! and small trip-times), the FIN sequence numbers, the UDP server report, the
//! TCP bounceback and burst headers, the isochronous frame schedule, and the decoding of a connection's or flow's first bytes into a typed
//! [`TestRequest`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod ack;
mod base;
mod bounceback;
mod burst;
mod error;
mod fields;
mod flags;
mod flow;
mod isoch;
mod request;
mod request_encode;
mod server_report;
mod session;
mod tcp_header;
mod udp_datagram;
mod udp_header;
mod udp_stats;

#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod tcp_header_tests;
#[cfg(test)]
mod udp_tests;

pub use ack::{ack_expected, AckTimes, HeaderAck, ACK_LEN, ACK_LEN_TIMES, ACK_TYPE};
pub use base::{BaseHeader, BASE_LEN, V1_LEN};
pub use bounceback::{stamp_reply, BbFlags, BouncebackHeader, BOUNCEBACK_MIN_REQUEST};
pub use burst::{BurstHeader, BURST_HEADER_LEN};
pub use error::{EncodeError, HeaderError};
pub use fields::{
    rate_from_words, rate_to_words, Amount, IsochSettings, StatPair, Timeval, Version, MAX_RATE,
    VERSION_2_1_8, VERSION_2_2_1,
};
pub use flags::{BaseFlags, LowerFlags, UpperFlags};
pub use flow::{
    ClientClock, FinExchange, FlowStep, FlowTerms, ReportReplies, ServerFlow, IDLE_END,
    LATE_FIN_GRACE, NO_FIN_GRACE, REPORT_SENDS, REPORT_SILENCE, RX_GRACE,
};
pub use isoch::{FrameClock, FrameSizes, FrameTally, IsochSpec};
pub use request::{
    classify_tcp, classify_udp, Mode, RequestLimits, TcpStart, TestEnd, TestRequest, Transport,
    UdpStart, TRIP_TIMES_MAX_SKEW_S, TXSTART_MAX_SKEW_S,
};
pub use request_encode::{udp_rate_on_wire, UdpRate};
pub use server_report::{ServerReport, TransitStats, SERVER_REPORT_LEN};
pub use session::{Directions, SessionClock, SessionStep, PACED_GRACE};
pub use tcp_header::{tcp_header_len, Decoded, Layout, StartBlock, TcpTestHeader, MAX_PERMIT_KEY};
pub use udp_datagram::{
    fin_seq, next_fin_seq, DatagramHeader, DATAGRAM_HEADER_LEN, FIN_MAX_SENDS, FIN_RETRY_WAIT,
};
pub use udp_header::{
    udp_layout_of_len, IsochFrame, SmallTripTimes, UdpTestHeader, SMALL_TT_MARKER, UDP_PATTERN_OFF,
};
pub use udp_stats::{Counted, Udp2Stats};
