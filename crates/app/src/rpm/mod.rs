//! The responsiveness test's client loop (`--rpm`): each stage of the method
//! ([`rperf3_latency::StagePlan`]) run over a [`Link`] on a fixed tick of ID.
//!
//! The loop only keeps time and carries out the planner's actions; the [`Link`]
//! owns the sockets (load connections, the prober) and the [`Ticks`] the waiting,
//! so the loop is tested with a made-up link on a virtual clock. Ticks are
//! absolute (start + k x ID), so a slow interval does not push the later ones; and
//! a stage also ends on the wall clock half an interval after its budget, however
//! slowly its intervals came, so a direction never overruns.

use std::io;
use std::time::{Duration, Instant};

use rperf3_latency::{
    Action, Histogram, IntervalData, Load, Params, RpmRun, Stage, StagePlan, StageResult,
};

use crate::config::RpmConfig;

pub mod link;
pub mod load;
pub mod stage;

/// What the loop needs from the sockets.
pub trait Link {
    /// Round trips timed now, before the stage's load starts.
    fn idle(&mut self) -> io::Result<Histogram>;
    /// Opens `count` more load connections carrying data `load`.
    fn open(&mut self, load: Load, count: u32) -> io::Result<()>;
    /// Probe pairs (one foreign, one self) per second from now on.
    fn probe_rate(&mut self, pairs_per_sec: f64);
    /// Bytes received each way and the probes completed since the last call.
    fn take_interval(&mut self) -> io::Result<IntervalData>;
    /// Stops the stage's load and probes and closes its connections.
    fn end_stage(&mut self);
}

/// Time, and waiting that an interrupt cuts short.
pub trait Ticks {
    /// The current instant.
    fn now(&self) -> Instant;
    /// Waits until `t`; false when the test was interrupted.
    fn wait_until(&mut self, t: Instant) -> bool;
}

/// How the test ended.
#[derive(Debug)]
pub enum Ending {
    /// Every stage ran.
    Complete,
    /// Interrupted (SIGINT); the stages before it are complete.
    Interrupted,
    /// A connection failed (the method says to abort); the stages before it
    /// are complete.
    Failed(io::Error),
}

/// The stages `cfg` asks for, in the order they run.
pub fn stages(cfg: &RpmConfig) -> Vec<Stage> {
    Stage::ALL
        .into_iter()
        .filter(|s| match s {
            Stage::Downlink => cfg.downlink,
            Stage::Uplink => cfg.uplink,
            Stage::Bidirectional => cfg.bidirectional,
        })
        .collect()
}

fn apply(link: &mut impl Link, actions: &[Action]) -> io::Result<()> {
    for a in actions {
        match *a {
            Action::Open { load, count } => link.open(load, count)?,
            Action::ProbeRate(r) => link.probe_rate(r),
            Action::End => {}
        }
    }
    Ok(())
}

enum StageEnd {
    Done,
    Interrupted,
}

fn run_stage(
    link: &mut impl Link,
    ticks: &mut impl Ticks,
    plan: &mut StagePlan,
    params: &Params,
    budget: Duration,
) -> io::Result<StageEnd> {
    plan.record_idle(&link.idle()?);
    let start = ticks.now();
    let hard_end = start + budget + params.id / 2;
    apply(link, &plan.start())?;
    let mut k = 1u32;
    let mut taken = start;
    loop {
        if !ticks.wait_until(start + params.id * k) {
            return Ok(StageEnd::Interrupted);
        }
        k += 1;
        let now = ticks.now();
        let mut data = link.take_interval()?;
        per_interval(&mut data, now.saturating_duration_since(taken), params.id);
        taken = now;
        apply(link, &plan.interval(data))?;
        if plan.is_ended() || ticks.now() >= hard_end {
            return Ok(StageEnd::Done);
        }
    }
}

/// The bytes of a span counted as if it were one interval: the planner reads
/// goodput as bytes over ID, and a tick that came late (a busy host) would
/// otherwise add its lateness's bytes to that interval's goodput.
fn per_interval(data: &mut IntervalData, span: Duration, id: Duration) {
    if span.is_zero() || span == id {
        return;
    }
    let k = id.as_secs_f64() / span.as_secs_f64();
    for b in [&mut data.down_bytes, &mut data.up_bytes] {
        *b = (*b as f64 * k).round() as u64;
    }
}

/// Runs one stage over `link`: its result, and whether an interrupt cut it short.
pub fn run_one(
    link: &mut impl Link,
    ticks: &mut impl Ticks,
    stage: Stage,
    params: Params,
    budget: Duration,
) -> (StageResult, io::Result<bool>) {
    let mut plan = StagePlan::new(stage, params, budget);
    let end = run_stage(link, ticks, &mut plan, &params, budget);
    link.end_stage();
    let end = end.map(|e| matches!(e, StageEnd::Interrupted));
    (plan.result(), end)
}

/// Runs the stages of `cfg` one after the other; returns what they measured
/// (every stage that ended, and the one an interrupt cut short) and how it ended.
pub fn run(
    link: &mut impl Link,
    ticks: &mut impl Ticks,
    cfg: &RpmConfig,
    params: Params,
) -> (RpmRun, Ending) {
    let mut run = RpmRun {
        params,
        budget: cfg.stage_budget,
        stages: Vec::new(),
    };
    for stage in stages(cfg) {
        let mut plan = StagePlan::new(stage, params, cfg.stage_budget);
        let end = run_stage(link, ticks, &mut plan, &params, cfg.stage_budget);
        link.end_stage();
        match end {
            Ok(StageEnd::Done) => run.stages.push(plan.result()),
            Ok(StageEnd::Interrupted) => {
                run.stages.push(plan.result());
                return (run, Ending::Interrupted);
            }
            Err(e) => return (run, Ending::Failed(e)),
        }
    }
    (run, Ending::Complete)
}

#[cfg(test)]
mod tests;
