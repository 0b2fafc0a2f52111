//! iperf 2's `--trip-times` delays on TCP: each burst's one-way delay, from
//! its write stamp to the read that completes it (what iperf 2.2.1's `-e`
//! server rows call "Burst Latency"), kept per interval and for the whole
//! test (the bursts themselves are read in `tcp_bursts.rs`). Delays, their
//! figures and their bins come from the latency core.

use std::sync::Mutex;

use rperf3_latency::OneWay;
use rperf3_report::iperf2::model::{Hist2, HistBins2, Row2, Tag2, TcpLatency2};

/// One-way delays of a receiver's bursts: this interval's and the whole test's.
#[derive(Debug, Default)]
pub(crate) struct TripLatency {
    delays: Mutex<[Delays; 2]>,
    /// `--histograms`: rows are followed by the delays' histogram line, in
    /// these bins.
    pub(crate) histograms: Option<HistBins2>,
    /// A `-R` or full-duplex client: the server's test header comes first.
    pub(crate) preamble: bool,
}

/// Delays of one span, and when its largest one arrived (wall clock, ns).
#[derive(Debug, Default, Clone)]
pub(crate) struct Delays {
    /// The delays.
    pub(crate) oneway: OneWay,
    /// (largest delay, its arrival), ns.
    pub(crate) max_at: Option<(i64, i64)>,
}

impl Delays {
    /// Accounts one delay: sent and received on the wall clock, ns.
    pub(crate) fn record(&mut self, sent_ns: i64, recv_ns: i64) {
        self.oneway.record(sent_ns, recv_ns);
        let d = recv_ns.saturating_sub(sent_ns);
        if self.max_at.is_none_or(|(m, _)| d > m) {
            self.max_at = Some((d, recv_ns));
        }
    }

    /// The row's figures.
    pub(crate) fn figures(&self) -> TcpLatency2 {
        TcpLatency2::of(self.oneway.histogram())
    }
}

impl TripLatency {
    /// Delays kept for `--histograms` too.
    pub(crate) fn new(histograms: Option<HistBins2>) -> Self {
        Self {
            histograms,
            ..Self::default()
        }
    }

    /// A `-R` or full-duplex client's: the server's header comes first.
    pub(crate) fn after_header(histograms: Option<HistBins2>) -> Self {
        Self {
            histograms,
            preamble: true,
            ..Self::default()
        }
    }

    pub(crate) fn record(&self, sent_ns: i64, recv_ns: i64) {
        let mut d = self.delays.lock().unwrap_or_else(|p| p.into_inner());
        d[0].record(sent_ns, recv_ns);
        d[1].record(sent_ns, recv_ns);
    }

    /// The interval's delays; the next interval starts empty.
    pub(crate) fn take_interval(&self) -> Delays {
        let mut d = self.delays.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut d[0])
    }

    /// The whole test's delays.
    pub(crate) fn total(&self) -> Delays {
        self.delays.lock().unwrap_or_else(|p| p.into_inner())[1].clone()
    }
}

/// With `--histograms`, the histogram line that follows a receiver's row:
/// its delays in the latency core's bins.
pub(crate) fn hist(
    trip: Option<&TripLatency>,
    tag: Tag2,
    r: &Row2,
    delays: Option<&Delays>,
    name: &str,
) -> Option<Hist2> {
    let d = delays?;
    let bins = trip?.histograms?;
    Some(hist_of(d, tag, r, (name, bins)))
}

/// The histogram line of `d`'s delays for row `r`, named `name`, in `bins`.
pub(crate) fn hist_of(d: &Delays, tag: Tag2, r: &Row2, (name, bins): (&str, HistBins2)) -> Hist2 {
    Hist2 {
        // 2.2.1 tags a -R client's histogram lines `[  1]`, not `[ *1]`.
        tag: match tag {
            Tag2::ReverseId(n) => Tag2::Id(n),
            t => t,
        },
        start: r.start,
        end: r.end,
        name: name.into(),
        bins: d.oneway.binned(bins.bin_ns, bins.bins),
        max_at: d.max_at.map(|(m, at)| {
            (
                m.max(0) as u64,
                std::time::UNIX_EPOCH + std::time::Duration::from_nanos(at.max(0) as u64),
            )
        }),
    }
}
