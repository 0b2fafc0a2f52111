//! A histogram counted into fixed-width bins, as iperf 2's `-PDF` lines show
//! it: the samples per bin, the bins where the running count passes 5%, 95%
//! and 99.7%, the outliers beyond the outer fence, and the samples below the
//! first bin or past the last. The formatters print these numbers as they are.

use crate::histogram::Histogram;
use crate::oneway::OneWay;

/// The shares whose bins a line names: iperf 2's confidence bounds (5% and
/// 95%) and three standard deviations (99.7%).
const SHARES: [f64; 3] = [0.05, 0.95, 0.997];

/// One histogram in bins.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Binned {
    /// Bin width, nanoseconds.
    pub width_ns: u64,
    /// Every sample, out of bounds too.
    pub count: u64,
    /// (bin, samples): bins counted from 1, smallest first, empty ones left out.
    pub bins: Vec<(u64, u64)>,
    /// The first bin where the running count passes 5%, 95% and 99.7% of
    /// `count` (0 for a share never passed below; the last bin for one never
    /// passed above, as iperf 2 prints them).
    pub shares: [u64; 3],
    /// Samples in bins beyond the outer fence: three times the 10%-90% span
    /// of bins above the 90% bin (bins counted from 1, the fence compared with
    /// a bin's 0-based index, as iperf 2.2.1 counts them).
    pub outliers: u64,
    /// Samples below the first bin (negative one-way delays).
    pub below: u64,
    /// Samples past the last bin.
    pub above: u64,
}

impl Binned {
    /// `buckets` ((value in ns, samples), smallest first) and `below` samples
    /// under zero, in `max_bins` bins `width_ns` wide.
    pub fn of(buckets: &[(u64, u64)], below: u64, width_ns: u64, max_bins: u32) -> Self {
        let width = width_ns.max(1);
        let mut b = Self {
            width_ns,
            below,
            ..Self::default()
        };
        for &(v, n) in buckets {
            let bin = v / width + 1;
            if bin > u64::from(max_bins) {
                // iperf 2.2.1 stores a sample in the bin just past its last
                // (beyond its array) and counts only later ones; every
                // sample past the last bin counts here.
                b.above += n;
                continue;
            }
            match b.bins.last_mut() {
                Some((last, c)) if *last == bin => *c += n,
                _ => b.bins.push((bin, n)),
            }
        }
        b.count = b.bins.iter().map(|x| x.1).sum::<u64>() + b.below + b.above;
        let total = b.count as f32;
        let (mut run, mut lower, mut upper, mut fence) = (0u64, 0, 0, 0);
        let mut shares = [None; 3];
        for &(bin, n) in &b.bins {
            run += n;
            // In single precision, as 2.2.1 divides: 18 of 20 is then just
            // under 0.9, which moves the fence.
            let share = f64::from(run as f32 / total);
            for (s, &q) in shares.iter_mut().zip(&SHARES) {
                if s.is_none() && share > q {
                    *s = Some(bin);
                }
            }
            if share < 0.1 {
                lower = bin;
            }
            if share < 0.9 {
                upper = bin;
            } else if fence == 0 {
                fence = upper + 3 * (upper - lower);
            } else if bin - 1 > fence {
                b.outliers += n;
            }
        }
        b.shares = [
            shares[0].unwrap_or(0),
            shares[1].unwrap_or(u64::from(max_bins)),
            shares[2].unwrap_or(u64::from(max_bins)),
        ];
        b
    }
}

impl Histogram {
    /// The samples in `max_bins` bins `width_ns` wide.
    pub fn binned(&self, width_ns: u64, max_bins: u32) -> Binned {
        Binned::of(&self.buckets(), 0, width_ns, max_bins)
    }
}

impl OneWay {
    /// The delays in `max_bins` bins `width_ns` wide; negative ones are below
    /// the first.
    pub fn binned(&self, width_ns: u64, max_bins: u32) -> Binned {
        Binned::of(
            &self.histogram().buckets(),
            self.negative(),
            width_ns,
            max_bins,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: u64 = 100_000;

    /// A value in the middle of bin `b` (from 1).
    fn mid(b: u64) -> u64 {
        (b - 1) * W + W / 2
    }

    /// The fence rule on made-up bins: the last bins below 10% and 90% are
    /// 1 and 3, so the fence is index 3 + 3·2 = 9: samples in bins 11 and
    /// 30 are outliers, those in bin 10 (index 9) are not. Everything in one
    /// bin (the 2.2.1 captures) has none.
    #[test]
    fn outliers_lie_beyond_the_outer_fence() {
        let mut v = vec![(mid(1), 5), (mid(2), 5), (mid(3), 40), (mid(4), 41)];
        v.extend([(mid(5), 4), (mid(10), 2), (mid(11), 2), (mid(30), 1)]);
        assert_eq!(Binned::of(&v, 0, W, 1000).outliers, 3);
        let bb = [(17_000, 5), (40_000, 14), (218_000, 1)];
        assert_eq!(Binned::of(&bb, 0, W, 1000).outliers, 0);
        assert_eq!(Binned::of(&[(30_000, 844)], 0, W, 1000).outliers, 0);
        // 2.2.1's tcp-hist-client: "cnt(48)=1:34,2:12,3:1,29:1 ... Outliers=1".
        let w = [(mid(1), 34), (mid(2), 12), (mid(3), 1), (mid(29), 1)];
        assert_eq!(Binned::of(&w, 0, W, 1000).outliers, 1);
        // 2.2.1's tcp-bb-noqa: "cnt(20)=1:10,2:6,3:1,17:1,25:1,34:1 ...
        // Outliers=0": 18 of 20 is under 0.9 in single precision, so bin 17
        // is the 90% bin and the fence (index 68) lies beyond bin 34.
        let bb = [1, 2, 3, 17, 25, 34].map(mid);
        let v: Vec<_> = bb
            .iter()
            .zip([10, 6, 1, 1, 1, 1])
            .map(|(&b, n)| (b, n))
            .collect();
        assert_eq!(Binned::of(&v, 0, W, 1000).outliers, 0);
        // And "1:15,2:4,70:1 ... Outliers=1".
        let v = [(mid(1), 15), (mid(2), 4), (mid(70), 1)];
        assert_eq!(Binned::of(&v, 0, W, 1000).outliers, 1);
    }

    /// The 2.2.1 capture `tcp-bounceback`: "cnt(20)=1:19,3:1
    /// (5.00/95.00/99.7%=1/3/3,...)"; two values in one bin merge.
    #[test]
    fn bins_and_shares_as_2_2_1() {
        let b = Binned::of(&[(17_000, 5), (40_000, 14), (218_000, 1)], 0, W, 1000);
        assert_eq!(b.bins, vec![(1, 19), (3, 1)]);
        assert_eq!((b.count, b.shares), (20, [1, 3, 3]));
        assert_eq!((b.below, b.above), (0, 0));
    }

    /// Samples past the last bin count as `above` and in the total; a share
    /// they hold is never passed, so its bin is the last one (iperf 2 prints
    /// its bin count then).
    #[test]
    fn overflow_counts_and_unreached_shares() {
        let b = Binned::of(&[(mid(2), 90), (mid(60), 10)], 0, W, 50);
        assert_eq!(b.bins, vec![(2, 90)]);
        assert_eq!((b.count, b.above), (100, 10));
        assert_eq!(b.shares, [2, 50, 50]);
        let b = Binned::of(&[(mid(1), 10)], 10, W, 50);
        assert_eq!((b.count, b.below, b.shares), (20, 10, [1, 50, 50]));
    }

    #[test]
    fn one_way_delays_below_zero_are_below_the_first_bin() {
        let mut o = OneWay::new();
        o.record(1_000_000, 1_050_000);
        o.record(1_000_000, 900_000);
        let b = o.binned(W, 100);
        assert_eq!((b.count, b.below, b.bins.clone()), (2, 1, vec![(1, 1)]));
    }
}
