//! The one-way delay of the test's own UDP datagrams, between rperf3 ends that
//! agreed on it (`"owd": 1` in the latency parameters). The datagrams keep
//! iperf3's layout; only the clock of the send time changes: the sender stamps
//! the wall clock (`CLOCK_REALTIME`, seconds and microseconds since the epoch)
//! instead of the monotonic one, and the receiver takes the kernel's
//! wall-clock receive stamp. Each datagram's delay is then arrival minus send time, and jitter,
//! which iperf3 computes from differences of the same stamps and arrival times,
//! is unchanged because both sides of each difference use the same clock.

use std::io;
use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::Duration;

use rperf3_latency::OneWay;
use rperf3_proto::{UdpHeader, UdpRecvStats};

use crate::control::RunControl;
use crate::counters::StreamCounters;
use crate::udp::{recv_batches, send_stamped, wall_since_epoch, Batch, Stamp, UdpSendSpec};

/// A header's send time in nanoseconds since the epoch (microsecond steps).
pub fn sent_ns(h: &UdpHeader) -> i64 {
    i64::from(h.sec) * 1_000_000_000 + i64::from(h.usec) * 1_000
}

/// iperf3's header with the wall clock as its send time.
struct WallStamp {
    now: Duration,
    wide: bool,
}

impl Stamp for WallStamp {
    fn header_len(&self) -> usize {
        UdpHeader::len(self.wide)
    }
    fn batch(&mut self) {
        self.now = wall_since_epoch();
    }
    fn write(&self, d: &mut [u8], seq: u64) {
        UdpHeader::new(self.now, seq).encode(d, self.wide);
    }
}

/// [`crate::udp::send_loop`] with wall-clock send times.
pub fn send_loop_wall(
    sock: &UdpSocket,
    payload: &[u8],
    spec: UdpSendSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
) -> io::Result<()> {
    let mut stamp = WallStamp {
        now: Duration::ZERO,
        wide: spec.counters_64bit,
    };
    send_stamped(sock, payload, spec, ctl, counters, &mut stamp)
}

/// [`crate::udp::recv_loop`] for a sender that stamps the wall clock: the
/// statistics see wall-clock arrival times, and every datagram's delay goes
/// into `owd` (taken by whoever reports it, per interval).
pub fn recv_loop_owd(
    sock: &UdpSocket,
    len: usize,
    counters_64bit: bool,
    ctl: &RunControl,
    counters: &StreamCounters,
    stats: &Mutex<UdpRecvStats>,
    owd: &Mutex<OneWay>,
) -> io::Result<()> {
    recv_batches(
        sock,
        len.max(UdpHeader::len(counters_64bit)),
        ctl,
        counters,
        |msgs| {
            let (mut blocks, mut bytes) = (0u64, 0u64);
            // Statistics first, then delays: the reporter takes them one at a time.
            let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
            let mut o = owd.lock().unwrap_or_else(|p| p.into_inner());
            for m in msgs {
                let recv_ns = i64::try_from(m.at.as_nanos()).unwrap_or(i64::MAX);
                let (b, n) = s.on_message_each(m.data, m.seg, counters_64bit, m.at, |h| {
                    o.record(sent_ns(h), recv_ns);
                });
                blocks += b;
                bytes += n;
            }
            Batch {
                blocks,
                bytes,
                done: false,
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, BudgetUnit};
    use std::sync::Arc;
    use std::time::Instant;

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
        let h = std::thread::spawn(move || recv_loop_owd(&b, 200, false, &c2, &k2, &s2, &o2));
        let tx_ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 50)));
        let spec = UdpSendSpec {
            len: 200,
            pacer: None,
            burst: 1,
            counters_64bit: false,
        };
        let before = wall_since_epoch();
        send_loop_wall(&a, &[7u8; 200], spec, &tx_ctl, &StreamCounters::default()).unwrap();
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
