//! The colours and numbers of the mesh matrices, kept out of the drawing so
//! their order (a worse figure never looks better) and their text are
//! unit-tested.
//!
//! A scale runs from the best figure seen (pale green) to the worst (red),
//! relative to the data: a fleet of 10 Gbit/s links and one of 100 Mbit/s
//! links both show their weak pairs. Throughput and latency span orders of
//! magnitude, so their scales are logarithmic; loss is linear from zero. Where
//! the data hardly differ (every pair within a few percent), full red would
//! cry wolf, so a colour reaches red only for a value twice as bad as the best
//! and, for latency, a millisecond worse (a tenth of a millisecond more on a
//! LAN is noise); for loss, at one percent: the domain is widened to at least
//! that span.

use crate::mesh_model::Metric;

/// The colour of a value, as its place between the best (0) and the worst (1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scale {
    metric: Metric,
    /// The smallest value in the data: an end of the legend.
    pub(crate) min: f64,
    /// The largest value in the data: the other end.
    pub(crate) max: f64,
    /// The colour domain (at least `min..max`, widened as the module says).
    lo: f64,
    hi: f64,
    log: bool,
}

/// A value this many times worse than the best is drawn in the worst colour.
const MIN_RATIO: f64 = 2.0;
/// Latency this much above the best (ms) is drawn in the worst colour at the least.
const MIN_LATENCY_SPAN_MS: f64 = 1.0;
/// A loss (percentage points) drawn in the worst colour at the least.
const MIN_LOSS_SPAN: f64 = 1.0;
/// Retransmits reach full red at 100 at least: a handful on a busy path is
/// not alarming.
const MIN_RETRANSMITS_SPAN: f64 = 100.0;

/// Colour stops from best to worst: pale green, pale yellow, orange, red.
const STOPS: [(f64, (u8, u8, u8)); 4] = [
    (0.0, (226, 243, 220)),
    (0.35, (255, 236, 160)),
    (0.7, (252, 141, 60)),
    (1.0, (206, 32, 38)),
];

impl Scale {
    /// The scale of `metric` over `values`; `None` without values.
    pub(crate) fn new(metric: Metric, values: &[f64]) -> Option<Self> {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let (min, max) = finite
            .clone()
            .fold(None, |acc: Option<(f64, f64)>, v| match acc {
                None => Some((v, v)),
                Some((lo, hi)) => Some((lo.min(v), hi.max(v))),
            })?;
        let min_positive = finite.filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
        let (lo, hi, log) = match metric {
            Metric::Throughput if max > 0.0 => (min_positive.min(max / MIN_RATIO), max, true),
            // Nothing got through anywhere: every value is the worst.
            Metric::Throughput => (1.0, MIN_RATIO, true),
            Metric::Latency if min_positive.is_finite() => {
                let least = (min_positive * MIN_RATIO).max(min_positive + MIN_LATENCY_SPAN_MS);
                (min_positive, max.max(least), true)
            }
            Metric::Latency => (1.0, MIN_RATIO, true),
            Metric::Loss => (0.0, max.max(MIN_LOSS_SPAN), false),
            Metric::Retransmits => (0.0, max.max(MIN_RETRANSMITS_SPAN), false),
        };
        Some(Self {
            metric,
            min,
            max,
            lo,
            hi,
            log,
        })
    }

    /// 0 for the best value of the domain, 1 for the worst.
    pub(crate) fn badness(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        let place = if self.log {
            (v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        let place = if place.is_finite() { place } else { 0.0 };
        if self.metric.higher_is_worse() {
            place
        } else {
            1.0 - place
        }
    }

    /// The fill of a cell holding `v`.
    pub(crate) fn color(&self, v: f64) -> (u8, u8, u8) {
        ramp(self.badness(v))
    }

    /// The value a fraction `f` (0..1) along the legend, from `min` to `max`:
    /// geometric on a log scale.
    pub(crate) fn along(&self, f: f64) -> f64 {
        if self.log && self.min > 0.0 {
            (self.min.ln() + f * (self.max.ln() - self.min.ln())).exp()
        } else {
            self.min + f * (self.max - self.min)
        }
    }
}

/// The colour of a badness between 0 (best) and 1 (worst).
pub(crate) fn ramp(badness: f64) -> (u8, u8, u8) {
    let b = if badness.is_finite() {
        badness.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let i = STOPS.iter().rposition(|s| s.0 <= b).unwrap_or(0).min(2);
    let ((b0, c0), (b1, c1)) = (STOPS[i], STOPS[i + 1]);
    let t = (b - b0) / (b1 - b0);
    let mix = |x: u8, y: u8| (f64::from(x) + t * (f64::from(y) - f64::from(x))).round() as u8;
    (mix(c0.0, c1.0), mix(c0.1, c1.1), mix(c0.2, c1.2))
}

/// Text that reads on a fill: white on the dark end of the ramp, else near black.
pub(crate) fn text_on(fill: (u8, u8, u8)) -> (u8, u8, u8) {
    let lin = |c: u8| {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let luminance = 0.2126 * lin(fill.0) + 0.7152 * lin(fill.1) + 0.0722 * lin(fill.2);
    if luminance < 0.2 {
        (255, 255, 255)
    } else {
        (25, 25, 25)
    }
}

/// A figure as a cell shows it.
pub(crate) fn format_value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Throughput => format_bps(v),
        Metric::Latency => format_ms(v),
        Metric::Loss => format_percent(v),
        Metric::Retransmits => format!("{v:.0}"),
    }
}

/// Bits per second with an SI prefix and three significant digits (enough to
/// rank pairs that differ by a percent): `941M`, `9.41G`, `47.4G`, `0`.
pub(crate) fn format_bps(v: f64) -> String {
    const UNITS: [(f64, &str); 5] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    if v == 0.0 {
        return "0".to_string();
    }
    for (i, (div, unit)) in UNITS.iter().enumerate() {
        let x = v / div;
        // 999.7M reads 1.00G: a unit is used once its value rounds to 1.00.
        if x >= 0.9995 || i + 1 == UNITS.len() {
            return if x < 9.995 {
                format!("{x:.2}{unit}")
            } else if x < 99.95 {
                format!("{x:.1}{unit}")
            } else {
                format!("{x:.0}{unit}")
            };
        }
    }
    unreachable!("the last unit always matches")
}

/// Milliseconds to three significant digits: `0.096`, `4.00`, `35.0`, `150`.
pub(crate) fn format_ms(v: f64) -> String {
    if v >= 99.95 {
        format!("{v:.0}")
    } else if v >= 9.995 {
        format!("{v:.1}")
    } else if v >= 0.9995 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A loss in percent: `0`, `<0.01`, `0.25`, `12.5`, `100`.
pub(crate) fn format_percent(v: f64) -> String {
    if v == 0.0 {
        "0".to_string()
    } else if v < 0.005 {
        "<0.01".to_string()
    } else if v < 9.995 {
        format!("{v:.2}")
    } else if v < 99.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// A Unix time as `YYYY-MM-DD HH:MM:SS` (UTC).
pub(crate) fn utc(secs: f64) -> String {
    let secs = secs.floor() as i64;
    let (days, of_day) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}
