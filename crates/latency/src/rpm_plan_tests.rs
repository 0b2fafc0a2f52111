//! The planner driven through made-up series of goodput and probes.

use super::*;
use crate::figures::Kind;
use crate::rpm::Responsiveness;

const MS: u64 = 1_000_000;
/// 100 Mbit/s over a 1 s interval.
const FULL: u64 = 12_500_000;

/// `n` foreign probes (handshake and request) and `n` self probes of `ms` each.
fn probes(ms: f64, n: usize) -> Samples {
    let mut s = Samples::default();
    let ns = (ms * MS as f64) as u64;
    for _ in 0..n {
        s.record(Kind::ForeignConnect, ns);
        s.record(Kind::ForeignRequest, ns);
        s.record(Kind::SelfLoaded, ns);
    }
    s
}

fn down(bytes: u64, ms: f64) -> IntervalData {
    IntervalData {
        down_bytes: bytes,
        up_bytes: 0,
        samples: probes(ms, 20),
    }
}

fn opens(actions: &[Action]) -> Vec<(Load, u32)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Open { load, count } => Some((*load, *count)),
            _ => None,
        })
        .collect()
}

fn ends(actions: &[Action]) -> bool {
    actions.contains(&Action::End)
}

/// Feeds intervals until the plan ends; returns the interval it ended in (1-based).
fn run_until_end(plan: &mut StagePlan, mut next: impl FnMut(usize) -> IntervalData) -> usize {
    for i in 1..=1000 {
        if ends(&plan.interval(next(i))) {
            return i;
        }
    }
    panic!("never ended");
}

#[test]
fn defaults_are_the_drafts_but_a_one_second_interval() {
    let p = Params::default();
    assert_eq!(
        (p.mad, p.sdt, p.inp, p.inc, p.mnp, p.mps, p.ptc),
        (4, 0.05, 1, 1, 16, 100, 0.05)
    );
    assert_eq!(p.id, Duration::from_secs(1));
    assert_eq!(crate::rpm::KEEP, 0.95);
    assert_eq!(p.intervals_in(DEFAULT_BUDGET), 15);
    assert_eq!(p.intervals_in(Duration::from_millis(2900)), 2);
    assert_eq!(p.intervals_in(Duration::from_millis(400)), 1);
    let half = Params {
        id: Duration::from_millis(500),
        ..p
    };
    assert_eq!(half.intervals_in(Duration::from_secs(15)), 30);
}

#[test]
fn probe_rate_is_mps_capped_by_ptc_and_floored_at_one_per_interval() {
    let p = Params::default();
    // 5% of 100 Mbit/s is 347 pairs of 1800 bytes: MPS caps it.
    assert_eq!(p.probe_rate(100e6), 100.0);
    // 5% of 1 Mbit/s: 50 kbit/s / 14.4 kbit per pair.
    assert!((p.probe_rate(1e6) - 50_000.0 / 14_400.0).abs() < 1e-9);
    assert_eq!(p.probe_rate(0.0), 1.0);
    let half = Params {
        id: Duration::from_millis(500),
        ..p
    };
    assert_eq!(half.probe_rate(0.0), 2.0);
}

#[test]
fn stages_name_their_directions() {
    let names: Vec<&str> = Stage::ALL.iter().map(|s| s.name()).collect();
    assert_eq!(names, ["downlink", "uplink", "bidirectional"]);
    assert_eq!(Stage::Uplink.loads(), [Load::Up]);
    assert_eq!(Stage::Bidirectional.loads(), [Load::Down, Load::Up]);
}

#[test]
fn start_opens_inp_per_direction_and_probes_gently() {
    let p = Params {
        inp: 3,
        ..Params::default()
    };
    let mut plan = StagePlan::new(Stage::Bidirectional, p, DEFAULT_BUDGET);
    let a = plan.start();
    assert_eq!(opens(&a), [(Load::Down, 3), (Load::Up, 3)]);
    assert_eq!(a.last(), Some(&Action::ProbeRate(FIRST_PROBE_RATE)));
}

#[test]
fn flat_goodput_and_flat_round_trips_end_early_with_high_confidence() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    let mut opened = 1;
    for i in 1..=9 {
        let a = plan.interval(down(FULL, 50.0));
        assert!(!ends(&a), "interval {i}: {a:?}");
        // Goodput settles after 2 x MAD - 1 intervals; connections stop there.
        let expect: &[(Load, u32)] = if i < 7 { &[(Load::Down, 1)] } else { &[] };
        assert_eq!(opens(&a), expect, "interval {i}");
        opened += opens(&a).len() as u32;
        assert_eq!(a.last(), Some(&Action::ProbeRate(100.0)), "interval {i}");
    }
    // Saturated at 7; MAD responsiveness values (7, 8, 9, 10) settle it at 10.
    assert_eq!(plan.interval(down(FULL, 50.0)), [Action::End]);
    assert!(plan.is_ended());
    let r = plan.result();
    assert_eq!(r.intervals, 10);
    assert_eq!(r.connections, opened);
    assert_eq!(r.connections, 7);
    assert_eq!(r.confidence, Confidence::High);
    assert_eq!(r.throughput_confidence, Confidence::High);
    assert_eq!(r.throughput_bps, 100e6);
    assert_eq!((r.downlink_bps, r.uplink_bps), (100e6, 0.0));
    assert!((r.figures.responsiveness.rpm - 1200.0).abs() < 1.0, "{r:?}");
    // The figures cover the last MAD intervals of probes only.
    assert_eq!(r.figures.self_loaded.count, 4 * 20);
    assert_eq!(r.figures.foreign.count, 4 * 40);
    assert_eq!(r.figures.loaded.count, 4 * 60);
    // Nothing more after the end.
    assert!(plan.interval(down(FULL, 500.0)).is_empty());
    assert_eq!(plan.result(), r);
}

#[test]
fn noise_within_the_tolerance_still_saturates() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    let end = run_until_end(&mut plan, |i| {
        let bytes = if i % 2 == 0 {
            FULL * 98 / 100
        } else {
            FULL * 102 / 100
        };
        down(bytes, 20.0)
    });
    assert_eq!(end, 10);
    assert_eq!(plan.result().confidence, Confidence::High);
}

#[test]
fn growing_goodput_ramps_up_to_mnp_and_ends_at_the_budget_with_low_confidence() {
    let p = Params {
        mnp: 4,
        ..Params::default()
    };
    let mut plan = StagePlan::new(Stage::Uplink, p, Duration::from_secs(20));
    assert_eq!(opens(&plan.start()), [(Load::Up, 1)]);
    let mut total = 1;
    let end = run_until_end(&mut plan, |_| IntervalData::default());
    assert_eq!(end, 20, "no goodput never saturates");
    // A second plan with goodput doubling each interval: opens stop at MNP.
    let mut plan = StagePlan::new(Stage::Uplink, p, Duration::from_secs(20));
    plan.start();
    for i in 1..=20u32 {
        let a = plan.interval(IntervalData {
            down_bytes: 0,
            up_bytes: 1000 << i,
            samples: probes(30.0, 5),
        });
        total += opens(&a).iter().map(|(_, n)| n).sum::<u32>();
        assert!(total <= 4, "interval {i}: {total}");
        assert_eq!(ends(&a), i == 20, "interval {i}");
        assert!(opens(&a).iter().all(|(l, _)| *l == Load::Up));
    }
    assert_eq!(total, 4);
    let r = plan.result();
    assert_eq!(r.connections, 4);
    // Goodput ran MAD intervals without settling; responsiveness never started.
    assert_eq!(r.throughput_confidence, Confidence::Medium);
    assert_eq!(r.confidence, Confidence::Low);
    // Throughput: the median of the last MAD intervals, in bits/s.
    let middle: u64 = (18..=19).map(|i| 1000u64 << i).sum();
    assert_eq!(r.throughput_bps, middle as f64 * 8.0 / 2.0);
    assert!((r.figures.responsiveness.rpm - 2000.0).abs() < 2.0);
}

#[test]
fn round_trips_that_keep_growing_end_at_the_budget_with_medium_confidence() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    let rtt = |i: usize| 20.0 * 1.2f64.powi(i as i32);
    let mut seen = Vec::new();
    let end = run_until_end(&mut plan, |i| {
        let d = down(FULL, rtt(i));
        seen.push(d.samples.clone());
        d
    });
    assert_eq!(end, 15);
    let r = plan.result();
    assert_eq!(r.confidence, Confidence::Medium);
    assert_eq!(r.throughput_confidence, Confidence::High);
    // The RPM is the method's over the last MAD intervals' probes only.
    let mut window = Samples::default();
    for s in &seen[11..] {
        window.merge(s);
    }
    let expect = Responsiveness::of(
        &[&window.tcp_f, &window.tls_f, &window.req_f],
        &window.self_l,
    );
    assert_eq!(r.figures.responsiveness, expect);
    let min = r.figures.loaded.min_ms;
    assert!(
        (min - rtt(12)).abs() < rtt(12) * 0.001,
        "{min} vs {}",
        rtt(12)
    );
}

#[test]
fn a_budget_shorter_than_mad_has_low_confidence_everywhere() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), Duration::from_secs(3));
    plan.start();
    let end = run_until_end(&mut plan, |_| down(FULL, 10.0));
    assert_eq!(end, 3);
    let r = plan.result();
    assert_eq!(
        (r.confidence, r.throughput_confidence),
        (Confidence::Low, Confidence::Low)
    );
    assert_eq!(r.throughput_bps, 100e6);
    assert!((r.figures.responsiveness.rpm - 6000.0).abs() < 6.0);
}

#[test]
fn bidirectional_saturates_when_both_directions_have_settled() {
    let mut plan = StagePlan::new(Stage::Bidirectional, Params::default(), DEFAULT_BUDGET);
    plan.start();
    let up = [1u64, 2, 4, 8];
    let mut last_open = 0;
    let end = run_until_end(&mut plan, |i| IntervalData {
        down_bytes: FULL,
        up_bytes: up.get(i - 1).copied().unwrap_or(10) * 1_000_000,
        samples: probes(100.0, 10),
    });
    // Down settles at 7, up (averages 9.5, 10, 10, 10) at 10; then MAD values.
    assert_eq!(end, 13);
    let r = plan.result();
    assert_eq!(
        r.connections,
        2 * 10,
        "INP + one per interval 1..=9, each way"
    );
    assert_eq!(r.confidence, Confidence::High);
    assert_eq!((r.downlink_bps, r.uplink_bps), (100e6, 80e6));
    assert_eq!(r.throughput_bps, 180e6);
    assert!((r.figures.responsiveness.rpm - 600.0).abs() < 0.6);
    // Replayed: the last interval that opened anything is the ninth.
    let mut plan = StagePlan::new(Stage::Bidirectional, Params::default(), DEFAULT_BUDGET);
    plan.start();
    for i in 1..=12usize {
        let a = plan.interval(IntervalData {
            down_bytes: FULL,
            up_bytes: up.get(i - 1).copied().unwrap_or(10) * 1_000_000,
            samples: probes(100.0, 10),
        });
        if !opens(&a).is_empty() {
            assert_eq!(opens(&a), [(Load::Down, 1), (Load::Up, 1)]);
            last_open = i;
        }
    }
    assert_eq!(last_open, 9);
}

#[test]
fn windows_without_probes_never_settle_the_responsiveness() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    let end = run_until_end(&mut plan, |_| IntervalData {
        down_bytes: FULL,
        ..IntervalData::default()
    });
    assert_eq!(end, 15);
    let r = plan.result();
    assert_eq!(r.figures.responsiveness.rpm, 0.0);
    assert_eq!(r.confidence, Confidence::Low);
    assert_eq!(r.throughput_confidence, Confidence::High);
}

#[test]
fn idle_round_trips_are_kept_apart_from_the_rpm() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    let mut idle = Histogram::new();
    for _ in 0..10 {
        idle.record(50_000);
    }
    plan.record_idle(&idle);
    plan.start();
    run_until_end(&mut plan, |_| down(FULL, 50.0));
    let r = plan.result();
    assert_eq!(r.figures.idle.count, 10);
    assert_eq!(r.figures.idle.p50_ms, 0.05);
    assert!((r.figures.responsiveness.rpm - 1200.0).abs() < 1.0);
    assert_eq!(r.figures.loaded.min_ms, 50.0);
}

#[test]
fn the_probe_rate_follows_the_measured_goodput() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    // 1 Mbit/s: 125 000 bytes per interval.
    let a = plan.interval(down(125_000, 50.0));
    let rate = Params::default().probe_rate(1e6);
    assert_eq!(a.last(), Some(&Action::ProbeRate(rate)));
    assert!(rate < 4.0);
}

#[test]
fn goodput_that_moves_after_saturation_keeps_its_high_confidence() {
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    // Flat until saturation at 7, then falling by 8% of it each interval, with
    // round trips that keep growing: the stage runs to its budget.
    let end = run_until_end(&mut plan, |i| {
        let fall = i.saturating_sub(7) as u64;
        down(FULL - FULL * 8 * fall / 100, 10.0 * i as f64)
    });
    assert_eq!(end, 15);
    let r = plan.result();
    assert_eq!(r.throughput_confidence, Confidence::High);
    assert_eq!(r.confidence, Confidence::Medium);
    // Zero goodput is stable but never saturated: at most Medium.
    let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
    plan.start();
    run_until_end(&mut plan, |_| IntervalData::default());
    assert_eq!(plan.result().throughput_confidence, Confidence::Medium);
}

#[test]
fn a_loss_that_catches_up_inside_the_window_adds_nothing_to_its_throughput() {
    // A lost packet holds the in-order count back for a round trip: one
    // interval reads 1.5 MB short, the next as much over. When the window
    // starts between the two, the mean read 3% over what the link carried.
    let hole = 1_500_000;
    for (at, tail) in [(6, 4), (5, 4), (8, 2)] {
        let mut plan = StagePlan::new(Stage::Downlink, Params::default(), DEFAULT_BUDGET);
        plan.start();
        for i in 1..=(at + tail) {
            let bytes = match i {
                _ if i == at => FULL - hole,
                _ if i == at + 1 => FULL + hole,
                _ => FULL,
            };
            plan.interval(down(bytes, 50.0));
        }
        let r = plan.result();
        assert_eq!(r.throughput_bps, 100e6, "hole at {at}: {r:?}");
    }
}
