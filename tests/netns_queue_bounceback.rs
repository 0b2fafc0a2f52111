//! `rperf3 -c --bounceback` beside a load that keeps the queue rig's long FIFO
//! full (see `netns/queue.rs`): each request waits in the queue on its way
//! out and the reply comes back unshaped, so the round trips are the idle one
//! plus the qdisc's backlog over the rate, sampled while the round trips ran.
//! The load is a test of its own (UDP, `-u -b 7M -P 16`) against a second
//! server, so the round-trip test sees exactly the queue it left behind.

use std::time::{Duration, Instant};

use crate::netns::cmd::Bg;
use crate::netns::queue::{
    between, check_lines, judge, load_evidence, median_queue_delay_ms, Fifo, QueueRig, TOLERANCE,
};
use crate::netns::{self, count, json_doc, num, with_retries, Attempt, Listen, Pair, Side};
use crate::netns_queue::near;
use crate::RUN_TIMEOUT;

/// The round-trip test's own server port (the load uses the usual one).
const BB_PORT: u16 = 5202;
/// Seconds of load: about a second to fill the FIFO, then the round trips.
const LOAD_SECS: &str = "5";

/// Starts a second `rperf3 -s -1 -J` on [`BB_PORT`] and waits until it listens.
fn start_bb_server(pair: &Pair) -> Bg {
    let port = BB_PORT.to_string();
    pair.spawn_listening(
        Side::Server,
        &[env!("CARGO_BIN_EXE_rperf3"), "-s", "-1", "-J", "-p", &port],
        &[Listen::Tcp(BB_PORT)],
    )
}

fn bounceback_through_the_queue() -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    let base = rig.base_ms();
    let server = rig.pair.start_server();
    let bb_server = start_bb_server(&rig.pair);
    let load = rig.pair.spawn_client(&rig.load_args(LOAD_SECS));
    let sampler = rig.sample_backlog();
    sampler.wait_full(Duration::from_secs(4));
    let from = Instant::now();
    let bb_port = BB_PORT.to_string();
    let bb = rig.pair.spawn(
        Side::Client,
        &[
            env!("CARGO_BIN_EXE_rperf3"),
            "-c",
            &rig.pair.server_ip,
            "-p",
            &bb_port,
            "-J",
            "--bounceback",
            "-t",
            "2",
        ],
    );
    let bb = bb.finish(RUN_TIMEOUT);
    let to = Instant::now();
    let samples = sampler.stop();
    let doc = json_doc(&bb);
    json_doc(&bb_server.finish(Duration::from_secs(5)));
    json_doc(&load.finish(RUN_TIMEOUT));
    json_doc(&server.finish(Duration::from_secs(5)));

    let end = &doc["end"]["bounceback"];
    let n = count(&doc, "end.bounceback.count");
    let window = between(&samples, from, to);
    let expected = base + median_queue_delay_ms(&window);
    let p50 = num(&doc, "end.bounceback.p50_ms");
    let mean = num(&doc, "end.bounceback.mean_ms");
    let tps = num(&doc, "end.bounceback.tps");
    let checks = [
        near(
            "round trip p50 vs idle + queue",
            p50,
            expected,
            TOLERANCE,
            0.0,
        ),
        // Back to back: one transaction at a time, so the rate is one over
        // the mean round trip.
        near(
            "transactions/s vs 1000 / mean",
            tps,
            1000.0 / mean,
            TOLERANCE,
            0.0,
        ),
    ];
    let ctx = format!(
        "--bounceback beside the UDP load through the long FIFO: idle {base:.3} ms + queue \
         = {expected:.3} ms ({} backlog samples)\n{}\nend.bounceback: {end}",
        window.len(),
        check_lines(&checks),
    );
    eprintln!("{ctx}");
    // About 150 ms each: a dozen in two seconds.
    assert!(
        n >= 8 && window.len() >= 10,
        "too few round trips or samples\n{ctx}"
    );
    let off: Vec<String> = checks.into_iter().filter_map(Result::err).collect();
    judge(&off, &load_evidence(&samples, &window, true), &ctx)
}

#[test]
fn bounceback_18_round_trips_under_load_are_the_queue_delay() {
    let _one_at_a_time = netns::serial();
    with_retries(
        "--bounceback beside a load through the long FIFO",
        bounceback_through_the_queue,
    );
}
