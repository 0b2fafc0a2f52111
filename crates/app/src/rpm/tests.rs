//! The loop on a virtual clock over a made-up link.

use super::*;
use rperf3_latency::{Confidence, Kind, Samples};

const FULL: u64 = 12_500_000;

#[derive(Default)]
struct FakeLink {
    /// What happened, in order.
    log: Vec<String>,
    /// Connections open per direction in the current stage.
    open: [u32; 2],
    /// Round trip of every probe (ms), per interval index of the stage.
    rtt_ms: f64,
    /// How long each `take_interval` takes on the virtual clock.
    slow: Duration,
    clock: Option<std::rc::Rc<std::cell::Cell<Instant>>>,
    /// Fail when opening the n-th connection of the run.
    fail_at: Option<usize>,
    opened: usize,
}

impl Link for FakeLink {
    fn idle(&mut self) -> io::Result<Histogram> {
        self.log.push("idle".into());
        let mut h = Histogram::new();
        h.record(40_000);
        Ok(h)
    }

    fn open(&mut self, load: Load, count: u32) -> io::Result<()> {
        self.opened += count as usize;
        if self.fail_at.is_some_and(|n| self.opened >= n) {
            return Err(io::Error::new(io::ErrorKind::ConnectionRefused, "refused"));
        }
        let i = usize::from(load == Load::Up);
        self.open[i] += count;
        self.log.push(format!("open {load:?} {count}"));
        Ok(())
    }

    fn probe_rate(&mut self, _pairs_per_sec: f64) {}

    fn take_interval(&mut self) -> io::Result<IntervalData> {
        if let Some(c) = &self.clock {
            c.set(c.get() + self.slow);
        }
        let mut s = Samples::default();
        let ns = (self.rtt_ms * 1e6) as u64;
        for _ in 0..10 {
            s.record(Kind::ForeignConnect, ns);
            s.record(Kind::ForeignRequest, ns);
            s.record(Kind::SelfLoaded, ns);
        }
        // Goodput saturates at once, whatever the connections.
        Ok(IntervalData {
            down_bytes: if self.open[0] > 0 { FULL } else { 0 },
            up_bytes: if self.open[1] > 0 { FULL / 10 } else { 0 },
            samples: s,
        })
    }

    fn end_stage(&mut self) {
        self.open = [0; 2];
        self.log.push("end".into());
    }
}

struct FakeTicks {
    now: std::rc::Rc<std::cell::Cell<Instant>>,
    waits: usize,
    interrupt_after: Option<usize>,
}

impl FakeTicks {
    fn new() -> Self {
        Self {
            now: std::rc::Rc::new(std::cell::Cell::new(Instant::now())),
            waits: 0,
            interrupt_after: None,
        }
    }
}

impl Ticks for FakeTicks {
    fn now(&self) -> Instant {
        self.now.get()
    }

    fn wait_until(&mut self, t: Instant) -> bool {
        self.waits += 1;
        if self.interrupt_after.is_some_and(|n| self.waits > n) {
            return false;
        }
        if t > self.now.get() {
            self.now.set(t);
        }
        true
    }
}

fn cfg(down: bool, up: bool, bidir: bool) -> RpmConfig {
    RpmConfig {
        downlink: down,
        uplink: up,
        bidirectional: bidir,
        stage_budget: Duration::from_secs(15),
    }
}

#[test]
fn stages_run_in_the_methods_order() {
    assert_eq!(
        stages(&cfg(true, true, true)),
        [Stage::Downlink, Stage::Uplink, Stage::Bidirectional]
    );
    assert_eq!(stages(&cfg(false, true, false)), [Stage::Uplink]);
}

#[test]
fn every_stage_measures_idle_then_loads_then_ends() {
    let mut link = FakeLink {
        rtt_ms: 50.0,
        ..FakeLink::default()
    };
    let mut ticks = FakeTicks::new();
    let t0 = ticks.now();
    let (run, ending) = run(
        &mut link,
        &mut ticks,
        &cfg(true, true, true),
        Params::default(),
    );
    assert!(matches!(ending, Ending::Complete));
    let names: Vec<Stage> = run.stages.iter().map(|s| s.stage).collect();
    assert_eq!(names, Stage::ALL);
    for s in &run.stages {
        // Flat goodput and round trips: High after 10 intervals, well in budget.
        assert_eq!(s.intervals, 10, "{:?}", s.stage);
        assert_eq!(s.confidence, Confidence::High);
        assert_eq!(s.figures.idle.count, 1);
        assert!((s.figures.responsiveness.rpm - 1200.0).abs() < 1.0);
    }
    assert_eq!(run.stages[2].throughput_bps, 110e6);
    assert_eq!(ticks.now() - t0, Duration::from_secs(30));
    // Idle first, then the stage's connections, then its end, for each stage.
    let firsts: Vec<&str> = link
        .log
        .iter()
        .map(String::as_str)
        .filter(|l| *l == "idle" || *l == "end")
        .collect();
    assert_eq!(firsts, ["idle", "end", "idle", "end", "idle", "end"]);
    assert_eq!(link.log[1], "open Down 1");
    assert_eq!(
        link.log.iter().filter(|l| l.starts_with("open Up")).count(),
        2 * 7,
        "uplink and bidirectional: INP + 6 ramp steps each"
    );
}

#[test]
fn slow_intervals_cannot_stretch_a_stage_past_its_budget() {
    let mut ticks = FakeTicks::new();
    let mut link = FakeLink {
        rtt_ms: 50.0,
        slow: Duration::from_millis(2500),
        clock: Some(ticks.now.clone()),
        ..FakeLink::default()
    };
    let t0 = ticks.now();
    let (run, _) = run(
        &mut link,
        &mut ticks,
        &cfg(true, false, false),
        Params::default(),
    );
    let took = ticks.now() - t0;
    // Each interval takes 2.5 s here: the wall-clock cap ends the stage after
    // the first interval past 15.5 s, long before ten intervals.
    assert!(took <= Duration::from_millis(15_500 + 2500), "{took:?}");
    assert!(took >= Duration::from_millis(15_500), "{took:?}");
    assert!(run.stages[0].intervals < 10);
    assert_eq!(run.stages[0].confidence, Confidence::Low);
}

#[test]
fn an_interrupt_keeps_what_was_measured() {
    let mut link = FakeLink {
        rtt_ms: 50.0,
        ..FakeLink::default()
    };
    let mut ticks = FakeTicks::new();
    ticks.interrupt_after = Some(12);
    let (run, ending) = run(
        &mut link,
        &mut ticks,
        &cfg(true, true, true),
        Params::default(),
    );
    assert!(matches!(ending, Ending::Interrupted));
    assert_eq!(run.stages.len(), 2);
    assert_eq!(run.stages[0].intervals, 10);
    assert_eq!(run.stages[1].intervals, 2);
    assert_eq!(link.log.last().map(String::as_str), Some("end"));
}

#[test]
fn a_failed_connection_aborts_with_the_stages_before_it() {
    let mut link = FakeLink {
        rtt_ms: 50.0,
        fail_at: Some(9),
        ..FakeLink::default()
    };
    let mut ticks = FakeTicks::new();
    let (run, ending) = run(
        &mut link,
        &mut ticks,
        &cfg(true, true, false),
        Params::default(),
    );
    match ending {
        Ending::Failed(e) => assert_eq!(e.kind(), io::ErrorKind::ConnectionRefused),
        other => panic!("{other:?}"),
    }
    // The downlink opened 7; the uplink's second connection is the ninth.
    assert_eq!(run.stages.len(), 1);
    assert_eq!(link.log.last().map(String::as_str), Some("end"));
}

#[test]
fn a_late_tick_does_not_count_its_lateness_as_goodput() {
    let id = Duration::from_secs(1);
    let mut d = IntervalData {
        down_bytes: 12_600_000,
        up_bytes: 1_050_000,
        samples: Samples::default(),
    };
    // 5% late: the bytes of 1.05 s are 1 s's at the rate they came.
    per_interval(&mut d, Duration::from_millis(1050), id);
    assert_eq!((d.down_bytes, d.up_bytes), (12_000_000, 1_000_000));
    // On time (or a clock that did not move): as counted.
    per_interval(&mut d, id, id);
    per_interval(&mut d, Duration::ZERO, id);
    assert_eq!(d.down_bytes, 12_000_000);
}
