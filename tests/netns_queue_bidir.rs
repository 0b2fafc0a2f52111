//! `--latency --bidir` against two queues: the client's egress holds the
//! long FIFO and the server's a short one (see `netns/queue.rs`), each kept
//! full by its direction's UDP load. A round trip crosses both, so it is the
//! idle round trip plus both backlogs over the rate; each one-way figure,
//! the probes' and the data's, is its own direction's backlog alone (both
//! namespaces read one clock), so a figure taken from the wrong direction is
//! off by 140 ms.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::netns::queue::{
    between, check_lines, judge, load_evidence, median, median_queue_delay_ms, Fifo, QueueRig,
    TOLERANCE,
};
use crate::netns::{self, json_doc, num, with_retries, Attempt, Side};
use crate::netns_queue::{near, p50_of};
use crate::RUN_TIMEOUT;

/// Seconds of load (`-t 5`): the long FIFO fills in about a second.
const LOAD_SECS: u64 = 5;
/// Intervals that start this late see both queues full.
const FULL_FROM: f64 = 2.0;

fn bidir_against_both_queues() -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    rig.shape_too(Side::Server, Fifo::Short);
    let server = rig.pair.start_server();
    let mut args = rig.load_args("5");
    args.extend(["-l", "1400", "--bidir", "--latency"]);
    let started = Instant::now();
    let client = rig.pair.spawn_client(&args);
    let up_q = rig.sample_backlog();
    let down_q = rig.sample_backlog_on(Side::Server, Fifo::Short);
    up_q.wait_full(Duration::from_secs(4));
    down_q.wait_full(Duration::from_secs(4));
    let from = Instant::now();
    let client = client.finish(RUN_TIMEOUT);
    let (up_s, down_s) = (up_q.stop(), down_q.stop());
    let doc = json_doc(&client);
    json_doc(&server.finish(Duration::from_secs(5)));

    if let Some(w) = doc["end"]["latency"]["data_one_way"].get("clock_warning") {
        panic!("data one-way on one clock warned: {w}\n{doc:#}");
    }
    let until = started + Duration::from_secs(LOAD_SECS) - Duration::from_millis(300);
    let (up_full, down_full) = (between(&up_s, from, until), between(&down_s, from, until));
    let base = rig.base_ms();
    let (up_run, down_run) = (median_queue_delay_ms(&up_s), median_queue_delay_ms(&down_s));
    let (up, down) = (
        median_queue_delay_ms(&up_full),
        median_queue_delay_ms(&down_full),
    );
    let late: Vec<&Value> = doc["intervals"]
        .as_array()
        .expect("no intervals")
        .iter()
        .filter(|iv| num(iv, "sum.start") >= FULL_FROM)
        .collect();
    assert!(
        late.len() >= 2,
        "no intervals after {FULL_FROM} s:\n{doc:#}"
    );
    let per = |f: &dyn Fn(&Value) -> f64| median(&late.iter().map(|iv| f(iv)).collect::<Vec<_>>());
    let checks = [
        near(
            "loaded p50 vs idle + both queues (run)",
            p50_of(&doc, "end.latency.loaded").expect("no loaded round trips"),
            base + up_run + down_run,
            TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' loaded p50 vs idle + both queues",
            per(&|iv| p50_of(iv, "latency.loaded").expect("an interval without round trips")),
            base + up + down,
            TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' RPM vs 60000 / (idle + both queues)",
            per(&|iv| num(iv, "latency.rpm")),
            60_000.0 / (base + up + down),
            TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' probe one-way up vs the long queue",
            per(&|iv| num(iv, "latency.one_way.up.mean_ms")),
            up,
            TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' probe one-way down vs the short queue",
            per(&|iv| num(iv, "latency.one_way.down.mean_ms")),
            down,
            TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' data one-way up p50 vs the long queue",
            per(&|iv| num(iv, "latency.data_one_way.up.p50_ms")),
            up,
            TOLERANCE,
            0.0,
        ),
        near(
            "late intervals' data one-way down p50 vs the short queue",
            per(&|iv| num(iv, "latency.data_one_way.down.p50_ms")),
            down,
            TOLERANCE,
            0.0,
        ),
    ];
    let ctx = format!(
        "--latency --bidir: idle {base:.3} ms; long FIFO up {up:.3} ms, short FIFO down \
         {down:.3} ms once full ({} and {} backlog samples)\n{}\nend.latency: {}",
        up_full.len(),
        down_full.len(),
        check_lines(&checks),
        doc["end"]["latency"]
    );
    eprintln!("{ctx}");
    let mut evidence = load_evidence(&up_s, &up_full, true);
    evidence.extend(load_evidence(&down_s, &down_full, true));
    let off: Vec<String> = checks.into_iter().filter_map(Result::err).collect();
    judge(&off, &evidence, &ctx)
}

#[test]
fn latency_bidir_round_trips_cross_both_queues_and_each_way_is_its_own() {
    let _one_at_a_time = netns::serial();
    with_retries(
        "--latency --bidir through a long FIFO up and a short one down",
        bidir_against_both_queues,
    );
}
