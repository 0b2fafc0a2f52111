//! iperf 2's `--jitter-histograms` on a UDP server: after each row a `J8-PDF`
//! line (`J8(f)` after the total) counts, in bins of the chosen width, how
//! much each datagram's transit time differs from the one before it (the
//! |D(i-1,i)| the RFC 3550 jitter estimate smooths). Differences of transit
//! times cancel the clocks' offset, so no `--trip-times` is needed. The
//! values go into the latency core's histogram; the line is its buckets.

use std::sync::Mutex;

use rperf3_latency::Histogram;
use rperf3_proto2::Udp2Stats;
use rperf3_report::iperf2::model::{Hist2, HistBins2, Row2, Tag2};

use super::tcp_trip::{hist_of, Delays};

/// The bins of a jitter histogram (2.2.1's `JITTER_BINCNT`).
const JITTER_BINS: u32 = 1_000_000;

/// The transit differences of a flow: this interval's and the whole flow's.
#[derive(Debug)]
pub(crate) struct JitterHists {
    bin_ns: u64,
    /// The previous datagram's transit, µs.
    last: Option<i64>,
    interval: Histogram,
    total: Histogram,
}

impl JitterHists {
    /// Bins `bin_us` wide.
    pub(crate) fn new(bin_us: u32) -> Self {
        Self {
            bin_ns: u64::from(bin_us.max(1)) * 1000,
            last: None,
            interval: Histogram::new(),
            total: Histogram::new(),
        }
    }

    /// The difference (ns) of this datagram's transit from the one before
    /// it, sent and received at these wall-clock µs (in arrival order); the
    /// first one only sets the reference. The whole flow's histogram has it.
    fn record(&mut self, sent_us: i64, at_us: i64) -> Option<u64> {
        let transit = at_us.saturating_sub(sent_us);
        let d = self.last.map(|prev| {
            transit
                .saturating_sub(prev)
                .unsigned_abs()
                .saturating_mul(1000)
        });
        if let Some(d) = d {
            self.total.record(d);
        }
        self.last = Some(transit);
        d
    }

    /// The line after an interval row; the next interval starts empty.
    fn interval_line(&mut self, tag: Tag2, r: &Row2) -> Hist2 {
        let h = std::mem::take(&mut self.interval);
        self.line(&h, tag, r, "J8")
    }

    /// The line after the flow's total row.
    fn total_line(&self, tag: Tag2, r: &Row2) -> Hist2 {
        self.line(&self.total, tag, r, "J8(f)")
    }

    fn line(&self, h: &Histogram, tag: Tag2, r: &Row2, name: &str) -> Hist2 {
        Hist2 {
            tag,
            start: r.start,
            end: r.end,
            name: name.into(),
            bins: h.binned(self.bin_ns, JITTER_BINS),
            // 2.2.1 names no largest value on these lines.
            max_at: None,
        }
    }
}

/// A UDP receiver's histogram lines: `--histograms` (`T8`, one-way delays,
/// with trip-times) and `--jitter-histograms` (`J8`). As 2.2.1 fills them,
/// an interval's histograms lag its row by one datagram: the last datagram
/// before a tick is in the next interval's lines (the first interval's
/// have one datagram fewer than its row, the flow's total has them all).
#[derive(Debug, Default)]
pub(crate) struct RowHists {
    /// (this interval's, the whole flow's) one-way delays.
    delays: Option<[Delays; 2]>,
    /// The delay histograms' bins.
    delay_bins: HistBins2,
    jitter: Option<JitterHists>,
    /// The latest datagram, not yet in the interval's histograms: its
    /// stamps and its transit difference.
    held: Option<(i64, i64, Option<u64>)>,
}

impl RowHists {
    /// Delay histograms in `delay_bins` when asked, jitter ones in bins
    /// `jitter_bin_us` wide.
    pub(crate) fn new(delay_bins: Option<HistBins2>, jitter_bin_us: Option<u32>) -> Self {
        Self {
            delays: delay_bins.map(|_| <[Delays; 2]>::default()),
            delay_bins: delay_bins.unwrap_or_default(),
            jitter: jitter_bin_us.map(JitterHists::new),
            held: None,
        }
    }

    /// Whether any histogram is kept (the receiver keeps its samples then).
    pub(crate) fn any(&self) -> bool {
        self.delays.is_some() || self.jitter.is_some()
    }

    /// Moves the samples the receiver kept into the histograms (the flow's
    /// loop drains them every pass, so they stay few).
    pub(crate) fn drain(&mut self, stats: &Mutex<Udp2Stats>) {
        if self.any() {
            self.take(&mut stats.lock().unwrap_or_else(|p| p.into_inner()));
        }
    }

    /// The same, with the receiver's statistics already locked.
    pub(crate) fn take(&mut self, s: &mut Udp2Stats) {
        for (sent_us, at_us) in std::mem::take(&mut s.samples) {
            let (sent, at) = (sent_us.saturating_mul(1000), at_us.saturating_mul(1000));
            if let Some(d) = &mut self.delays {
                d[1].record(sent, at);
            }
            let jd = self.jitter.as_mut().and_then(|j| j.record(sent_us, at_us));
            self.release();
            self.held = Some((sent, at, jd));
        }
    }

    /// The held datagram joins the interval's histograms.
    pub(crate) fn release(&mut self) {
        let Some((sent, at, jd)) = self.held.take() else {
            return;
        };
        if let Some(d) = &mut self.delays {
            d[0].record(sent, at);
        }
        if let (Some(j), Some(v)) = (&mut self.jitter, jd) {
            j.interval.record(v);
        }
    }

    /// The lines after an interval row; the next interval starts empty.
    pub(crate) fn interval_lines(&mut self, tag: Tag2, r: &Row2) -> Vec<Hist2> {
        let mut v = Vec::new();
        if let Some(d) = &mut self.delays {
            let iv = std::mem::take(&mut d[0]);
            v.push(hist_of(&iv, tag, r, ("T8", self.delay_bins)));
        }
        if let Some(j) = &mut self.jitter {
            v.push(j.interval_line(tag, r));
        }
        v
    }

    /// The lines after the flow's total row.
    pub(crate) fn total_lines(&self, tag: Tag2, r: &Row2) -> Vec<Hist2> {
        let mut v = Vec::new();
        if let Some(d) = &self.delays {
            v.push(hist_of(&d[1], tag, r, ("T8(f)", self.delay_bins)));
        }
        if let Some(j) = &self.jitter {
            v.push(j.total_line(tag, r));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_report::iperf2::model::{RowKind2, UdpRecv2};
    use std::time::SystemTime;

    fn row() -> Row2 {
        Row2 {
            tag: Tag2::Id(1),
            addrs: None,
            start: 0.0,
            end: 1.0,
            bytes: 0,
            kind: RowKind2::UdpRecv(UdpRecv2::default()),
            at: SystemTime::now(),
        }
    }

    /// Transits of 50, 50, 1000, 60 and 60 µs: four differences (0, 950,
    /// 940, 0), two in the first 100 µs bin and two in the tenth; the clock
    /// offset (here 7 s) does not matter. The interval's lines lag by one
    /// datagram (its last one waits for the next interval, or the end).
    #[test]
    fn differences_of_consecutive_transits_in_bins() {
        let stats = Mutex::new(Udp2Stats::default());
        let mut hs = RowHists::new(Some(HistBins2::default()), Some(100));
        let off = 7_000_000;
        for (i, t) in [50, 50, 1000, 60, 60].into_iter().enumerate() {
            let sent = i as i64 * 1000;
            stats.lock().unwrap().samples.push((sent, sent + t + off));
        }
        hs.drain(&stats);
        let bins = |h: &Hist2| h.bins.bins.clone();
        let iv = hs.interval_lines(Tag2::Id(1), &row());
        let (t8, j8) = (&iv[0], &iv[1]);
        assert_eq!((t8.name.as_str(), j8.name.as_str()), ("T8", "J8"));
        // Four of five delays, three of four differences: the last waits.
        assert_eq!(t8.bins.count, 4);
        assert_eq!(bins(j8), [(1, 1), (10, 2)], "{j8:?}");
        assert_eq!((j8.max_at, j8.bins.outliers), (None, 0));
        hs.release();
        let end = hs.interval_lines(Tag2::Id(1), &row());
        assert_eq!(bins(&end[1]), [(1, 1)]);
        let tot = hs.total_lines(Tag2::Id(1), &row());
        assert_eq!(tot[0].bins.count, 5);
        assert_eq!(bins(&tot[1]), [(1, 2), (10, 2)]);
        assert_eq!(tot[1].name, "J8(f)");
    }
}
