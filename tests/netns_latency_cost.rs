//! What `--latency` costs the test it measures: TCP through the queue rig's
//! long FIFO (see `netns/queue.rs`), runs without and with the option in
//! turn. The long FIFO never drops here, so the rate is the shaper's whatever
//! shares the queue (in the short one, the probes' packets take slots that
//! cause drops: one quiet run read 0.4% less with them, within what a busier
//! machine spreads). Every run's goodput is the shaper's (the rate less the headers), and
//! the runs with probes stay within the spread of the runs without them: the
//! probes and their control traffic are a few hundredths of a percent of the
//! path (`netns_queue.rs` counts their bytes with iptables).

use std::time::Duration;

use crate::netns::queue::{Fifo, QueueRig};
use crate::netns::{self, json_doc, num, with_retries, Attempt, Side};

/// Runs of each kind, alternating so drifts of the machine hit both alike.
const RUNS: usize = 3;
/// Slack beyond the spread of the runs without probes: a few runs estimate
/// the spread only roughly (the shaper's goodput varies by under 0.2% here).
const SLACK: f64 = 0.002;

/// One 2-second TCP run: the receiver's goodput, bits per second.
fn goodput(rig: &QueueRig, latency: bool) -> f64 {
    let server = rig.pair.start_server();
    let mut args = vec!["-t", "2"];
    if latency {
        args.push("--latency");
    }
    let client = rig.pair.spawn_client(&args).finish(crate::RUN_TIMEOUT);
    let doc = json_doc(&client);
    json_doc(&server.finish(Duration::from_secs(5)));
    if latency {
        // The probes ran: otherwise the comparison says nothing.
        assert!(
            num(&doc, "end.latency.loaded.count") >= 10.0,
            "no loaded probes: {}",
            doc["end"]["latency"]
        );
    }
    num(&doc, "end.sum_received.bits_per_second")
}

fn latency_costs_no_throughput() -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    let shaper = rig.tcp_goodput();
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        without.push(goodput(&rig, false));
        with.push(goodput(&rig, true));
    }
    let lo = without.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = without.iter().copied().fold(0.0, f64::max);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (m_without, m_with) = (mean(&without), mean(&with));
    let ctx = format!(
        "TCP -t 2 through 100 Mbit/s, long FIFO; shaper's goodput {:.2} Mbit/s\n\
         without --latency: {:.3?} Mbit/s (mean {:.3})\n\
         with --latency:    {:.3?} Mbit/s (mean {:.3}, {:+.3}%)",
        shaper / 1e6,
        without.iter().map(|b| b / 1e6).collect::<Vec<_>>(),
        m_without / 1e6,
        with.iter().map(|b| b / 1e6).collect::<Vec<_>>(),
        m_with / 1e6,
        100.0 * (m_with - m_without) / m_without,
    );
    eprintln!("{ctx}");
    // Each run carries the shaper's goodput (slow start's first round trips
    // are a fraction of a percent of 2 s here).
    if without
        .iter()
        .chain(&with)
        .any(|b| (b - shaper).abs() > shaper * 0.02)
    {
        return Attempt::Disturbed(format!("a run off the shaper's rate\n{ctx}"));
    }
    let (floor, ceiling) = (lo - m_without * SLACK, hi + m_without * SLACK);
    if with.iter().any(|b| !(floor..=ceiling).contains(b)) {
        return Attempt::Disturbed(format!(
            "a run with --latency outside {:.3}..{:.3} Mbit/s\n{ctx}",
            floor / 1e6,
            ceiling / 1e6
        ));
    }
    Attempt::Pass
}

#[test]
fn latency_18_probes_leave_the_throughput_within_its_spread() {
    let _one_at_a_time = netns::serial();
    with_retries(
        "--latency's cost to TCP throughput",
        latency_costs_no_throughput,
    );
}
