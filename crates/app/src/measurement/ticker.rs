//! Interval and omit timing for a running test, as pure arithmetic on instants.

use std::time::{Duration, Instant};

/// What is due at a wakeup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing yet.
    Nothing,
    /// The omit period ends (an omitted interval closes here too).
    OmitEnd,
    /// An interval report.
    Interval,
}

/// Schedules interval reports (every `-i`) and the end of the omit period (`-O`).
#[derive(Debug, Clone)]
pub(crate) struct Ticker {
    interval: Option<Duration>,
    next_tick: Option<Instant>,
    omit_end: Option<Instant>,
}

impl Ticker {
    /// Starts at `start`.
    pub(crate) fn new(start: Instant, interval: Option<Duration>, omit: Duration) -> Self {
        let omit_end = (!omit.is_zero()).then(|| start + omit);
        Self {
            interval,
            next_tick: interval.map(|i| start + i),
            omit_end,
        }
    }

    /// What is due at `now`; advances the schedule past it.
    pub(crate) fn poll(&mut self, now: Instant) -> Due {
        if let Some(o) = self.omit_end {
            if now >= o {
                self.omit_end = None;
                // Interval reports restart from the end of the omit period.
                self.next_tick = self.interval.map(|i| o + i);
                return Due::OmitEnd;
            }
        }
        match (self.next_tick, self.interval) {
            (Some(t), Some(i)) if now >= t => {
                let mut n = t + i;
                // A stalled loop must not produce a burst of empty reports.
                while n <= now {
                    n += i;
                }
                self.next_tick = Some(n);
                Due::Interval
            }
            _ => Due::Nothing,
        }
    }

    /// The next instant something is due, if any.
    pub(crate) fn next(&self) -> Option<Instant> {
        match (self.omit_end, self.next_tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_every_interval() {
        let s = Instant::now();
        let mut t = Ticker::new(s, Some(Duration::from_secs(1)), Duration::ZERO);
        assert_eq!(t.poll(s + Duration::from_millis(999)), Due::Nothing);
        assert_eq!(t.poll(s + Duration::from_secs(1)), Due::Interval);
        assert_eq!(t.next(), Some(s + Duration::from_secs(2)));
    }

    #[test]
    fn omit_end_restarts_intervals() {
        let s = Instant::now();
        let mut t = Ticker::new(s, Some(Duration::from_secs(1)), Duration::from_millis(1500));
        assert_eq!(t.poll(s + Duration::from_secs(1)), Due::Interval);
        assert_eq!(t.poll(s + Duration::from_millis(1500)), Due::OmitEnd);
        assert_eq!(t.next(), Some(s + Duration::from_millis(2500)));
    }

    #[test]
    fn no_interval_means_only_omit() {
        let s = Instant::now();
        let mut t = Ticker::new(s, None, Duration::from_secs(1));
        assert_eq!(t.next(), Some(s + Duration::from_secs(1)));
        assert_eq!(t.poll(s + Duration::from_secs(1)), Due::OmitEnd);
        assert_eq!(t.next(), None);
    }

    #[test]
    fn stall_skips_missed_ticks() {
        let s = Instant::now();
        let mut t = Ticker::new(s, Some(Duration::from_secs(1)), Duration::ZERO);
        assert_eq!(t.poll(s + Duration::from_millis(3500)), Due::Interval);
        assert_eq!(t.poll(s + Duration::from_millis(3600)), Due::Nothing);
        assert_eq!(t.next(), Some(s + Duration::from_secs(4)));
    }
}
