//! One-way delays: the receiver's wall clock at arrival minus the sender's at
//! departure. Exact when both ends share one clock (namespaces on one host) or are
//! synchronised (PTP, NTP to well under the delay); a negative delay proves they are
//! not, and is counted so that the output can say so instead of printing nonsense.

use crate::histogram::Histogram;
use crate::summary::Summary;

/// One-way delays of one direction.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OneWay {
    /// The delays at or above zero.
    hist: Histogram,
    /// Delays below zero: the clocks disagree by at least that much.
    negative: u64,
    /// The most negative delay, in nanoseconds (0 when none).
    most_negative_ns: i64,
}

impl OneWay {
    /// No delays yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// A datagram or write sent at `sent_ns` and received at `recv_ns` (wall clock,
    /// nanoseconds since the epoch, each end's own clock).
    pub fn record(&mut self, sent_ns: i64, recv_ns: i64) {
        let d = recv_ns.saturating_sub(sent_ns);
        if d < 0 {
            self.negative += 1;
            self.most_negative_ns = self.most_negative_ns.min(d);
        } else {
            self.hist.record(d as u64);
        }
    }

    /// Adds another set of delays.
    pub fn merge(&mut self, o: &Self) {
        self.hist.merge(&o.hist);
        self.negative += o.negative;
        self.most_negative_ns = self.most_negative_ns.min(o.most_negative_ns);
    }

    /// Forgets every delay.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Delays rebuilt from their parts (see `oneway_wire.rs`).
    pub fn from_raw(hist: Histogram, negative: u64, most_negative_ns: i64) -> Self {
        Self {
            hist,
            negative,
            most_negative_ns,
        }
    }

    /// The most negative delay, in nanoseconds (0 when none was negative).
    pub fn most_negative_ns(&self) -> i64 {
        self.most_negative_ns
    }

    /// Whether no delay was recorded, negative or not.
    pub fn is_empty(&self) -> bool {
        self.hist.is_empty() && self.negative == 0
    }

    /// The warning for the test's own data sent `way` (client to server when
    /// `up`): which end's clock is behind, by at least how much.
    pub fn data_warning(&self, up: bool) -> Option<String> {
        (self.negative > 0).then(|| {
            let (what, behind, ahead) = if up {
                ("client to server", "server", "client")
            } else {
                ("server to client", "client", "server")
            };
            format!(
                "warning: {} one-way delays of the data {what} were negative (down to {:.3} ms): the {behind}'s clock is behind the {ahead}'s, data one-way figures are wrong",
                self.negative,
                self.most_negative_ns as f64 / 1e6
            )
        })
    }

    /// The non-negative delays.
    pub fn histogram(&self) -> &Histogram {
        &self.hist
    }

    /// Summary of the non-negative delays.
    pub fn summary(&self) -> Summary {
        self.hist.summary()
    }

    /// Delays below zero.
    pub fn negative(&self) -> u64 {
        self.negative
    }

    /// No negative delay seen.
    pub fn clocks_in_sync(&self) -> bool {
        self.negative == 0
    }

    /// The warning to print when the clocks are shown to disagree.
    pub fn warning(&self) -> Option<String> {
        (self.negative > 0).then(|| {
            format!(
                "warning: {} one-way delays were negative (down to {:.3} ms): the clocks of sender and receiver are not in sync, one-way figures are wrong",
                self.negative,
                self.most_negative_ns as f64 / 1e6
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_are_receive_minus_send() {
        let mut o = OneWay::new();
        o.record(1_000_000_000, 1_005_000_000);
        o.record(2_000_000_000, 2_015_000_000);
        let s = o.summary();
        assert_eq!((s.count, s.min_ms, s.max_ms), (2, 5.0, 15.0));
        assert!(o.clocks_in_sync());
        assert_eq!(o.warning(), None);
    }

    #[test]
    fn negative_delays_are_counted_and_warned_not_averaged() {
        let mut o = OneWay::new();
        o.record(1_000_000_000, 999_000_000);
        o.record(1_000_000_000, 1_002_000_000);
        assert_eq!(o.summary().count, 1);
        assert_eq!(o.negative(), 1);
        let w = o.warning().unwrap();
        assert!(
            w.contains("1 one-way delays were negative (down to -1.000 ms)"),
            "{w}"
        );
        let mut all = OneWay::new();
        all.merge(&o);
        assert!(!all.clocks_in_sync());
    }

    #[test]
    fn the_data_warning_names_the_direction_and_the_clock_behind() {
        let mut o = OneWay::new();
        assert_eq!(o.data_warning(false), None);
        o.record(2_000_000_000, 1_000_500_000);
        let w = o.data_warning(false).unwrap();
        assert!(
            w.contains("1 one-way delays of the data server to client were negative (down to -999.500 ms): the client's clock is behind the server's"),
            "{w}"
        );
        assert!(o.data_warning(true).unwrap().contains("client to server"));
    }
}
