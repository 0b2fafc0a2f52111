//! iperf 2's `--isochronous` traffic without clocks: frames at a fixed rate
//! (video-like), each of a random size drawn from a lognormal distribution
//! around the asked-for mean rate, the frame slots a late sender skips, and
//! the per-frame accounting both ends print (`isoch:tx/miss/slip`).
//!
//! The caller supplies the times (microseconds of any one clock) and does the
//! waiting; everything here is arithmetic, so it is tested exactly.

use crate::fields::{IsochSettings, StatPair};

/// What `--isochronous[=fps:mean,stdev]` and `--ipg` ask for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IsochSpec {
    /// Frames per second (60 by default).
    pub fps: f64,
    /// Mean rate, bits per second (20 Mbit/s by default).
    pub mean_bps: f64,
    /// Standard deviation of the rate, bits per second (0 by default).
    pub stdev_bps: f64,
    /// `--ipg`: gap between the datagrams of one frame, milliseconds.
    pub ipg_ms: f64,
}

impl Default for IsochSpec {
    fn default() -> Self {
        Self {
            fps: 60.0,
            mean_bps: 20e6,
            stdev_bps: 0.0,
            ipg_ms: 0.0,
        }
    }
}

impl IsochSpec {
    /// The settings block a `-R` or full-duplex client sends, so the server
    /// sends the same frames: frames a second, mean rate, its deviation (2.2.1
    /// calls it the variance) and the gap between a frame's datagrams in ms
    /// (2.2.1's default is 5e-6 when none was asked for).
    pub fn wire_settings(&self) -> IsochSettings {
        let ipg = if self.ipg_ms > 0.0 { self.ipg_ms } else { 5e-6 };
        IsochSettings {
            fps: StatPair::from_f64(self.fps),
            mean: StatPair::from_f64(self.mean_bps),
            variance: StatPair::from_f64(self.stdev_bps),
            burst_ipg: StatPair::from_f64(ipg),
        }
    }

    /// What a client's settings block asks a server to send.
    pub fn from_wire(s: IsochSettings) -> Self {
        let ipg = s.burst_ipg.to_f64();
        Self {
            fps: s.fps.to_f64(),
            mean_bps: s.mean.to_f64(),
            stdev_bps: s.variance.to_f64(),
            // 2.2.1's 5e-6 default is no gap anyone asked for.
            ipg_ms: if ipg > 1e-5 { ipg } else { 0.0 },
        }
    }

    /// The frame period in whole microseconds, as iperf 2 truncates it.
    pub fn period_us(&self) -> u32 {
        if self.fps > 0.0 {
            (1e6 / self.fps) as u32
        } else {
            0
        }
    }
}

/// Frame sizes in bytes: `rate / (fps · 8)` with the rate lognormal around
/// the mean (constant when the deviation is 0). A small generator of its own
/// (splitmix64, Box–Muller) keeps this crate free of dependencies; a seed
/// makes a run repeatable in tests.
#[derive(Debug, Clone)]
pub struct FrameSizes {
    spec: IsochSpec,
    state: u64,
}

impl FrameSizes {
    /// Sizes for `spec`, from `seed`.
    pub fn new(spec: IsochSpec, seed: u64) -> Self {
        Self { spec, state: seed }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform draw in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// One rate draw, bits per second: lognormal with the spec's mean and
    /// standard deviation (the underlying normal's parameters follow from
    /// them), or the mean itself without a deviation.
    pub fn rate(&mut self) -> f64 {
        let (m, s) = (self.spec.mean_bps, self.spec.stdev_bps);
        if s <= 0.0 || m <= 0.0 {
            return m.max(0.0);
        }
        let var_ratio = (s * s) / (m * m);
        let sigma = (1.0 + var_ratio).ln().sqrt();
        let mu = m.ln() - sigma * sigma / 2.0;
        let (u1, u2) = (self.unit(), self.unit());
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (mu + sigma * z).exp()
    }

    /// The next frame's size in bytes, at least `min`.
    pub fn next_frame(&mut self, min: u32) -> u32 {
        let fps = self.spec.fps.max(f64::MIN_POSITIVE);
        let bytes = self.rate() / (fps * 8.0);
        (bytes.min(f64::from(u32::MAX)) as u32).max(min)
    }
}

/// The frame slots of a sender: the first frame goes at once and sets the
/// schedule; each later one takes the next slot, and a sender that is late
/// for a slot skips to the first one still ahead (iperf 2's strict mode).
#[derive(Debug, Clone, Default)]
pub struct FrameClock {
    period_us: i64,
    /// (frame id, its slot time, µs) of the last frame.
    last: Option<(u32, i64)>,
    start_us: i64,
}

impl FrameClock {
    /// A schedule of `period_us` slots.
    pub fn new(period_us: u32) -> Self {
        Self {
            period_us: i64::from(period_us.max(1)),
            last: None,
            start_us: 0,
        }
    }

    /// The next frame for a sender ready at `now_us`: its id (1, 2, ...) and
    /// the time of its slot, which the caller waits for.
    pub fn next(&mut self, now_us: i64) -> (u32, i64) {
        let next = match self.last {
            None => {
                self.start_us = now_us;
                (1, now_us)
            }
            Some((id, at)) => {
                let (mut id, mut at) = (id.wrapping_add(1), at + self.period_us);
                if now_us > at {
                    let behind = (now_us - at + self.period_us - 1) / self.period_us;
                    id = id.wrapping_add(behind as u32);
                    at += behind * self.period_us;
                }
                (id, at)
            }
        };
        self.last = Some(next);
        next
    }

    /// When the first frame went (µs), the schedule's start.
    pub fn start_us(&self) -> i64 {
        self.start_us
    }
}

/// Frame accounting from the frame ids seen, as iperf 2 keeps it: frames
/// (`tx`), slots skipped between consecutive frames (`miss`) and how often
/// any were skipped (`slip`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FrameTally {
    last_id: u32,
    /// Frames.
    pub frames: u64,
    /// Slots skipped.
    pub missed: u64,
    /// Times one or more slots were skipped.
    pub slips: u64,
}

impl FrameTally {
    /// Accounts a datagram of frame `id` (ids of 0 are not frames).
    /// iperf 2 counts the very first frame twice (its first interval shows 61
    /// frames at 60 per second); this does the same, so rows agree with it.
    pub fn on_frame(&mut self, id: u32) {
        if id == 0 || id == self.last_id {
            return;
        }
        if self.last_id == 0 {
            self.frames += 1;
        }
        let delta = id.wrapping_sub(self.last_id);
        self.frames += 1;
        if self.last_id != 0 && delta > 1 {
            self.missed += u64::from(delta - 1);
            self.slips += 1;
        }
        self.last_id = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 60 frames a second: 16666 µs slots, iperf 2's truncation.
    #[test]
    fn period_truncates_to_whole_microseconds() {
        assert_eq!(IsochSpec::default().period_us(), 16_666);
        let s = IsochSpec {
            fps: 0.0,
            ..IsochSpec::default()
        };
        assert_eq!(s.period_us(), 0);
    }

    /// Without a deviation every frame is mean / (fps · 8) bytes, and never
    /// below the minimum.
    #[test]
    fn constant_frames_without_deviation() {
        let mut f = FrameSizes::new(IsochSpec::default(), 1);
        assert_eq!(f.next_frame(0), 41_666);
        let tiny = IsochSpec {
            mean_bps: 1000.0,
            ..IsochSpec::default()
        };
        assert_eq!(FrameSizes::new(tiny, 1).next_frame(112), 112);
    }

    /// The draws have the asked-for mean and deviation (within 2% over
    /// 200,000 draws) and are repeatable from a seed.
    #[test]
    fn lognormal_rates_have_the_asked_moments() {
        let spec = IsochSpec {
            mean_bps: 20e6,
            stdev_bps: 2e6,
            ..IsochSpec::default()
        };
        let mut f = FrameSizes::new(spec, 42);
        let n = 200_000;
        let v: Vec<f64> = (0..n).map(|_| f.rate()).collect();
        let mean = v.iter().sum::<f64>() / n as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean / 20e6 - 1.0).abs() < 0.02, "{mean}");
        assert!((sd / 2e6 - 1.0).abs() < 0.02, "{sd}");
        assert!(v.iter().all(|&x| x > 0.0));
        let mut g = FrameSizes::new(spec, 42);
        assert_eq!(g.rate(), v[0]);
    }

    /// On time: consecutive ids one period apart. Late by two and a bit
    /// periods: the missed slots are skipped and the next slot is ahead.
    #[test]
    fn late_senders_skip_slots() {
        let mut c = FrameClock::new(1000);
        assert_eq!(c.next(5_000), (1, 5_000));
        assert_eq!(c.next(5_400), (2, 6_000));
        assert_eq!(c.next(6_900), (3, 7_000));
        // Ready at 10_500: slots 8_000, 9_000, 10_000 are gone.
        assert_eq!(c.next(10_500), (7, 11_000));
        // Exactly on a slot is not late.
        assert_eq!(c.next(12_000), (8, 12_000));
        assert_eq!(c.start_us(), 5_000);
    }

    /// The first frame counts twice (as iperf 2's rows show); repeats of a
    /// frame id are one frame; a jump of three ids is two misses, one slip.
    #[test]
    fn tally_counts_frames_misses_and_slips() {
        let mut t = FrameTally::default();
        for id in [1, 1, 1, 2, 2, 3, 6, 6, 7, 0] {
            t.on_frame(id);
        }
        assert_eq!((t.frames, t.missed, t.slips), (6, 2, 1));
    }
}
