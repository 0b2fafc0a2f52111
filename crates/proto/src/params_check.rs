//! The server's checks on a client's parameters, and the server settings they
//! depend on.
//!
//! A parameters document that parses can still ask for something the server must
//! refuse: out-of-range values (each with its own iperf3 error code, checked in
//! iperf3's order so that the first reported error is the same), or more than this
//! server allows (duration, total rate, sendfile, protocol).

use crate::constants::{
    MAX_BLOCK, MAX_BURST, MAX_MSS, MAX_OMIT, MAX_STREAMS, MAX_TCP_BUFFER, MAX_TIME, MAX_TOS,
    MAX_UDP_BLOCKSIZE, MIN_UDP_BLOCKSIZE,
};
use crate::error::IperfError;
use crate::error_codes::{
    IE_BAD_TOS, IE_BLOCK_SIZE, IE_BUF_SIZE, IE_BURST, IE_DURATION,
    IE_MAX_SERVER_TEST_DURATION_EXCEEDED, IE_MSS, IE_NO_SCTP, IE_NO_SENDFILE, IE_NUM_STREAMS,
    IE_OMIT, IE_TOTAL_RATE, IE_UDP_BLOCK_SIZE, IE_UDP_FILE_TRANSFER,
};
use crate::params::{Protocol, TestParams};

/// Server-side settings that decide whether a client's parameters are acceptable
/// beyond the fixed ranges (spec §5.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerLimits {
    /// `--server-max-duration` seconds (error 37).
    pub max_duration: Option<u32>,
    /// `--server-bitrate-limit` bit/s over all streams (error 27).
    pub total_rate_limit: Option<u64>,
    /// Whether this server can send with sendfile (error 11 otherwise).
    pub sendfile_supported: bool,
    /// Whether this server supports SCTP (error 18 otherwise).
    pub sctp_supported: bool,
    /// Server started with `-F`: UDP tests are refused (error 34).
    pub file_transfer: bool,
    /// Clients must authenticate: the server machine leaves these checks to the
    /// driver, which makes them after the token is accepted, so a client without
    /// credentials learns only error 142, nothing about the limits.
    pub auth_first: bool,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_duration: None,
            total_rate_limit: None,
            sendfile_supported: true,
            sctp_supported: false,
            file_transfer: false,
            auth_first: false,
        }
    }
}

impl TestParams {
    /// The server's checks after parsing (spec §5.3 and the per-key limits of §5.2),
    /// in order; the first failure's iperf3 error code is returned. Authentication
    /// (142) is the driver's, as it needs the server's keys.
    pub fn validate(&self, limits: &ServerLimits) -> Result<(), IperfError> {
        let fail = |code| Err(IperfError::new(code));
        if self.protocol == Protocol::Sctp && !limits.sctp_supported {
            return fail(IE_NO_SCTP);
        }
        if self.protocol == Protocol::Udp && limits.file_transfer {
            return fail(IE_UDP_FILE_TRANSFER);
        }
        let len = i64::from(self.len);
        if len > i64::from(MAX_BLOCK) || (self.protocol != Protocol::Udp && len <= 0) {
            return fail(IE_BLOCK_SIZE);
        }
        if self.protocol == Protocol::Udp
            && !(i64::from(MIN_UDP_BLOCKSIZE)..=i64::from(MAX_UDP_BLOCKSIZE)).contains(&len)
        {
            return fail(IE_UDP_BLOCK_SIZE);
        }
        let in_range = |v: i32, lo: i64, hi: u32| (lo..=i64::from(hi)).contains(&i64::from(v));
        if !in_range(self.time, 0, MAX_TIME) {
            return fail(IE_DURATION);
        }
        if !in_range(self.parallel, 1, MAX_STREAMS) {
            return fail(IE_NUM_STREAMS);
        }
        if !in_range(self.omit, 0, MAX_OMIT) {
            return fail(IE_OMIT);
        }
        if !in_range(self.burst, 0, MAX_BURST) {
            return fail(IE_BURST);
        }
        if !in_range(self.mss, 0, MAX_MSS) {
            return fail(IE_MSS);
        }
        if !in_range(self.window, 0, MAX_TCP_BUFFER) {
            return fail(IE_BUF_SIZE);
        }
        if !in_range(self.tos, 0, MAX_TOS) {
            return fail(IE_BAD_TOS);
        }
        if let Some(max) = limits.max_duration {
            let total = i64::from(self.time) + i64::from(self.omit);
            if self.time == 0 || total > i64::from(max) {
                return fail(IE_MAX_SERVER_TEST_DURATION_EXCEEDED);
            }
        }
        if let Some(limit) = limits.total_rate_limit {
            let streams = self.streams_expected() as u128;
            if streams * u128::from(self.bandwidth) > u128::from(limit)
                || streams * u128::from(self.fqrate) > u128::from(limit)
            {
                return fail(IE_TOTAL_RATE);
            }
        }
        if self.zerocopy && self.server_sends() && !limits.sendfile_supported {
            return fail(IE_NO_SENDFILE);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "params_check_tests.rs"]
mod tests;
