//! A latency histogram: HdrHistogram in nanoseconds (0.1% relative error from 1 ns up,
//! growing as larger values arrive), with the exact minimum, maximum and sum kept beside
//! it so that `min`, `max` and `mean` are not rounded to a bucket.

use std::time::Duration;

use hdrhistogram::Histogram as Hdr;

/// Significant decimal digits the buckets keep.
const SIGFIG: u8 = 3;

/// Round trips or delays, in nanoseconds.
#[derive(Clone, Debug)]
pub struct Histogram {
    hdr: Hdr<u64>,
    min: u64,
    max: u64,
    sum: u128,
    /// Sum of squares, for the exact standard deviation iperf 2 prints.
    sum_sq: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl PartialEq for Histogram {
    fn eq(&self, o: &Self) -> bool {
        self.hdr == o.hdr
            && self.min == o.min
            && self.max == o.max
            && self.sum == o.sum
            && self.sum_sq == o.sum_sq
    }
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        let mut hdr = Hdr::new(SIGFIG).expect("3 significant digits are valid");
        hdr.auto(true);
        Self {
            hdr,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
        }
    }

    /// Adds one sample of `ns` nanoseconds.
    pub fn record(&mut self, ns: u64) {
        // Only values beyond i64::MAX fail; clamp them rather than lose the sample.
        let ns = ns.min(i64::MAX as u64 / 2);
        let _ = self.hdr.record(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += u128::from(ns);
        self.sum_sq += u128::from(ns) * u128::from(ns);
    }

    /// Adds one sample.
    pub fn record_duration(&mut self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Self) {
        if other.is_empty() {
            return;
        }
        let _ = self.hdr.add(&other.hdr);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Forgets every sample.
    pub fn clear(&mut self) {
        self.hdr.reset();
        self.min = u64::MAX;
        self.max = 0;
        self.sum = 0;
        self.sum_sq = 0;
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.hdr.len()
    }

    /// No samples.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Exact smallest sample, in nanoseconds (0 when empty).
    pub fn min_ns(&self) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.min
        }
    }

    /// Exact largest sample, in nanoseconds.
    pub fn max_ns(&self) -> u64 {
        self.max
    }

    /// Exact mean, in nanoseconds (0 when empty).
    pub fn mean_ns(&self) -> f64 {
        match self.count() {
            0 => 0.0,
            n => self.sum as f64 / n as f64,
        }
    }

    /// Exact sample standard deviation (n - 1 in the divisor, as iperf 2 prints
    /// it), in nanoseconds; 0 below two samples.
    pub fn stdev_ns(&self) -> f64 {
        let n = self.count();
        if n < 2 {
            return 0.0;
        }
        // Integer sums keep the difference exact; only the result is rounded.
        let var = (self.sum_sq * u128::from(n)).saturating_sub(self.sum * self.sum) as f64
            / (n as f64 * (n - 1) as f64);
        var.sqrt()
    }

    /// The sample at quantile `q` (0..=1), in nanoseconds: the bucket holding it, kept
    /// within the exact minimum and maximum. This is the one way rperf3 computes a
    /// percentile.
    pub fn quantile_ns(&self, q: f64) -> u64 {
        if self.is_empty() {
            return 0;
        }
        self.hdr
            .value_at_quantile(q.clamp(0.0, 1.0))
            .clamp(self.min, self.max)
    }

    /// Mean of the best `keep` share (0..=1) of the samples, in milliseconds: the
    /// single-sided trimmed mean that drops the worst `1 - keep`, as the
    /// responsiveness method's TM() does. Drops `floor(count * (1 - keep))` samples;
    /// `None` when empty.
    pub fn trimmed_mean_ms(&self, keep: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let drop = ((n as f64) * (1.0 - keep.clamp(0.0, 1.0))).floor() as u64;
        let mut left = n - drop;
        if drop == 0 {
            return Some(self.mean_ns() / 1e6);
        }
        let kept = left;
        let mut sum = 0.0;
        for v in self.hdr.iter_recorded() {
            let take = v.count_at_value().min(left);
            let value = self
                .hdr
                .median_equivalent(v.value_iterated_to())
                .clamp(self.min, self.max);
            sum += value as f64 * take as f64;
            left -= take;
            if left == 0 {
                break;
            }
        }
        Some(sum / kept as f64 / 1e6)
    }

    /// Each recorded bucket as (value in ns, count), smallest first: for layouts that
    /// print their own bins (iperf 2's `--histograms`).
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.hdr
            .iter_recorded()
            .map(|v| {
                let value = self
                    .hdr
                    .median_equivalent(v.value_iterated_to())
                    .clamp(self.min, self.max);
                (value, v.count_at_value())
            })
            .collect()
    }
}

/// A histogram's exact state as plain numbers, to carry it to the other end of a
/// test: each bucket's highest equivalent value and count, and the exact sums.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    /// (highest value the bucket holds, samples in it), smallest first.
    pub buckets: Vec<(u64, u64)>,
    /// Exact smallest sample (`u64::MAX` when empty).
    pub min: u64,
    /// Exact largest sample.
    pub max: u64,
    /// Exact sum.
    pub sum: u128,
    /// Exact sum of squares.
    pub sum_sq: u128,
}

impl Histogram {
    /// The state to send; [`Histogram::from_parts`] rebuilds the same histogram.
    pub fn parts(&self) -> Parts {
        Parts {
            buckets: self
                .hdr
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
            min: self.min,
            max: self.max,
            sum: self.sum,
            sum_sq: self.sum_sq,
        }
    }

    /// Rebuilds a histogram from [`Histogram::parts`]: each bucket's value falls
    /// in the same bucket again, so every percentile is the sender's. Values beyond
    /// what a histogram records are clamped, as [`Histogram::record`] does.
    pub fn from_parts(p: &Parts) -> Self {
        let mut h = Self::new();
        for &(v, n) in &p.buckets {
            let _ = h.hdr.record_n(v.min(i64::MAX as u64 / 2), n);
        }
        if !h.is_empty() {
            h.min = p.min.min(p.max);
            h.max = p.max;
            h.sum = p.sum;
            h.sum_sq = p.sum_sq;
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(ms: &[f64]) -> Histogram {
        let mut h = Histogram::new();
        for &m in ms {
            h.record((m * 1e6) as u64);
        }
        h
    }

    #[test]
    fn exact_min_max_mean_and_close_percentiles() {
        let h = of(&(1..=100).map(f64::from).collect::<Vec<_>>());
        assert_eq!(h.count(), 100);
        assert_eq!(h.min_ns(), 1_000_000);
        assert_eq!(h.max_ns(), 100_000_000);
        assert!((h.mean_ns() - 50.5e6).abs() < 1.0);
        for (q, want) in [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0)] {
            let got = h.quantile_ns(q) as f64 / 1e6;
            assert!((got - want).abs() / want < 0.001, "p{q}: {got}");
        }
    }

    /// 2, 4, 4, 4, 5, 5, 7, 9 ms: mean 5, sample variance 32/7; merging halves
    /// gives the same figure, and one sample has none.
    #[test]
    fn stdev_is_exact_and_merges() {
        let all = of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        let want = (32.0f64 / 7.0).sqrt() * 1e6;
        assert!((all.stdev_ns() - want).abs() < 1e-3, "{}", all.stdev_ns());
        let mut a = of(&[2.0, 4.0, 4.0, 4.0]);
        a.merge(&of(&[5.0, 5.0, 7.0, 9.0]));
        assert!((a.stdev_ns() - want).abs() < 1e-3);
        assert_eq!(of(&[3.0]).stdev_ns(), 0.0);
        a.clear();
        assert_eq!(a.stdev_ns(), 0.0);
    }

    #[test]
    fn empty_is_all_zero() {
        let h = Histogram::new();
        assert!(h.is_empty());
        assert_eq!((h.min_ns(), h.max_ns(), h.quantile_ns(0.5)), (0, 0, 0));
        assert_eq!(h.trimmed_mean_ms(0.95), None);
    }

    #[test]
    fn merge_is_the_union() {
        let mut a = of(&[1.0, 2.0]);
        let b = of(&[10.0]);
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(a.max_ns(), 10_000_000);
        assert_eq!(a.min_ns(), 1_000_000);
        a.merge(&Histogram::new());
        assert_eq!(a.count(), 3);
        a.clear();
        assert!(a.is_empty());
    }

    #[test]
    fn trimmed_mean_drops_the_worst_five_percent() {
        // 19 samples of 10 ms and one of 1000 ms: the outlier is the 5% dropped.
        let mut v = vec![10.0; 19];
        v.push(1000.0);
        let tm = of(&v).trimmed_mean_ms(0.95).unwrap();
        assert!((tm - 10.0).abs() < 0.01, "{tm}");
        // Fewer than 20 samples: nothing is dropped.
        let tm = of(&[10.0, 20.0]).trimmed_mean_ms(0.95).unwrap();
        assert!((tm - 15.0).abs() < 1e-9, "{tm}");
    }

    #[test]
    fn sub_microsecond_resolution_on_loopback_round_trips() {
        let mut h = Histogram::new();
        for ns in [23_456u64, 23_999, 24_001] {
            h.record(ns);
        }
        let p50 = h.quantile_ns(0.5);
        assert!(p50.abs_diff(23_999) <= 24, "{p50}");
    }

    #[test]
    fn parts_rebuild_the_same_histogram() {
        let h = of(&[0.031, 0.5, 9.0, 9.001, 151.2, 151.3]);
        let back = Histogram::from_parts(&h.parts());
        assert_eq!(back, h);
        assert_eq!(back.summary(), h.summary());
        let empty = Histogram::from_parts(&Histogram::new().parts());
        assert!(empty.is_empty());
        assert_eq!(empty.min_ns(), 0);
    }
}
