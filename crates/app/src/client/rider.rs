//! A measurement that rides on a client's test beside its streams (an `--rpm`
//! stage): the test hands it the prober and the running streams' address, asks
//! it whether it has ended the test, and tells it why the test failed.

use std::net::SocketAddr;
use std::time::Duration;

use rperf3_proto::COOKIE_LEN;

use crate::latency::prober::Prober;

/// What the client's test asks of what rides on it.
pub(crate) trait Rider {
    /// The prober the server agreed to answer, made before the streams.
    fn take_prober(&mut self, prober: Prober);
    /// The prober, while the rider has not yet started with it.
    fn prober(&mut self) -> Option<&mut Prober>;
    /// The streams run: the rider starts.
    fn launch(&mut self, server: SocketAddr, cookie: [u8; COOKIE_LEN]);
    /// Whether the rider has ended the test.
    fn is_done(&self) -> bool;
    /// How often the test asks [`Rider::is_done`].
    fn check_every(&self) -> Duration;
    /// The test is over.
    fn stop(&mut self);
    /// Why the test failed; the first reason given is kept.
    fn fail(&mut self, why: String);
}
