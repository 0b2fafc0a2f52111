//! iperf 2's datagrams on the engine's UDP loops: the header every datagram
//! starts with (sequence number first, then the sender's wall clock) and the
//! receiver that feeds iperf 2's statistics (`rperf3_proto2::Udp2Stats`).
//! The loops themselves (trains, batches, pacing) are the engine's.

use std::io;
use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_engine::udp::{recv_batches, Batch, Stamp};
use rperf3_proto2::{DatagramHeader, Timeval, Udp2Stats, DATAGRAM_HEADER_LEN};

/// The wall clock as iperf 2 stamps it (microseconds since the epoch).
pub(crate) fn wall_now() -> Timeval {
    Timeval::from_since_epoch(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default(),
    )
}

/// iperf 2's datagram header, written per datagram with one clock read per
/// send call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamp2 {
    sent: Timeval,
    seq64: bool,
}

impl Stamp2 {
    /// A stamp writing 64-bit sequence numbers when `seq64` (SEQNO64B).
    pub(crate) fn new(seq64: bool) -> Self {
        Self {
            sent: Timeval::default(),
            seq64,
        }
    }
}

impl Stamp for Stamp2 {
    fn header_len(&self) -> usize {
        DATAGRAM_HEADER_LEN
    }
    fn batch(&mut self) {
        self.sent = wall_now();
    }
    fn write(&self, d: &mut [u8], seq: u64) {
        let h = DatagramHeader {
            seq: seq as i64,
            sent: self.sent,
        };
        h.encode(d, self.seq64);
    }
}

/// Receives a flow's datagrams into `stats` until its FIN, the run's stop, or
/// an error. `len` is the largest datagram expected.
pub(crate) fn recv_loop2(
    sock: &UdpSocket,
    len: usize,
    ctl: &RunControl,
    counters: &StreamCounters,
    stats: &Mutex<Udp2Stats>,
) -> io::Result<()> {
    recv_batches(sock, len.max(DATAGRAM_HEADER_LEN), ctl, counters, |msgs| {
        let mut s = stats.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = Batch::default();
        for m in msgs {
            let at_us = i64::try_from(m.at.as_micros()).unwrap_or(i64::MAX);
            let b = s.on_message(m.data, m.seg, at_us);
            all.blocks += b.blocks;
            all.bytes += b.bytes;
            if b.done {
                all.done = true;
                break;
            }
        }
        all
    })
}

/// How long a sampler may wait on a flow's socket between stop checks.
pub(crate) const RECV_POLL: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_engine::budget::{Budget, BudgetUnit};
    use rperf3_engine::udp::{send_stamped, UdpSendSpec};

    #[test]
    fn each_datagram_gets_its_own_iperf2_header() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 100)));
        let c = StreamCounters::default();
        let spec = UdpSendSpec {
            len: 64,
            pacer: None,
            burst: 1,
            counters_64bit: true,
            end: None,
        };
        // What follows the 16-byte header is the caller's, in every datagram.
        let payload: Vec<u8> = (0..64u8).collect();
        let before = wall_now().as_micros();
        send_stamped(&tx, &payload, spec, &ctl, &c, &mut Stamp2::new(true)).unwrap();
        assert_eq!(c.snapshot().blocks, 100);
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 100];
        for want in 1..=100i64 {
            let n = rx.recv(&mut b).unwrap();
            assert_eq!(n, 64);
            let h = DatagramHeader::decode(&b, true).unwrap();
            assert_eq!(h.seq, want);
            assert!(h.sent.as_micros() >= before - 1);
            assert_eq!(&b[16..64], &payload[16..]);
        }
    }
}
