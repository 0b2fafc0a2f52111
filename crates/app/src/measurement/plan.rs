//! What one side's test is, decided once from the parameters in effect.
//!
//! The client builds its plan from the parameters it sends, the server from the
//! ones it accepted; both then hand it to the driver (`driver.rs`), which
//! takes the test through setup, TEST_START, TEST_RUNNING and the end the same
//! way on both sides. What differs (who connects, who decides the end) stays
//! with the client and the session.

use std::time::Duration;

use rperf3_engine::budget::Budget;
use rperf3_proto::{Protocol, TestParams};
use rperf3_report::input::{MssInfo, Side, StartInfo, TestInfo};

use crate::config::{CommonConfig, RateLimit};
use crate::latency::prober::Prober;
use crate::measurement::choice::SendSpec;
use crate::measurement::run::IdleLimits;
use crate::measurement::setup::{idle_limits, send_spec, stream_roles, test_info, version_string};

/// One side's test.
#[derive(Debug)]
pub(crate) struct TestPlan {
    /// The parameters in effect.
    pub params: TestParams,
    /// Stream roles in setup order (true = this side sends).
    pub roles: Vec<bool>,
    /// The report's `connected`/`test_start` facts; buffer sizes are filled
    /// in from the first stream at TEST_START.
    pub start: StartInfo,
    /// The report's `test_start` facts.
    pub info: TestInfo,
    /// Interval reports (`-i`).
    pub interval: Option<Duration>,
    /// `-O`.
    pub omit: Duration,
    /// How long each direction may go without progress.
    pub idle: IdleLimits,
    /// What the workers need (with the `-F` file, once opened).
    pub send: SendSpec,
    /// `-n`/`-k` on the client: the senders' budget.
    pub budget: Option<Budget>,
    /// `--server-bitrate-limit` on the server.
    pub rate_limit: Option<RateLimit>,
    /// `--latency` on the client: the prober, handed to the run at TEST_START.
    pub latency: Option<Prober>,
}

/// Where this side's control connection goes to or comes from.
#[derive(Debug, Clone)]
pub(crate) enum Peer {
    /// The client: `-c` as typed, and the port.
    ConnectingTo(String, u16),
    /// The server: the client's address.
    AcceptedFrom(std::net::SocketAddr),
}

impl TestPlan {
    /// The plan for `params` on `side`, connected now. `ctrl_mss` is the
    /// control connection's MSS where this side reports it (the client).
    pub(crate) fn new(
        params: TestParams,
        side: Side,
        common: &CommonConfig,
        peer: Peer,
        cookie: &str,
        ctrl_mss: Option<u32>,
    ) -> Self {
        let tcp_mss = (params.protocol != Protocol::Udp).then_some(match ctrl_mss {
            Some(m) => MssInfo::Default(m),
            None if params.mss > 0 => MssInfo::Set(params.mss as u32),
            None => MssInfo::Default(0),
        });
        let (connecting_to, accepted_connection) = match peer {
            Peer::ConnectingTo(host, port) => (Some((host, port)), None),
            Peer::AcceptedFrom(a) => (None, Some(a)),
        };
        let start = StartInfo {
            version: version_string(),
            system_info: rperf3_sys::system::uname_line(),
            timestamp_millis: rperf3_sys::time::unix_millis(),
            connecting_to,
            accepted_connection,
            cookie: cookie.to_string(),
            tcp_mss,
            sock_bufsize: params.window.max(0) as u64,
            sndbuf_actual: 0,
            rcvbuf_actual: 0,
        };
        Self {
            roles: stream_roles(&params, side),
            info: test_info(&params, common, side),
            start,
            interval: common.interval,
            omit: Duration::from_secs(params.omit.max(0) as u64),
            idle: idle_limits(&params, common.rcv_timeout),
            send: send_spec(&params),
            budget: None,
            rate_limit: None,
            latency: None,
            params,
        }
    }
}
