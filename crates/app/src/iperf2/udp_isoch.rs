//! iperf 2's `--isochronous` UDP sender: one frame per slot of the frame
//! clock, each a random number of bytes split into datagrams sent back to
//! back (or `--ipg` apart), every datagram carrying the frame block (period,
//! schedule start, previous and current frame id, frame size, bytes still to
//! come) that iperf 2 receivers read. The schedule and the sizes are the
//! protocol crate's; how late each frame left its slot goes to the latency
//! core.

use std::io;
use std::net::UdpSocket;
use std::sync::Mutex;
use std::time::Duration;

use super::udp_wire::wall_now;
use rperf3_engine::control::RunControl;
use rperf3_engine::counters::StreamCounters;
use rperf3_latency::Histogram;
use rperf3_proto2::{
    DatagramHeader, FrameClock, FrameSizes, FrameTally, IsochFrame, IsochSpec, Layout,
    UdpTestHeader,
};
use rperf3_report::iperf2::model::Isoch2;

/// What a sender's frames were: the tally for rows and the schedule errors.
#[derive(Debug, Default)]
pub(crate) struct IsochStats {
    inner: Mutex<(FrameTally, Histogram)>,
}

impl IsochStats {
    /// The frames so far (cumulative).
    pub(crate) fn tally(&self) -> Isoch2 {
        let t = self.inner.lock().unwrap_or_else(|p| p.into_inner()).0;
        Isoch2 {
            frames: t.frames,
            missed: t.missed,
            slips: t.slips,
        }
    }

    /// (mean, min, max, stdev) of how far frames left from their slots, ms;
    /// `None` before the first frame.
    pub(crate) fn schedule_errors_ms(&self) -> Option<(f64, f64, f64, f64)> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let h = &g.1;
        (h.count() > 0).then(|| {
            (
                h.mean_ns() / 1e6,
                h.min_ns() as f64 / 1e6,
                h.max_ns() as f64 / 1e6,
                h.stdev_ns() / 1e6,
            )
        })
    }

    /// Accounts frame `id`, which left `late_us` from its slot.
    pub(crate) fn frame(&self, id: u32, late_us: i64) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.on_frame(id);
        g.1.record(late_us.unsigned_abs().saturating_mul(1000));
    }
}

/// A row's frames: the difference of two cumulative tallies.
pub(crate) fn since(now: Isoch2, before: Isoch2) -> Isoch2 {
    Isoch2 {
        frames: now.frames - before.frames,
        missed: now.missed - before.missed,
        slips: now.slips - before.slips,
    }
}

/// Sends frames until `ctl` stops: datagrams of at most `len` bytes whose
/// bytes after the 16-byte header start as `payload`, with `header` (the
/// client's test header) rewritten per datagram for its frame block.
pub(crate) fn send_frames(
    sock: &UdpSocket,
    payload: &[u8],
    mut header: UdpTestHeader,
    spec: IsochSpec,
    ctl: &RunControl,
    counters: &StreamCounters,
    stats: &IsochStats,
) -> io::Result<()> {
    let len = payload.len();
    let mut buf = payload.to_vec();
    // The last datagram of a frame still carries the whole test header.
    header.isoch = Some(IsochFrame::default());
    let min = header.extent(Layout::V2_2_1).min(len) as u32;
    let period = spec.period_us();
    let mut clock = FrameClock::new(period);
    let mut sizes = FrameSizes::new(spec, wall_now().as_micros() as u64);
    let ipg = Duration::from_secs_f64(spec.ipg_ms.max(0.0) / 1e3);
    let (mut prev, mut seq, mut start) = (0u32, 1i64, None);
    while !ctl.stopped() {
        let mut burst = sizes.next_frame(min);
        let (id, slot) = clock.next(wall_now().as_micros());
        let ahead = slot - wall_now().as_micros();
        if ahead > 0 {
            ctl.nap(Duration::from_micros(ahead as u64));
        }
        if ctl.stopped() {
            break;
        }
        let left_at = wall_now();
        stats.frame(id, left_at.as_micros() - slot);
        let start = *start.get_or_insert(left_at);
        let mut remaining = burst;
        while remaining > 0 && !ctl.stopped() {
            let n = (remaining as usize).min(len);
            header.isoch = Some(IsochFrame {
                period_us: period,
                start,
                prev_frame_id: prev,
                frame_id: id,
                burst_size: burst,
                remaining,
            });
            header.encode(Layout::V2_2_1, &mut buf[..n]);
            DatagramHeader {
                seq,
                sent: wall_now(),
            }
            .encode(&mut buf[..n], true);
            match sock.send(&buf[..n]) {
                Ok(k) => {
                    counters.add_many(1, k as u64);
                    seq += 1;
                    remaining -= k as u32;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e),
            }
            // A tail too short for the header grows to the minimum, and the
            // frame's size with it, as iperf 2 sends it.
            if remaining > 0 && remaining < min {
                burst += min - remaining;
                remaining = min;
            }
            if !ipg.is_zero() && remaining > 0 {
                ctl.nap(ipg);
            }
        }
        prev = id;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_proto2::UdpTestHeader as H;

    /// 30 frames a second of 8 datagrams' worth: every datagram's frame block
    /// names its frame, the frame's size and what was left before it; ids
    /// rise by one per frame, frames are about a period apart, and the
    /// tally counts them (the first twice).
    #[test]
    fn frames_carry_their_blocks_and_keep_their_slots() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let header = H::default();
        let spec = IsochSpec {
            fps: 30.0,
            mean_bps: 30.0 * 8.0 * 8000.0,
            ..IsochSpec::default()
        };
        let payload = crate::iperf2::udp_common::payload(1000, &header);
        let ctl = RunControl::new(None);
        let (counters, stats) = (StreamCounters::default(), IsochStats::default());
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(150));
                ctl.stop();
            });
            send_frames(&tx, &payload, header, spec, &ctl, &counters, &stats).unwrap();
        });
        rx.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 2048];
        let mut seen = Vec::new();
        while let Ok(n) = rx.recv(&mut buf) {
            let h = H::decode(&buf[..n]).unwrap();
            let f = h.isoch.expect("frame block");
            seen.push((f, n, sent_us(&buf)));
        }
        // Frames at 0, 33, 66, 100, 133 ms: five, of 8 datagrams each.
        let frames: Vec<u32> = seen.iter().map(|s| s.0.frame_id).collect();
        assert_eq!(frames.first(), Some(&1));
        assert!(
            (4..=6).contains(&(*frames.last().unwrap() as usize)),
            "{frames:?}"
        );
        for w in seen.windows(2) {
            let (a, b) = (&w[0].0, &w[1].0);
            if a.frame_id == b.frame_id {
                assert_eq!(b.remaining, a.remaining - w[0].1 as u32);
            } else {
                assert_eq!((b.frame_id, b.prev_frame_id), (a.frame_id + 1, a.frame_id));
                assert_eq!(b.remaining, 8000);
                let gap = w[1].2 - w[0].2;
                // 33,333 µs apart, less the previous frame's 8 sends.
                assert!((25_000..45_000).contains(&gap), "{gap}");
            }
            assert_eq!((b.period_us, b.burst_size), (33_333, 8000));
        }
        let t = stats.tally();
        let sent = *frames.last().unwrap() as u64;
        assert_eq!((t.frames, t.missed, t.slips), (sent + 1, 0, 0));
        assert_eq!(counters.snapshot().bytes, sent * 8000);
        let (mean, _, max, _) = stats.schedule_errors_ms().unwrap();
        assert!(mean < 5.0 && max < 20.0, "{mean} {max}");
    }

    fn sent_us(d: &[u8]) -> i64 {
        DatagramHeader::decode(d, true).unwrap().sent.as_micros()
    }
}
