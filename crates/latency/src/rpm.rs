//! Responsiveness in round trips per minute (RPM), by the IETF responsiveness method:
//! `60000 / RTT_ms`, each probe kind's RTT a trimmed mean that drops the worst 5%.
//!
//! Foreign probes time a new connection's handshake (`tcp_f`), its TLS handshake over
//! HTTP/2 (`tls_f`, one round trip in TLS 1.3) and a tiny request on it (`req_f`);
//! self probes time round trips on the loaded connections (`self_l`).
//! Foreign RPM = 60000 / the mean of the TMs of the foreign kinds timed (two without
//! TLS, three with), loaded RPM = 60000 / TM(self_l), and the responsiveness is
//! their average (either alone when the other is missing).

use crate::histogram::Histogram;

/// The share of round trips the trimmed mean keeps (the method's TMP, 95%).
pub const KEEP: f64 = 0.95;

/// Round trips per minute for a round trip of `rtt_ms` (0 for a non-positive one).
pub fn rpm(rtt_ms: f64) -> f64 {
    if rtt_ms > 0.0 {
        60_000.0 / rtt_ms
    } else {
        0.0
    }
}

/// The method's TM(): mean of the best 95% of `h`, in milliseconds.
pub fn trimmed_mean_ms(h: &Histogram) -> Option<f64> {
    h.trimmed_mean_ms(KEEP)
}

/// How a responsiveness figure reads at a glance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Band {
    /// Below 300 RPM (round trips over 200 ms).
    Low,
    /// 300 to 1000 RPM.
    Medium,
    /// 1000 RPM and above (round trips under 60 ms).
    High,
}

impl Band {
    /// The band of `rpm`.
    pub fn of(rpm: f64) -> Self {
        if rpm < 300.0 {
            Self::Low
        } else if rpm < 1000.0 {
            Self::Medium
        } else {
            Self::High
        }
    }

    /// The word printed after the figure.
    pub fn name(self) -> &'static str {
        match self {
            Self::Low => "Low",
            Self::Medium => "Medium",
            Self::High => "High",
        }
    }
}

/// The responsiveness of a set of probes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Responsiveness {
    /// From the foreign probes (0 without them).
    pub foreign_rpm: f64,
    /// From the self probes (0 without them).
    pub loaded_rpm: f64,
    /// The figure reported (0 without any probe).
    pub rpm: f64,
}

impl Responsiveness {
    /// From the kinds of foreign round trips (handshakes, requests) and the
    /// round trips of self probes; any of them may be empty, and an empty
    /// foreign kind is not counted in the mean.
    pub fn of(foreign: &[&Histogram], self_l: &Histogram) -> Self {
        let parts: Vec<f64> = foreign.iter().filter_map(|h| trimmed_mean_ms(h)).collect();
        let foreign_rpm = if parts.is_empty() {
            0.0
        } else {
            rpm(parts.iter().sum::<f64>() / parts.len() as f64)
        };
        let loaded_rpm = trimmed_mean_ms(self_l).map_or(0.0, rpm);
        let rpm = match (foreign_rpm > 0.0, loaded_rpm > 0.0) {
            (true, true) => (foreign_rpm + loaded_rpm) / 2.0,
            (true, false) => foreign_rpm,
            (false, _) => loaded_rpm,
        };
        Self {
            foreign_rpm,
            loaded_rpm,
            rpm,
        }
    }

    /// Its band.
    pub fn band(&self) -> Band {
        Band::of(self.rpm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(ms: &[f64]) -> Histogram {
        let mut h = Histogram::new();
        for &m in ms {
            h.record((m * 1e6) as u64);
        }
        h
    }

    #[test]
    fn rpm_of_round_trips() {
        assert_eq!(rpm(60.0), 1000.0);
        assert_eq!(rpm(0.0), 0.0);
        assert_eq!(Band::of(299.9), Band::Low);
        assert_eq!(Band::of(940.0).name(), "Medium");
        assert_eq!(Band::of(1000.0), Band::High);
    }

    #[test]
    fn the_method_averages_foreign_and_loaded() {
        // Foreign: handshakes 40 ms, requests 80 ms -> 60 ms -> 1000 RPM.
        // Self: 120 ms -> 500 RPM. Responsiveness (1000 + 500) / 2.
        let r = Responsiveness::of(&[&h(&[40.0; 4]), &h(&[80.0; 4])], &h(&[120.0; 4]));
        assert!((r.foreign_rpm - 1000.0).abs() < 1.0, "{r:?}");
        assert!((r.loaded_rpm - 500.0).abs() < 0.5, "{r:?}");
        assert!((r.rpm - 750.0).abs() < 1.0, "{r:?}");
        assert_eq!(r.band(), Band::Medium);
    }

    #[test]
    fn over_tls_the_foreign_figure_is_the_mean_of_three() {
        // The draft's HTTP form: (TM(tcp_f) + TM(tls_f) + TM(http_f)) / 3 =
        // (30 + 60 + 90) / 3 = 60 ms -> 1000 RPM; without the TLS kind, 60 ms too
        // from (30 + 90) / 2, so the TLS figure is held at 150 ms to tell them apart.
        let r = Responsiveness::of(
            &[&h(&[30.0; 4]), &h(&[150.0; 4]), &h(&[90.0; 4])],
            &Histogram::new(),
        );
        assert!((r.foreign_rpm - 666.7).abs() < 1.0, "{r:?}");
    }

    #[test]
    fn one_kind_alone_is_the_figure() {
        let none = Histogram::new();
        let r = Responsiveness::of(&[&h(&[10.0]), &none], &none);
        assert!((r.rpm - 6000.0).abs() < 6.0, "{r:?}");
        let r = Responsiveness::of(&[&none, &none], &h(&[100.0]));
        assert!((r.rpm - 600.0).abs() < 0.6, "{r:?}");
        assert_eq!(Responsiveness::of(&[&none, &none], &none).rpm, 0.0);
    }
}
