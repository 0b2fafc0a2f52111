//! `--latency`'s idle round trips against a capture on the client's veth:
//! the device's timestamps of each request leaving and its answer arriving
//! on the dedicated probe connection are the round trip from outside the
//! program. rperf3's figure adds only its own two system calls and a
//! wake-up; a round trip counted twice, or one timed from the wrong event,
//! is off by at least the whole exchange.

use std::time::Duration;

use crate::netns::pcap::{connections_to, exchanges_us, NsCapture};
use crate::netns::queue::median;
use crate::netns::{self, count, json_doc, num, Attempt, Pair, Side, PORT};

/// How many times the device's round trip rperf3's may be: its own steps
/// (the request's write reaching the device, the answer's wake-up) cost
/// about what the server's do, and scale with them as the machine's state
/// does (the device read 4-7 us alone and 10-14 us in CI, rperf3 1.7-2.0
/// times that). A doubled figure reads 3.6-4.3 times the device's.
const OWN_STEPS: f64 = 2.5;

fn idle_against_the_device() -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let filter = format!("tcp port {PORT}");
    let Some(cap) = NsCapture::start(&pair, Side::Client, &filter) else {
        return Attempt::Skip;
    };
    let server = pair.start_server();
    // UDP data: the only TCP connections are the control, the probe
    // connection (the second) and the foreign probes.
    let client = pair
        .spawn_client(&["-u", "-b", "1M", "-t", "1", "--latency"])
        .finish(Duration::from_secs(20));
    let doc = json_doc(&client);
    json_doc(&server.finish(Duration::from_secs(5)));
    let segs = cap.stop();

    let conns = connections_to(&segs, PORT);
    assert!(
        conns.len() >= 2,
        "no probe connection in the capture: {conns:?}"
    );
    let all = exchanges_us(&segs, conns[1]);
    let n = count(&doc, "end.latency.idle.count") as usize;
    // Exchange 0 carries the cookie and is not counted; the idle ones follow.
    assert!(
        all.len() > n,
        "{} exchanges on the probe connection, {n} idle",
        all.len()
    );
    let idle: Vec<f64> = all[1..=n].iter().map(|&us| us as f64).collect();
    let device = median(&idle);
    let device_min = idle.iter().copied().fold(f64::MAX, f64::min);
    let ours = num(&doc, "end.latency.idle.p50_ms") * 1e3;
    let ours_min = num(&doc, "end.latency.idle.min_ms") * 1e3;
    let ctx = format!(
        "idle p50: rperf3 {ours:.1} us, device {device:.1} us; min: rperf3 {ours_min:.1} us, \
         device {device_min:.1} us (exchanges {idle:?})\nidle: {}",
        doc["end"]["latency"]["idle"]
    );
    eprintln!("{ctx}");
    // Never shorter than what the device saw (its stamps are whole
    // microseconds): that is a clock read at the wrong event, not load.
    assert!(
        ours >= device - 1.0 && ours_min >= device_min - 1.0,
        "rperf3's idle round trip is shorter than the device's exchange\n{ctx}"
    );
    // A busy machine delays the wake-ups, so more is tried again.
    // The p50: a single fastest exchange on the device (the min) can be
    // half its usual, which no wake-up of rperf3's matches.
    if ours > OWN_STEPS * device {
        return Attempt::Disturbed(format!(
            "more than {OWN_STEPS} times the device's exchange\n{ctx}"
        ));
    }
    Attempt::Pass
}

#[test]
fn latency_idle_round_trips_are_the_devices_exchanges() {
    let _one_at_a_time = netns::serial();
    netns::with_retries("idle round trips vs the device", idle_against_the_device);
}
