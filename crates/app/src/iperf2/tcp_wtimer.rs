//! iperf 2's write timer (`--histograms` on a TCP client): how long each
//! write call took, kept per interval and for the whole test in the latency
//! core's histograms. Rows show their figures (`write-times
//! avg/min/max/stdev (cnt)`) and a `W8-PDF` line follows each row.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rperf3_latency::Histogram;
use rperf3_report::iperf2::model::{Hist2, HistBins2, Row2, Tag2};

/// The write times of one sender: this interval's and the whole test's.
#[derive(Debug)]
pub(crate) struct WriteTimer {
    spans: Mutex<[Histogram; 2]>,
    /// The bins of its histogram lines.
    pub(crate) bins: HistBins2,
}

impl WriteTimer {
    /// A timer whose lines use `bins`.
    pub(crate) fn new(bins: HistBins2) -> Self {
        Self {
            spans: Mutex::new([Histogram::new(), Histogram::new()]),
            bins,
        }
    }

    /// Accounts one write that started at `began` and has just returned.
    pub(crate) fn record(&self, began: Instant) {
        self.record_duration(began.elapsed());
    }

    fn record_duration(&self, d: Duration) {
        let mut s = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        s[0].record_duration(d);
        s[1].record_duration(d);
    }

    /// The interval's write times; the next interval starts empty.
    pub(crate) fn take_interval(&self) -> Histogram {
        let mut s = self.spans.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::replace(&mut s[0], Histogram::new())
    }

    /// The whole test's write times.
    pub(crate) fn total(&self) -> Histogram {
        self.spans.lock().unwrap_or_else(|p| p.into_inner())[1].clone()
    }
}

/// The `W8-PDF` line (`W8(f)-PDF` for a final row) that follows row `r`.
pub(crate) fn hist(h: &Histogram, bins: HistBins2, tag: Tag2, r: &Row2, name: &str) -> Hist2 {
    Hist2 {
        tag,
        start: r.start,
        end: r.end,
        name: name.into(),
        bins: h.binned(bins.bin_ns, bins.bins),
        max_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_report::iperf2::model::{RowKind2, TcpLatency2, TcpSend2};

    /// Three writes of 40, 120 and 2,850 µs: the interval holds them until
    /// taken, the total keeps them; figures and bins are the core's.
    #[test]
    fn writes_are_kept_per_interval_and_in_total() {
        let t = WriteTimer::new(HistBins2::default());
        for us in [40, 120, 2850] {
            t.record_duration(Duration::from_micros(us));
        }
        let i = t.take_interval();
        assert_eq!(t.take_interval().count(), 0);
        let f = TcpLatency2::of(&i);
        assert_eq!(f.count, 3);
        assert!((f.min_ns as f64 / 40_000.0 - 1.0).abs() < 0.01, "{f:?}");
        assert!((f.max_ns as f64 / 2_850_000.0 - 1.0).abs() < 0.01, "{f:?}");
        assert_eq!(TcpLatency2::of(&t.total()).count, 3);
        let r = Row2 {
            tag: Tag2::Id(1),
            addrs: None,
            start: 0.0,
            end: 1.0,
            bytes: 0,
            kind: RowKind2::TcpSend(TcpSend2::default()),
            at: std::time::SystemTime::now(),
        };
        let h = hist(&i, HistBins2::default(), Tag2::Id(1), &r, "W8");
        assert_eq!(
            (h.bins.count, h.bins.width_ns, h.max_at),
            (3, 100_000, None)
        );
    }
}
