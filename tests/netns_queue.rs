//! Latency under load against the queue itself: a 100 Mbit/s tbf with a long
//! or a short FIFO, kept full by rperf3's UDP load (see `netns/queue.rs`). The
//! rig is proven first: `ping` beside the load must see the idle round trip
//! plus the qdisc's backlog over the rate, within 3%. Then rperf3's own
//! `--latency` figures are held to the same queue: loaded round trips, idle
//! round trips against `ping`'s, one-way delay against the queueing delay
//! alone (both namespaces share one clock), RPM against 60000 / round trip,
//! and the probes' own bytes against the capacity, counted by iptables.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::netns::queue::{between, median, median_queue_delay_ms, Fifo, QueueRig, RATE};
use crate::netns::{self, count, json_doc, num, with_retries, Attempt, Side, PORT};
use crate::{rel, RUN_TIMEOUT};

/// Seconds of load: the long FIFO fills in about a second, then two seconds
/// of measurement, with room for a slow start on a busy machine.
const LOAD_SECS: &str = "5";
/// Echo requests beside the load, one every 20 ms: 2 s of them.
const PINGS: u32 = 100;

/// `ping` beside rperf3's UDP load through the full FIFO: its median round
/// trip is the idle one plus the median backlog (sampled over the same two
/// seconds) divided by the rate.
fn ping_beside_the_load(fifo: Fifo) -> Attempt {
    let Some(rig) = QueueRig::new(fifo, Side::Client) else {
        return Attempt::Skip;
    };
    let base = rig.base_ms();
    let server = rig.pair.start_server();
    let mut load = rig.pair.spawn_client(&rig.load_args(LOAD_SECS));
    let sampler = rig.sample_backlog();
    let full = sampler.wait_full(Duration::from_secs(4));
    let from = Instant::now();
    let rtts = rig.ping(PINGS, Duration::from_millis(20)).finish_rtts();
    let to = Instant::now();
    assert!(
        load.try_status().is_none(),
        "the load ended before the echo requests did: {}",
        load.finish(Duration::ZERO)
    );
    let samples = sampler.stop();
    json_doc(&load.finish(RUN_TIMEOUT));
    json_doc(&server.finish(Duration::from_secs(5)));

    let window = between(&samples, from, to);
    let queue = median_queue_delay_ms(&window);
    let packets: Vec<f64> = window.iter().map(|b| b.packets as f64).collect();
    let expected = base + queue;
    let measured = median(&rtts);
    let ctx = format!(
        "{fifo:?} FIFO: ping median {measured:.3} ms over {} replies (of {PINGS}) vs idle \
         {base:.3} ms + queue {queue:.3} ms = {expected:.3} ms (median of {} backlog samples, \
         {:.0} packets; {full} bytes when it was first full)\nshaper: {}",
        rtts.len(),
        window.len(),
        median(&packets),
        rig.pair.qdisc_stats(rig.sender)
    );
    eprintln!("{ctx}");
    assert!(
        window.len() >= 30,
        "too few backlog samples for a median\n{ctx}"
    );
    if rel(measured, expected).abs() > 0.03 {
        return Attempt::Disturbed(format!("ping is off by more than 3%\n{ctx}"));
    }
    Attempt::Pass
}

#[test]
fn queue_rig_ping_matches_backlog_over_rate_long_and_short_fifo() {
    let _one_at_a_time = netns::serial();
    for fifo in [Fifo::Long, Fifo::Short] {
        with_retries(&format!("{fifo:?} FIFO rig"), || ping_beside_the_load(fifo));
    }
}

// ------------------------------------------------------ rperf3 --latency

/// The UDP payload of the load, so its datagrams are told from everything
/// else by length (IP packet = payload + 28).
const LOAD_LEN: u32 = 1400;

/// Where `-J --latency` puts each figure (`end.latency`).
mod at {
    pub(super) const IDLE: &str = "end.latency.idle";
    pub(super) const LOADED: &str = "end.latency.loaded";
    pub(super) const FOREIGN: &str = "end.latency.loaded.foreign";
    pub(super) const SELF: &str = "end.latency.loaded.self";
    pub(super) const RPM: &str = "end.latency.rpm";
    /// One-way delay client to server.
    pub(super) const ONE_WAY_UP: &str = "end.latency.one_way.up";
    /// One-way delay server to client.
    pub(super) const ONE_WAY_DOWN: &str = "end.latency.one_way.down";
}

/// One `{count, min_ms, p50_ms, p90_ms, p99_ms, max_ms}` object.
#[derive(Debug, Clone, Copy)]
struct Summary {
    count: u64,
    min_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Summary {
    fn read(doc: &Value, path: &str) -> Self {
        let s = Self {
            count: count(doc, &format!("{path}.count")),
            min_ms: num(doc, &format!("{path}.min_ms")),
            p50_ms: num(doc, &format!("{path}.p50_ms")),
            p99_ms: num(doc, &format!("{path}.p99_ms")),
            max_ms: num(doc, &format!("{path}.max_ms")),
        };
        let p90 = num(doc, &format!("{path}.p90_ms"));
        assert!(
            s.count > 0
                && s.min_ms <= s.p50_ms
                && s.p50_ms <= p90
                && p90 <= s.p99_ms
                && s.p99_ms <= s.max_ms,
            "{path} is empty or out of order: {s:?}, p90 {p90}"
        );
        s
    }
}

/// `a` within `tol` (relative) of `b`, or within `floor_ms` when that is
/// wider; the reason when not.
fn near(what: &str, a: f64, b: f64, tol: f64, floor_ms: f64) -> Result<(), String> {
    let allowed = (tol * b.abs()).max(floor_ms);
    if (a - b).abs() <= allowed {
        Ok(())
    } else {
        Err(format!(
            "{what}: {a:.3} is {:+.1}% from {b:.3} (allowed {allowed:.3})",
            100.0 * rel(a, b)
        ))
    }
}

/// What the issue asks of one `-J --latency` run through the full FIFO,
/// against the rig's figures: `base` (ping's idle median), `queue` (median
/// backlog over the rate during the run). The one-way delay is the one in the
/// direction of the load. Each failed check is one line.
fn latency_checks(doc: &Value, rig: &QueueRig, fifo: Fifo, queue: f64) -> Vec<String> {
    let base = rig.base_ms();
    let idle = Summary::read(doc, at::IDLE);
    let loaded = Summary::read(doc, at::LOADED);
    let one_way = Summary::read(
        doc,
        match rig.sender {
            Side::Client => at::ONE_WAY_UP,
            Side::Server => at::ONE_WAY_DOWN,
        },
    );
    let rpm = num(doc, at::RPM);
    let rtt = base + queue;
    let mut off = vec![
        near("loaded p50 vs idle + queue", loaded.p50_ms, rtt, 0.10, 0.0),
        near("idle p50 vs ping's idle", idle.p50_ms, base, 0.10, 0.050),
        near("one-way p50 vs queue", one_way.p50_ms, queue, 0.10, 0.0),
        near("RPM vs 60000 / round trip", rpm, 60_000.0 / rtt, 0.10, 0.0),
    ];
    // Each probe kind alone waits in the same queue.
    for path in [at::FOREIGN, at::SELF] {
        let s = Summary::read(doc, path);
        off.push(near(&format!("{path} p50"), s.p50_ms, rtt, 0.10, 0.0));
    }
    // 155 ms of queue is a poor-to-fair path, 10 ms a good one.
    let band_ok = match fifo {
        Fifo::Long => rpm < 1000.0,
        Fifo::Short => rpm > 3000.0,
    };
    if !band_ok {
        off.push(Err(format!(
            "{fifo:?} FIFO: RPM {rpm:.0} is in the wrong band"
        )));
    }
    off.into_iter().filter_map(Result::err).collect()
}

/// Counts, in the load sender's OUTPUT chain, the load's datagrams (rule 1)
/// and every other packet to the peer (rule 2): the control connection and
/// the probes.
fn count_probe_bytes(rig: &QueueRig) {
    let pair = &rig.pair;
    let data_len = format!("{}:65535", LOAD_LEN + 28);
    let port = PORT.to_string();
    let (data_port, peer) = match rig.sender {
        Side::Client => ("--dport", &pair.server_ip),
        Side::Server => ("--sport", &pair.client_ip),
    };
    for rule in [
        vec![
            "-p", "udp", data_port, &port, "-m", "length", "--length", &data_len, "-j", "ACCEPT",
        ],
        vec!["-d", peer, "-j", "ACCEPT"],
    ] {
        let mut args = vec!["iptables", "-A", "OUTPUT"];
        args.extend(rule);
        pair.on(rig.sender, &args);
    }
}

/// rperf3's `--latency` through the full FIFO on `sender`'s egress, checked
/// against the queue.
fn latency_against_the_queue(fifo: Fifo, sender: Side) -> Attempt {
    let Some(rig) = QueueRig::new(fifo, sender) else {
        return Attempt::Skip;
    };
    let base = rig.base_ms();
    count_probe_bytes(&rig);
    let server = rig.pair.start_server();
    let len = LOAD_LEN.to_string();
    let mut args = rig.load_args(LOAD_SECS);
    args.extend(["-l", &len, "--latency"]);
    let client = rig.pair.spawn_client(&args);
    let sampler = rig.sample_backlog();
    let client = client.finish(RUN_TIMEOUT);
    let samples = sampler.stop();
    let doc = json_doc(&client);
    json_doc(&server.finish(Duration::from_secs(5)));

    // The backlog over the whole run, filling included, as rperf3's probes
    // saw it.
    let queue = median_queue_delay_ms(&samples);
    let counters = rig.pair.iptables_counters(rig.sender, "OUTPUT");
    let (data, other) = (counters[0].1, counters[1].1);
    let secs = num(&doc, "end.sum_sent.seconds");
    let reverse = sender == Side::Server;
    let capacity = RATE / 8.0 * secs;
    let ctx = format!(
        "{fifo:?} FIFO, reverse={reverse}: idle {base:.3} ms, queue {queue:.3} ms (median of {} backlog samples); \
         bytes out: load {data}, everything else {other} = {:.3}% of {secs:.2} s at 100 Mbit/s\n\
         end.latency: {:#}",
        samples.len(),
        100.0 * other as f64 / capacity,
        doc["end"]["latency"]
    );
    eprintln!("{ctx}");
    assert!(
        samples.len() >= 50,
        "too few backlog samples for a median\n{ctx}"
    );
    assert!(
        other as f64 <= 0.01 * capacity,
        "the probes and control took more than 1% of the capacity\n{ctx}"
    );
    let off = latency_checks(&doc, &rig, fifo, queue);
    if off.is_empty() {
        Attempt::Pass
    } else {
        Attempt::Disturbed(format!("{}\n{ctx}", off.join("\n")))
    }
}

#[test]
#[ignore = "needs the iperf3 personality's --latency"]
fn latency_18_long_fifo_round_trips_one_way_and_rpm_match_the_queue() {
    let _one_at_a_time = netns::serial();
    with_retries("--latency through the long FIFO", || {
        latency_against_the_queue(Fifo::Long, Side::Client)
    });
}

#[test]
#[ignore = "needs the iperf3 personality's --latency"]
fn latency_18_short_fifo_round_trips_one_way_and_rpm_match_the_queue() {
    let _one_at_a_time = netns::serial();
    with_retries("--latency through the short FIFO", || {
        latency_against_the_queue(Fifo::Short, Side::Client)
    });
}

#[test]
#[ignore = "needs the iperf3 personality's --latency"]
fn latency_18_reverse_long_fifo_round_trips_one_way_and_rpm_match_the_queue() {
    let _one_at_a_time = netns::serial();
    with_retries("--latency -R through the long FIFO", || {
        latency_against_the_queue(Fifo::Long, Side::Server)
    });
}
