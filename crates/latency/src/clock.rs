//! Which clock each figure uses, and why.
//!
//! Round trips are two readings of one host's monotonic clock (`CLOCK_MONOTONIC` via
//! [`Instant`]): immune to NTP steps and slews, and exact between threads. One-way
//! delays need the two hosts to agree on the time of day, so they use the wall clock
//! (`CLOCK_REALTIME`), as nanoseconds since the Unix epoch, and are only meaningful when
//! both clocks are synchronised (see [`crate::oneway`]).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The wall clock, in nanoseconds since the Unix epoch (negative before it).
pub fn wall_ns() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
    }
}

/// A monotonic time base: nanoseconds since its creation, so stamps fit in a `u64`
/// and travel in a probe frame without a conversion per host.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    epoch: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Self {
            epoch: Instant::now(),
        }
    }

    /// A clock whose zero is `epoch`.
    pub fn at(epoch: Instant) -> Self {
        Self { epoch }
    }

    /// Nanoseconds since the zero.
    pub fn now_ns(&self) -> u64 {
        self.ns_at(Instant::now())
    }

    /// Nanoseconds from the zero to `t` (0 for a `t` before it).
    pub fn ns_at(&self, t: Instant) -> u64 {
        let d = t.saturating_duration_since(self.epoch);
        u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
    }

    /// The instant `ns` nanoseconds after the zero.
    pub fn instant(&self, ns: u64) -> Instant {
        self.epoch + Duration::from_nanos(ns)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_stamps_round_trip_through_instants() {
        let c = Clock::new();
        let t = c.instant(1_500_000);
        assert_eq!(c.ns_at(t), 1_500_000);
        assert_eq!(c.ns_at(c.instant(0) - Duration::from_secs(1)), 0);
        assert!(c.now_ns() < 60_000_000_000);
    }

    #[test]
    fn wall_clock_is_after_2020() {
        assert!(wall_ns() > 1_577_836_800_000_000_000);
    }
}
