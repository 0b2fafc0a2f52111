//! When a series (goodput, or responsiveness) has settled, by the responsiveness
//! method: a moving average over the last MAD intervals, and "stable" once the standard
//! deviation of the last MAD moving averages is within SDT of the current one.

use std::collections::VecDeque;

/// Intervals in the moving average (the method's MAD).
pub const MAD: usize = 4;
/// Standard deviation tolerance (the method's SDT, 5%).
pub const SDT: f64 = 0.05;

/// How much a stage's figure can be trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Confidence {
    /// The stage did not run MAD intervals.
    Low,
    /// It ran MAD intervals without settling.
    Medium,
    /// It settled.
    High,
}

impl Confidence {
    /// The word printed and put in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Low => "Low",
            Self::Medium => "Medium",
            Self::High => "High",
        }
    }
}

/// One series' values per interval and its moving averages.
#[derive(Clone, Debug)]
pub struct Stability {
    mad: usize,
    sdt: f64,
    intervals: usize,
    values: VecDeque<f64>,
    averages: VecDeque<f64>,
}

impl Default for Stability {
    fn default() -> Self {
        Self::new(MAD, SDT)
    }
}

impl Stability {
    /// A series averaged over `mad` intervals (at least 1), stable within `sdt`.
    pub fn new(mad: usize, sdt: f64) -> Self {
        let mad = mad.max(1);
        Self {
            mad,
            sdt,
            intervals: 0,
            values: VecDeque::with_capacity(mad),
            averages: VecDeque::with_capacity(mad),
        }
    }

    /// Adds one interval's value.
    pub fn push(&mut self, v: f64) {
        self.intervals += 1;
        if self.values.len() == self.mad {
            self.values.pop_front();
        }
        self.values.push_back(v);
        if self.values.len() == self.mad {
            if self.averages.len() == self.mad {
                self.averages.pop_front();
            }
            let avg = self.values.iter().sum::<f64>() / self.mad as f64;
            self.averages.push_back(avg);
        }
    }

    /// Adds one interval's figure that is already an aggregate over the last MAD
    /// intervals (the method's responsiveness, computed from MAD intervals of
    /// probes): it is taken as that interval's moving average as is, since
    /// averaging it again would lag the series by another MAD intervals.
    pub fn push_average(&mut self, avg: f64) {
        self.intervals += 1;
        if self.averages.len() == self.mad {
            self.averages.pop_front();
        }
        self.averages.push_back(avg);
    }

    /// Intervals pushed so far.
    pub fn intervals(&self) -> usize {
        self.intervals
    }

    /// The current moving average, once MAD intervals have run.
    pub fn moving_average(&self) -> Option<f64> {
        self.averages.back().copied()
    }

    /// The last MAD moving averages vary by less than SDT of the current one.
    pub fn is_stable(&self) -> bool {
        if self.averages.len() < self.mad {
            return false;
        }
        let n = self.averages.len() as f64;
        let mean = self.averages.iter().sum::<f64>() / n;
        let var = self
            .averages
            .iter()
            .map(|a| (a - mean).powi(2))
            .sum::<f64>()
            / n;
        let current = self.averages.back().copied().unwrap_or(0.0);
        var.sqrt() <= self.sdt * current.abs()
    }

    /// The confidence of a stage that ends now.
    pub fn confidence(&self) -> Confidence {
        if self.intervals < self.mad {
            Confidence::Low
        } else if self.is_stable() {
            Confidence::High
        } else {
            Confidence::Medium
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_series_settles_after_mad_averages() {
        let mut s = Stability::default();
        for i in 0..(2 * MAD - 1) {
            assert!(!s.is_stable(), "after {i}");
            assert_eq!(
                s.confidence(),
                if i < MAD {
                    Confidence::Low
                } else {
                    Confidence::Medium
                }
            );
            s.push(100.0);
        }
        assert!(s.is_stable());
        assert_eq!(s.confidence(), Confidence::High);
        assert_eq!(s.moving_average(), Some(100.0));
    }

    #[test]
    fn a_ramp_does_not_settle_until_it_flattens() {
        let mut s = Stability::default();
        for v in [10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0, 1280.0] {
            s.push(v);
        }
        assert!(!s.is_stable());
        assert_eq!(s.confidence(), Confidence::Medium);
        for _ in 0..(2 * MAD) {
            s.push(1000.0);
        }
        assert!(s.is_stable());
    }

    #[test]
    fn aggregates_settle_after_mad_of_them() {
        let mut s = Stability::default();
        for v in [500.0, 900.0, 1000.0] {
            s.push_average(v);
            assert_eq!(s.confidence(), Confidence::Low);
        }
        s.push_average(1010.0);
        // Four values, spread far beyond 5% of the last: Medium.
        assert_eq!(s.confidence(), Confidence::Medium);
        for v in [990.0, 1000.0, 1005.0] {
            s.push_average(v);
        }
        // The last four (1010, 990, 1000, 1005): sd 7.5, within 5% of 1005.
        assert_eq!(s.moving_average(), Some(1005.0));
        assert_eq!(s.confidence(), Confidence::High);
        assert_eq!(s.intervals(), 7);
    }

    #[test]
    fn noise_within_tolerance_is_stable() {
        let mut s = Stability::default();
        for i in 0..12 {
            s.push(if i % 2 == 0 { 98.0 } else { 102.0 });
        }
        assert!(s.is_stable());
    }
}
