//! UDP stream loops: paced datagrams with iperf3's header, and the receiver that
//! keeps iperf3's loss, reordering and jitter statistics.
//!
//! One datagram per system call for now; the loops keep the header writing and
//! the statistics separate from the send/receive calls so batched and offloaded
//! I/O can replace the calls alone.

use std::io;
use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rperf3_proto::{UdpHeader, UdpRecvStats};

use crate::control::RunControl;
use crate::counters::StreamCounters;
use crate::pacing::Pacer;

/// What a UDP sender needs besides its socket.
#[derive(Debug, Clone, Copy)]
pub struct UdpSendSpec {
    /// Datagram size.
    pub len: usize,
    /// Target rate; `None` = as fast as possible (`-b 0`).
    pub pacer: Option<Pacer>,
    /// Datagrams sent back to back before the rate is checked (`-b rate/N`).
    pub burst: u32,
    /// 64-bit sequence numbers.
    pub counters_64bit: bool,
}

/// Longest a paced sender sleeps at once, so the stop flag stays responsive.
const MAX_NAP: Duration = Duration::from_millis(5);

/// Datagrams per system call at most (sendmmsg / recvmmsg).
const BATCH: usize = rperf3_sys::mmsg::MAX_BATCH;

/// How many datagrams are due now: those whose send time at the target rate has
/// come (at least one), or a whole `-b rate/N` burst. Unpaced: a full batch.
fn due_now(spec: &UdpSendSpec, sent: u64, elapsed: Duration) -> Option<usize> {
    let Some(p) = spec.pacer else {
        return Some(BATCH);
    };
    if p.wait(sent, elapsed).is_some() {
        return None;
    }
    if spec.burst > 1 {
        return Some(spec.burst as usize);
    }
    // Behind schedule after a late wakeup: catch up, at most one batch at once.
    let allowed = (u128::from(p.rate()) * elapsed.as_nanos() / 8_000_000_000) as u64;
    let behind = allowed.saturating_sub(sent) / spec.len.max(1) as u64;
    Some((behind as usize + 1).min(BATCH))
}

/// Sends datagrams until stopped or the budget is used up. `payload` is `len`
/// bytes; each datagram is a copy with its own header. Due datagrams go out in
/// one sendmmsg call.
pub fn send_loop(
    sock: &UdpSocket,
    payload: Vec<u8>,
    spec: UdpSendSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let start = Instant::now();
    let mut seq: u64 = 0;
    let mut sent: u64 = 0;
    let mut bufs = vec![payload; BATCH];
    while !ctl.stopped() {
        let Some(mut want) = due_now(&spec, sent, start.elapsed()) else {
            let w = spec
                .pacer
                .and_then(|p| p.wait(sent, start.elapsed()))
                .unwrap_or_default();
            std::thread::sleep(w.min(MAX_NAP));
            continue;
        };
        while want > 0 && !ctl.stopped() {
            let mut n = want.min(BATCH);
            if let Some(b) = ctl.budget() {
                let mut claimed = 0;
                while claimed < n && b.claim(spec.len) > 0 {
                    claimed += 1;
                }
                n = claimed;
                if n == 0 {
                    return Ok(());
                }
            }
            let now = rperf3_sys::clock::monotonic();
            for (i, buf) in bufs[..n].iter_mut().enumerate() {
                UdpHeader::new(now, seq + 1 + i as u64).encode(buf, spec.counters_64bit);
            }
            let refs: Vec<&[u8]> = bufs[..n].iter().map(Vec::as_slice).collect();
            match rperf3_sys::mmsg::send_batch(sock, &refs) {
                Ok(k) => {
                    // Unsent datagrams do not use up sequence numbers.
                    seq += k as u64;
                    for b in &refs[..k] {
                        sent += b.len() as u64;
                        counters.add(b.len() as u64);
                    }
                    want -= k.min(want);
                    if k < n {
                        if let Some(b) = ctl.budget() {
                            b.refund(spec.len, n - k);
                        }
                    }
                }
                Err(e) if is_transient(&e) => {
                    if let Some(b) = ctl.budget() {
                        b.refund(spec.len, n);
                    }
                    std::thread::yield_now();
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

fn is_transient(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted)
        || e.raw_os_error() == Some(libc::ENOBUFS)
        // A receiver not yet listening (ICMP port unreachable) is not fatal for UDP.
        || e.kind() == io::ErrorKind::ConnectionRefused
}

/// Receives datagrams, counting bytes and updating `stats`, until the socket is
/// shut down or the run stops. Datagrams too short for a header are ignored; the
/// socket is connected, so strangers' datagrams never arrive here.
pub fn recv_loop(
    sock: &UdpSocket,
    len: usize,
    counters_64bit: bool,
    ctl: &RunControl,
    counters: &StreamCounters,
    stats: &Mutex<UdpRecvStats>,
) -> io::Result<()> {
    let mut bufs = vec![vec![0u8; len.max(UdpHeader::len(counters_64bit))]; BATCH];
    let mut lens = [0usize; BATCH];
    while !ctl.stopped() {
        let got = match rperf3_sys::mmsg::recv_batch(sock, &mut bufs, &mut lens) {
            Ok(g) => g,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                        | io::ErrorKind::ConnectionRefused
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        // shutdown() wakes a blocked receive with nothing (or an empty datagram).
        if ctl.stopped() {
            return Ok(());
        }
        let now = rperf3_sys::clock::monotonic();
        // Counters and statistics change under one lock, so a sample sees a
        // batch entirely or not at all.
        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
        for (buf, &n) in bufs.iter().zip(&lens[..got]) {
            // Too short for a header (a stray handshake datagram): not test data.
            let Some(h) = UdpHeader::decode(&buf[..n], counters_64bit) else {
                continue;
            };
            s.on_datagram(h.seq, h.sec, h.usec, now, n);
            counters.add(n as u64);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, BudgetUnit};
    use std::sync::Arc;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        (a, b)
    }

    fn spec(rate: Option<u64>, burst: u32) -> UdpSendSpec {
        UdpSendSpec {
            len: 1250,
            pacer: rate.map(Pacer::new),
            burst,
            counters_64bit: false,
        }
    }

    #[test]
    fn unpaced_sends_full_batches() {
        assert_eq!(due_now(&spec(None, 1), 0, Duration::ZERO), Some(BATCH));
    }

    #[test]
    fn on_schedule_one_datagram_at_a_time() {
        // 10 Mbit/s, 1250-byte datagrams: one due every millisecond.
        let s = spec(Some(10_000_000), 1);
        assert_eq!(due_now(&s, 0, Duration::ZERO), Some(1));
        assert_eq!(due_now(&s, 1250, Duration::from_micros(500)), None);
        assert_eq!(due_now(&s, 1250, Duration::from_millis(1)), Some(1));
    }

    #[test]
    fn a_late_wakeup_catches_up_in_one_bounded_batch() {
        let s = spec(Some(10_000_000), 1);
        // 5 ms late: the 5 datagrams that became due, plus the current one.
        assert_eq!(due_now(&s, 0, Duration::from_millis(5)), Some(6));
        // Never more than one batch at once, however late.
        assert_eq!(due_now(&s, 0, Duration::from_secs(10)), Some(BATCH));
    }

    #[test]
    fn burst_sends_n_back_to_back() {
        let s = spec(Some(10_000_000), 10);
        assert_eq!(due_now(&s, 0, Duration::ZERO), Some(10));
        assert_eq!(due_now(&s, 12_500, Duration::from_millis(5)), None);
        assert_eq!(due_now(&s, 12_500, Duration::from_millis(10)), Some(10));
    }

    #[test]
    fn datagrams_carry_consecutive_sequence_numbers() {
        let (tx, rx) = pair();
        let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 5)));
        let c = StreamCounters::default();
        let spec = UdpSendSpec {
            len: 64,
            pacer: None,
            burst: 1,
            counters_64bit: false,
        };
        send_loop(&tx, vec![0u8; 64], spec, &ctl, &c).unwrap();
        assert_eq!(c.snapshot().blocks, 5);
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 100];
        for want in 1..=5u64 {
            let n = rx.recv(&mut b).unwrap();
            assert_eq!(n, 64);
            assert_eq!(UdpHeader::decode(&b[..n], false).unwrap().seq, want);
        }
    }

    #[test]
    fn receiver_counts_loss_from_gaps() {
        let (tx, rx) = pair();
        let ctl = Arc::new(RunControl::new(None));
        let counters = Arc::new(StreamCounters::default());
        let stats = Arc::new(Mutex::new(UdpRecvStats::new()));
        let (c2, k2, s2) = (ctl.clone(), counters.clone(), stats.clone());
        rx.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let h = std::thread::spawn(move || recv_loop(&rx, 100, false, &c2, &k2, &s2));
        let mut d = [0u8; 100];
        for seq in [1u64, 2, 4, 5, 3] {
            UdpHeader::new(rperf3_sys::clock::monotonic(), seq).encode(&mut d, false);
            tx.send(&d).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while counters.snapshot().blocks < 5 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        ctl.stop();
        h.join().unwrap().unwrap();
        let s = stats.lock().unwrap();
        assert_eq!((s.packets, s.lost, s.out_of_order), (5, 0, 1));
        assert_eq!(counters.snapshot().bytes, 500);
    }
}
