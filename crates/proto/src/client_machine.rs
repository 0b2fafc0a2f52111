//! The client's side of the control connection as a state machine.
//!
//! The driver owns the socket: it writes the cookie after connecting, feeds every
//! chunk it reads to [`ClientMachine::on_bytes`], acts on the returned events in
//! order, and writes what the machine queues ([`ClientMachine::poll_transmit`]).
//! The machine checks that the server's messages come in the order iperf3 sends them
//! and, after DISPLAY_RESULTS, ignores everything (3.21 servers may still send a
//! SERVER_ERROR then). It keeps each phase's absolute deadline
//! ([`ClientMachine::poll_timeout`], [`ClientMachine::handle_timeout`]); while the
//! test runs, the driver decides when it ends.

use std::time::Instant;

use crate::constants::{LATENCY_READY, MAX_SERVER_RESULTS_LEN};
use crate::cookie::COOKIE_LEN;
use crate::deadline::{Deadline, PhaseLimits};
use crate::error::IperfError;
use crate::error_codes::{
    IE_ACCESS_DENIED, IE_CTRL_CLOSE, IE_MESSAGE, IE_RECV_MESSAGE, IE_RECV_RESULTS, IE_SERVER_TERM,
};
use crate::framing::{ControlDecoder, Expect, Unit};
use crate::msg::Msg;
use crate::params::TestParams;
use crate::results::{read_results_or_state, ResultsOrState, TestResults};
use crate::transmit::{Outbox, Transmit};

/// What the client is waiting for on the control connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientPhase {
    /// Cookie sent; waiting for PARAM_EXCHANGE.
    AwaitParamExchange,
    /// Parameters sent; waiting for CREATE_STREAMS.
    AwaitCreateStreams,
    /// Streams being opened; waiting for TEST_START.
    AwaitTestStart,
    /// Waiting for TEST_RUNNING.
    AwaitTestRunning,
    /// Test running; the driver decides when it ends.
    Running,
    /// TEST_END sent; waiting for EXCHANGE_RESULTS.
    AwaitExchangeResults,
    /// Our results are (to be) sent; waiting for the server's results.
    AwaitServerResults,
    /// Waiting for DISPLAY_RESULTS.
    AwaitDisplayResults,
    /// SERVER_ERROR seen; waiting for its error code and errno.
    AwaitErrorCodes,
    /// DISPLAY_RESULTS seen: everything further is ignored.
    Finished,
    /// The exchange ended (error, busy server, terminate): input is ignored.
    Closed,
}

/// Something the driver must act on, in the order returned.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// PARAM_EXCHANGE: the server took the test on; the framed parameters are
    /// queued.
    Accepted,
    /// [`crate::LATENCY_READY`] (only when our parameters asked for latency): an
    /// rperf3 server that answers probe connections. Comes before
    /// CREATE_STREAMS; a stock server never sends it.
    LatencyReady,
    /// CREATE_STREAMS: open the data streams, one after another.
    CreateStreams,
    /// TEST_START: start timers, mark stream start times.
    TestStart,
    /// TEST_RUNNING: start moving data.
    TestRunning,
    /// EXCHANGE_RESULTS: answer with [`ClientMachine::send_results`].
    ExchangeResults,
    /// The server's results.
    PeerResults(TestResults),
    /// DISPLAY_RESULTS: print the report, [`ClientMachine::done`], close.
    DisplayResults,
    /// The server is busy (error 121). The connection is closed next.
    AccessDenied,
    /// The server failed with this error. The connection is closed next.
    ServerError {
        /// iperf3 error number.
        code: i32,
        /// errno, 0 if none.
        errno: i32,
    },
    /// The server was killed (error 120): report, [`ClientMachine::done`].
    ServerTerminate,
}

impl ClientEvent {
    /// The error this event ends the test with, if any.
    pub fn error(&self) -> Option<IperfError> {
        match *self {
            Self::AccessDenied => Some(IperfError::new(IE_ACCESS_DENIED)),
            Self::ServerError { code, errno } => Some(IperfError::with_errno(code, errno)),
            Self::ServerTerminate => Some(IperfError::new(IE_SERVER_TERM)),
            _ => None,
        }
    }
}

/// The client's control-connection state machine.
#[derive(Debug, Clone)]
pub struct ClientMachine {
    phase: ClientPhase,
    deadline: Option<Deadline>,
    decoder: ControlDecoder,
    cookie: [u8; COOKIE_LEN],
    params: Vec<u8>,
    streams: usize,
    /// Our parameters asked for latency probes or bounceback: [`LATENCY_READY`]
    /// (an rperf3 server) may come.
    latency_asked: bool,
    latency_seen: bool,
    phases: PhaseLimits,
    out: Outbox,
}

impl ClientMachine {
    /// A machine for one test whose cookie goes out at `now`. The parameters are
    /// encoded now and sent on PARAM_EXCHANGE.
    pub fn new(
        cookie: [u8; COOKIE_LEN],
        params: &TestParams,
        phases: PhaseLimits,
        now: Instant,
    ) -> Self {
        let mut m = Self {
            phase: ClientPhase::AwaitParamExchange,
            deadline: None,
            decoder: ControlDecoder::new(),
            cookie,
            params: params.encode(),
            streams: params.streams_expected(),
            latency_asked: params.latency.is_some() || params.bounceback.is_some(),
            latency_seen: false,
            phases,
            out: Outbox::default(),
        };
        m.enter(ClientPhase::AwaitParamExchange, now);
        m
    }

    /// When the current phase runs out of time, if it has a limit.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadline.as_ref().map(|d| d.at)
    }

    /// Called when the time given by [`Self::poll_timeout`] has come: the phase's
    /// error. Nothing happens before the deadline.
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
        self.phase = ClientPhase::Closed;
        self.deadline = None;
    }

    /// Moves to `phase` at `now` and sets its deadline. Phases that continue an
    /// exchange (TEST_START to TEST_RUNNING, results to DISPLAY_RESULTS) keep the
    /// deadline they have.
    fn enter(&mut self, phase: ClientPhase, now: Instant) {
        use ClientPhase as P;
        let l = &self.phases;
        let limit = match phase {
            P::AwaitParamExchange => l.first_reply.map(|d| (d, IE_RECV_MESSAGE)),
            P::AwaitCreateStreams => Some((l.results, IE_RECV_MESSAGE)),
            P::AwaitTestStart => Some((l.streams_for(self.streams), IE_RECV_MESSAGE)),
            P::AwaitExchangeResults => Some((l.results, IE_RECV_MESSAGE)),
            P::AwaitServerResults => Some((l.results, IE_RECV_RESULTS)),
            P::AwaitErrorCodes => Some((l.error_codes, IE_RECV_MESSAGE)),
            P::AwaitTestRunning | P::AwaitDisplayResults => {
                self.phase = phase;
                return;
            }
            P::Running | P::Finished | P::Closed => None,
        };
        self.phase = phase;
        self.deadline = limit.map(|(d, code)| {
            let deadline = Deadline::after(now, d, code);
            if phase == P::AwaitParamExchange {
                // A server that runs other tests may keep this client waiting.
                deadline.waiting_for("the server to start the test (it may be busy or queueing)")
            } else {
                deadline
            }
        });
    }

    /// The test cookie.
    pub fn cookie(&self) -> &[u8; COOKIE_LEN] {
        &self.cookie
    }

    /// What the machine waits for.
    pub fn phase(&self) -> ClientPhase {
        self.phase
    }

    /// Feeds bytes read from the control connection. On `Err` the test has failed
    /// and the machine ignores further input.
    /// `now` starts the deadline of any phase the bytes lead to.
    pub fn on_bytes(&mut self, bytes: &[u8], now: Instant) -> Result<Vec<ClientEvent>, IperfError> {
        if matches!(self.phase, ClientPhase::Finished | ClientPhase::Closed) {
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

    /// The server closed the connection. Fine after DISPLAY_RESULTS or a final
    /// message; a SERVER_ERROR cut after its code (3.12 on auth failure) still
    /// yields the event. Otherwise error 109, or 117 while reading results.
    pub fn on_eof(&mut self) -> Result<Vec<ClientEvent>, IperfError> {
        let phase = self.phase;
        self.close();
        match phase {
            ClientPhase::Finished | ClientPhase::Closed => Ok(Vec::new()),
            ClientPhase::AwaitErrorCodes => {
                match self.decoder.next_unit_at_eof(Expect::ServerErrorCodes) {
                    Ok(Some(Unit::ServerErrorCodes { code, errno })) => {
                        Ok(vec![ClientEvent::ServerError { code, errno }])
                    }
                    _ => Err(IperfError::new(IE_CTRL_CLOSE)),
                }
            }
            ClientPhase::AwaitServerResults => Err(IperfError::new(IE_RECV_RESULTS)),
            _ => Err(IperfError::new(IE_CTRL_CLOSE)),
        }
    }

    /// The next write for the control connection, with the error its failure
    /// means; the driver takes them all after each call into the machine.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop()
    }

    /// Queues TEST_END, when the driver decides (at `now`) that the test is over.
    pub fn end_test(&mut self, now: Instant) {
        if self.phase == ClientPhase::Running {
            self.enter(ClientPhase::AwaitExchangeResults, now);
        }
        self.out.msg(Msg::TestEnd);
    }

    /// Queues our results, framed, in answer to EXCHANGE_RESULTS.
    pub fn send_results(&mut self, results: &TestResults) {
        self.out.results(results.encode());
    }

    /// Queues CLIENT_TERMINATE (the client got a signal). The machine then
    /// ignores input.
    pub fn terminate(&mut self) {
        self.close();
        self.out.msg(Msg::ClientTerminate);
    }

    /// Queues IPERF_DONE, after DISPLAY_RESULTS or SERVER_TERMINATE.
    pub fn done(&mut self) {
        if self.phase != ClientPhase::Finished {
            self.close();
        }
        self.out.msg(Msg::IperfDone);
    }

    fn drain(&mut self, events: &mut Vec<ClientEvent>, now: Instant) -> Result<(), IperfError> {
        loop {
            match self.phase {
                ClientPhase::Finished | ClientPhase::Closed => {
                    // Nothing after the last message matters (pitfall 16).
                    return Ok(());
                }
                ClientPhase::AwaitErrorCodes => {
                    let Some(Unit::ServerErrorCodes { code, errno }) = self
                        .decoder
                        .next_unit(Expect::ServerErrorCodes)
                        .ok()
                        .flatten()
                    else {
                        return Ok(());
                    };
                    events.push(ClientEvent::ServerError { code, errno });
                    self.close();
                }
                ClientPhase::AwaitServerResults => {
                    match read_results_or_state(&mut self.decoder, MAX_SERVER_RESULTS_LEN)? {
                        None => return Ok(()),
                        Some(ResultsOrState::State(b)) => self.on_state(b, events, now)?,
                        Some(ResultsOrState::Results(r)) => {
                            events.push(ClientEvent::PeerResults(r));
                            self.enter(ClientPhase::AwaitDisplayResults, now);
                        }
                    }
                }
                _ => match self.decoder.next_unit(Expect::State) {
                    Ok(Some(Unit::State(b))) => self.on_state(b, events, now)?,
                    _ => return Ok(()),
                },
            }
        }
    }

    fn on_state(
        &mut self,
        b: u8,
        events: &mut Vec<ClientEvent>,
        now: Instant,
    ) -> Result<(), IperfError> {
        use ClientPhase as P;
        if b == LATENCY_READY
            && self.latency_asked
            && !self.latency_seen
            && self.phase == P::AwaitCreateStreams
        {
            // Once, before CREATE_STREAMS; the phase (and its deadline) stays.
            self.latency_seen = true;
            events.push(ClientEvent::LatencyReady);
            return Ok(());
        }
        let msg = Msg::from_byte(b).ok_or_else(|| IperfError::new(IE_MESSAGE))?;
        // Messages the server may send in any phase end the exchange.
        match msg {
            Msg::AccessDenied => {
                events.push(ClientEvent::AccessDenied);
                self.close();
                return Ok(());
            }
            Msg::ServerError => {
                self.enter(P::AwaitErrorCodes, now);
                return Ok(());
            }
            Msg::ServerTerminate => {
                events.push(ClientEvent::ServerTerminate);
                self.close();
                return Ok(());
            }
            _ => {}
        }
        let (event, next) = match (self.phase, msg) {
            (P::AwaitParamExchange, Msg::ParamExchange) => {
                self.out.params(self.params.clone());
                (ClientEvent::Accepted, P::AwaitCreateStreams)
            }
            (P::AwaitCreateStreams, Msg::CreateStreams) => {
                (ClientEvent::CreateStreams, P::AwaitTestStart)
            }
            (P::AwaitTestStart, Msg::TestStart) => (ClientEvent::TestStart, P::AwaitTestRunning),
            (P::AwaitTestRunning, Msg::TestRunning) => (ClientEvent::TestRunning, P::Running),
            (P::Running | P::AwaitExchangeResults, Msg::ExchangeResults) => {
                (ClientEvent::ExchangeResults, P::AwaitServerResults)
            }
            (P::AwaitDisplayResults, Msg::DisplayResults) => {
                (ClientEvent::DisplayResults, P::Finished)
            }
            _ => return Err(IperfError::new(IE_MESSAGE)),
        };
        events.push(event);
        self.enter(next, now);
        Ok(())
    }
}

#[cfg(test)]
#[path = "client_machine_tests.rs"]
mod tests;
