//! What one direction of an iperf 2 TCP stream counts, and the loops that move
//! its bytes.
//!
//! The sender is the engine's loop (pacing, `-n` budget, sendfile); iperf 2's
//! receiver also keeps a histogram of read lengths (`-e`: "Reads=Dist", eight
//! bins of `-l`/8 bytes), so its loop is here, beside the counters it fills.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::pacing::Pacer;

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

/// Reads `len`-byte blocks and counts them until the peer closes, the socket is
/// shut down (how a controller ends a blocked reader), or the run is stopped;
/// with `quickack` (`--tcp-quickack`), TCP_QUICKACK is set before each read.
pub(crate) fn recv_loop(
    mut sock: &TcpStream,
    (len, quickack): (u32, bool),
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    if stats.trip.is_some() || stats.frames {
        if quickack {
            let _ = rperf3_sys::sockopt::set_quickack(sock);
        }
        return super::tcp_trip::recv_bursts(sock, len, ctl, stats, stats.trip.as_ref());
    }
    let mut buf = vec![0u8; len.max(1) as usize];
    while !ctl.stopped() {
        if quickack {
            let _ = rperf3_sys::sockopt::set_quickack(sock);
        }
        match sock.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => stats.read(n),
            Err(e) if read_again(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// How a paced sender (`-b`) keeps time: the rate counts from `origin` (the
/// test's start, so the last block due at the end of `-t` still goes), and it
/// stops at `end` (`-t`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    pacer: Pacer,
    origin: Instant,
    end: Option<Instant>,
}

/// The pacing for `rate_bps` (none for 0).
pub(crate) fn pacer_for(rate_bps: u64, origin: Instant, end: Option<Instant>) -> Option<Pace> {
    (rate_bps > 0).then(|| Pace {
        pacer: Pacer::new(rate_bps),
        origin,
        end,
    })
}

/// Sends until stopped or the `-n` budget in `ctl` is used up, counting each
/// write; an error counts as a failed write. Unpaced, the engine's loop does
/// the work; paced (`-b`), each block waits until the rate allows all of it,
/// so the peer's receiver measures the rate itself rather than the rate plus
/// the first block (1% at 50 Mbit/s over 2 s with 128 KiB writes).
pub(crate) fn send_loop(
    sock: &TcpStream,
    buf: &[u8],
    pace: Option<Pace>,
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    let r = match pace {
        // Timed writes take the loop here, which times each one.
        None if stats.wtimer.is_none() => {
            rperf3_engine::tcp::send_loop(sock, buf, None, None, 1, ctl, &stats.io)
        }
        p => send_reader(sock, &mut Repeat(buf), buf.len() as u32, p, ctl, stats),
    };
    if r.is_err() {
        stats.errors.fetch_add(1, Ordering::Relaxed);
    }
    r
}

/// An endless reader of the same block.
struct Repeat<'a>(&'a [u8]);

impl Read for Repeat<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = out.len().min(self.0.len());
        out[..n].copy_from_slice(&self.0[..n]);
        Ok(n)
    }
}

/// Sends what `src` holds (`-F` file, `-I` stdin, or the pattern again and
/// again) in `len`-byte writes until its end, the `-n` budget, a stop, or the
/// paced end time (a paced sender knows its end better than a driver's wake-up).
pub(crate) fn send_reader(
    sock: &TcpStream,
    src: &mut dyn Read,
    len: u32,
    pace: Option<Pace>,
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    let (pacer, end) = (pace.map(|p| p.pacer), pace.and_then(|p| p.end));
    let start = pace.map_or_else(Instant::now, |p| p.origin);
    let mut buf = vec![0u8; len.max(1) as usize];
    let mut sent = 0u64;
    while !ctl.stopped() {
        // A block leaves once the rate allows all of it.
        let block = sent + buf.len() as u64;
        if let Some(p) = pacer {
            // A block due after the end of `-t` is not sent.
            if end.is_some_and(|e| start + p.due(block) > e) {
                ctl.nap(end.map_or(Duration::ZERO, |e| {
                    e.saturating_duration_since(Instant::now())
                }));
                break;
            }
            if let Some(w) = p.wait(block, start.elapsed()) {
                ctl.nap(w);
                continue;
            }
        }
        let want = ctl.budget().map_or(buf.len(), |b| b.claim(buf.len()));
        if want == 0 {
            break;
        }
        let n = match src.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        timed_write(sock, &buf[..n], stats)?;
        sent += n as u64;
    }
    Ok(())
}

/// Writes all of `b` as one counted write, timed when the sender keeps a
/// write timer.
pub(crate) fn timed_write(mut sock: &TcpStream, b: &[u8], stats: &FlowStats) -> io::Result<()> {
    use std::io::Write;
    let began = Instant::now();
    let mut off = 0;
    while off < b.len() {
        match sock.write(&b[off..]) {
            Ok(k) if k > 0 => off += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            end => {
                // What the kernel took of a block cut short still left.
                stats.io.add_many(0, off as u64);
                return Err(end.err().unwrap_or_else(|| io::ErrorKind::WriteZero.into()));
            }
        }
    }
    if let Some(t) = &stats.wtimer {
        t.record(began);
    }
    stats.io.add(b.len() as u64);
    Ok(())
}

/// The end of a sending direction: FIN to the peer, then (when nothing else
/// reads this socket) read and discard until the peer closes too, so that
/// closing never finds unread bytes (which would send RST instead of FIN). A
/// forward client leaves iperf 2's header ack unread until here.
pub(crate) fn finish_sending(sock: &TcpStream, drain: bool, limit: Duration) {
    let _ = sock.shutdown(Shutdown::Write);
    if drain {
        drain_until_eof(sock, Instant::now() + limit);
    }
}

/// Reads and discards until EOF or `deadline` (absolute).
pub(crate) fn drain_until_eof(mut sock: &TcpStream, deadline: Instant) {
    let mut buf = [0u8; 16384];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || sock.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match sock.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// The pattern iperf 2.2.1 writes after its header: ASCII digits `0123456789`
/// repeated. Receivers ignore payload content; this only keeps captures
/// readable.
pub(crate) fn pattern(len: u32) -> Vec<u8> {
    (0..len.max(1) as usize)
        .map(|i| b'0' + (i % 10) as u8)
        .collect()
}

/// A read that ended without data or error worth reporting: a signal, or the
/// socket's timeout (set so a reader sees the run's stop in time). Read again.
pub(crate) fn read_again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
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

    #[test]
    fn the_pattern_is_ascii_digits() {
        assert_eq!(&pattern(12), b"012345678901");
    }
}
