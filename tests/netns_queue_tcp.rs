//! `--latency` under a TCP load through the queue rig's long FIFO (see
//! `netns/queue.rs`): the self probes (the loaded streams' own round trips,
//! which a UDP load does not have) and the foreign ones both wait in the
//! queue the streams keep, whose backlog over the rate is the ground truth.
//! Four cubic streams hold it at about 40 ms here (TCP small queues, not the
//! FIFO's length, limit it), growing slowly, without drops; the medians of
//! the round trips and of the backlog, both taken over the run, agree.

use std::time::{Duration, Instant};

use crate::netns::queue::{
    between, check_lines, judge, load_evidence, median, median_queue_delay_ms, queue_delay_ms,
    trimmed_mean, Fifo, QueueRig,
};
use crate::netns::{self, count, json_doc, num, with_retries, Attempt, Side, DEV};
use crate::netns_queue::{near, p50_of};
use crate::RUN_TIMEOUT;

/// A TCP-held queue swings by milliseconds between two backlog samples
/// (25 ms apart), so its sampled median is coarser than a UDP-held one's
/// (3%): the probes' p50s were seen 0.1-3.0% from it, as in
/// `netns_queue_rpm.rs`.
const TCP_TOLERANCE: f64 = 0.05;
/// Intervals from this late on are compared with the backlog from then on.
const LATE: Duration = Duration::from_secs(2);
/// A backlog at least this big means the load is running.
const LOADED_FROM: u64 = 3000;

fn tcp_load_against_the_queue() -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    // TCP keeps at most about two of its packets per socket in the qdisc
    // (TCP small queues): with the pair's one-segment packets that is a
    // 1 ms queue, which stack delays swamp; whole 64 KB trains, the veth's
    // default, make it about 40 ms.
    rig.pair.on(
        Side::Client,
        &["ip", "link", "set", DEV, "gso_max_segs", "65535"],
    );
    let server = rig.pair.start_server();
    let started = Instant::now();
    let client = rig.pair.spawn_client(&["-P", "4", "-t", "5", "--latency"]);
    let sampler = rig.sample_backlog();
    let client = client.finish(RUN_TIMEOUT);
    let samples = sampler.stop();
    let doc = json_doc(&client);
    json_doc(&server.finish(Duration::from_secs(5)));

    let base = rig.base_ms();
    let rtt = base + median_queue_delay_ms(&samples);
    let late = between(&samples, started + LATE, Instant::now());
    let late_rtt = base + median_queue_delay_ms(&late);
    let self_count = count(&doc, "end.latency.loaded.self.count");
    let p50 = |path: &str| p50_of(&doc, path).unwrap_or_else(|| panic!("no {path}"));
    // Each late interval's RPM against the same figure of the backlog seen
    // in that interval: the method's TM() of the round trips it means. A
    // TCP queue rises and falls within a second, so only the same window
    // and the same statistic compare (the median over all late intervals
    // read 5% high against the trimmed mean's skew).
    let t0 = samples
        .iter()
        .find(|b| b.bytes >= LOADED_FROM)
        .map_or(started, |b| b.at);
    let mut late_rpm = Vec::new();
    let mut late_truth = Vec::new();
    for iv in doc["intervals"].as_array().expect("no intervals") {
        let (from, to) = (num(iv, "sum.start"), num(iv, "sum.end"));
        let window = between(
            &samples,
            t0 + Duration::from_secs_f64(from),
            t0 + Duration::from_secs_f64(to),
        );
        if from < LATE.as_secs_f64() || window.len() < 20 {
            continue;
        }
        let delays: Vec<f64> = window
            .iter()
            .map(|b| base + queue_delay_ms(b.bytes as f64))
            .collect();
        late_rpm.push(num(iv, "latency.rpm"));
        late_truth.push(60_000.0 / trimmed_mean(&delays));
    }
    assert!(
        !late_rpm.is_empty(),
        "no late interval with backlog samples"
    );
    let checks = [
        near(
            "self p50 vs idle + queue",
            p50("end.latency.loaded.self"),
            rtt,
            TCP_TOLERANCE,
            0.0,
        ),
        near(
            "foreign p50 vs idle + queue",
            p50("end.latency.loaded.foreign"),
            rtt,
            TCP_TOLERANCE,
            0.0,
        ),
        near(
            "loaded p50 vs idle + queue",
            p50("end.latency.loaded"),
            rtt,
            TCP_TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' RPM vs 60000 / TM(idle + queue) in each",
            median(&late_rpm),
            median(&late_truth),
            TCP_TOLERANCE,
            0.0,
        ),
    ];
    let ctx = format!(
        "TCP -P 4 through the long FIFO: idle {base:.3} ms, idle + queue {rtt:.3} ms over the \
         run ({} backlog samples), {late_rtt:.3} ms from {LATE:?} on; {self_count} self \
         probes\nlate intervals' RPM {late_rpm:.0?}, their queues' {late_truth:.0?}\n{}\nend.latency: {}",
        samples.len(),
        check_lines(&checks),
        doc["end"]["latency"]
    );
    eprintln!("{ctx}");
    assert!(
        samples.len() >= 50 && late.len() >= 30 && self_count >= 20,
        "too few backlog samples or self probes\n{ctx}"
    );
    // TCP's own queue rises and falls, so only a stalled sampler or too
    // few samples explain a figure off.
    let off: Vec<String> = checks.into_iter().filter_map(Result::err).collect();
    judge(&off, &load_evidence(&samples, &late, false), &ctx)
}

#[test]
fn latency_18_tcp_load_self_and_foreign_probes_match_the_queue() {
    let _one_at_a_time = netns::serial();
    with_retries("--latency under a TCP load", tcp_load_against_the_queue);
}
