//! Rate control for `-b`: the average rate since the stream started never exceeds
//! the target, as iperf3's sender does it, but without busy-polling.

use std::time::Duration;

/// Pure pacing arithmetic: given how much was sent and how long the stream has
/// run, how long must the sender wait before its next block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacer {
    rate_bps: u64,
}

impl Pacer {
    /// A pacer for `rate_bps` bits per second (must be > 0).
    pub fn new(rate_bps: u64) -> Self {
        Self {
            rate_bps: rate_bps.max(1),
        }
    }

    /// The target rate.
    pub fn rate(&self) -> u64 {
        self.rate_bps
    }

    /// The time at which `sent_bytes` are due at the target rate.
    pub fn due(&self, sent_bytes: u64) -> Duration {
        let nanos = (sent_bytes as u128 * 8 * 1_000_000_000) / self.rate_bps as u128;
        Duration::from_nanos(nanos.min(u64::MAX as u128) as u64)
    }

    /// How long to wait at `elapsed` before sending more, having sent `sent_bytes`.
    /// `None`: send now.
    pub fn wait(&self, sent_bytes: u64, elapsed: Duration) -> Option<Duration> {
        let due = self.due(sent_bytes);
        (due > elapsed).then(|| due - elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_the_average_drops_to_the_target() {
        let p = Pacer::new(8_000_000); // 1 MB/s
        assert_eq!(p.wait(0, Duration::ZERO), None);
        assert_eq!(
            p.wait(1_000_000, Duration::from_millis(500)),
            Some(Duration::from_millis(500))
        );
        assert_eq!(p.wait(1_000_000, Duration::from_secs(1)), None);
    }

    #[test]
    fn due_is_exact_for_large_counts() {
        let p = Pacer::new(1_000_000_000);
        assert_eq!(p.due(125_000_000_000), Duration::from_secs(1000));
    }
}
