//! `--latency` in the iperf3 personality: the client's prober and the server's
//! answers on probe connections, around the sans-IO frames of
//! [`rperf3_proto::probe`] and the latency core's [`rperf3_latency::Collector`].
//!
//! Probe connections are TCP connections to the server's port carrying the test's
//! cookie with a marker as its 37th byte; the host routes them to the session
//! ([`crate::server`]), which hands them to [`responder::ProbeHost`]. The client's
//! [`prober::Prober`] owns a thread that opens them; the driver only takes the
//! figures at each interval tick. Neither blocks a data stream or a control loop,
//! and everything either starts ends with the test.

pub(crate) mod frame_io;
pub(crate) mod prober;
pub(crate) mod responder;

#[cfg(test)]
mod owd_tests;
