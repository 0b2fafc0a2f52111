//! The server's side of one control connection as a state machine.
//!
//! The driver accepts the connection (or answers a busy server's 0xFF itself, see
//! [`ACCESS_DENIED_BYTES`]), feeds what it reads to [`ServerMachine::on_bytes`], acts
//! on the returned events in order, calls the methods that mark its own progress
//! (streams, end of test, results), and writes what the machine queues
//! ([`ServerMachine::poll_transmit`]). The
//! machine parses and checks the client's documents, enforces which client
//! messages are allowed when, with iperf3's error codes, and keeps each phase's
//! absolute deadline ([`ServerMachine::poll_timeout`],
//! [`ServerMachine::handle_timeout`]).

use std::time::{Duration, Instant};

use crate::constants::{LATENCY_READY, MAX_CLIENT_RESULTS_LEN, MAX_PARAMS_LEN};
use crate::cookie::COOKIE_LEN;
use crate::deadline::{Deadline, PhaseLimits};
use crate::error::IperfError;
use crate::error_codes::{
    IE_CTRL_CLOSE, IE_MESSAGE, IE_RECV_COOKIE, IE_RECV_MESSAGE, IE_RECV_PARAMS, IE_RECV_RESULTS,
    IE_SERVER_TEST_DURATION_EXPIRED, IE_STREAM_ACCEPT,
};
use crate::framing::{ControlDecoder, Expect, Unit};
use crate::msg::Msg;
use crate::params::TestParams;
use crate::params_check::ServerLimits;
use crate::results::{read_results_or_state, ResultsOrState, TestResults};
use crate::transmit::{Outbox, Transmit};

/// What a busy server writes on a new control connection before closing it,
/// without reading the cookie.
pub const ACCESS_DENIED_BYTES: [u8; 1] = [0xFF];

/// What the server is waiting for on the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerPhase {
    /// Waiting for the 37-byte cookie.
    AwaitCookie,
    /// PARAM_EXCHANGE sent; waiting for the parameters document.
    AwaitParams,
    /// Parameters accepted; the driver sets up listeners and accepts streams.
    CreateStreams,
    /// TEST_START and TEST_RUNNING sent; waiting for TEST_END.
    Running,
    /// TEST_END received; waiting for the client's results.
    AwaitClientResults,
    /// Results exchanged; waiting for IPERF_DONE.
    AwaitDone,
    /// IPERF_DONE received.
    Done,
    /// Failed or terminated: input is ignored.
    Closed,
}

/// Something the driver must act on, in the order returned.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// The client's cookie: the test's id, also expected on each TCP data stream.
    Cookie([u8; COOKIE_LEN]),
    /// Parameters parsed and checked (with [`ServerLimits::auth_first`]: only
    /// parsed). The driver checks authentication, then (`auth_first`)
    /// [`TestParams::validate`] (on failure: [`ServerMachine::fail`]),
    /// prepares listeners, then calls [`ServerMachine::begin_create_streams`].
    ParamsReady(TestParams),
    /// TEST_END: stop and close the data streams, take the last sample, build our
    /// report, then call [`ServerMachine::exchange_results`].
    TestEnd,
    /// The client's results: answer with [`ServerMachine::send_results`].
    PeerResults(TestResults),
    /// IPERF_DONE: the test is over.
    Done,
    /// CLIENT_TERMINATE (error 119): print the partial report, close.
    ClientTerminated,
}

/// The server's state machine for one control connection.
#[derive(Debug, Clone)]
pub struct ServerMachine {
    phase: ServerPhase,
    deadline: Option<Deadline>,
    decoder: ControlDecoder,
    limits: ServerLimits,
    phases: PhaseLimits,
    params: Option<TestParams>,
    out: Outbox,
}

impl ServerMachine {
    /// A machine for a control connection accepted at `now`.
    pub fn new(limits: ServerLimits, phases: PhaseLimits, now: Instant) -> Self {
        let mut m = Self {
            phase: ServerPhase::AwaitCookie,
            deadline: None,
            decoder: ControlDecoder::new(),
            limits,
            phases,
            params: None,
            out: Outbox::default(),
        };
        m.enter(ServerPhase::AwaitCookie, now);
        m
    }

    /// What the machine waits for.
    pub fn phase(&self) -> ServerPhase {
        self.phase
    }

    /// When the current phase runs out of time, if it has a limit.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline.as_ref().map(|d| d.at)
    }

    /// Called when the time given by [`Self::poll_timeout`] has come: the phase's
    /// error (the driver reports it like any other failure, see [`Self::fail`]).
    /// Nothing happens before the deadline.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), IperfError> {
        match Deadline::passed(self.deadline.as_ref(), now) {
            Some(e) => {
                self.close();
                Err(e)
            }
            None => Ok(()),
        }
    }

    fn close(&mut self) {
        self.phase = ServerPhase::Closed;
        self.deadline = None;
    }

    /// Moves to `phase` at `now`, starting its deadline.
    fn enter(&mut self, phase: ServerPhase, now: Instant) {
        use ServerPhase as P;
        let l = &self.phases;
        let limit = match phase {
            P::AwaitCookie => Some((l.cookie, IE_RECV_COOKIE)),
            P::AwaitParams => Some((l.params, IE_RECV_PARAMS)),
            P::CreateStreams => Some((l.streams_for(self.streams_expected()), IE_STREAM_ACCEPT)),
            P::Running => self.params.as_ref().and_then(|p| {
                // No duration (bytes, blocks, -t 0): no limit here; the driver's
                // idle detection ends a test whose peer has gone.
                (p.time > 0).then(|| {
                    let secs = u64::from(p.time.unsigned_abs()) + u64::from(p.omit.unsigned_abs());
                    (
                        Duration::from_secs(secs) + l.test_slack,
                        IE_SERVER_TEST_DURATION_EXPIRED,
                    )
                })
            }),
            P::AwaitClientResults => Some((l.results, IE_RECV_RESULTS)),
            P::AwaitDone => Some((l.done, IE_RECV_MESSAGE)),
            P::Done | P::Closed => None,
        };
        self.phase = phase;
        self.deadline = limit.map(|(d, code)| Deadline::after(now, d, code));
    }

    /// The accepted parameters, once [`ServerEvent::ParamsReady`] was returned.
    pub fn params(&self) -> Option<&TestParams> {
        self.params.as_ref()
    }

    /// Data streams to accept: `parallel`, doubled in bidir mode (0 before params).
    pub fn streams_expected(&self) -> usize {
        self.params.as_ref().map_or(0, TestParams::streams_expected)
    }

    /// Feeds bytes read from the control connection. On `Err` the driver writes
    /// [`IperfError::to_server_error_bytes`] (the machine is then closed) and closes.
    /// `now` starts the deadline of any phase the bytes lead to.
    pub fn on_bytes(&mut self, bytes: &[u8], now: Instant) -> Result<Vec<ServerEvent>, IperfError> {
        if matches!(self.phase, ServerPhase::Done | ServerPhase::Closed) {
            return Ok(Vec::new());
        }
        self.decoder.push(bytes);
        let mut events = Vec::new();
        match self.drain(&mut events, now) {
            Ok(()) => Ok(events),
            Err(e) => {
                self.close();
                Err(e)
            }
        }
    }

    /// The client closed the connection: error 106 / 114 / 117 while a cookie,
    /// parameters or results were due, else 109; nothing once IPERF_DONE was seen.
    pub fn on_eof(&mut self) -> Result<Vec<ServerEvent>, IperfError> {
        let phase = self.phase;
        self.close();
        let code = match phase {
            ServerPhase::Done | ServerPhase::Closed => return Ok(Vec::new()),
            ServerPhase::AwaitCookie => IE_RECV_COOKIE,
            ServerPhase::AwaitParams => IE_RECV_PARAMS,
            ServerPhase::AwaitClientResults => IE_RECV_RESULTS,
            _ => IE_CTRL_CLOSE,
        };
        Err(IperfError::new(code))
    }

    /// The next write for the control connection, with the error its failure
    /// means; the driver takes them all after each call into the machine.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop()
    }

    /// Queues [`LATENCY_READY`]: the client asked for latency probes or bounceback (its
    /// parameters carried [`crate::LatencyOffer`] or a bounceback offer) and this
    /// server answers them.
    /// Only after [`ServerEvent::ParamsReady`] and before CREATE_STREAMS; never
    /// for a client that did not ask (a stock client would fail on it).
    pub fn latency_ready(&mut self) {
        let asked = self
            .params
            .as_ref()
            .is_some_and(|p| p.latency.is_some() || p.bounceback.is_some());
        if asked && self.phase == ServerPhase::CreateStreams {
            self.out.message_bytes(vec![LATENCY_READY]);
        }
    }

    /// Queues CREATE_STREAMS, once the driver is ready to accept data connections.
    pub fn begin_create_streams(&mut self) {
        self.out.msg(Msg::CreateStreams);
    }

    /// Queues TEST_START then TEST_RUNNING, once every stream is connected at
    /// `now` (the test's duration limit starts).
    pub fn all_streams_connected(&mut self, now: Instant) {
        if self.phase == ServerPhase::CreateStreams {
            self.enter(ServerPhase::Running, now);
        }
        self.out.msg(Msg::TestStart);
        self.out.msg(Msg::TestRunning);
    }

    /// Queues EXCHANGE_RESULTS, after [`ServerEvent::TestEnd`] was handled.
    pub fn exchange_results(&mut self) {
        self.out.msg(Msg::ExchangeResults);
    }

    /// Queues our results, framed, then DISPLAY_RESULTS.
    pub fn send_results(&mut self, results: &TestResults) {
        self.out.results(results.encode());
        self.out.msg(Msg::DisplayResults);
    }

    /// Queues SERVER_TERMINATE (the server got a signal). The machine then
    /// ignores input.
    pub fn terminate(&mut self) {
        self.close();
        self.out.msg(Msg::ServerTerminate);
    }

    /// Queues SERVER_ERROR for a failure the driver found (authentication 142,
    /// listener errors, timeouts, rate limit during the test). The machine then
    /// ignores input.
    pub fn fail(&mut self, err: &IperfError) {
        self.close();
        self.out.message_bytes(err.to_server_error_bytes().to_vec());
    }

    fn drain(&mut self, events: &mut Vec<ServerEvent>, now: Instant) -> Result<(), IperfError> {
        loop {
            match self.phase {
                ServerPhase::Done | ServerPhase::Closed => return Ok(()),
                ServerPhase::AwaitCookie => {
                    let Some(Unit::Cookie(c)) =
                        self.decoder.next_unit(Expect::Cookie).ok().flatten()
                    else {
                        return Ok(());
                    };
                    events.push(ServerEvent::Cookie(c));
                    self.out.msg(Msg::ParamExchange);
                    self.enter(ServerPhase::AwaitParams, now);
                }
                ServerPhase::AwaitParams => {
                    let expect = Expect::Json {
                        max_len: MAX_PARAMS_LEN,
                    };
                    let body = match self.decoder.next_unit(expect) {
                        Ok(Some(Unit::Json(b))) => b,
                        Ok(_) => return Ok(()),
                        Err(_) => return Err(IperfError::new(IE_RECV_PARAMS)),
                    };
                    let params = TestParams::from_json(&body)?;
                    if !self.limits.auth_first {
                        params.validate(&self.limits)?;
                    }
                    self.params = Some(params.clone());
                    events.push(ServerEvent::ParamsReady(params));
                    self.enter(ServerPhase::CreateStreams, now);
                }
                ServerPhase::AwaitClientResults => {
                    match read_results_or_state(&mut self.decoder, MAX_CLIENT_RESULTS_LEN)? {
                        None => return Ok(()),
                        Some(ResultsOrState::State(b)) => self.on_state(b, events, now)?,
                        Some(ResultsOrState::Results(r)) => {
                            events.push(ServerEvent::PeerResults(r));
                            self.enter(ServerPhase::AwaitDone, now);
                        }
                    }
                }
                ServerPhase::CreateStreams | ServerPhase::Running | ServerPhase::AwaitDone => {
                    match self.decoder.next_unit(Expect::State) {
                        Ok(Some(Unit::State(b))) => self.on_state(b, events, now)?,
                        _ => return Ok(()),
                    }
                }
            }
        }
    }

    /// The client messages iperf3's server accepts: 1 (ignored), 4, 12, 16.
    /// TEST_START from a client is ignored in every phase, as by iperf3; it
    /// cannot hold the server, as deadlines do not move.
    fn on_state(
        &mut self,
        b: u8,
        events: &mut Vec<ServerEvent>,
        now: Instant,
    ) -> Result<(), IperfError> {
        use ServerPhase as P;
        match (self.phase, Msg::from_byte(b)) {
            (_, Some(Msg::TestStart)) => {}
            (_, Some(Msg::ClientTerminate)) => {
                events.push(ServerEvent::ClientTerminated);
                self.close();
            }
            (_, Some(Msg::IperfDone)) => {
                events.push(ServerEvent::Done);
                self.enter(P::Done, now);
            }
            (P::CreateStreams | P::Running, Some(Msg::TestEnd)) => {
                events.push(ServerEvent::TestEnd);
                self.enter(P::AwaitClientResults, now);
            }
            _ => return Err(IperfError::new(IE_MESSAGE)),
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "server_machine_tests.rs"]
mod tests;
