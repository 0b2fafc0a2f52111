//! `rperf3_latency_seconds`: the round trips of `--latency` tests, as a Prometheus
//! histogram by probe kind (`idle`, `foreign`, `self`); beside it, with the same
//! buckets, `rperf3_data_one_way_seconds` (the one-way delays of the data the
//! server received, when the ends timed it) and `rperf3_bounceback_seconds`
//! (`--bounceback` round trips, which the client times and sends with its
//! results).
//!
//! A test hands its whole [`Samples`] over once, at its end; the buckets only grow,
//! so a scrape sees cumulative counts as Prometheus expects. The latency core's
//! histogram keeps each sample to 0.1%; a sample lands in the fixed bucket its
//! recorded value falls in.

use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use rperf3_latency::{Histogram, Samples};

use super::Metrics;

/// Upper bounds of the buckets, seconds: loopback (tens of µs) to a bloated queue
/// (seconds), about three per decade.
pub(super) const BOUNDS: [f64; 15] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// `kind` label values, in exposition order.
pub(super) const KINDS: [&str; 3] = ["idle", "foreign", "self"];

/// One kind's histogram: per-bucket (not yet cumulative) counts, the last one
/// above every bound (`+Inf`), and the sum of the samples.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Buckets {
    counts: [u64; BOUNDS.len() + 1],
    sum_s: f64,
}

impl Buckets {
    fn add(&mut self, h: &Histogram) {
        for (ns, n) in h.buckets() {
            let s = ns as f64 / 1e9;
            let i = BOUNDS.iter().position(|b| s <= *b).unwrap_or(BOUNDS.len());
            self.counts[i] += n;
        }
        // The core keeps the exact sum: mean times count gives it back.
        self.sum_s += h.mean_ns() * h.count() as f64 / 1e9;
    }

    fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    fn encode(&self, mut m: MetricEncoder<'_>) -> std::fmt::Result {
        let buckets: Vec<(f64, u64)> = BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts)
            .collect();
        m.encode_histogram::<NoLabelSet>(self.sum_s, self.count(), &buckets, None)
    }
}

/// The histograms of every kind.
pub(super) type ByKind = [Buckets; KINDS.len()];

/// The data's one-way delays up and the bounceback round trips.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Delays {
    pub(super) data_up: Buckets,
    pub(super) bounceback: Buckets,
}

impl Metrics {
    /// A `--latency` test's round trips, once at its end: idle ones, foreign probes
    /// (handshakes and requests) and self probes.
    pub(in crate::server) fn record_latency(&self, s: &Samples) {
        let mut l = self.latency.lock().unwrap_or_else(|e| e.into_inner());
        l[0].add(&s.idle);
        l[1].add(&s.foreign());
        l[2].add(&s.self_l);
        drop(l);
        let mut d = self.delays.lock().unwrap_or_else(|e| e.into_inner());
        d.data_up.add(s.data_up.histogram());
    }

    /// A `--bounceback` test's round trips, once at its end (the client's).
    pub(in crate::server) fn record_bounceback(&self, h: &Histogram) {
        let mut d = self.delays.lock().unwrap_or_else(|e| e.into_inner());
        d.bounceback.add(h);
    }

    pub(super) fn delays_snapshot(&self) -> Delays {
        self.delays
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn latency_snapshot(&self) -> ByKind {
        self.latency
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The `latency_seconds` family, one series per kind, present from the start.
pub(super) fn encode(enc: &mut DescriptorEncoder<'_>, by_kind: &ByKind) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(
        "latency_seconds",
        "Round trips of --latency tests by probe kind: idle (before the load), foreign \
         (new connections during it), self (on the loaded connections).",
        None,
        MetricType::Histogram,
    )?;
    for (kind, b) in KINDS.iter().zip(by_kind) {
        let labels = [("kind", *kind)];
        b.encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

/// The `data_one_way_seconds` and `bounceback_seconds` families, present from
/// the start.
pub(super) fn encode_delays(enc: &mut DescriptorEncoder<'_>, d: &Delays) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(
        "data_one_way_seconds",
        "One-way delays of the data --latency tests sent the server (direction up), \
         when both ends timed it.",
        None,
        MetricType::Histogram,
    )?;
    d.data_up.encode(m.encode_family(&[("direction", "up")])?)?;
    let m = enc.encode_descriptor(
        "bounceback_seconds",
        "Round trips of --bounceback tests, as their clients timed them.",
        None,
        MetricType::Histogram,
    )?;
    d.bounceback.encode(m)
}
