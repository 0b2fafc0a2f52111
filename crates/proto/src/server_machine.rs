//! The server's side of one control connection as a state machine.
//!
//! The driver accepts the connection (or answers a busy server's 0xFF itself, see
//! [`ACCESS_DENIED_BYTES`]), feeds what it reads to [`ServerMachine::on_bytes`], acts
//! on the returned events in order (writing every [`ServerEvent::Send`]), and calls
//! the methods that mark its own progress: streams, end of test, results. The
//! machine parses and checks the client's documents and enforces which client
//! messages are allowed when, with iperf3's error codes.

use std::time::Duration;

use crate::constants::{
    MAX_CLIENT_RESULTS_LEN, MAX_PARAMS_LEN, UNIT_READ_IDLE_TIMEOUT, UNIT_READ_TOTAL_TIMEOUT,
};
use crate::cookie::COOKIE_LEN;
use crate::error::IperfError;
use crate::error_codes::{
    IE_CTRL_CLOSE, IE_MESSAGE, IE_RECV_COOKIE, IE_RECV_PARAMS, IE_RECV_RESULTS,
};
use crate::framing::{ControlDecoder, Expect, Unit};
use crate::msg::Msg;
use crate::params::TestParams;
use crate::params_check::ServerLimits;
use crate::results::{read_results_or_state, ResultsOrState, TestResults};

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

impl ServerPhase {
    /// How long the driver should wait for the client in this phase. `None` where the
    /// driver's own deadlines apply (stream accept, test duration + 40 s, idle
    /// receive timeout). Cookie and parameters: 10 s, iperf3's wait for a readable
    /// control socket; results and IPERF_DONE: iperf3's 30 s bound for one unit.
    pub fn read_timeout(self) -> Option<Duration> {
        match self {
            Self::AwaitCookie | Self::AwaitParams => Some(UNIT_READ_IDLE_TIMEOUT),
            Self::AwaitClientResults | Self::AwaitDone => Some(UNIT_READ_TOTAL_TIMEOUT),
            Self::CreateStreams | Self::Running | Self::Done | Self::Closed => None,
        }
    }
}

/// Something the driver must act on, in the order returned.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// Write these bytes to the control connection now.
    Send(Vec<u8>),
    /// The client's cookie: the test's id, also expected on each TCP data stream.
    Cookie([u8; COOKIE_LEN]),
    /// Parameters parsed and checked. The driver checks authentication (on failure:
    /// write [`ServerMachine::fail`]), prepares listeners, then writes
    /// [`ServerMachine::begin_create_streams`].
    ParamsReady(TestParams),
    /// TEST_END: stop and close the data streams, take the last sample, build our
    /// report, then write [`ServerMachine::exchange_results`].
    TestEnd,
    /// The client's results: write [`ServerMachine::send_results`].
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
    decoder: ControlDecoder,
    limits: ServerLimits,
    params: Option<TestParams>,
}

impl ServerMachine {
    /// A machine for a freshly accepted control connection.
    pub fn new(limits: ServerLimits) -> Self {
        Self {
            phase: ServerPhase::AwaitCookie,
            decoder: ControlDecoder::new(),
            limits,
            params: None,
        }
    }

    /// What the machine waits for.
    pub fn phase(&self) -> ServerPhase {
        self.phase
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
    pub fn on_bytes(&mut self, bytes: &[u8]) -> Result<Vec<ServerEvent>, IperfError> {
        if matches!(self.phase, ServerPhase::Done | ServerPhase::Closed) {
            return Ok(Vec::new());
        }
        self.decoder.push(bytes);
        let mut events = Vec::new();
        match self.drain(&mut events) {
            Ok(()) => Ok(events),
            Err(e) => {
                self.phase = ServerPhase::Closed;
                Err(e)
            }
        }
    }

    /// The client closed the connection: error 106 / 114 / 117 while a cookie,
    /// parameters or results were due, else 109; nothing once IPERF_DONE was seen.
    pub fn on_eof(&mut self) -> Result<Vec<ServerEvent>, IperfError> {
        let phase = self.phase;
        self.phase = ServerPhase::Closed;
        let code = match phase {
            ServerPhase::Done | ServerPhase::Closed => return Ok(Vec::new()),
            ServerPhase::AwaitCookie => IE_RECV_COOKIE,
            ServerPhase::AwaitParams => IE_RECV_PARAMS,
            ServerPhase::AwaitClientResults => IE_RECV_RESULTS,
            _ => IE_CTRL_CLOSE,
        };
        Err(IperfError::new(code))
    }

    /// CREATE_STREAMS, once the driver is ready to accept data connections.
    pub fn begin_create_streams(&mut self) -> Vec<u8> {
        vec![Msg::CreateStreams.to_byte()]
    }

    /// TEST_START then TEST_RUNNING, once every stream is connected.
    pub fn all_streams_connected(&mut self) -> Vec<u8> {
        if self.phase == ServerPhase::CreateStreams {
            self.phase = ServerPhase::Running;
        }
        vec![Msg::TestStart.to_byte(), Msg::TestRunning.to_byte()]
    }

    /// EXCHANGE_RESULTS, after [`ServerEvent::TestEnd`] was handled.
    pub fn exchange_results(&mut self) -> Vec<u8> {
        vec![Msg::ExchangeResults.to_byte()]
    }

    /// Our results, framed, followed by DISPLAY_RESULTS.
    pub fn send_results(&mut self, results: &TestResults) -> Vec<u8> {
        let mut out = results.encode();
        out.push(Msg::DisplayResults.to_byte());
        out
    }

    /// SERVER_TERMINATE (the server got a signal). The machine then ignores input.
    pub fn terminate(&mut self) -> Vec<u8> {
        self.phase = ServerPhase::Closed;
        vec![Msg::ServerTerminate.to_byte()]
    }

    /// SERVER_ERROR for a failure the driver found (authentication 142, listener
    /// errors, timeouts, rate limit during the test). The machine then ignores input.
    pub fn fail(&mut self, err: &IperfError) -> Vec<u8> {
        self.phase = ServerPhase::Closed;
        err.to_server_error_bytes().to_vec()
    }

    fn drain(&mut self, events: &mut Vec<ServerEvent>) -> Result<(), IperfError> {
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
                    events.push(ServerEvent::Send(vec![Msg::ParamExchange.to_byte()]));
                    self.phase = ServerPhase::AwaitParams;
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
                    params.validate(&self.limits)?;
                    self.params = Some(params.clone());
                    events.push(ServerEvent::ParamsReady(params));
                    self.phase = ServerPhase::CreateStreams;
                }
                ServerPhase::AwaitClientResults => {
                    match read_results_or_state(&mut self.decoder, MAX_CLIENT_RESULTS_LEN)? {
                        None => return Ok(()),
                        Some(ResultsOrState::State(b)) => self.on_state(b, events)?,
                        Some(ResultsOrState::Results(r)) => {
                            events.push(ServerEvent::PeerResults(r));
                            self.phase = ServerPhase::AwaitDone;
                        }
                    }
                }
                ServerPhase::CreateStreams | ServerPhase::Running | ServerPhase::AwaitDone => {
                    match self.decoder.next_unit(Expect::State) {
                        Ok(Some(Unit::State(b))) => self.on_state(b, events)?,
                        _ => return Ok(()),
                    }
                }
            }
        }
    }

    /// The client messages iperf3's server accepts: 1 (ignored), 4, 12, 16.
    fn on_state(&mut self, b: u8, events: &mut Vec<ServerEvent>) -> Result<(), IperfError> {
        use ServerPhase as P;
        match (self.phase, Msg::from_byte(b)) {
            (_, Some(Msg::TestStart)) => {}
            (_, Some(Msg::ClientTerminate)) => {
                events.push(ServerEvent::ClientTerminated);
                self.phase = P::Closed;
            }
            (_, Some(Msg::IperfDone)) => {
                events.push(ServerEvent::Done);
                self.phase = P::Done;
            }
            (P::CreateStreams | P::Running, Some(Msg::TestEnd)) => {
                events.push(ServerEvent::TestEnd);
                self.phase = P::AwaitClientResults;
            }
            _ => return Err(IperfError::new(IE_MESSAGE)),
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "server_machine_tests.rs"]
mod tests;
