//! How long each phase of a test may last, as absolute deadlines.
//!
//! iperf3 bounds its reads with idle timers that every byte restarts, so a peer
//! that trickles one byte every few seconds can hold a server for as long as it
//! likes. Here each phase gets one deadline when it begins; bytes that arrive do
//! not move it. The machines keep the deadline of their current phase and report
//! it through `poll_timeout`; the driver calls `handle_timeout` when it passes.

use std::time::{Duration, Instant};

use crate::error::IperfError;

/// The length of each phase. [`PhaseLimits::default`] holds the values the
/// server and client use; tests shrink them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseLimits {
    /// Server: from the connection to the whole 37-byte cookie.
    pub cookie: Duration,
    /// Server: from PARAM_EXCHANGE to the whole parameters document.
    pub params: Duration,
    /// Both: stream setup, fixed part (from CREATE_STREAMS to TEST_START).
    pub streams: Duration,
    /// Both: stream setup, added per data stream (long paths with many streams).
    pub per_stream: Duration,
    /// Server: added to `time + omit` before a test that never got TEST_END is
    /// cut (iperf3 3.21's 40 s, error 160). Tests without a duration have none.
    pub test_slack: Duration,
    /// Both: from TEST_END to the peer's results (and DISPLAY_RESULTS).
    pub results: Duration,
    /// Server: from its results to the client's IPERF_DONE.
    pub done: Duration,
    /// Client: from the cookie to PARAM_EXCHANGE. `None` waits as long as the
    /// server keeps the connection (a queueing server), as iperf3 does.
    pub first_reply: Option<Duration>,
    /// Client: the 8 bytes after SERVER_ERROR.
    pub error_codes: Duration,
}

impl Default for PhaseLimits {
    fn default() -> Self {
        Self {
            cookie: Duration::from_secs(10),
            params: Duration::from_secs(10),
            streams: Duration::from_secs(30),
            per_stream: Duration::from_millis(250),
            test_slack: Duration::from_secs(40),
            results: Duration::from_secs(30),
            done: Duration::from_secs(10),
            first_reply: None,
            error_codes: Duration::from_secs(10),
        }
    }
}

impl PhaseLimits {
    /// How long stream setup may take for `n` data streams.
    pub fn streams_for(&self, n: usize) -> Duration {
        self.streams + self.per_stream * u32::try_from(n).unwrap_or(u32::MAX)
    }
}

/// The deadline of the current phase and the error it ends the test with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Deadline {
    pub(crate) at: Instant,
    pub(crate) limit: Duration,
    pub(crate) code: i32,
    /// What the phase was waiting for, where the code's text alone misleads.
    pub(crate) waiting_for: Option<&'static str>,
}

impl Deadline {
    pub(crate) fn after(now: Instant, limit: Duration, code: i32) -> Self {
        Self {
            at: now + limit,
            limit,
            code,
            waiting_for: None,
        }
    }

    pub(crate) fn waiting_for(mut self, what: &'static str) -> Self {
        self.waiting_for = Some(what);
        self
    }

    /// The error of `deadline` if it has passed at `now`.
    pub(crate) fn passed(deadline: Option<&Self>, now: Instant) -> Option<IperfError> {
        deadline.filter(|d| now >= d.at).map(Self::error)
    }

    /// The error for a phase that ran out of time: iperf3's code, and how long
    /// the phase was allowed (so the message says why).
    pub(crate) fn error(&self) -> IperfError {
        let mut detail = format!("timed out after {}", secs(self.limit));
        if let Some(what) = self.waiting_for {
            detail.push_str(" waiting for ");
            detail.push_str(what);
        }
        IperfError::with_detail(self.code, detail)
    }
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_setup_grows_with_streams() {
        let l = PhaseLimits::default();
        assert_eq!(l.streams_for(0), Duration::from_secs(30));
        assert_eq!(l.streams_for(256), Duration::from_secs(94));
    }

    #[test]
    fn timeout_errors_say_how_long() {
        let d = Deadline::after(Instant::now(), Duration::from_millis(2500), 117);
        assert_eq!(
            d.error().to_string(),
            "unable to receive results: timed out after 2.5 s"
        );
        let d = Deadline::after(Instant::now(), Duration::from_secs(10), 114);
        assert_eq!(
            d.error().to_string(),
            "unable to receive parameters from client: timed out after 10 s"
        );
    }
}
