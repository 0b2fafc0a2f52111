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
const MAX_NAP: Duration = Duration::from_millis(20);

/// Sends datagrams until stopped or the budget is used up. `payload` is `len`
/// bytes; its first bytes are overwritten with the header of each datagram.
pub fn send_loop(
    sock: &UdpSocket,
    mut payload: Vec<u8>,
    spec: UdpSendSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let start = Instant::now();
    let mut seq: u64 = 0;
    let mut sent: u64 = 0;
    let burst = spec.burst.max(1);
    while !ctl.stopped() {
        if let Some(p) = spec.pacer {
            if let Some(w) = p.wait(sent, start.elapsed()) {
                std::thread::sleep(w.min(MAX_NAP));
                continue;
            }
        }
        for _ in 0..burst {
            if let Some(b) = ctl.budget() {
                if b.claim(spec.len) == 0 {
                    return Ok(());
                }
            }
            let hdr = UdpHeader::new(rperf3_sys::clock::monotonic(), seq + 1);
            hdr.encode(&mut payload, spec.counters_64bit);
            match sock.send(&payload) {
                Ok(n) => {
                    // A failed send does not use up a sequence number.
                    seq += 1;
                    sent += n as u64;
                    counters.add(n as u64);
                }
                Err(e) if is_transient(&e) => std::thread::yield_now(),
                Err(e) => return Err(e),
            }
            if ctl.stopped() {
                break;
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
    let mut buf = vec![0u8; len.max(UdpHeader::len(counters_64bit))];
    while !ctl.stopped() {
        let n = match sock.recv(&mut buf) {
            Ok(0) => {
                // shutdown() wakes a blocked recv with 0 bytes.
                if ctl.stopped() {
                    return Ok(());
                }
                continue;
            }
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        };
        let now = rperf3_sys::clock::monotonic();
        // Too short for a header (a stray handshake datagram): not test data.
        let Some(h) = UdpHeader::decode(&buf[..n], counters_64bit) else {
            continue;
        };
        // Counters and statistics change under one lock, so a sample sees both
        // before or both after a datagram.
        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
        s.on_datagram(h.seq, h.sec, h.usec, now, n);
        counters.add(n as u64);
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
