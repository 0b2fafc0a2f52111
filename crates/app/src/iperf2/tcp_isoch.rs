//! iperf 2's `--isochronous` over TCP: one frame per slot of the frame
//! clock, each a random number of bytes written as one burst (a burst header
//! naming the frame, its period and size, then payload) in writes of at most
//! `-l` bytes. The schedule, the sizes and the frame accounting are the ones
//! the UDP sender uses; how late each frame left its slot goes to the latency
//! core for the "Isoch schedule errors" line.

use std::io;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rperf3_engine::control::RunControl;
use rperf3_proto2::{BurstHeader, FrameClock, FrameSizes, IsochSpec, Timeval, BURST_HEADER_LEN};

use super::flow_stats::FlowStats;
use super::tcp_io::pattern;

/// What a frame sender needs besides its socket and counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FramePlan {
    /// Frame rate and sizes.
    pub(crate) spec: IsochSpec,
    /// Largest write (`-l`).
    pub(crate) len: u32,
    /// The report start the test header carried (every burst repeats it).
    pub(crate) start: Timeval,
    /// When the schedule starts (the test's start, so that the last slot
    /// before the end of `-t` is one of it).
    pub(crate) origin: Instant,
    /// No frame whose slot falls after this goes (`-t`); the sender ends
    /// there, not at its last frame, so the last interval is a whole one.
    pub(crate) end: Option<Instant>,
}

/// Sends frames until `ctl` stops, the `-n` budget is spent or the next slot
/// lies past the plan's end (then it waits for the end); `stats` counts every
/// write and every frame.
pub(crate) fn send_frames(
    sock: &TcpStream,
    plan: FramePlan,
    ctl: &RunControl,
    stats: &FlowStats,
) -> io::Result<()> {
    let period = plan.spec.period_us();
    let mut clock = FrameClock::new(period);
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_micros() as u64;
    let mut sizes = FrameSizes::new(plan.spec, seed);
    let len = (plan.len as usize).max(BURST_HEADER_LEN);
    let mut buf = pattern(len as u32);
    let origin = plan.origin;
    let now_us = || origin.elapsed().as_micros() as i64;
    let mut sent = 0u64;
    while !ctl.stopped() {
        let size = sizes.next_frame(BURST_HEADER_LEN as u32);
        let (id, slot) = clock.next(now_us());
        let due = origin + Duration::from_micros(slot.max(0) as u64);
        if let Some(e) = plan.end.filter(|&e| due > e) {
            ctl.nap(e.saturating_duration_since(Instant::now()));
            break;
        }
        let ahead = due.saturating_duration_since(Instant::now());
        if !ahead.is_zero() {
            ctl.nap(ahead);
        }
        if ctl.stopped() {
            break;
        }
        if let Some(s) = &stats.isoch {
            s.frame(id, now_us() - slot);
        }
        let mut left = size as usize;
        let mut first = true;
        while left > 0 && !ctl.stopped() {
            let want = left.min(len);
            let n = ctl.budget().map_or(want, |b| b.claim(want));
            if n == 0 {
                return Ok(());
            }
            if first {
                BurstHeader {
                    start: plan.start,
                    write_time: super::client_header::wall_now(),
                    period_us: period,
                    burst_id: id,
                    burst_size: size,
                    seq: sent,
                }
                .write(&mut buf);
                first = false;
            }
            // Later writes of the frame carry the header's bytes again as
            // payload: a receiver reads a burst by its size.
            rperf3_engine::tcp::write_block(sock, &buf[..n], None, stats)?;
            left -= n;
            sent += n as u64;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    /// 50 frames a second of 2,000 bytes in writes of at most 1,500: every
    /// frame is one burst (header naming it, its size and period) in two
    /// writes; ids rise by one; the tally counts the first frame twice, as
    /// 2.2.1's rows do; nothing is sent for a slot past the end.
    #[test]
    fn frames_are_bursts_in_slots() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let spec = IsochSpec {
            fps: 50.0,
            mean_bps: 50.0 * 8.0 * 2000.0,
            ..IsochSpec::default()
        };
        let start = Instant::now();
        let plan = FramePlan {
            spec,
            len: 1500,
            start: Timeval { sec: 7, usec: 8 },
            origin: start,
            end: Some(start + Duration::from_millis(190)),
        };
        let stats = FlowStats::sender(1500, true, None);
        send_frames(&c, plan, &RunControl::new(None), &stats).unwrap();
        let took = start.elapsed();
        drop(c);
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        // Slots at 0, 20, ..., 180 ms: ten frames; the sender ends at 190.
        assert_eq!(got.len(), 10 * 2000);
        assert!(took >= Duration::from_millis(190), "{took:?}");
        for (i, f) in got.chunks(2000).enumerate() {
            let h = BurstHeader::read(f, 1 << 20).unwrap().unwrap();
            assert_eq!((h.burst_id, h.burst_size), (i as u32 + 1, 2000));
            assert_eq!((h.period_us, h.start), (20_000, plan.start));
            assert_eq!(h.seq, i as u64 * 2000);
        }
        let snap = stats.sample();
        assert_eq!((snap.calls, snap.bytes), (20, 20_000));
        assert_eq!((snap.isoch.frames, snap.isoch.missed), (11, 0));
    }
}
