//! Latency under load against the queue itself: a 100 Mbit/s tbf with a long
//! or a short FIFO, kept full by rperf3's UDP load (see `netns/queue.rs`). The
//! rig is proven first: `ping` beside the load must see the idle round trip
//! plus the qdisc's backlog over the rate, within 3%.

use std::time::{Duration, Instant};

use crate::netns::queue::{self, between, median, median_queue_delay_ms, Fifo, QueueRig, LOAD};
use crate::netns::{self, json_doc, with_retries, Attempt};
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
    let Some(rig) = QueueRig::new(fifo) else {
        return Attempt::Skip;
    };
    let base = rig.base_ms();
    let server = rig.pair.start_server();
    let mut args = LOAD.to_vec();
    args.extend(["-t", LOAD_SECS]);
    let mut load = rig.pair.spawn_client(&args);
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
        rig.pair.qdisc_stats(queue::BOTTLENECK)
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
