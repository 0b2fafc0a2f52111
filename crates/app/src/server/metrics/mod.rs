//! What the server has done and is doing, for `--metrics`.
//!
//! Tests already count their bytes in per-stream atomics (and UDP receivers
//! keep their loss statistics behind a per-stream lock the sampler takes each
//! interval). A running test lends those handles to [`Metrics`] when it starts;
//! a scrape reads them, so counters grow while the test runs, and the data path
//! never waits for the endpoint: the workers never touch [`Metrics`]' own lock,
//! which the session takes only at a test's start and end. When a test ends,
//! its last values are folded into the totals under that lock, so a scrape sees
//! each byte exactly once and every counter only grows.

pub(super) mod http;
mod latency;

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use rperf3_engine::counters::StreamCounters;
use rperf3_proto::UdpRecvStats;

use crate::measurement::streams::{DataSock, LiveStream};

/// How a test ended, as the `outcome` label says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TestOutcome {
    /// It ran to IPERF_DONE.
    Ok,
    /// It failed (a protocol, stream or peer error).
    Error,
    /// The server was busy (no slot, no queue room, too many streams).
    Refused,
    /// The client's credentials were not accepted.
    AuthFailed,
    /// The server was stopped by a signal during the test.
    Interrupted,
}

impl TestOutcome {
    const ALL: [Self; 5] = [
        Self::Ok,
        Self::Error,
        Self::Refused,
        Self::AuthFailed,
        Self::Interrupted,
    ];

    /// The label value.
    pub(super) fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
            Self::Refused => "refused",
            Self::AuthFailed => "auth_failed",
            Self::Interrupted => "interrupted",
        }
    }
}

/// `protocol` label values, in table order.
const PROTOCOLS: [&str; 2] = ["tcp", "udp"];
/// `direction` label values: the server's point of view.
const DIRECTIONS: [&str; 2] = ["received", "sent"];
/// A rate gauge is recomputed from a window at least this long (several
/// scrapers then see the same rate, not one over the gap between them).
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// The server's metrics, shared by the host, its sessions and the endpoint.
#[derive(Debug, Default)]
pub(super) struct Metrics {
    outcomes: [AtomicU64; TestOutcome::ALL.len()],
    running: AtomicU64,
    queued: AtomicU64,
    state: Mutex<State>,
    /// Round trips of ended `--latency` tests, by kind.
    latency: Mutex<latency::ByKind>,
    /// One-way delays of the data the server received in ended `--latency`
    /// tests, and round trips of ended `--bounceback` tests.
    delays: Mutex<latency::Delays>,
    /// An embedder's own series (the mesh agent's per-pair figures).
    extra: Option<Arc<dyn Collector>>,
}

#[derive(Debug, Default)]
struct State {
    /// What ended tests moved.
    done: Totals,
    /// Running tests by the host's number.
    live: BTreeMap<u64, LiveTest>,
}

/// Counter values; `[protocol][direction]` as in [`PROTOCOLS`], [`DIRECTIONS`].
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Totals {
    bytes: [[u64; 2]; 2],
    udp_packets: [u64; 2],
    udp_lost: u64,
    retransmits: u64,
}

impl Totals {
    fn add(&mut self, o: &Self) {
        for p in 0..2 {
            for d in 0..2 {
                self.bytes[p][d] += o.bytes[p][d];
            }
            self.udp_packets[p] += o.udp_packets[p];
        }
        self.udp_lost += o.udp_lost;
        self.retransmits += o.retransmits;
    }
}

/// A running test's handles on its streams.
#[derive(Debug)]
struct LiveTest {
    udp: bool,
    taps: Vec<Tap>,
    /// Bytes per direction and when, at the last rate window's start.
    window: (Instant, [u64; 2]),
    rate: [f64; 2],
}

/// One stream's live state.
#[derive(Debug)]
struct Tap {
    sender: bool,
    counters: Arc<StreamCounters>,
    udp_stats: Option<Arc<Mutex<UdpRecvStats>>>,
    tcp: Option<Arc<TcpStream>>,
}

/// One running test, read now.
#[derive(Debug, Clone, PartialEq)]
struct TestView {
    id: u64,
    protocol: &'static str,
    totals: Totals,
    rate: [f64; 2],
    /// Mean smoothed RTT of the server's TCP senders, seconds.
    rtt: Option<f64>,
    /// Summed congestion windows of the server's TCP senders, bytes.
    cwnd: Option<u64>,
    /// Mean jitter of the server's UDP receivers, seconds.
    jitter: Option<f64>,
}

impl LiveTest {
    /// Reads every stream: atomics, a brief lock for UDP statistics, TCP_INFO.
    fn view(&mut self, id: u64, now: Instant) -> TestView {
        let p = usize::from(self.udp);
        let mut t = Totals::default();
        let (mut rtts, mut cwnd, mut jitters) = (Vec::new(), None, Vec::new());
        for tap in &self.taps {
            let d = usize::from(tap.sender);
            let c = tap.counters.snapshot();
            t.bytes[p][d] += c.bytes;
            if tap.sender && self.udp {
                t.udp_packets[d] += c.blocks;
            }
            if let Some(m) = &tap.udp_stats {
                let s = m.lock().unwrap_or_else(|e| e.into_inner());
                // iperf3's receiver count: the highest sequence number seen
                // (omitted packets included: they crossed the network too).
                t.udp_packets[d] += s.packets;
                t.udp_lost += s.lost.max(0) as u64;
                jitters.push(s.jitter.seconds);
            }
            if let Some(i) = tap.tcp.as_deref().and_then(rperf3_sys::tcp_info::tcp_info) {
                t.retransmits += u64::from(i.total_retrans);
                rtts.push(f64::from(i.rtt) / 1e6);
                *cwnd.get_or_insert(0) += i.snd_cwnd_bytes;
            }
        }
        let moved = [t.bytes[p][0], t.bytes[p][1]];
        let (since, before) = self.window;
        let dt = now.saturating_duration_since(since);
        if dt >= RATE_WINDOW || self.rate == [0.0; 2] && !dt.is_zero() {
            for d in 0..2 {
                self.rate[d] = moved[d].saturating_sub(before[d]) as f64 / dt.as_secs_f64();
            }
            if dt >= RATE_WINDOW {
                self.window = (now, moved);
            }
        }
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        TestView {
            id,
            protocol: PROTOCOLS[p],
            totals: t,
            rate: self.rate,
            rtt: mean(&rtts),
            cwnd,
            jitter: mean(&jitters),
        }
    }
}

/// Everything a scrape shows, read at one moment.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    outcomes: [u64; TestOutcome::ALL.len()],
    running: u64,
    queued: u64,
    totals: Totals,
    tests: Vec<TestView>,
}

impl Metrics {
    /// Empty metrics.
    #[cfg(test)]
    pub(super) fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Empty metrics, and `extra`'s series after them in every scrape.
    pub(super) fn with_extra(extra: Option<Arc<dyn Collector>>) -> Arc<Self> {
        Arc::new(Self {
            extra,
            ..Self::default()
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A test ended (or was refused) this way.
    pub(super) fn count(&self, outcome: TestOutcome) {
        let i = TestOutcome::ALL
            .iter()
            .position(|o| *o == outcome)
            .unwrap_or(0);
        self.outcomes[i].fetch_add(1, Ordering::Relaxed);
    }

    /// A side service's visitor was refused as busy.
    pub(super) fn visit_refused(&self) {
        self.count(TestOutcome::Refused);
    }

    /// A side service's visit ended after moving these TCP bytes (the
    /// server's view); it counts as a test that ran to its end.
    pub(super) fn visit_ended(&self, received: u64, sent: u64) {
        let mut st = self.state();
        st.done.bytes[0][0] += received;
        st.done.bytes[0][1] += sent;
        self.count(TestOutcome::Ok);
    }

    /// The host's view: tests running (from their first byte on) and clients
    /// waiting for a slot.
    pub(super) fn set_load(&self, running: usize, queued: usize) {
        self.running.store(running as u64, Ordering::Relaxed);
        self.queued.store(queued as u64, Ordering::Relaxed);
    }

    /// Test `id` starts moving data on `streams`.
    pub(super) fn test_started(&self, id: u64, streams: &[LiveStream]) {
        let taps = streams
            .iter()
            .map(|s| Tap {
                sender: s.info.sender,
                counters: s.counters.clone(),
                udp_stats: s.udp_stats.clone(),
                // TCP_INFO is the sender's (as iperf3 reports it).
                tcp: match &s.sock {
                    DataSock::Tcp(t) if s.info.sender => Some(t.clone()),
                    _ => None,
                },
            })
            .collect();
        let udp = streams.iter().any(LiveStream::is_udp);
        let test = LiveTest {
            udp,
            taps,
            window: (Instant::now(), [0; 2]),
            rate: [0.0; 2],
        };
        self.state().live.insert(id, test);
    }

    /// Test `id` ended this way; what it moved joins the totals. Call it after
    /// the workers are joined, so nothing moves afterwards.
    pub(super) fn test_ended(&self, id: u64, outcome: TestOutcome) {
        let mut st = self.state();
        if let Some(mut t) = st.live.remove(&id) {
            let v = t.view(id, Instant::now());
            st.done.add(&v.totals);
        }
        // Under the same lock: a scrape sees the test either running or counted.
        self.count(outcome);
    }

    fn snapshot(&self) -> Snapshot {
        let now = Instant::now();
        let mut st = self.state();
        let mut totals = st.done;
        let tests: Vec<TestView> = st.live.iter_mut().map(|(id, t)| t.view(*id, now)).collect();
        let outcomes = self.outcomes.each_ref().map(|a| a.load(Ordering::Relaxed));
        drop(st);
        for t in &tests {
            totals.add(&t.totals);
        }
        Snapshot {
            outcomes,
            running: self.running.load(Ordering::Relaxed),
            queued: self.queued.load(Ordering::Relaxed),
            totals,
            tests,
        }
    }

    /// The OpenMetrics text exposition of everything, as a scrape returns it.
    pub(super) fn encode(self: &Arc<Self>) -> String {
        let mut reg = Registry::with_prefix("rperf3");
        reg.register_collector(Box::new(View(self.clone())));
        if let Some(x) = &self.extra {
            reg.register_collector(Box::new(Extra(x.clone())));
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &reg);
        out
    }
}

/// The collector prometheus-client calls at each scrape.
#[derive(Debug)]
struct View(Arc<Metrics>);

/// An embedder's collector, shared with it.
#[derive(Debug)]
struct Extra(Arc<dyn Collector>);

impl Collector for Extra {
    fn encode(&self, enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        self.0.encode(enc)
    }
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

fn counter(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels<'_>, u64)],
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, ConstCounter::new(0u64).metric_type())?;
    if let [(labels, v)] = series {
        if labels.is_empty() {
            return ConstCounter::new(*v).encode(m);
        }
    }
    for (labels, v) in series {
        ConstCounter::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

fn gauge(
    enc: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    series: &[(Labels<'_>, f64)],
) -> std::fmt::Result {
    let mut m = enc.encode_descriptor(name, help, None, ConstGauge::new(0.0f64).metric_type())?;
    if let [(labels, v)] = series {
        if labels.is_empty() {
            return ConstGauge::new(*v).encode(m);
        }
    }
    for (labels, v) in series {
        ConstGauge::new(*v).encode(m.encode_family(labels)?)?;
    }
    Ok(())
}

impl Collector for View {
    fn encode(&self, mut enc: DescriptorEncoder<'_>) -> std::fmt::Result {
        let s = self.0.snapshot();
        let tot = &s.totals;
        let outcomes: Vec<_> = TestOutcome::ALL
            .iter()
            .zip(s.outcomes)
            .map(|(o, n)| (vec![("outcome", o.label())], n))
            .collect();
        counter(&mut enc, "tests", "Tests by how they ended.", &outcomes)?;
        let load = |v: u64| [(Vec::new(), v as f64)];
        gauge(
            &mut enc,
            "tests_running",
            "Tests running now.",
            &load(s.running),
        )?;
        gauge(
            &mut enc,
            "clients_queued",
            "Clients waiting for a test slot.",
            &load(s.queued),
        )?;
        for (d, name) in [(0, "bytes_received"), (1, "bytes_sent")] {
            let series: Vec<_> = (0..2)
                .map(|p| (vec![("protocol", PROTOCOLS[p])], tot.bytes[p][d]))
                .collect();
            let help = format!("Payload bytes {} by the server.", DIRECTIONS[d]);
            counter(&mut enc, name, &help, &series)?;
        }
        let series: Vec<_> = (0..2)
            .map(|d| (vec![("direction", DIRECTIONS[d])], tot.udp_packets[d]))
            .collect();
        counter(
            &mut enc,
            "udp_packets",
            "UDP datagrams: sent, or received as the highest sequence number seen.",
            &series,
        )?;
        let one = |v: u64| [(Vec::new(), v)];
        counter(
            &mut enc,
            "udp_packets_lost",
            "UDP datagrams the server's receivers found missing.",
            &one(tot.udp_lost),
        )?;
        counter(
            &mut enc,
            "tcp_retransmits",
            "TCP segments the server's senders retransmitted.",
            &one(tot.retransmits),
        )?;
        latency::encode(&mut enc, &self.0.latency_snapshot())?;
        latency::encode_delays(&mut enc, &self.0.delays_snapshot())?;
        per_test(&mut enc, &s.tests)
    }
}

/// The gauges of running tests, labelled by test number.
fn per_test(enc: &mut DescriptorEncoder<'_>, tests: &[TestView]) -> std::fmt::Result {
    let ids: Vec<String> = tests.iter().map(|t| t.id.to_string()).collect();
    let mut rate = Vec::new();
    let (mut rtt, mut cwnd, mut jitter) = (Vec::new(), Vec::new(), Vec::new());
    for (t, id) in tests.iter().zip(&ids) {
        let test = || vec![("test", id.as_str()), ("protocol", t.protocol)];
        for (d, dir) in DIRECTIONS.iter().enumerate() {
            let mut l = test();
            l.push(("direction", dir));
            rate.push((l, t.rate[d]));
        }
        if let Some(v) = t.rtt {
            rtt.push((test(), v));
        }
        if let Some(v) = t.cwnd {
            cwnd.push((test(), v as f64));
        }
        if let Some(v) = t.jitter {
            jitter.push((test(), v));
        }
    }
    gauge(
        enc,
        "test_throughput_bytes_per_second",
        "A running test's payload rate over the last second or more.",
        &rate,
    )?;
    gauge(
        enc,
        "test_tcp_rtt_seconds",
        "A running test's smoothed RTT (mean of the server's TCP senders).",
        &rtt,
    )?;
    gauge(
        enc,
        "test_tcp_cwnd_bytes",
        "A running test's congestion window (sum over the server's TCP senders).",
        &cwnd,
    )?;
    gauge(
        enc,
        "test_udp_jitter_seconds",
        "A running test's jitter (mean of the server's UDP receivers).",
        &jitter,
    )
}

#[cfg(test)]
mod tests;
