//! The loops that move an iperf 2 TCP stream's bytes: the engine's, with iperf
//! 2's pacing and tallies (see `flow_stats.rs`); bursts for `--trip-times` and
//! `--isochronous` receivers (see `tcp_bursts.rs`); and the end of a sending
//! direction.

use std::io::{self, Read};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rperf3_engine::control::RunControl;
use rperf3_engine::pacing::Pacer;
use rperf3_engine::tcp::{self, Pacing, ReadBlocks, RecvMode};
use rperf3_sys::zerocopy::PayloadFile;

use super::flow_stats::{FlowStats, Reads};
use super::tcp_bursts::recv_bursts;
use crate::measurement::choice::read_mark;

/// How a receiver reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadHow {
    /// What has arrived, up to a block.
    Plain,
    /// `--tcp-quickack`: TCP_QUICKACK set before each read.
    QuickAck,
    /// A lone receiver whose reads nobody shows (no `-e`): on a mark, as the
    /// iperf3 personality's (`measurement::choice::read_mark`: the sending
    /// core wakes it once a mark, not once a segment; nothing waits unread
    /// past 10 ms, and the peer's FIN wakes it at once).
    OnMark,
}

impl ReadHow {
    /// A receiver's reads: `quickack` asked for, or `alone` (the only stream
    /// of its test) with reads nobody shows (`enhanced` off).
    pub(crate) fn of(quickack: bool, alone: bool, enhanced: bool) -> Self {
        match (quickack, alone && !enhanced) {
            (true, _) => Self::QuickAck,
            (false, true) => Self::OnMark,
            (false, false) => Self::Plain,
        }
    }
}

/// Reads `len`-byte blocks and counts them until the peer closes, the socket is
/// shut down (how a controller ends a blocked reader), or the run is stopped.
pub(crate) fn recv_loop(
    sock: &TcpStream,
    (len, how): (u32, ReadHow),
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    let quickack = how == ReadHow::QuickAck;
    if stats.trip.is_some() || stats.frames {
        if quickack {
            let _ = rperf3_sys::sockopt::set_quickack(sock);
        }
        return recv_bursts(sock, len, ctl, stats, stats.trip.as_ref());
    }
    let mark = read_mark(len as usize);
    let marked = how == ReadHow::OnMark && rperf3_sys::sockopt::set_recv_lowat(sock, mark).is_ok();
    let (mode, size) = if marked {
        (RecvMode::OnMark, mark)
    } else {
        (RecvMode::Copy, len as usize)
    };
    let reads = Reads { stats, quickack };
    tcp::recv_loop(sock, size, mode, ctl, &reads)
}

/// iperf 2's pacing for `rate_bps` (none for 0): the rate counts from `origin`
/// (the test's start, so the last block due at the end of `-t` still goes),
/// and it stops at `end` (`-t`).
pub(crate) fn pacer_for(rate_bps: u64, origin: Instant, end: Option<Instant>) -> Option<Pacing> {
    (rate_bps > 0).then(|| Pacing::whole_blocks(Pacer::new(rate_bps), origin, end))
}

/// Sends `buf` again and again (with `file`, the same bytes from the file
/// with sendfile) until stopped or the `-n` budget in `ctl` is used up,
/// counting each write; an error counts as a failed write.
pub(crate) fn send_loop(
    sock: &TcpStream,
    mut buf: &[u8],
    file: Option<&PayloadFile>,
    pace: Option<Pacing>,
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    let r = tcp::send_blocks(sock, &mut buf, file, pace, ctl, stats);
    if r.is_err() {
        stats.errors.fetch_add(1, Ordering::Relaxed);
    }
    r
}

/// Sends what `src` holds (`-F` file, `-I` stdin, or bursts) in `len`-byte
/// writes until its end, the `-n` budget, a stop, or the paced end time (a
/// paced sender knows its end better than a driver's wake-up).
pub(crate) fn send_reader(
    sock: &TcpStream,
    src: &mut dyn Read,
    len: u32,
    pace: Option<Pacing>,
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    let mut blocks = ReadBlocks::new(src, len as usize);
    tcp::send_blocks(sock, &mut blocks, None, pace, ctl, stats)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_is_ascii_digits() {
        assert_eq!(&pattern(12), b"012345678901");
    }
}
