//! iperf3's datagrams on the engine's UDP loops: its header (send time, then
//! the sequence number) written into each datagram, and the receiver that
//! feeds iperf3's statistics (`rperf3_proto::UdpRecvStats`).
//!
//! With `--latency` between rperf3 ends (`"owd": 1` in the latency
//! parameters) the datagrams keep iperf3's layout; only the clock of the send
//! time changes: the sender stamps the wall clock (seconds and microseconds
//! since the epoch) instead of the monotonic one, and each datagram's one-way
//! delay is the kernel's wall-clock receive stamp minus it. Jitter, which
//! iperf3 computes from differences of the same stamps and arrival times, is
//! unchanged because both sides of each difference use the same clock.

use std::io;
use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::Duration;

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::udp::{recv_batches, send_stamped, wall_since_epoch, Batch, Stamp, UdpSendSpec};
use rperf3_latency::OneWay;
use rperf3_proto::{UdpHeader, UdpRecvStats};

/// A header's send time in nanoseconds since the epoch (microsecond steps).
pub(crate) fn sent_ns(h: &UdpHeader) -> i64 {
    i64::from(h.sec) * 1_000_000_000 + i64::from(h.usec) * 1_000
}

/// iperf3's header, stamped with the monotonic clock or (`wall`) the wall clock.
struct Iperf3Stamp {
    now: Duration,
    wide: bool,
    wall: bool,
}

impl Stamp for Iperf3Stamp {
    fn header_len(&self) -> usize {
        UdpHeader::len(self.wide)
    }
    fn batch(&mut self) {
        self.now = if self.wall {
            wall_since_epoch()
        } else {
            rperf3_sys::clock::monotonic()
        };
    }
    fn write(&self, d: &mut [u8], seq: u64) {
        UdpHeader::new(self.now, seq).encode(d, self.wide);
    }
}

/// Sends iperf3's datagrams as `spec` says (see the engine's
/// `send_stamped`); `wall`: stamped with the wall clock (`--latency`).
pub(crate) fn send_loop(
    sock: &UdpSocket,
    payload: &[u8],
    spec: UdpSendSpec,
    (ctl, counters): (&RunControl, &StreamCounters),
    wall: bool,
) -> io::Result<()> {
    let mut stamp = Iperf3Stamp {
        now: Duration::ZERO,
        wide: spec.counters_64bit,
        wall,
    };
    send_stamped(sock, payload, spec, ctl, counters, &mut stamp)
}

/// Receives datagrams, counting bytes and updating `stats`, until the socket
/// is shut down or the run stops; with `owd` (a sender that stamps the wall
/// clock), every datagram's delay goes there too. Jitter runs on the kernel's
/// receive times (wall clock) against the sender's stamps (iperf3's monotonic
/// clock or the wall clock): a constant offset that the differences cancel.
/// Datagrams too short for a header are not test data.
pub(crate) fn recv_loop(
    sock: &UdpSocket,
    len: usize,
    counters_64bit: bool,
    ctl: &RunControl,
    counters: &StreamCounters,
    stats: &Mutex<UdpRecvStats>,
    owd: Option<&Mutex<OneWay>>,
) -> io::Result<()> {
    let len = len.max(UdpHeader::len(counters_64bit));
    recv_batches(sock, len, ctl, counters, |msgs| {
        let (mut blocks, mut bytes) = (0u64, 0u64);
        // Counters and statistics change under one lock, so a sample sees a
        // batch entirely or not at all; delays after them (the reporter
        // takes the two one at a time).
        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
        let mut o = owd.map(|o| o.lock().unwrap_or_else(|p| p.into_inner()));
        for m in msgs {
            let (b, n) = match o.as_deref_mut() {
                None => s.on_message(m.data, m.seg, counters_64bit, m.at),
                Some(o) => {
                    let recv_ns = i64::try_from(m.at.as_nanos()).unwrap_or(i64::MAX);
                    s.on_message_each(m.data, m.seg, counters_64bit, m.at, |h| {
                        o.record(sent_ns(h), recv_ns);
                    })
                }
            };
            blocks += b;
            bytes += n;
        }
        Batch {
            blocks,
            bytes,
            done: false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_engine::budget::{Budget, BudgetUnit};
    use std::sync::Arc;
    use std::time::Instant;

    fn pair() -> (UdpSocket, UdpSocket) {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        (a, b)
    }

    #[test]
    fn datagrams_carry_iperf3_headers_in_sequence() {
        let (tx, rx) = pair();
        for wide in [false, true] {
            let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 5)));
            let c = StreamCounters::default();
            let spec = UdpSendSpec {
                len: 64,
                pacer: None,
                burst: 1,
                counters_64bit: wide,
                end: None,
            };
            send_loop(&tx, &[0u8; 64], spec, (&ctl, &c), false).unwrap();
            assert_eq!(c.snapshot().blocks, 5);
            rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut b = [0u8; 100];
            for want in 1..=5u64 {
                let n = rx.recv(&mut b).unwrap();
                assert_eq!(n, 64);
                assert_eq!(UdpHeader::decode(&b[..n], wide).unwrap().seq, want);
            }
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
        let h = std::thread::spawn(move || recv_loop(&rx, 100, false, &c2, &k2, &s2, None));
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

    /// The same delays (1 ms, then 3 ms, alternating) give the same jitter whether
    /// both ends use the monotonic clock (iperf3) or the wall clock (here), even
    /// though wall-clock seconds are a billion times larger.
    #[test]
    fn jitter_is_the_same_with_wall_clock_stamps_issue18() {
        let run = |base: Duration| {
            let mut s = UdpRecvStats::new();
            let mut o = OneWay::new();
            for i in 0..200u64 {
                let sent = base + Duration::from_millis(10 * i);
                let delay = Duration::from_millis(if i % 2 == 0 { 1 } else { 3 });
                let mut d = [0u8; 64];
                UdpHeader::new(sent, i + 1).encode(&mut d, false);
                s.on_message_each(&d, 0, false, sent + delay, |h| {
                    o.record(sent_ns(h), (sent + delay).as_nanos() as i64);
                });
            }
            (s.jitter.seconds, o)
        };
        let (mono, _) = run(Duration::from_secs(685));
        let (wall, o) = run(Duration::from_secs(1_795_000_000));
        // Jitter converges to the 2 ms step: every difference is 2 ms.
        assert!((mono - 0.002).abs() < 1e-7, "{mono}");
        assert!((wall - mono).abs() < 1e-12, "{wall} {mono}");
        let f = o.summary();
        assert_eq!(
            (f.count, f.min_ms, f.max_ms, f.mean_ms),
            (200, 1.0, 3.0, 2.0)
        );
    }

    #[test]
    fn datagrams_stamped_with_the_wall_clock_give_their_delays_issue18() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let ctl = Arc::new(RunControl::new(None));
        let counters = Arc::new(StreamCounters::default());
        let stats = Arc::new(Mutex::new(UdpRecvStats::new()));
        let owd = Arc::new(Mutex::new(OneWay::new()));
        b.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let (c2, k2, s2, o2) = (ctl.clone(), counters.clone(), stats.clone(), owd.clone());
        let h = std::thread::spawn(move || recv_loop(&b, 200, false, &c2, &k2, &s2, Some(&*o2)));
        let tx_ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 50)));
        let spec = UdpSendSpec {
            len: 200,
            pacer: None,
            burst: 1,
            counters_64bit: false,
            end: None,
        };
        let before = wall_since_epoch();
        send_loop(
            &a,
            &[7u8; 200],
            spec,
            (&tx_ctl, &StreamCounters::default()),
            true,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while counters.snapshot().blocks < 50 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        ctl.stop();
        h.join().unwrap().unwrap();
        let took = wall_since_epoch() - before;
        let o = owd.lock().unwrap();
        let f = o.summary();
        // One clock: no delay is negative, and none is longer than the exchange.
        assert_eq!((f.count, o.negative()), (50, 0));
        assert!(f.max_ms <= took.as_secs_f64() * 1e3, "{f:?} {took:?}");
        assert_eq!(stats.lock().unwrap().packets, 50);
    }
}
