//! What one direction of an iperf 2 TCP stream counts: bytes and calls,
//! failed writes, the receiver's read-length histogram (`-e`: "Reads=Dist",
//! eight bins of `-l`/8 bytes), and what `--trip-times`, `--isochronous` and
//! `--histograms` keep. The engine's loops fill them through its tallies.

use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rperf3_engine::counters::StreamCounters;
use rperf3_engine::tcp::{RecvTally, SendTally};
use rperf3_report::iperf2::model::{HistBins2, Isoch2};

use super::tcp_trip::TripLatency;
use super::tcp_wtimer::WriteTimer;
use super::udp_isoch::{since, IsochStats};

/// Bins of the read-length histogram.
pub(crate) const READ_BINS: usize = 8;

/// Counters of one direction of one stream: bytes and calls (writes or reads),
/// failed writes, and the receiver's read-length histogram.
#[derive(Debug)]
pub(crate) struct FlowStats {
    /// Bytes and calls.
    pub(crate) io: StreamCounters,
    /// Failed writes (a sender that gave up on an error).
    pub(crate) errors: AtomicU64,
    bins: [AtomicU64; READ_BINS],
    bin_width: u64,
    /// `--trip-times` receiver: the stream is read burst by burst and each
    /// burst's one-way delay kept here.
    pub(crate) trip: Option<TripLatency>,
    /// `--isochronous` sender: its frames.
    pub(crate) isoch: Option<IsochStats>,
    /// `--histograms` sender: how long its writes take.
    pub(crate) wtimer: Option<WriteTimer>,
    /// A receiver of `--isochronous` frames: read burst by burst, as 2.2.1
    /// does (a prompt read of each frame keeps the peer's Nagle and our
    /// delayed ACK from pairing frames up), the headers' reads not counted.
    pub(crate) frames: bool,
}

/// A copy of [`FlowStats`] at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct FlowSample {
    /// Bytes moved.
    pub(crate) bytes: u64,
    /// Writes or reads.
    pub(crate) calls: u64,
    /// Failed writes.
    pub(crate) errors: u64,
    /// Read-length histogram.
    pub(crate) bins: [u64; READ_BINS],
    /// `--isochronous` sender: frames so far.
    pub(crate) isoch: Isoch2,
}

impl FlowStats {
    /// Counters for a stream read with `len`-byte reads (bins `len / 8` wide).
    pub(crate) fn new(len: u32) -> Self {
        Self {
            io: StreamCounters::default(),
            errors: AtomicU64::new(0),
            bins: Default::default(),
            bin_width: (u64::from(len) / READ_BINS as u64).max(1),
            trip: None,
            isoch: None,
            wtimer: None,
            frames: false,
        }
    }

    /// Counters for a sender: of frames with `isoch`, of write times with
    /// `bins` (`--histograms`).
    pub(crate) fn sender(len: u32, isoch: bool, bins: Option<HistBins2>) -> Self {
        Self {
            isoch: isoch.then(IsochStats::default),
            wtimer: bins.map(WriteTimer::new),
            ..Self::new(len)
        }
    }

    /// Counters for a `--trip-times` receiver (see [`FlowStats::trip`]).
    /// `histograms`: the bins of its histogram lines (`--histograms`).
    pub(crate) fn with_trip(len: u32, histograms: Option<HistBins2>) -> Self {
        Self {
            trip: Some(TripLatency::new(histograms)),
            ..Self::new(len)
        }
    }

    /// The same for a `-R` or full-duplex client, whose server sends its own
    /// test header before the bursts.
    pub(crate) fn with_trip_back(len: u32, histograms: Option<HistBins2>) -> Self {
        Self {
            trip: Some(TripLatency::after_header(histograms)),
            ..Self::new(len)
        }
    }

    /// Records one read of `n` (> 0) bytes.
    pub(crate) fn read(&self, n: usize) {
        self.io.add(n as u64);
        if let Some(b) = read_bin(n as u64, self.bin_width) {
            self.bins[b].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counters now.
    pub(crate) fn sample(&self) -> FlowSample {
        let s = self.io.snapshot();
        FlowSample {
            bytes: s.bytes,
            calls: s.blocks,
            errors: self.errors.load(Ordering::Relaxed),
            bins: std::array::from_fn(|i| self.bins[i].load(Ordering::Relaxed)),
            isoch: self
                .isoch
                .as_ref()
                .map(IsochStats::tally)
                .unwrap_or_default(),
        }
    }
}

impl FlowSample {
    /// What happened between `earlier` and `self`.
    pub(crate) fn since(&self, earlier: &Self) -> Self {
        Self {
            bytes: self.bytes.saturating_sub(earlier.bytes),
            calls: self.calls.saturating_sub(earlier.calls),
            errors: self.errors.saturating_sub(earlier.errors),
            bins: std::array::from_fn(|i| self.bins[i].saturating_sub(earlier.bins[i])),
            isoch: since(self.isoch, earlier.isoch),
        }
    }
}

/// The bin of a read of `n` bytes: bin `k` holds lengths `k·w+1 ..= (k+1)·w`,
/// as iperf 2 files them; a read longer than eight bins (a length above `-l`)
/// is in none.
pub(crate) fn read_bin(n: u64, width: u64) -> Option<usize> {
    let b = (n.checked_sub(1)? / width.max(1)) as usize;
    (b < READ_BINS).then_some(b)
}

impl SendTally for FlowStats {
    fn counters(&self) -> &StreamCounters {
        &self.io
    }
    fn times_writes(&self) -> bool {
        self.wtimer.is_some()
    }
    fn wrote(&self, began: Instant) {
        if let Some(t) = &self.wtimer {
            t.record(began);
        }
    }
}

/// A receiver's reads as iperf 2 counts them; with `quickack`
/// (`--tcp-quickack`), TCP_QUICKACK is set before each read.
pub(crate) struct Reads<'a> {
    pub(crate) stats: &'a FlowStats,
    pub(crate) quickack: bool,
}

impl RecvTally for Reads<'_> {
    fn before_read(&self, sock: &TcpStream) {
        if self.quickack {
            let _ = rperf3_sys::sockopt::set_quickack(sock);
        }
    }
    fn read(&self, data: &[u8]) {
        self.stats.read(data.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 2.2.1 `-e` capture: 128 KiB reads fill bin 7, 1-byte reads bin 0.
    #[test]
    fn bins_hold_lengths_up_to_their_top_edge() {
        let w = 16 * 1024;
        assert_eq!(read_bin(1, w), Some(0));
        assert_eq!(read_bin(w, w), Some(0));
        assert_eq!(read_bin(w + 1, w), Some(1));
        assert_eq!(read_bin(128 * 1024, w), Some(7));
        assert_eq!(read_bin(128 * 1024 + 1, w), None);
        assert_eq!(read_bin(0, w), None);
    }

    #[test]
    fn a_sample_difference_is_per_interval() {
        let s = FlowStats::new(800);
        s.read(100);
        s.read(800);
        let a = s.sample();
        s.read(150);
        let d = s.sample().since(&a);
        assert_eq!(d.bytes, 150);
        assert_eq!(d.calls, 1);
        assert_eq!(d.bins, [0, 1, 0, 0, 0, 0, 0, 0]);
        assert_eq!(a.bins, [1, 0, 0, 0, 0, 0, 0, 1]);
    }
}
