//! The figures every output prints for a set of round trips or delays.

use crate::histogram::Histogram;

/// Count, extremes, mean and percentiles, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Number of samples (0: the other fields are 0 and mean nothing).
    pub count: u64,
    /// Smallest.
    pub min_ms: f64,
    /// Arithmetic mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Histogram {
    /// The figures every output prints.
    pub fn summary(&self) -> Summary {
        Summary::of(self)
    }
}

impl Summary {
    /// The summary of `h`.
    pub fn of(h: &Histogram) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            count: h.count(),
            min_ms: ms(h.min_ns()),
            mean_ms: h.mean_ns() / 1e6,
            p50_ms: ms(h.quantile_ns(0.50)),
            p90_ms: ms(h.quantile_ns(0.90)),
            p99_ms: ms(h.quantile_ns(0.99)),
            max_ms: ms(h.max_ns()),
        }
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let mut h = Histogram::new();
        for us in [100u64, 200, 300, 400] {
            h.record(us * 1000);
        }
        let s = h.summary();
        assert_eq!(s.count, 4);
        assert_eq!(s.min_ms, 0.1);
        assert_eq!(s.max_ms, 0.4);
        assert!((s.mean_ms - 0.25).abs() < 1e-12);
        assert!((s.p50_ms - 0.2).abs() < 0.0002, "{}", s.p50_ms);
        assert!((s.p99_ms - 0.4).abs() < 0.0004, "{}", s.p99_ms);
        assert!(Summary::of(&Histogram::new()).is_empty());
    }
}
