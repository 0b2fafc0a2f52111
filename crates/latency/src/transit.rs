//! Statistics of datagrams' transit times (arrival minus the sender's stamp,
//! whatever constant offset the two clocks have): RFC 1889's jitter estimate
//! and the count, extremes, mean and spread iperf 2's reports carry. Both
//! personalities' receivers compute them here.

/// RFC 1889's jitter estimate, J += (|D| − J) / 16 over the differences D of
/// consecutive transit times. The clocks' offset cancels in D.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Jitter {
    /// The estimate, seconds.
    pub seconds: f64,
    /// The previous transit, µs: none before the first datagram or after a
    /// restart (the next one only sets it).
    prev_us: Option<i64>,
    /// Sum of the estimate after each difference, and their count (iperf 2
    /// reports their mean).
    sum: f64,
    count: u64,
}

impl Jitter {
    /// One datagram's transit time, µs.
    #[inline]
    pub fn add(&mut self, transit_us: i64) {
        if let Some(prev) = self.prev_us {
            let d = transit_us.abs_diff(prev) as f64 / 1e6;
            self.seconds += (d - self.seconds) / 16.0;
            self.sum += self.seconds;
            self.count += 1;
        }
        self.prev_us = Some(transit_us);
    }

    /// The previous transit time, µs.
    pub fn prev_us(&self) -> Option<i64> {
        self.prev_us
    }

    /// The mean of the estimate over every difference so far (the estimate
    /// itself before any).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            self.seconds
        } else {
            self.sum / self.count as f64
        }
    }

    /// Starts again: the estimate at 0, the next datagram a first one.
    pub fn restart(&mut self) {
        *self = Self::default();
    }
}

/// Transit-time statistics (seconds): count, extremes, mean and the running
/// sum of squared differences (Welford), as iperf 2's server report carries
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Transit {
    /// Samples.
    pub count: u64,
    /// Smallest transit.
    pub min: f64,
    /// Largest transit.
    pub max: f64,
    /// Sum of transits.
    pub sum: f64,
    /// Mean transit.
    pub mean: f64,
    /// Sum of squared differences from the mean.
    pub m2: f64,
}

impl Transit {
    /// Adds one sample.
    pub fn add(&mut self, t: f64) {
        if self.count == 0 {
            self.min = t;
            self.max = t;
        } else {
            self.min = self.min.min(t);
            self.max = self.max.max(t);
        }
        self.count += 1;
        self.sum += t;
        let d = t - self.mean;
        self.mean += d / self.count as f64;
        self.m2 += d * (t - self.mean);
    }

    /// Sample standard deviation (0 below two samples).
    pub fn stdev(&self) -> f64 {
        if self.count < 2 {
            0.0
        } else {
            (self.m2 / (self.count - 1) as f64).sqrt()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Transits 100, 300, 200 µs: |D| = 200 then 100 µs.
    #[test]
    fn jitter_smooths_transit_differences() {
        let mut j = Jitter::default();
        j.add(1_000_100);
        assert_eq!((j.seconds, j.mean()), (0.0, 0.0));
        j.add(1_000_300);
        let j1 = 200e-6 / 16.0;
        assert!((j.seconds - j1).abs() < 1e-15);
        j.add(1_000_200);
        let j2 = j1 + (100e-6 - j1) / 16.0;
        assert!((j.seconds - j2).abs() < 1e-15);
        assert!((j.mean() - (j1 + j2) / 2.0).abs() < 1e-15);
        assert_eq!(j.prev_us(), Some(1_000_200));
        j.restart();
        j.add(5);
        assert_eq!((j.seconds, j.prev_us()), (0.0, Some(5)));
    }

    /// A clock offset of 1.8e9 s (a wall clock against a monotonic one)
    /// changes nothing: the differences are whole microseconds.
    #[test]
    fn a_clock_offset_cancels() {
        let run = |offset: i64| {
            let mut j = Jitter::default();
            for i in 0..400 {
                j.add(offset + if i % 2 == 0 { 1000 } else { 3000 });
            }
            j.seconds
        };
        assert_eq!(run(0), run(1_800_000_000_000_000));
        assert!((run(0) - 0.002).abs() < 1e-6);
    }

    #[test]
    fn transit_figures() {
        let mut t = Transit::default();
        for v in [100e-6, 300e-6, 200e-6] {
            t.add(v);
        }
        assert_eq!(t.count, 3);
        assert!((t.mean - 200e-6).abs() < 1e-12);
        assert!((t.min - 100e-6).abs() < 1e-12 && (t.max - 300e-6).abs() < 1e-12);
        assert!((t.stdev() - 100e-6).abs() < 1e-9);
        assert_eq!(Transit::default().stdev(), 0.0);
    }
}
