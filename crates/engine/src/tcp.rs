//! TCP stream loops: write blocks as fast as allowed, or read and count.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::control::RunControl;
use crate::counters::StreamCounters;
use crate::pacing::Pacer;
use crate::readbuf::ReadBuf;
use rperf3_sys::zerocopy::PayloadFile;

/// Sends `buf`-sized blocks until stopped or the budget is used up. With `file`
/// (the same payload in a file), blocks go out with sendfile: the kernel takes
/// page references instead of copying the buffer each time. With `pacing`
/// (iperf3's: [`Pacing::before_each`]), the rate is checked once per burst
/// of blocks (`-b rate/N`): iperf3 writes the N blocks back to back, so the
/// kernel can coalesce small ones.
pub fn send_loop(
    sock: &TcpStream,
    mut buf: &[u8],
    file: Option<&PayloadFile>,
    pacing: Option<Pacing>,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    send_blocks(sock, &mut buf, file, pacing, ctl, counters)
}

/// Where each block a sender writes comes from: what a block carries is the
/// personality's (iperf3's payload, a stamped block, iperf 2's pattern, a
/// file or stdin).
pub trait Blocks {
    /// The length of a whole block (`-l`).
    fn block_len(&self) -> usize;
    /// The next block, at most `want` bytes (called once per block, before it
    /// is written); empty when the source has ended.
    fn next_block(&mut self, want: usize) -> io::Result<&[u8]>;
}

impl Blocks for &[u8] {
    fn block_len(&self) -> usize {
        self.len()
    }
    fn next_block(&mut self, want: usize) -> io::Result<&[u8]> {
        Ok(&self[..want.min(self.len())])
    }
}

/// Blocks read from a source that may end: a file or stdin (iperf 2's `-F`
/// and `-I`), or any reader.
pub struct ReadBlocks<'a> {
    src: &'a mut dyn Read,
    buf: Vec<u8>,
}

impl<'a> ReadBlocks<'a> {
    /// Blocks of `len` bytes from `src`.
    pub fn new(src: &'a mut dyn Read, len: usize) -> Self {
        Self {
            src,
            buf: vec![0u8; len.max(1)],
        }
    }
}

impl Blocks for ReadBlocks<'_> {
    fn block_len(&self) -> usize {
        self.buf.len()
    }
    fn next_block(&mut self, want: usize) -> io::Result<&[u8]> {
        let want = want.min(self.buf.len());
        loop {
            match self.src.read(&mut self.buf[..want]) {
                Ok(n) => return Ok(&self.buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// What a sender counts of its writes: bytes and writes always; iperf 2's
/// `--histograms` also times each write.
pub trait SendTally {
    /// Bytes and writes.
    fn counters(&self) -> &StreamCounters;
    /// Whether each write is timed ([`SendTally::wrote`] then gets its start).
    fn times_writes(&self) -> bool {
        false
    }
    /// A whole block was written; `began` when writes are timed.
    fn wrote(&self, _began: Instant) {}
}

impl SendTally for StreamCounters {
    fn counters(&self) -> &StreamCounters {
        self
    }
}

/// How a paced sender (`-b`) keeps time, where the personalities differ.
#[derive(Debug, Clone, Copy)]
pub struct Pacing {
    /// The rate.
    pub pacer: Pacer,
    /// Where the rate counts from.
    pub origin: Instant,
    /// Blocks written back to back between checks (iperf3's `-b rate/N`).
    pub burst: u32,
    /// iperf 2: a block leaves once the rate allows all of it; iperf3: once
    /// the rate allows what went before it.
    pub whole_block: bool,
    /// iperf 2's `-t`: a block due after this is not sent; the sender waits
    /// for it and ends.
    pub end: Option<Instant>,
}

impl Pacing {
    /// iperf3's pacing: checked before each `burst` blocks, on what was sent.
    pub fn before_each(pacer: Pacer, origin: Instant, burst: u32) -> Self {
        Self {
            pacer,
            origin,
            burst,
            whole_block: false,
            end: None,
        }
    }

    /// The same pacing, sending no block due at or after `end` (the test's
    /// end): the peer then measures the rate, not the rate plus a block
    /// that was due as the test ended. (Blocks stay whole: a stock iperf3
    /// receiver counts a block once all of it has come.)
    pub fn ending(self, end: Option<Instant>) -> Self {
        Self { end, ..self }
    }

    /// iperf 2's pacing: each block waits until the rate allows all of it, so
    /// the peer measures the rate rather than the rate plus the first block
    /// (1% at 50 Mbit/s over 2 s with 128 KiB writes); from the test's start,
    /// so the last block due at the end of `-t` still goes.
    pub fn whole_blocks(pacer: Pacer, origin: Instant, end: Option<Instant>) -> Self {
        Self {
            pacer,
            origin,
            burst: 1,
            whole_block: true,
            end,
        }
    }
}

/// Sends the blocks of `blocks` (with `file`, the file's bytes go out instead,
/// with sendfile) until stopped, the budget is used up, the source ends or a
/// paced end passes.
pub fn send_blocks(
    sock: &TcpStream,
    blocks: &mut impl Blocks,
    file: Option<&PayloadFile>,
    pacing: Option<Pacing>,
    ctl: &RunControl,
    tally: &impl SendTally,
) -> io::Result<()> {
    // A sendfile sender uncorks on every way out, errors too.
    let _uncork = file.map(|_| Uncork(sock));
    let mut sent: u64 = 0;
    let mut burst_left = 0u32;
    while !ctl.stopped() {
        if let (Some(p), 0) = (pacing, burst_left) {
            let due = sent
                + if p.whole_block {
                    blocks.block_len() as u64
                } else {
                    0
                };
            // iperf 2 times a block by its end (one due at the end still
            // goes), iperf3 by its start.
            let at = p.origin + p.pacer.due(due);
            if let Some(end) = p.end.filter(|&e| at > e || (at == e && !p.whole_block)) {
                ctl.nap(end.saturating_duration_since(Instant::now()));
                return Ok(());
            }
            if let Some(w) = p.pacer.wait(due, p.origin.elapsed()) {
                ctl.nap(w);
                continue;
            }
            burst_left = p.burst.max(1);
        }
        burst_left = burst_left.saturating_sub(1);
        let want = blocks.block_len();
        let want = ctl.budget().map_or(want, |b| b.claim(want));
        if want == 0 {
            return Ok(());
        }
        let buf = blocks.next_block(want)?;
        if buf.is_empty() {
            return Ok(());
        }
        write_block(sock, buf, file, tally)?;
        sent += buf.len() as u64;
    }
    Ok(())
}

/// A sendfile sender may have been corked (TCP_CORK, see the app's
/// `choice::cork_suits`): what waits for a whole segment leaves now, before
/// the test's end is said, not with the FIN.
pub fn uncork(sock: &TcpStream) {
    let _ = rperf3_sys::sockopt::set_cork(sock, false);
}

/// [`uncork`]s its socket when dropped.
struct Uncork<'a>(&'a TcpStream);

impl Drop for Uncork<'_> {
    fn drop(&mut self) {
        uncork(self.0);
    }
}

/// Writes all of `buf` (or, with `file`, as many of the file's bytes) as one
/// counted block.
pub fn write_block(
    mut sock: &TcpStream,
    buf: &[u8],
    file: Option<&PayloadFile>,
    tally: &impl SendTally,
) -> io::Result<()> {
    let began = tally.times_writes().then(Instant::now);
    let n = buf.len();
    let mut off = 0;
    while off < n {
        let r = match file {
            Some(f) => f.send(sock, off, n),
            None => sock.write(&buf[off..n]),
        };
        match r {
            Ok(k) if k > 0 => off += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            end => {
                // What the kernel took of a block cut short still left:
                // the peer counts it.
                tally.counters().add_many(0, off as u64);
                return Err(end.err().unwrap_or_else(|| io::ErrorKind::WriteZero.into()));
            }
        }
    }
    if let Some(b) = began {
        tally.wrote(b);
    }
    tally.counters().add(n as u64);
    Ok(())
}

/// How a TCP receiver reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvMode {
    /// Blocking reads of what has arrived.
    Copy,
    /// `--skip-rx-copy`: the kernel drops the bytes it counts (MSG_TRUNC)
    /// instead of copying them out.
    Discard,
    /// The socket's SO_RCVLOWAT is set: wait until that much is there (poll
    /// honours the mark) or [`MARK_WAIT`] has passed, then read what is there
    /// without waiting. Fewer, larger reads; and unlike a blocking read, which
    /// holds the bytes it copied until the mark is reached, every byte read is
    /// counted at once, and none waits longer than `MARK_WAIT` (a slow path
    /// still shows a smooth rate in each interval).
    OnMark,
    /// `--skip-rx-copy` on a mark: waits as [`RecvMode::OnMark`] does, then
    /// discards what is there without waiting.
    DiscardOnMark,
}

impl RecvMode {
    /// Whether the socket's SO_RCVLOWAT paces the reads.
    pub fn on_mark(self) -> bool {
        matches!(self, Self::OnMark | Self::DiscardOnMark)
    }
}

/// The longest an `OnMark` receiver leaves arrived bytes unread.
pub const MARK_WAIT: Duration = Duration::from_millis(10);

/// What a receiver does around its reads, where the personalities differ:
/// iperf3 counts bytes; iperf 2 also files each read's length (`-e`'s
/// "Reads=Dist") and, with `--tcp-quickack`, re-arms TCP_QUICKACK before each.
pub trait RecvTally {
    /// Before each read.
    fn before_read(&self, _sock: &TcpStream) {}
    /// A read of `data` (not empty; with [`RecvMode::Discard`] its bytes are
    /// not the stream's, only its length is).
    fn read(&self, data: &[u8]);
}

impl RecvTally for StreamCounters {
    fn read(&self, data: &[u8]) {
        self.add(data.len() as u64);
    }
}

/// Reads and counts until the peer closes, the socket is shut down, or stopped.
pub fn recv_loop(
    mut sock: &TcpStream,
    blksize: usize,
    mode: RecvMode,
    ctl: &RunControl,
    tally: &impl RecvTally,
) -> io::Result<()> {
    let mut buf = ReadBuf::new(blksize);
    let mut at = 0u64;
    while !ctl.stopped() {
        tally.before_read(sock);
        let buf = buf.at(at);
        let r = match mode {
            RecvMode::Copy => sock.read(buf),
            RecvMode::Discard => rperf3_sys::net::recv_discard(sock, buf),
            RecvMode::OnMark | RecvMode::DiscardOnMark => {
                let waited = rperf3_sys::poll::readable(&sock, MARK_WAIT);
                // A wait that ended with the stop reads nothing: the test's
                // end drains what is there at once, and what arrives later,
                // during a wait of up to MARK_WAIT, is not the test's.
                if ctl.stopped() {
                    break;
                }
                waited.and_then(|_| match mode {
                    RecvMode::OnMark => rperf3_sys::net::recv_ready(sock, buf),
                    _ => rperf3_sys::net::recv_discard_ready(sock, buf),
                })
            }
        };
        match r {
            Ok(0) => return Ok(()),
            Ok(n) => {
                at += n as u64;
                tally.read(&buf[..n]);
            }
            Err(e) if read_again(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A read that ended without data or an error worth reporting: a signal, or
/// the socket's timeout (set so a reader sees the run's stop in time). Read
/// again.
pub fn read_again(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads and counts what `sock` holds now, below its mark too: the final
/// sample of an `OnMark` receiver must include the tail the mark kept back.
/// Only what is there when called: a peer still sending (`-R`) must not keep
/// it reading. The worker may read part of it at the same time; each byte is
/// counted by whichever read took it.
pub fn drain_ready(sock: &TcpStream, blksize: usize, counters: &StreamCounters) {
    let _ = rperf3_sys::sockopt::set_recv_lowat(sock, 1);
    let mut left = rperf3_sys::sockopt::bytes_waiting(sock).unwrap_or(0);
    let mut buf = ReadBuf::new(blksize.clamp(1, left.max(1)));
    while left > 0 {
        let want = left.min(buf.len());
        // Placed by the bytes counted so far, the stream offset unless the
        // worker is reading at the same time.
        let at = counters.snapshot().bytes;
        match rperf3_sys::net::recv_ready(sock, &mut buf.at(at)[..want]) {
            Ok(n @ 1..) => {
                counters.add(n as u64);
                left -= n;
            }
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, BudgetUnit};
    use std::net::{Shutdown, TcpListener};
    use std::sync::Arc;

    #[test]
    fn budget_sends_exactly_n_bytes_and_receiver_counts_them() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let ctl_rx = Arc::new(RunControl::new(None));
        let rc = Arc::new(StreamCounters::default());
        let (c2, r2) = (ctl_rx.clone(), rc.clone());
        let h = std::thread::spawn(move || recv_loop(&rx, 1000, RecvMode::Copy, &c2, &*r2));
        let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Bytes, 123_456)));
        let sc = StreamCounters::default();
        send_loop(&tx, &[7u8; 10_000], None, None, &ctl, &sc).unwrap();
        tx.shutdown(Shutdown::Write).unwrap();
        h.join().unwrap().unwrap();
        assert_eq!(sc.snapshot().bytes, 123_456);
        assert_eq!(rc.snapshot().bytes, 123_456);
    }

    #[test]
    fn sendfile_path_sends_the_same_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut rx, _) = l.accept().unwrap();
        let payload: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
        let f = PayloadFile::new(&payload).unwrap();
        let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Bytes, 10_000)));
        let sc = StreamCounters::default();
        send_loop(&tx, &payload, Some(&f), None, &ctl, &sc).unwrap();
        tx.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        rx.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 10_000);
        assert_eq!(&got[..4096], &payload[..]);
        assert_eq!(&got[8192..], &payload[..10_000 - 8192]);
    }

    #[test]
    fn pacing_holds_the_rate() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let ctl = Arc::new(RunControl::new(None));
        let sc = Arc::new(StreamCounters::default());
        let (c2, s2) = (ctl.clone(), sc.clone());
        // 8 Mbit/s = 1 MB/s; after ~200 ms about 200 kB (+ one block).
        let h = std::thread::spawn(move || {
            let pacing = Pacing::before_each(Pacer::new(8_000_000), Instant::now(), 1);
            send_loop(&tx, &[0u8; 1000], None, Some(pacing), &c2, &s2)
        });
        let sink = std::thread::spawn(move || {
            let mut b = [0u8; 65536];
            let mut r = &rx;
            while r.read(&mut b).map(|n| n > 0).unwrap_or(false) {}
        });
        std::thread::sleep(Duration::from_millis(200));
        ctl.stop();
        h.join().unwrap().unwrap();
        drop(sink);
        let sent = sc.snapshot().bytes;
        assert!((150_000..=260_000).contains(&sent), "sent {sent}");
    }

    #[test]
    fn a_paced_sender_with_an_end_sends_the_rate_exactly() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        let sink = std::thread::spawn(move || {
            let mut b = [0u8; 65536];
            let mut r = &rx;
            while r.read(&mut b).map(|n| n > 0).unwrap_or(false) {}
        });
        // 1 MB/s for 250 ms in 30 000-byte blocks: those due at 0, 30, ...,
        // 240 ms; the one due at 270 ms is past the end.
        let t0 = Instant::now();
        let pacing = Pacing::before_each(Pacer::new(8_000_000), t0, 1)
            .ending(Some(t0 + Duration::from_millis(250)));
        let ctl = Arc::new(RunControl::new(None));
        let sc = StreamCounters::default();
        send_loop(&tx, &[0u8; 30_000], None, Some(pacing), &ctl, &sc).unwrap();
        assert_eq!(
            sc.snapshot(),
            crate::counters::CounterSnapshot {
                bytes: 270_000,
                blocks: 9
            }
        );
        // It returned at the end, not before.
        assert!(
            t0.elapsed() >= Duration::from_millis(249),
            "{:?}",
            t0.elapsed()
        );
        tx.shutdown(Shutdown::Both).unwrap();
        sink.join().unwrap();
    }

    #[test]
    fn burst_sends_n_blocks_before_checking_the_rate() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (_rx, _) = l.accept().unwrap();
        let sent_after = |burst: u32| {
            let ctl = Arc::new(RunControl::new(None));
            let sc = Arc::new(StreamCounters::default());
            let (c2, s2) = (ctl.clone(), sc.clone());
            let tx = tx.try_clone().unwrap();
            // 100 bytes/s: the first pass may send, the next is due a second later.
            let h = std::thread::spawn(move || {
                let pacing = Pacing::before_each(Pacer::new(800), Instant::now(), burst);
                send_loop(&tx, &[0u8; 100], None, Some(pacing), &c2, &s2)
            });
            std::thread::sleep(Duration::from_millis(100));
            ctl.stop();
            h.join().unwrap().unwrap();
            sc.snapshot().bytes
        };
        assert_eq!(sent_after(1), 100);
        assert_eq!(sent_after(5), 500);
    }
    /// A connected pair whose receiving end reads on a mark of `mark` bytes.
    fn marked_pair(mark: usize) -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        rperf3_sys::sockopt::set_recv_lowat(&rx, mark).unwrap();
        (tx, rx)
    }

    /// Waits up to `limit` for `counters` to reach `want` bytes.
    fn reaches(counters: &StreamCounters, want: u64, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while counters.snapshot().bytes < want {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    #[test]
    fn a_marked_receiver_counts_a_tail_below_its_mark_soon() {
        let (mut tx, rx) = marked_pair(100_000);
        let ctl = Arc::new(RunControl::new(None));
        let rc = Arc::new(StreamCounters::default());
        let (c2, r2) = (ctl.clone(), rc.clone());
        let h = std::thread::spawn(move || recv_loop(&rx, 131_072, RecvMode::OnMark, &c2, &*r2));
        // Above the mark, then a tail below it: both are counted, the tail
        // after at most MARK_WAIT (not held until more data comes).
        tx.write_all(&[1u8; 150_000]).unwrap();
        assert!(reaches(&rc, 150_000, Duration::from_secs(5)));
        tx.write_all(&[2u8; 500]).unwrap();
        assert!(reaches(&rc, 150_500, Duration::from_secs(5)));
        assert_eq!(rc.snapshot().bytes, 150_500);
        ctl.stop();
        tx.shutdown(Shutdown::Write).unwrap();
        h.join().unwrap().unwrap();
    }

    #[test]
    fn draining_takes_exactly_what_waits_below_the_mark() {
        let (mut tx, rx) = marked_pair(100_000);
        let rc = StreamCounters::default();
        tx.write_all(&[3u8; 700]).unwrap();
        // Delivered on loopback once the kernel says it is readable at mark 1.
        rperf3_sys::sockopt::set_recv_lowat(&rx, 1).unwrap();
        assert!(rperf3_sys::poll::readable(&rx, Duration::from_secs(5)).unwrap());
        rperf3_sys::sockopt::set_recv_lowat(&rx, 100_000).unwrap();
        drain_ready(&rx, 131_072, &rc);
        assert_eq!(rc.snapshot().bytes, 700);
        // Nothing left, and the mark is down so the final reads are not held.
        assert_eq!(rperf3_sys::sockopt::bytes_waiting(&rx).unwrap(), 0);
        drain_ready(&rx, 131_072, &rc);
        assert_eq!(rc.snapshot().bytes, 700);
    }
}
