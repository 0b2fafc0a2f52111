//! `--latency` under a TCP load through the queue rig's long FIFO (see
//! `netns/queue.rs`): the self probes (the loaded streams' own round trips,
//! which a UDP load does not have) and the foreign ones both wait in the
//! queue the streams keep, whose backlog over the rate is the ground truth.
//! Four BBR streams hold it at about 15 ms here (TCP small queues, not the
//! FIFO's length, limit it), swinging by milliseconds, without drops. The
//! probes' medians are held to the backlog's spread for their number (see
//! `median_band`), each late interval's RPM to the backlog of that interval.

use std::time::{Duration, Instant};

use crate::netns::queue::{
    between, check_lines, in_band, judge, load_evidence, median, queue_delay_ms, trimmed_mean,
    Backlog, Fifo, QueueRig, LOADED_FROM,
};
use crate::netns::{self, count, json_doc, num, with_retries, Attempt, Side, DEV};
use crate::netns_queue::{near, p50_of};
use crate::RUN_TIMEOUT;

/// A TCP-held queue swings by milliseconds between two backlog samples
/// (25 ms apart), so a trimmed mean of a second's samples is coarser than a
/// UDP-held one's (3%), as in `netns_queue_rpm.rs`.
const TCP_TOLERANCE: f64 = 0.05;
/// Intervals from this late on are compared with the backlog from then on.
const LATE: Duration = Duration::from_secs(2);

fn tcp_load_against_the_queue() -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    // TCP keeps at most about two of its packets per socket in the qdisc
    // (TCP small queues): with the pair's one-segment packets that is a
    // 1 ms queue, which stack delays swamp; whole 64 KB trains, the veth's
    // default, make it about 15 ms.
    rig.pair.on(
        Side::Client,
        &["ip", "link", "set", DEV, "gso_max_segs", "65535"],
    );
    let server = rig.pair.start_server();
    let started = Instant::now();
    // Fifty foreign probes a second: the queue swings by milliseconds, so
    // the band a median may fall in narrows only with their number. (At a
    // hundred, the 90 ms the first second reaches puts 8 in flight, the
    // prober's cap, and the probes it skips then read 2-5% low.)
    let client = rig
        .pair
        .spawn_client(&["-P", "4", "-C", "bbr", "-t", "5", "--latency=50"]);
    let sampler = rig.sample_backlog();
    let client = client.finish(RUN_TIMEOUT);
    let samples = sampler.stop();
    let doc = json_doc(&client);
    json_doc(&server.finish(Duration::from_secs(5)));

    let base = rig.base_ms();
    // The test's own span: from the first sample with the load's queue to
    // the last (the sampler also sees the connections set up and the drain).
    let loaded = |b: &&Backlog| b.bytes >= LOADED_FROM;
    let t0 = samples.iter().find(loaded).map_or(started, |b| b.at);
    let t1 = samples.iter().rev().find(loaded).map_or(t0, |b| b.at);
    let run = between(&samples, t0, t1);
    let delays: Vec<f64> = run
        .iter()
        .map(|b| base + queue_delay_ms(b.bytes as f64))
        .collect();
    let late = between(&samples, t0 + LATE, t1);
    let self_count = count(&doc, "end.latency.loaded.self.count");
    let foreign_count = count(&doc, "end.latency.loaded.foreign.count");
    let p50 = |path: &str| p50_of(&doc, path).unwrap_or_else(|| panic!("no {path}"));
    // Each late interval's RPM against the same figure of the backlog seen
    // in that interval: the method's TM() of the round trips it means. A
    // TCP queue rises and falls within a second, so only the same window
    // and the same statistic compare (the median over all late intervals
    // read 5% high against the trimmed mean's skew).
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
    // The medians against the backlog's spread over the run: the four
    // streams' round trips are read at the same moments (a quarter as many
    // independent samples), a foreign probe's handshake and request a
    // moment apart (half). The streams' own round trips are read ten times
    // a second, so theirs is the widest band (p29-p71 of the backlog).
    let (n_self, n_foreign) = (self_count as f64 / 4.0, foreign_count as f64 / 2.0);
    let checks = [
        in_band(
            "self p50 vs idle + queue",
            p50("end.latency.loaded.self"),
            &delays,
            n_self,
        ),
        in_band(
            "foreign p50 vs idle + queue",
            p50("end.latency.loaded.foreign"),
            &delays,
            n_foreign,
        ),
        in_band(
            "loaded p50 vs idle + queue",
            p50("end.latency.loaded"),
            &delays,
            n_self + n_foreign,
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
        "TCP -P 4 through the long FIFO: idle {base:.3} ms, {} backlog samples over the \
         run; {self_count} self and {foreign_count} foreign probes\nlate intervals' RPM {late_rpm:.0?}, their queues' {late_truth:.0?}\n{}\nend.latency: {}",
        run.len(),
        check_lines(&checks),
        doc["end"]["latency"]
    );
    eprintln!("{ctx}");
    assert!(
        run.len() >= 50 && late.len() >= 30 && self_count >= 20,
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
