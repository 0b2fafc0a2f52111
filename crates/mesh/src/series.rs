//! The agent's per-pair Prometheus series: the last figures of each test it
//! ran, labelled `source` (this agent) and `destination`.
//!
//! Their number is bounded: a peer that left the membership loses its series
//! at the next cycle, and on a big fleet ([`crate::Mode::Sample`]) only the
//! peers of the most recent tests keep theirs ([`Series::set_cap`]), so an
//! agent exports series for at most that many peers however large the fleet.
//! Gauges hold the last measured test (`last_success_timestamp_seconds` says
//! when); a failed test only counts in `mesh_tests_total{outcome}`.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use crate::record::{Outcome, TestRecord};

/// The last measured test of a pair.
#[derive(Debug, Clone, PartialEq)]
struct Last {
    throughput_bps: f64,
    rpm: f64,
    loaded_p50_s: f64,
    loaded_p99_s: f64,
    idle_p50_s: f64,
    retransmits: Option<u64>,
    loss_ratio: Option<f64>,
    jitter_s: Option<f64>,
    at: f64,
}

#[derive(Debug)]
struct Pair {
    last: Option<Last>,
    /// Every outcome, from 0: a counter that appears at its first increment
    /// hides that increment from `increase()`.
    outcomes: BTreeMap<Outcome, u64>,
    /// When it was last written, in record order (for the cap).
    touched: u64,
}

impl Default for Pair {
    fn default() -> Self {
        Self {
            last: None,
            outcomes: Outcome::ALL.iter().map(|o| (*o, 0)).collect(),
            touched: 0,
        }
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// This agent's name, the `source` label.
    source: String,
    pairs: BTreeMap<String, Pair>,
    cap: Option<usize>,
    clock: u64,
    members: usize,
    cycles: u64,
}

/// One agent's series.
#[derive(Debug, Default)]
pub struct Series {
    inner: Mutex<Inner>,
}

impl Series {
    /// Empty series of the agent named `source`.
    pub fn new(source: &str) -> Self {
        let s = Self::default();
        s.set_source(source);
        s
    }

    /// This agent's name changed (a DNS member is named by the address it
    /// turned out to have): its series so far were another name's.
    pub fn set_source(&self, source: &str) {
        let mut g = self.lock();
        if g.source != source {
            g.source = source.to_string();
            g.pairs.clear();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A test this agent ran ended.
    pub fn record(&self, rec: &TestRecord) {
        let mut g = self.lock();
        g.clock += 1;
        let clock = g.clock;
        let pair = g.pairs.entry(rec.destination.clone()).or_default();
        pair.touched = clock;
        *pair.outcomes.entry(rec.outcome).or_insert(0) += 1;
        if let Some(f) = rec.figures.as_ref().filter(|_| rec.outcome.measured()) {
            pair.last = Some(Last {
                throughput_bps: f.throughput_bps,
                rpm: f.rpm,
                loaded_p50_s: f.loaded_p50_s,
                loaded_p99_s: f.loaded_p99_s,
                idle_p50_s: f.idle_p50_s,
                retransmits: f.retransmits,
                loss_ratio: f.lost_percent.map(|p| p / 100.0),
                jitter_s: f.jitter_ms.map(|j| j / 1000.0),
                at: rec.end,
            });
        }
        Self::trim(&mut g);
    }

    /// Drops the oldest pairs beyond the cap.
    fn trim(g: &mut Inner) {
        let Some(cap) = g.cap else { return };
        while g.pairs.len() > cap {
            let oldest = g
                .pairs
                .iter()
                .min_by_key(|(_, p)| p.touched)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => g.pairs.remove(&k),
                None => break,
            };
        }
    }

    /// The destinations this agent tests this cycle: their counters exist
    /// (at 0) before their first test ends.
    pub fn expect<'a>(&self, destinations: impl IntoIterator<Item = &'a str>) {
        let mut g = self.lock();
        for d in destinations {
            g.clock += 1;
            let clock = g.clock;
            g.pairs.entry(d.to_string()).or_default().touched = clock;
        }
        Self::trim(&mut g);
    }

    /// A new cycle's membership: series of peers not in it go.
    pub fn keep_only<'a>(&self, members: impl IntoIterator<Item = &'a str>) {
        let keep: std::collections::HashSet<&str> = members.into_iter().collect();
        let mut g = self.lock();
        g.members = keep.len();
        g.pairs.retain(|k, _| keep.contains(k.as_str()));
    }

    /// At most this many peers keep series (`None`: all members).
    pub fn set_cap(&self, cap: Option<usize>) {
        let mut g = self.lock();
        g.cap = cap;
        Self::trim(&mut g);
    }

    /// A cycle ended.
    pub fn cycle_done(&self) {
        self.lock().cycles += 1;
    }

    /// How many peers have series now.
    pub fn peers(&self) -> usize {
        self.lock().pairs.len()
    }
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

fn gauges(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels<'_>, f64)],
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, ConstGauge::new(0.0f64).metric_type())?;
    for (labels, v) in series {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

impl Collector for Series {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let g = self.lock();
        let src = g.source.as_str();
        let pair = |d| -> Labels<'_> { vec![("source", src), ("destination", d)] };
        // One list per metric, in the order of the table below.
        let mut v: [Vec<(Labels<'_>, f64)>; 9] = Default::default();
        let mut tests = Vec::new();
        for (dest, p) in &g.pairs {
            let dest = dest.as_str();
            for (o, n) in &p.outcomes {
                let mut l = pair(dest);
                l.push(("outcome", o.label()));
                tests.push((l, *n));
            }
            let Some(last) = &p.last else { continue };
            v[0].push((pair(dest), last.throughput_bps));
            v[1].push((pair(dest), last.rpm));
            for (q, x) in [("0.5", last.loaded_p50_s), ("0.99", last.loaded_p99_s)] {
                let mut l = pair(dest);
                l.push(("quantile", q));
                v[2].push((l, x));
            }
            v[3].push((pair(dest), last.idle_p50_s));
            if let Some(r) = last.retransmits {
                v[4].push((pair(dest), r as f64));
            }
            if let Some(r) = last.loss_ratio {
                v[5].push((pair(dest), r));
            }
            if let Some(j) = last.jitter_s {
                v[6].push((pair(dest), j));
            }
            v[7].push((pair(dest), last.at));
        }
        let table: [(&str, &str); 8] = [
            (
                "mesh_throughput_bits_per_second",
                "The last test's throughput, as the destination received it.",
            ),
            (
                "mesh_rpm",
                "The last test's responsiveness (round trips per minute under its load).",
            ),
            (
                "mesh_loaded_latency_seconds",
                "The last test's round trips under load, by quantile.",
            ),
            (
                "mesh_idle_latency_seconds",
                "The last test's median round trip before its load.",
            ),
            (
                "mesh_retransmits",
                "TCP segments the last test's source retransmitted.",
            ),
            (
                "mesh_udp_loss_ratio",
                "UDP datagrams of the last test lost on the way.",
            ),
            (
                "mesh_udp_jitter_seconds",
                "The last UDP test's jitter at the destination.",
            ),
            (
                "mesh_last_success_timestamp_seconds",
                "Unix time the pair's last measured test ended.",
            ),
        ];
        for ((name, help), series) in table.iter().zip(&v) {
            gauges(&mut enc, name, help, series)?;
        }
        let mut m = enc.encode_descriptor(
            "mesh_tests",
            "Tests this agent ran as the source, by how they ended.",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        for (labels, n) in &tests {
            ConstCounter::new(*n).encode(m.encode_family(labels)?)?;
        }
        let m = enc.encode_descriptor(
            "mesh_members",
            "Agents in the membership of the current cycle.",
            None,
            ConstGauge::new(0.0f64).metric_type(),
        )?;
        ConstGauge::new(g.members as f64).encode(m)?;
        let m = enc.encode_descriptor(
            "mesh_cycles",
            "Cycles this agent completed.",
            None,
            ConstCounter::new(0u64).metric_type(),
        )?;
        ConstCounter::new(g.cycles).encode(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Figures;
    use prometheus_client::registry::Registry;
    use serde_json::json;
    use std::sync::Arc;

    #[derive(Debug)]
    struct Shared(Arc<Series>);
    impl Collector for Shared {
        fn encode(&self, enc: DescriptorEncoder<'_>) -> std::fmt::Result {
            self.0.encode(enc)
        }
    }

    fn text(s: &Arc<Series>) -> String {
        let mut reg = Registry::with_prefix("rperf3");
        reg.register_collector(Box::new(Shared(s.clone())));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &reg).unwrap();
        out
    }

    fn rec(dest: &str, outcome: Outcome, bps: f64) -> TestRecord {
        TestRecord {
            source: "n1".into(),
            destination: dest.into(),
            cycle: 0,
            slot: 0,
            start: 10.0,
            end: 11.5,
            outcome,
            error: None,
            figures: outcome.measured().then(|| Figures {
                protocol: "tcp",
                throughput_bps: bps,
                bytes_sent: 1,
                retransmits: Some(7),
                rpm: 420.0,
                latency: json!({}),
                loaded_p50_s: 0.15,
                loaded_p99_s: 0.25,
                idle_p50_s: 0.001,
                lost_percent: None,
                jitter_ms: None,
                lost_packets: None,
                packets: None,
            }),
        }
    }

    #[test]
    fn a_test_becomes_labelled_series() {
        let s = Arc::new(Series::new("n1"));
        s.record(&rec("n2", Outcome::Ok, 95e6));
        s.record(&rec("n2", Outcome::Busy, 0.0));
        s.cycle_done();
        let t = text(&s);
        for line in [
            "rperf3_mesh_throughput_bits_per_second{source=\"n1\",destination=\"n2\"} 95000000.0",
            "rperf3_mesh_rpm{source=\"n1\",destination=\"n2\"} 420.0",
            "rperf3_mesh_loaded_latency_seconds{source=\"n1\",destination=\"n2\",quantile=\"0.5\"} 0.15",
            "rperf3_mesh_loaded_latency_seconds{source=\"n1\",destination=\"n2\",quantile=\"0.99\"} 0.25",
            "rperf3_mesh_retransmits{source=\"n1\",destination=\"n2\"} 7.0",
            "rperf3_mesh_last_success_timestamp_seconds{source=\"n1\",destination=\"n2\"} 11.5",
            "rperf3_mesh_tests_total{source=\"n1\",destination=\"n2\",outcome=\"ok\"} 1",
            "rperf3_mesh_tests_total{source=\"n1\",destination=\"n2\",outcome=\"busy\"} 1",
            "rperf3_mesh_cycles_total 1",
        ] {
            assert!(t.contains(line), "{line} missing from\n{t}");
        }
        assert!(!t.contains("udp_loss_ratio{"), "{t}");
    }

    #[test]
    fn a_failed_test_keeps_the_last_figures_and_counts() {
        let s = Arc::new(Series::new("n1"));
        s.record(&rec("n3", Outcome::Unreachable, 0.0));
        let t = text(&s);
        assert!(t.contains("outcome=\"unreachable\"} 1"), "{t}");
        assert!(t.contains("outcome=\"ok\"} 0"), "{t}");
        assert!(!t.contains("throughput_bits_per_second{"), "{t}");
    }

    #[test]
    fn expected_pairs_count_from_zero() {
        let s = Arc::new(Series::new("n1"));
        s.expect(["n2", "n3"]);
        let t = text(&s);
        for o in Outcome::ALL {
            let line = format!(
                "rperf3_mesh_tests_total{{source=\"n1\",destination=\"n3\",outcome=\"{}\"}} 0",
                o.label()
            );
            assert!(t.contains(&line), "{line} missing from\n{t}");
        }
        assert!(!t.contains("throughput_bits_per_second{"), "{t}");
        s.set_cap(Some(1));
        // The later expected one stays.
        assert!(text(&s).contains("destination=\"n3\""));
        assert_eq!(s.peers(), 1);
    }

    #[test]
    fn departed_peers_and_those_over_the_cap_lose_their_series() {
        let s = Arc::new(Series::new("n1"));
        for d in ["n2", "n3", "n4"] {
            s.record(&rec(d, Outcome::Ok, 1.0));
        }
        s.keep_only(["n1", "n2", "n4"]);
        assert_eq!(s.peers(), 2);
        assert!(!text(&s).contains("\"n3\""));
        s.set_cap(Some(1));
        // n4 was written last.
        let t = text(&s);
        assert!(t.contains("destination=\"n4\""), "{t}");
        assert!(!t.contains("destination=\"n2\""), "{t}");
        s.record(&rec("n5", Outcome::Ok, 1.0));
        assert_eq!(s.peers(), 1);
        assert!(text(&s).contains("rperf3_mesh_members 3"));
    }
}
