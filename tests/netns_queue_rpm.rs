//! The responsiveness test (`--rpm`) through the queue rig's long FIFO (see
//! `netns/queue.rs`): five downlink runs on the same rig agree within 5%, each
//! done within 20 s, with the load's goodput the shaper's rate. The stage's
//! own TCP load holds the queue (TCP small queues, not the FIFO's length, set
//! how much), so the backlog beside each run is printed for the reader, not
//! asserted on; `netns_queue*.rs` hold rperf3's round trips to it.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::netns::queue::{median, median_queue_delay_ms, Fifo, QueueRig};
use crate::netns::{self, json_doc, num, with_retries, Attempt, Side, DEV};
use crate::rel;

const RUNS: usize = 5;
/// The limit for one direction of the test.
const STAGE_LIMIT: Duration = Duration::from_secs(20);

/// One `--rpm --rpm-stages down` run: (its `downlink` object, how long the
/// client took, the median backlog over the rate during it in ms).
fn downlink_run(rig: &QueueRig) -> (Value, Duration, f64) {
    let server = rig.pair.start_server();
    let started = Instant::now();
    let client = rig.pair.spawn_client(&["--rpm", "--rpm-stages", "down"]);
    let sampler = rig.sample_backlog();
    let client = client.finish(STAGE_LIMIT + Duration::from_secs(10));
    let took = started.elapsed();
    let samples = sampler.stop();
    let doc = json_doc(&client);
    // The server's own document is iperf3's; it must just end cleanly.
    let server = server.finish(Duration::from_secs(5));
    assert!(server.success(), "rperf3 server failed: {server}");
    (
        doc["downlink"].clone(),
        took,
        median_queue_delay_ms(&samples),
    )
}

/// Five downlink runs through the long FIFO on the server's egress.
fn five_downlink_runs() -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Server) else {
        return Attempt::Skip;
    };
    // Loss-based congestion control queues (bbr, a namespace's default here,
    // would pace below the rate). Reno is one a namespace may pick. Whole
    // GSO trains, the veth's default, let TCP small queues park more than a
    // couple of segments per connection in the qdisc.
    for side in [Side::Server, Side::Client] {
        rig.pair.on(
            side,
            &["sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"],
        );
    }
    rig.pair.on(
        Side::Server,
        &["ip", "link", "set", DEV, "gso_max_segs", "65535"],
    );
    let goodput = rig.tcp_goodput();

    let mut rpms = Vec::new();
    let mut lines = Vec::new();
    let mut off = Vec::new();
    for i in 1..=RUNS {
        let (down, took, queue) = downlink_run(&rig);
        let rpm = num(&down, "rpm");
        let p50 = num(&down, "loaded.p50_ms");
        let bps = num(&down, "throughput_bps");
        lines.push(format!(
            "run {i}: {rpm:.0} RPM ({}, confidence {}), loaded p50 {p50:.3} ms, {:.2} Mbit/s \
             with {} connections, {took:.1?}; beside it: idle {:.3} ms + backlog {queue:.3} ms \
             -> {:.0} RPM",
            down["band"],
            down["confidence"],
            bps / 1e6,
            down["connections"],
            rig.base_ms(),
            60_000.0 / (rig.base_ms() + queue)
        ));
        assert!(
            took <= STAGE_LIMIT,
            "a downlink run took {took:?}, over {STAGE_LIMIT:?}\n{}",
            lines.join("\n")
        );
        assert!(
            rel(bps, goodput) <= 0.01,
            "downlink throughput {bps} is above what the shaper allows ({goodput})\n{}",
            lines.join("\n")
        );
        if rel(bps, goodput) < -0.05 {
            off.push(format!(
                "run {i}: throughput {:.2} Mbit/s is low",
                bps / 1e6
            ));
        }
        rpms.push(rpm);
    }
    let mid = median(&rpms);
    let (lo, hi) = rpms
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &r| (lo.min(r), hi.max(r)));
    let spread = (hi - lo) / mid;
    let ctx = format!(
        "{}\nspread: (max - min) / median = {:.2}% (median {mid:.0}); expected \
         goodput {:.2} Mbit/s",
        lines.join("\n"),
        100.0 * spread,
        goodput / 1e6
    );
    eprintln!("{ctx}");
    if spread > 0.05 {
        off.push("the runs spread by more than 5%".to_string());
    }
    if off.is_empty() {
        Attempt::Pass
    } else {
        Attempt::Disturbed(format!("{}\n{ctx}", off.join("\n")))
    }
}

#[test]
fn rpm_18_five_downlink_runs_through_a_long_fifo_agree_within_5_percent() {
    let _one_at_a_time = netns::serial();
    with_retries("five --rpm downlink runs", five_downlink_runs);
}
