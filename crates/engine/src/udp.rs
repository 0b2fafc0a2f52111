//! UDP stream loops: paced datagrams with iperf3's header, and the receiver that
//! keeps iperf3's loss, reordering and jitter statistics.
//!
//! Many datagrams per system call: trains with UDP segmentation / receive
//! offload where the kernel has them, sendmmsg / recvmmsg batches otherwise
//! (`rperf3_sys::udp_io`). Headers are written and read per datagram either way.

use std::io;
use std::net::UdpSocket;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rperf3_sys::udp_io::{self, Failure};

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
    /// Paced: no datagram due at or after this instant (the test's end) is
    /// sent, so the receiver measures the rate rather than the rate plus the
    /// datagram due as the test ended (+8% at iperf3's 1 Mbit/s in 32 KiB
    /// datagrams over 3 s).
    pub end: Option<Instant>,
}

/// Longest header a [`Stamp`] writes.
pub const MAX_STAMP: usize = 16;

/// Bytes one offloaded send call covers at most: a few 64 KiB trains, enough to
/// make system calls rare without leaving the cache.
const OFFLOAD_CALL_BYTES: usize = 256 * 1024;

/// Receive slots of 64 KiB with UDP_GRO (each holds any train, up to the
/// kernel's 64 KiB message limit); pages are only touched as data arrives.
const GRO_SLOTS: usize = 4;

/// How far ahead a paced sender's buffer reaches: the datagrams due in this
/// long are the most one wakeup sends (beyond that a burst takes two calls).
const PACED_REACH: Duration = Duration::from_millis(10);

/// Datagrams one send call carries at most: with offload, whole trains of
/// [`udp_io::segments_per_message`] datagrams; without, one sendmmsg batch;
/// either way at most [`OFFLOAD_CALL_BYTES`]. A paced sender needs no more than
/// its rate releases in [`PACED_REACH`] (or one `-b rate/N` burst): at
/// iperf3's default 1 Mbit/s that is one datagram, which keeps `-P 128` small.
fn capacity(spec: &UdpSendSpec, gso: bool) -> usize {
    let len = spec.len.max(1);
    let per = udp_io::segments_per_message(len);
    let cap = if gso && per > 1 {
        per * (OFFLOAD_CALL_BYTES / (per * len)).clamp(1, udp_io::MAX_MSGS)
    } else {
        udp_io::MAX_MSGS.min((OFFLOAD_CALL_BYTES / len).max(1))
    };
    match spec.pacer {
        Some(p) => {
            let reach = u128::from(p.rate()) * PACED_REACH.as_nanos() / 8_000_000_000;
            let due = (reach / len as u128).max(1).max(u128::from(spec.burst));
            cap.min(due.min(cap as u128) as usize)
        }
        None => cap,
    }
}

/// How many datagrams are due now: those whose send time at the target rate has
/// come (at least one), or a whole `-b rate/N` burst. Unpaced: `cap`, a full call.
fn due_now(spec: &UdpSendSpec, sent: u64, elapsed: Duration, cap: usize) -> Option<usize> {
    let Some(p) = spec.pacer else {
        return Some(cap);
    };
    if p.wait(sent, elapsed).is_some() {
        return None;
    }
    if spec.burst > 1 {
        return Some(spec.burst as usize);
    }
    // Behind schedule after a late wakeup: catch up, at most one call at once.
    let allowed = (u128::from(p.rate()) * elapsed.as_nanos() / 8_000_000_000) as u64;
    let behind = allowed.saturating_sub(sent) / spec.len.max(1) as u64;
    Some((behind as usize + 1).min(cap))
}

/// Writes a personality's header at the start of each datagram: iperf3's
/// (monotonic stamp, sequence) or iperf 2's (sequence, wall-clock stamp).
pub trait Stamp {
    /// Header bytes per datagram: what [`Stamp::write`] fills; the rest of
    /// each datagram is the payload's bytes at the same offsets.
    fn header_len(&self) -> usize;
    /// Called once per send call, before its headers are written: reads the clock.
    fn batch(&mut self);
    /// Writes the header of datagram `seq` (1 for the first) at the start of `d`.
    fn write(&self, d: &mut [u8], seq: u64);
}

/// [`send_loop`] with any personality's header (statically dispatched: the
/// header is written per datagram): `payload` holds every byte
/// after the header (iperf 2 repeats its test header there), and `stamp`
/// writes the first [`Stamp::header_len`] bytes of each datagram.
pub fn send_stamped<S: Stamp>(
    sock: &UdpSocket,
    payload: &[u8],
    spec: UdpSendSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
    stamp: &mut S,
) -> io::Result<()> {
    let len = spec.len.max(1).min(payload.len());
    let hlen = stamp.header_len();
    let mut gso = udp_io::offload().gso;
    let cap = capacity(&spec, gso);
    // With -P 128 at the default rate this is what keeps each stream small:
    // a 16-byte header instead of its own copy of a 32 KiB payload.
    let parts = cap == 1 && len > hlen;
    let mut buf = if parts {
        Vec::new()
    } else {
        payload[..len].repeat(cap)
    };
    let mut head = [0u8; MAX_STAMP];
    let start = Instant::now();
    let mut seq: u64 = 0;
    let mut sent: u64 = 0;
    while !ctl.stopped() {
        let Some(mut want) = due_now(&spec, sent, start.elapsed(), cap) else {
            let w = spec
                .pacer
                .and_then(|p| p.wait(sent, start.elapsed()))
                .unwrap_or_default();
            ctl.nap(w);
            continue;
        };
        if let (Some(p), Some(end)) = (spec.pacer, spec.end) {
            if start + p.due(sent) >= end {
                // Nothing more is due in the test: wait for its end.
                while !ctl.stopped() {
                    ctl.nap(Duration::from_secs(1));
                }
                return Ok(());
            }
        }
        while want > 0 && !ctl.stopped() {
            let mut n = want.min(cap);
            if let Some(b) = ctl.budget() {
                let mut claimed = 0;
                while claimed < n && b.claim(len) > 0 {
                    claimed += 1;
                }
                n = claimed;
                if n == 0 {
                    return Ok(());
                }
            }
            stamp.batch();
            let sent_now = if parts {
                stamp.write(&mut head, seq + 1);
                udp_io::send_parts(sock, &head[..hlen], &payload[hlen..len])
            } else {
                for (i, d) in buf.chunks_mut(len).take(n).enumerate() {
                    stamp.write(d, seq + 1 + i as u64);
                }
                let d = udp_io::Datagrams {
                    buf: &buf[..n * len],
                    size: len,
                };
                udp_io::send(sock, d, gso)
            };
            let k = match sent_now {
                Ok(k) => k,
                Err(f) => {
                    match f {
                        Failure::Retry => std::thread::yield_now(),
                        Failure::NoOffload => gso = false,
                        Failure::Fatal(e) => return Err(e),
                    }
                    0
                }
            };
            // Unsent datagrams use up neither sequence numbers nor budget.
            seq += k as u64;
            sent += (k * len) as u64;
            counters.add_many(k as u64, (k * len) as u64);
            want -= k.min(want);
            if k < n {
                if let Some(b) = ctl.budget() {
                    b.refund(len, n - k);
                }
            }
        }
    }
    Ok(())
}

/// What a receiver made of one batch of messages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Batch {
    /// Datagrams counted.
    pub blocks: u64,
    /// Bytes counted.
    pub bytes: u64,
    /// The stream has ended (iperf 2's FIN): return.
    pub done: bool,
}

/// One received message as a receive loop sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Message<'a> {
    /// The message: one datagram, or a GRO train of them.
    pub data: &'a [u8],
    /// The train's segment size, 0 for a single datagram.
    pub seg: usize,
    /// When it reached the host, as a wall-clock time since the epoch: the
    /// kernel's receive stamp, or where the kernel gives none, the time
    /// the batch was read.
    pub at: Duration,
}

/// Receives batches of messages until the run stops or `each` reports the end,
/// handing each batch to `each` and adding what it counted to `counters`.
/// `len` is the largest datagram expected (slot size without UDP_GRO). A
/// read timeout on the socket only makes the loop look at the stop flag
/// again.
pub fn recv_batches(
    sock: &UdpSocket,
    len: usize,
    ctl: &RunControl,
    counters: &StreamCounters,
    mut each: impl FnMut(&[Message<'_>]) -> Batch,
) -> io::Result<()> {
    let meta = udp_io::RecvMeta {
        gro: udp_io::enable_gro(sock),
        stamps: udp_io::enable_rx_stamps(sock),
    };
    let (stride, slots) = if meta.gro {
        (udp_io::GRO_SLOT, GRO_SLOTS)
    } else {
        (len.max(1), udp_io::MAX_MSGS)
    };
    let mut buf = vec![0u8; stride * slots];
    let mut msgs = [udp_io::Received::default(); udp_io::MAX_MSGS];
    while !ctl.stopped() {
        let got = match udp_io::recv(sock, &mut buf, stride, meta, &mut msgs) {
            Ok(g) => g,
            Err(Failure::Fatal(e)) => return Err(e),
            Err(_) => continue,
        };
        // shutdown() wakes a blocked receive with nothing (or an empty datagram).
        if ctl.stopped() {
            return Ok(());
        }
        let read_at = wall_since_epoch();
        let mut views = [Message::default(); udp_io::MAX_MSGS];
        for ((v, slot), m) in views
            .iter_mut()
            .zip(buf.chunks_exact(stride))
            .zip(&msgs[..got])
        {
            *v = Message {
                data: &slot[..m.len],
                seg: m.seg,
                at: if m.at_ns == 0 {
                    read_at
                } else {
                    Duration::from_nanos(m.at_ns)
                },
            };
        }
        let b = each(&views[..got]);
        counters.add_many(b.blocks, b.bytes);
        if b.done {
            return Ok(());
        }
    }
    Ok(())
}

/// The wall clock as a time since the Unix epoch (zero before it).
pub fn wall_since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::{Budget, BudgetUnit};

    /// A test header: the sequence number, big-endian, in `len` bytes.
    struct SeqStamp {
        len: usize,
    }

    impl Stamp for SeqStamp {
        fn header_len(&self) -> usize {
            self.len
        }
        fn batch(&mut self) {}
        fn write(&self, d: &mut [u8], seq: u64) {
            d[..8].copy_from_slice(&seq.to_be_bytes());
            d[8..self.len].fill(0);
        }
    }

    fn seq_of(d: &[u8]) -> u64 {
        u64::from_be_bytes(d[..8].try_into().unwrap())
    }

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
            end: None,
        }
    }

    #[test]
    fn unpaced_sends_full_batches() {
        assert_eq!(due_now(&spec(None, 1), 0, Duration::ZERO, 180), Some(180));
    }

    #[test]
    fn on_schedule_one_datagram_at_a_time() {
        // 10 Mbit/s, 1250-byte datagrams: one due every millisecond.
        let s = spec(Some(10_000_000), 1);
        assert_eq!(due_now(&s, 0, Duration::ZERO, 64), Some(1));
        assert_eq!(due_now(&s, 1250, Duration::from_micros(500), 64), None);
        assert_eq!(due_now(&s, 1250, Duration::from_millis(1), 64), Some(1));
    }

    #[test]
    fn a_late_wakeup_catches_up_in_one_bounded_batch() {
        let s = spec(Some(10_000_000), 1);
        // 5 ms late: the 5 datagrams that became due, plus the current one.
        assert_eq!(due_now(&s, 0, Duration::from_millis(5), 64), Some(6));
        // Never more than one batch at once, however late.
        assert_eq!(due_now(&s, 0, Duration::from_secs(10), 64), Some(64));
    }

    #[test]
    fn burst_sends_n_back_to_back() {
        let s = spec(Some(10_000_000), 10);
        assert_eq!(due_now(&s, 0, Duration::ZERO, 64), Some(10));
        assert_eq!(due_now(&s, 12_500, Duration::from_millis(5), 64), None);
        assert_eq!(due_now(&s, 12_500, Duration::from_millis(10), 64), Some(10));
    }

    #[test]
    fn offloaded_calls_carry_whole_trains() {
        let unpaced = |len| UdpSendSpec {
            len,
            pacer: None,
            burst: 1,
            counters_64bit: false,
            end: None,
        };
        assert_eq!(capacity(&unpaced(1448), true), 45 * 4);
        assert_eq!(capacity(&unpaced(64), true), 128 * 32);
        assert_eq!(capacity(&unpaced(1448), false), udp_io::MAX_MSGS);
        // Large datagrams: one per message, 256 KiB per call.
        assert_eq!(capacity(&unpaced(32_768), true), 8);
        assert_eq!(capacity(&unpaced(32_768), false), 8);
    }

    #[test]
    fn paced_senders_hold_what_their_rate_releases() {
        let paced = |rate: u64, burst, len| UdpSendSpec {
            len,
            pacer: Some(Pacer::new(rate)),
            burst,
            counters_64bit: false,
            end: None,
        };
        // 1 Mbit/s: 1250 bytes per 10 ms, so one datagram at a time.
        assert_eq!(capacity(&paced(1_000_000, 1, 32_768), true), 1);
        // 1 Gbit/s: 1.25 MB per 10 ms, more than one call: the call's limit.
        assert_eq!(capacity(&paced(1_000_000_000, 1, 1448), true), 45 * 4);
        // 100 Mbit/s: 125 kB per 10 ms = 86 datagrams of 1448.
        assert_eq!(capacity(&paced(100_000_000, 1, 1448), true), 86);
        // A slow burst still goes out whole.
        assert_eq!(capacity(&paced(1_000_000, 20, 1400), true), 20);
    }

    #[test]
    fn a_paced_sender_sends_nothing_due_at_its_end() {
        let (tx, rx) = pair();
        // 1 MB/s in 50 000-byte datagrams, ending 225 ms in: due at 0, 50,
        // ..., 200 ms after the sender starts (5 of them, for any start up
        // to 25 ms late); the one due at 250 ms is not sent.
        let start = Instant::now();
        let spec = UdpSendSpec {
            len: 50_000,
            pacer: Some(Pacer::new(8_000_000)),
            burst: 1,
            counters_64bit: false,
            end: Some(start + Duration::from_millis(225)),
        };
        let ctl = std::sync::Arc::new(RunControl::new(None));
        let c = std::sync::Arc::new(StreamCounters::default());
        let (c2, k2) = (ctl.clone(), c.clone());
        let h = std::thread::spawn(move || {
            send_stamped(
                &tx,
                &[0u8; 50_000],
                spec,
                &c2,
                &k2,
                &mut SeqStamp { len: 12 },
            )
        });
        // Stopped well after the end: the count is the end's, not the stop's.
        while start.elapsed() < Duration::from_millis(400) {
            std::thread::sleep(Duration::from_millis(10));
        }
        ctl.stop();
        h.join().unwrap().unwrap();
        assert_eq!(c.snapshot().blocks, 5);
        drop(rx);
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
            end: None,
        };
        send_stamped(&tx, &[0u8; 64], spec, &ctl, &c, &mut SeqStamp { len: 12 }).unwrap();
        assert_eq!(c.snapshot().blocks, 5);
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 100];
        for want in 1..=5u64 {
            let n = rx.recv(&mut b).unwrap();
            assert_eq!(n, 64);
            assert_eq!(seq_of(&b[..n]), want);
        }
    }

    #[test]
    fn a_paced_sender_puts_its_header_before_the_shared_payload() {
        let (tx, rx) = pair();
        let ctl = RunControl::new(Some(Budget::new(BudgetUnit::Blocks, 3)));
        let c = StreamCounters::default();
        // 1 Mbit/s with 1250-byte datagrams: one due at a time.
        let spec = UdpSendSpec {
            len: 1250,
            pacer: Some(Pacer::new(1_000_000)),
            burst: 1,
            counters_64bit: true,
            end: None,
        };
        assert_eq!(capacity(&spec, true), 1);
        let payload: Vec<u8> = (0..1250u32).map(|i| i as u8).collect();
        send_stamped(&tx, &payload, spec, &ctl, &c, &mut SeqStamp { len: 16 }).unwrap();
        assert_eq!(c.snapshot().bytes, 3 * 1250);
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 2000];
        for want in 1..=3u64 {
            let n = rx.recv(&mut b).unwrap();
            assert_eq!(n, 1250);
            assert_eq!(seq_of(&b[..n]), want);
            assert_eq!(&b[16..n], &payload[16..]);
        }
    }
}
