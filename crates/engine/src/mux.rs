//! Many TCP streams on one thread: an I/O worker drives each of its streams
//! when the kernel says it can move bytes (edge-triggered readiness), and
//! paces `-b` streams from their due times rather than a sleeping thread each.
//! A worker per core instead of a thread per stream: the app uses it from 64
//! streams a direction, where it carried 1.6x iperf3's rate in 0.4x the
//! memory on loopback; with fewer, a thread per stream is faster (the design
//! notes have the measurements).

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_sys::ready::ReadySet;
use rperf3_sys::zerocopy::PayloadFile;

use crate::control::RunControl;
use crate::counters::StreamCounters;
use crate::readbuf::ReadBuf;
use crate::tcp::{read_again, Pacing, RecvMode};

/// The longest a worker waits without looking at the run's stop flag: a
/// stop also shuts the sockets, which wakes it at once; this is the backstop.
const STOP_LOOK: Duration = Duration::from_millis(20);

/// What one stream moves before the worker turns to the next ready one, so a
/// stream whose peer is fast cannot starve its neighbours.
const TURN_BYTES: usize = 512 * 1024;

/// A receiving worker whose last wait woke fewer streams than this pauses
/// [`GATHER_PAUSE`] before its next pass, where the side only receives
/// ([`run_gathering`]).
pub const GATHER_BELOW: usize = 4;

/// The pause: bytes gather in the sockets meanwhile, and the next wait finds
/// many streams ready instead of one. At `-P 128` on loopback the receiving
/// side's wake-ups fell from 108 k to 18 k in 3 s (context switches 210 k to
/// 30 k) and the rate rose 1.13-1.17x (100 to 500 us alike); a sending side
/// gained nothing from it and `--bidir`, which also sends, 0.90-1.0x.
pub const GATHER_PAUSE: Duration = Duration::from_micros(200);

/// One TCP stream of an I/O worker.
#[derive(Debug)]
pub struct MuxStream {
    /// The connected socket (made non-blocking by the worker).
    pub sock: Arc<TcpStream>,
    /// What the stream has moved.
    pub counters: Arc<StreamCounters>,
    /// How it moves bytes.
    pub way: Way,
}

/// A stream's direction and how it moves bytes.
#[derive(Debug)]
pub enum Way {
    /// Writes blocks of the test's payload (or sends its file copy), paced
    /// as iperf3's sender (`-b rate/N`, and the test's end).
    Send {
        /// The payload in a file, for sendfile (one per worker: streams on
        /// one core share its pages without contention).
        file: Option<Arc<PayloadFile>>,
        /// `-b`.
        pacing: Option<Pacing>,
    },
    /// Reads and counts (copy, or discard in the kernel).
    Recv(RecvMode),
}

/// A stream's state between turns.
#[derive(Debug)]
struct Live {
    s: MuxStream,
    /// The kernel may take (or give) bytes now.
    ready: bool,
    /// The peer hung up or the socket failed: read to the end, since that
    /// is not reported twice.
    ended: bool,
    done: bool,
    /// Bytes of the block in hand already written, and the block's length
    /// (0: no block in hand).
    off: usize,
    block: usize,
    /// Paced: bytes sent, blocks left in this burst, when the next is due.
    sent: u64,
    burst_left: u32,
    due: Option<Instant>,
    /// A receiver: bytes read so far, where its buffer is placed.
    read: u64,
}

/// What a turn of one stream ended with.
enum Turn {
    /// The socket would block: wait for its next readiness.
    Blocked,
    /// Its turn's bytes are used; it is still ready.
    Yield,
    /// Paced: nothing more until then.
    Due(Instant),
    /// Finished (budget used, peer closed, or stopped between blocks).
    Done,
}

/// Runs `streams` until the run stops, each sender's budget is used and each
/// receiver's peer has closed. `payload` is what senders write (one block of
/// `-l`).
pub fn run(streams: Vec<MuxStream>, payload: &[u8], ctl: &RunControl) -> io::Result<()> {
    run_with(streams, payload, ctl, false)
}

/// [`run`] for a worker of receivers that pauses when few streams woke it
/// ([`GATHER_PAUSE`]); a worker that also sends does not.
pub fn run_gathering(streams: Vec<MuxStream>, payload: &[u8], ctl: &RunControl) -> io::Result<()> {
    let gather = streams.iter().all(|s| matches!(s.way, Way::Recv(_)));
    run_with(streams, payload, ctl, gather)
}

fn run_with(
    streams: Vec<MuxStream>,
    payload: &[u8],
    ctl: &RunControl,
    gather: bool,
) -> io::Result<()> {
    let mut set = ReadySet::new(streams.len())?;
    let mut live = Vec::with_capacity(streams.len());
    for (i, s) in streams.into_iter().enumerate() {
        s.sock.set_nonblocking(true)?;
        let write = matches!(s.way, Way::Send { .. });
        set.add(&*s.sock, i as u64, write)?;
        live.push(Live {
            s,
            ready: true,
            ended: false,
            done: false,
            off: 0,
            block: 0,
            sent: 0,
            burst_left: 0,
            due: None,
            read: 0,
        });
    }
    let mut buf = ReadBuf::new(payload.len());
    // Streams the last wait woke (none before the first).
    let mut woke = usize::MAX;
    loop {
        if gather && woke < GATHER_BELOW && !ctl.stopped() {
            std::thread::sleep(GATHER_PAUSE);
        }
        let now = Instant::now();
        let mut next_due: Option<Instant> = None;
        let mut any_ready = false;
        for l in live.iter_mut().filter(|l| !l.done) {
            // Looked at for each stream: a pass over many can outlast the
            // test, and the sockets are shut soon after the stop; a read then
            // empties a queue whose window the kernel no longer reopens,
            // leaving the peer's sender probing a zero window.
            let stopping = ctl.stopped();
            if let Some(d) = l.due {
                if d > now && !stopping {
                    next_due = Some(next_due.map_or(d, |n| n.min(d)));
                    continue;
                }
                l.due = None;
            }
            if !l.ready {
                continue;
            }
            let turn = match l.s.way {
                Way::Send { ref file, .. } => {
                    let sendfile = file.is_some();
                    let t = send_turn(l, payload, stopping, ctl);
                    // A sender that ended: what it corked leaves now.
                    if sendfile && !matches!(t, Ok(Turn::Blocked | Turn::Yield | Turn::Due(_))) {
                        crate::tcp::uncork(&l.s.sock);
                    }
                    t
                }
                Way::Recv(mode) if !stopping => recv_turn(l, mode, &mut buf, ctl),
                Way::Recv(_) => Ok(Turn::Done),
            };
            match turn {
                Ok(Turn::Blocked) => l.ready = false,
                Ok(Turn::Yield) => any_ready = true,
                Ok(Turn::Due(d)) => {
                    l.due = Some(d);
                    next_due = Some(next_due.map_or(d, |n| n.min(d)));
                }
                Ok(Turn::Done) => l.done = true,
                Err(_) if stopping || ctl.stopped() => l.done = true,
                Err(e) => return Err(e),
            }
        }
        if live.iter().all(|l| l.done) {
            return Ok(());
        }
        let wait = if any_ready {
            Duration::ZERO
        } else {
            next_due.map_or(STOP_LOOK, |d| {
                d.saturating_duration_since(Instant::now()).min(STOP_LOOK)
            })
        };
        woke = 0;
        set.wait(wait, |t, ended| {
            woke += 1;
            if let Some(l) = live.get_mut(t as usize) {
                l.ready = true;
                l.ended |= ended;
            }
        })?;
        if any_ready {
            // A stream left with bytes to move: no pause.
            woke = usize::MAX;
        }
    }
}

/// Writes blocks until the socket is full, the turn's bytes are used, the
/// rate says wait, or the stream ends. A block in hand is always finished,
/// also after a stop, so the peer counts whole blocks as the sender does.
fn send_turn(l: &mut Live, payload: &[u8], stopping: bool, ctl: &RunControl) -> io::Result<Turn> {
    let Way::Send { ref file, pacing } = l.s.way else {
        return Ok(Turn::Done);
    };
    let mut moved = 0usize;
    loop {
        if l.block == 0 {
            if stopping {
                return Ok(Turn::Done);
            }
            if moved >= TURN_BYTES {
                return Ok(Turn::Yield);
            }
            if let (Some(p), 0) = (pacing, l.burst_left) {
                let at = p.origin + p.pacer.due(l.sent);
                if p.end.is_some_and(|e| at >= e) {
                    return Ok(Turn::Done);
                }
                if at > Instant::now() {
                    return Ok(Turn::Due(at));
                }
                l.burst_left = p.burst.max(1);
            }
            l.burst_left = l.burst_left.saturating_sub(1);
            let want = payload.len();
            let want = ctl.budget().map_or(want, |b| b.claim(want));
            if want == 0 {
                return Ok(Turn::Done);
            }
            (l.block, l.off) = (want, 0);
        }
        let r = match file {
            Some(f) => f.send(&*l.s.sock, l.off, l.block),
            None => io::Write::write(&mut &*l.s.sock, &payload[l.off..l.block]),
        };
        match r {
            Ok(k) if k > 0 => {
                let short = l.off + k < l.block;
                l.off += k;
                moved += k;
                if l.off == l.block {
                    l.s.counters.add(l.block as u64);
                    l.sent += l.block as u64;
                    l.block = 0;
                }
                // The kernel took less than offered: its buffer is full,
                // and it reports when there is room (as after EAGAIN), so
                // the call that would only say so is saved.
                if short && !l.ended {
                    return Ok(Turn::Blocked);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Turn::Blocked),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            end => {
                // What the kernel took of a block cut short still left.
                l.s.counters.add_many(0, l.off as u64);
                l.block = 0;
                return Err(end.err().unwrap_or_else(|| io::ErrorKind::WriteZero.into()));
            }
        }
    }
}

/// Reads until the socket is empty, the turn's bytes are used, the peer
/// has closed or the run stops (nothing is read after a stop, as a receiving
/// thread checks before each read).
fn recv_turn(
    l: &mut Live,
    mode: RecvMode,
    buf: &mut ReadBuf,
    ctl: &RunControl,
) -> io::Result<Turn> {
    let mut moved = 0usize;
    while moved < TURN_BYTES {
        if ctl.stopped() {
            return Ok(Turn::Done);
        }
        let want = buf.len();
        let into = buf.at(l.read);
        let r = match mode {
            RecvMode::Discard | RecvMode::DiscardOnMark => {
                rperf3_sys::net::recv_discard(&l.s.sock, into)
            }
            RecvMode::Copy | RecvMode::OnMark => (&*l.s.sock).read(into),
        };
        match r {
            Ok(0) => return Ok(Turn::Done),
            Ok(n) => {
                l.s.counters.add(n as u64);
                l.read += n as u64;
                moved += n;
                // Less than asked for: the queue is empty now, and what
                // arrives next is reported; the read that would only say
                // so is saved. Not after a hang-up, whose end of stream is
                // reported once (perhaps with the data just read).
                if n < want && !l.ended {
                    return Ok(Turn::Blocked);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Turn::Blocked),
            Err(e) if read_again(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Turn::Yield)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, BudgetUnit};
    use crate::pacing::Pacer;
    use std::io::Write;
    use std::net::{Shutdown, TcpListener};

    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (rx, _) = l.accept().unwrap();
        (tx, rx)
    }

    fn stream(sock: TcpStream, way: Way) -> (MuxStream, Arc<StreamCounters>) {
        let counters = Arc::new(StreamCounters::default());
        let s = MuxStream {
            sock: Arc::new(sock),
            counters: counters.clone(),
            way,
        };
        (s, counters)
    }

    fn send(pacing: Option<Pacing>) -> Way {
        Way::Send { file: None, pacing }
    }

    #[test]
    fn one_worker_moves_a_budget_over_many_streams_and_reads_them_all() {
        let n = 16;
        let budget = 16 * 100_000;
        let (mut senders, mut receivers, mut sc, mut rc) = (vec![], vec![], vec![], vec![]);
        for _ in 0..n {
            let (tx, rx) = pair();
            let (s, c) = stream(tx, send(None));
            senders.push(s);
            sc.push(c);
            let (r, c) = stream(rx, Way::Recv(RecvMode::Copy));
            receivers.push(r);
            rc.push(c);
        }
        let txs: Vec<_> = senders.iter().map(|s| s.sock.clone()).collect();
        let rctl = Arc::new(RunControl::new(None));
        let r2 = rctl.clone();
        let reader = std::thread::spawn(move || run(receivers, &[0u8; 8192], &r2));
        let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Bytes, budget)));
        run(senders, &[5u8; 10_000], &ctl).unwrap();
        for t in &txs {
            t.shutdown(Shutdown::Write).unwrap();
        }
        // Every receiver ends when its peer closes: the reader returns alone.
        reader.join().unwrap().unwrap();
        let total = |cs: &[Arc<StreamCounters>]| cs.iter().map(|c| c.snapshot().bytes).sum::<u64>();
        assert_eq!(total(&sc), budget);
        assert_eq!(total(&rc), budget);
        for (s, r) in sc.iter().zip(&rc) {
            assert_eq!(s.snapshot().bytes, r.snapshot().bytes);
        }
        // Blocks are whole but for the budget's last.
        assert!(sc.iter().map(|c| c.snapshot().blocks).sum::<u64>() >= budget / 10_000);
    }

    /// A receiving worker that pauses to gather bytes (few streams woke it:
    /// its senders write in small steps) still reads every byte, and ends
    /// by itself when its peers close.
    #[test]
    fn a_gathering_worker_reads_every_byte_and_ends_with_its_peers() {
        let (mut txs, mut receivers, mut rc) = (vec![], vec![], vec![]);
        for _ in 0..3 {
            let (tx, rx) = pair();
            let (r, c) = stream(rx, Way::Recv(RecvMode::Copy));
            txs.push(tx);
            receivers.push(r);
            rc.push(c);
        }
        let ctl = Arc::new(RunControl::new(None));
        let c2 = ctl.clone();
        let reader = std::thread::spawn(move || run_gathering(receivers, &[0u8; 4096], &c2));
        for step in 0..200 {
            let t = &mut txs[step % 3];
            t.write_all(&[1u8; 1000]).unwrap();
        }
        for t in &txs {
            t.shutdown(Shutdown::Write).unwrap();
        }
        reader.join().unwrap().unwrap();
        let counts: Vec<u64> = rc.iter().map(|c| c.snapshot().bytes).collect();
        assert_eq!(counts, vec![67_000, 67_000, 66_000]);
    }

    /// Runs one receiving stream on a worker; whether it ended by itself
    /// (no stop) within 10 s, and what it counted.
    fn receive_alone(rx: TcpStream, before_run: impl FnOnce()) -> (bool, u64) {
        let (r, c) = stream(rx, Way::Recv(RecvMode::Copy));
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        before_run();
        std::thread::spawn(move || {
            let ctl = RunControl::new(None);
            let _ = done_tx.send(run(vec![r], &[0u8; 8192], &ctl).is_ok());
        });
        let ended = done_rx.recv_timeout(Duration::from_secs(10)) == Ok(true);
        (ended, c.snapshot().bytes)
    }

    #[test]
    fn a_short_read_before_the_end_of_stream_still_sees_the_end() {
        // Data and the peer's close are there before the worker first looks.
        let (mut tx, rx) = pair();
        let (ended, bytes) = receive_alone(rx, || {
            tx.write_all(&[1u8; 1000]).unwrap();
            tx.shutdown(Shutdown::Write).unwrap();
        });
        assert!(ended && bytes == 1000, "ended {ended}, {bytes} bytes");
        // Data and close arrive together while the worker waits: one
        // readiness carries both, the short read takes the data, and the end
        // is not reported again, so the hang-up it carried must be kept.
        // (The pause only makes that order likely; the worker ends either
        // way when it is right.)
        for _ in 0..20 {
            let (mut tx, rx) = pair();
            let writer = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                tx.write_all(&[1u8; 1000]).unwrap();
                tx.shutdown(Shutdown::Write).unwrap();
            });
            let (ended, bytes) = receive_alone(rx, || {});
            writer.join().unwrap();
            assert!(ended && bytes == 1000, "ended {ended}, {bytes} bytes");
        }
    }

    #[test]
    fn paced_streams_send_their_rate_to_the_end_on_one_thread() {
        // Four streams at 8 Mbit/s (1 MB/s) each, ending 250 ms after their
        // origin: the 30 000-byte blocks due at 0, 30, ..., 240 ms each.
        let t0 = Instant::now();
        let pacing = Pacing::before_each(Pacer::new(8_000_000), t0, 1)
            .ending(Some(t0 + Duration::from_millis(250)));
        let (mut senders, mut sc, mut sinks) = (vec![], vec![], vec![]);
        for _ in 0..4 {
            let (tx, rx) = pair();
            let (s, c) = stream(tx, send(Some(pacing)));
            senders.push(s);
            sc.push(c);
            sinks.push(std::thread::spawn(move || {
                let mut b = [0u8; 65536];
                while (&rx).read(&mut b).map(|n| n > 0).unwrap_or(false) {}
            }));
        }
        let txs: Vec<_> = senders.iter().map(|s| s.sock.clone()).collect();
        let ctl = RunControl::new(None);
        // Every stream is done at its end: the worker returns unstopped.
        run(senders, &[0u8; 30_000], &ctl).unwrap();
        let took = t0.elapsed();
        for c in &sc {
            assert_eq!(c.snapshot().bytes, 270_000);
        }
        // The last block went when due (at 240 ms), not before.
        assert!(took >= Duration::from_millis(240), "{took:?}");
        for t in &txs {
            t.shutdown(Shutdown::Both).unwrap();
        }
        for s in sinks {
            s.join().unwrap();
        }
    }

    #[test]
    fn a_stop_ends_a_worker_whose_peers_neither_read_nor_close() {
        let (tx, _rx) = pair();
        let (rx2, _tx2) = {
            let (a, b) = pair();
            (b, a)
        };
        let (s, _) = stream(tx, send(None));
        let (r, _) = stream(rx2, Way::Recv(RecvMode::Discard));
        let socks = [s.sock.clone(), r.sock.clone()];
        let ctl = Arc::new(RunControl::new(None));
        let c2 = ctl.clone();
        let h = std::thread::spawn(move || run(vec![s, r], &[0u8; 65536], &c2));
        // The sender fills its socket and waits; the receiver has nothing.
        std::thread::sleep(Duration::from_millis(100));
        let t = Instant::now();
        ctl.stop();
        // A block in hand waits for room: shutting the sockets ends it, as
        // the test's close does.
        for s in &socks {
            let _ = s.shutdown(Shutdown::Both);
        }
        h.join().unwrap().unwrap();
        assert!(t.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn nothing_is_read_after_a_stop_even_mid_pass() {
        // Sixteen streams with full queues: the worker's first pass reads
        // each in turn, and the stop lands in it, as soon as the first stream
        // has been read. Only the read under way then may still count (one
        // buffer), as in a receiving thread: the sockets are shut right after
        // a stop, and a queue read after that never reopens its window to the
        // peer, whose sender is left probing a zero window.
        let len = 65_536;
        let (mut receivers, mut counters, mut peers, mut queued) = (vec![], vec![], vec![], 0);
        for _ in 0..16 {
            let (tx, rx) = pair();
            tx.set_nonblocking(true).unwrap();
            let block = [7u8; 65_536];
            loop {
                match (&tx).write(&block) {
                    Ok(n) => queued += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) => panic!("{e}"),
                }
            }
            peers.push(tx);
            let (r, c) = stream(rx, Way::Recv(RecvMode::Copy));
            receivers.push(r);
            counters.push(c);
        }
        let total = |cs: &[Arc<StreamCounters>]| cs.iter().map(|c| c.snapshot().bytes).sum::<u64>();
        let ctl = Arc::new(RunControl::new(None));
        let c2 = ctl.clone();
        let h = std::thread::spawn(move || run(receivers, &vec![0u8; len], &c2));
        let deadline = Instant::now() + Duration::from_secs(10);
        while counters[0].snapshot().bytes == 0 {
            assert!(Instant::now() < deadline, "the worker read nothing");
            std::hint::spin_loop();
        }
        ctl.stop();
        let at_stop = total(&counters);
        h.join().unwrap().unwrap();
        let after = total(&counters) - at_stop;
        assert!(
            after <= len as u64,
            "{after} bytes read after the stop ({at_stop} before, {queued} queued)"
        );
        drop(peers);
    }

    #[test]
    fn a_reset_peer_is_the_workers_error() {
        let (tx, rx) = pair();
        let (s, _) = stream(tx, send(None));
        rperf3_sys::sockopt::set_linger_reset(&rx).unwrap();
        drop(rx);
        let ctl = RunControl::new(None);
        let e = run(vec![s], &[0u8; 65536], &ctl).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe
            ),
            "{e}"
        );
    }
}
