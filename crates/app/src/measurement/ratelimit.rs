//! `--server-bitrate-limit`: a test's total rate (every stream, both
//! directions), averaged over a window, checked as the test runs. Tests that
//! ask for too much up front are refused from their parameters already
//! (error 27); this catches the ones without `-b` that simply send too fast.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rperf3_proto::{IperfError, IE_TOTAL_RATE};

use crate::config::RateLimit;

/// How often the rate is looked at.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);

/// Byte counts of one test over the last window.
#[derive(Debug)]
pub(crate) struct RateGuard {
    limit: RateLimit,
    samples: VecDeque<(Instant, u64)>,
    next: Instant,
}

impl RateGuard {
    /// A guard for a test that starts at `start` with nothing transferred.
    pub(crate) fn new(limit: RateLimit, start: Instant) -> Self {
        Self {
            limit,
            samples: VecDeque::from([(start, 0)]),
            next: start + CHECK_EVERY,
        }
    }

    /// When the next look is due.
    pub(crate) fn next_check(&self) -> Instant {
        self.next
    }

    /// Notes the test's total bytes at `now`, if a look is due. Fails once a
    /// whole window has passed (as iperf3, which averages full windows only)
    /// and the average over the last window is above the limit.
    pub(crate) fn check(&mut self, now: Instant, bytes: u64) -> Result<(), IperfError> {
        if now < self.next {
            return Ok(());
        }
        self.next = now + CHECK_EVERY;
        if self.samples.back().is_some_and(|&(_, b)| bytes < b) {
            // The counters restarted (end of the omit period): so does the window.
            self.samples.clear();
        }
        self.samples.push_back((now, bytes));
        let Some(from) = now.checked_sub(self.limit.window) else {
            return Ok(());
        };
        while self.samples.len() > 1 && self.samples[1].0 <= from {
            self.samples.pop_front();
        }
        let (t0, b0) = self.samples[0];
        if t0 > from || now <= t0 {
            return Ok(());
        }
        let bps = (bytes - b0) as f64 * 8.0 / now.duration_since(t0).as_secs_f64();
        if bps > self.limit.bits_per_second as f64 {
            return Err(IperfError::new(IE_TOTAL_RATE));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(bps: u64, window_s: u64) -> (RateGuard, Instant) {
        let t0 = Instant::now();
        let limit = RateLimit {
            bits_per_second: bps,
            window: Duration::from_secs(window_s),
        };
        (RateGuard::new(limit, t0), t0)
    }

    fn at(t0: Instant, s: u64) -> Instant {
        t0 + Duration::from_secs(s)
    }

    #[test]
    fn a_fast_test_fails_once_a_whole_window_has_passed() {
        // 8 Mbit/s against a 1 Mbit/s limit averaged over 2 s.
        let (mut g, t0) = guard(1_000_000, 2);
        assert!(g.check(at(t0, 1), 1_000_000).is_ok(), "less than a window");
        let e = g.check(at(t0, 2), 2_000_000).unwrap_err();
        assert_eq!(e.code, IE_TOTAL_RATE);
    }

    #[test]
    fn the_average_may_hide_a_burst() {
        // 3 Mbit in the first second, then nothing: 1.5 Mbit/s over 2 s, and
        // then 0.
        let (mut g, t0) = guard(2_000_000, 2);
        assert!(g.check(at(t0, 1), 375_000).is_ok());
        assert!(g.check(at(t0, 2), 375_000).is_ok());
        assert!(g.check(at(t0, 3), 375_000).is_ok());
        // 4 Mbit in the next two seconds: 2 Mbit/s is not above the limit...
        assert!(g.check(at(t0, 4), 625_000).is_ok());
        assert!(g.check(at(t0, 5), 875_000).is_ok());
        // ...but 2.5 Mbit/s is.
        assert!(g.check(at(t0, 6), 1_250_000).is_err());
    }

    #[test]
    fn looks_come_once_a_second() {
        let (mut g, t0) = guard(1, 1);
        assert!(g.check(t0 + Duration::from_millis(500), 1_000_000).is_ok());
        assert_eq!(g.next_check(), at(t0, 1));
    }

    #[test]
    fn restarted_counters_restart_the_window() {
        let (mut g, t0) = guard(1_000_000, 2);
        assert!(g.check(at(t0, 1), 10_000_000).is_ok());
        // Omit ended: counters back near zero; no underflow, a fresh window.
        assert!(g.check(at(t0, 2), 1_000).is_ok());
        assert!(g.check(at(t0, 3), 2_000).is_ok());
    }
}
