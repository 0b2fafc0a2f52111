//! The agent's loop: before each cycle, look at the membership and compute
//! the plan; in each slot where this agent is a source, run its test and
//! write the record; between them, wait (the server serves on its own
//! thread whoever tests this agent).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_app::{Exclusive, Interrupt};
use rperf3_mesh::record::{Outcome, TestRecord};
use rperf3_mesh::schedule::{round_count, CyclePlan, Mode, Role, Timing};
use rperf3_mesh::Series;

use super::args::MeshArgs;
use super::discover::{Discovery, View};
use super::pair_test::{self, BUSY_RETRY};
use crate::output::Sink;

/// How often a wait for the node's own slot looks again.
const SLOT_RECHECK: Duration = Duration::from_millis(20);
/// Longest a single wait sleeps before looking at the clock again (the wall
/// clock may be stepped while the agent sleeps).
const CLOCK_RECHECK: Duration = Duration::from_secs(1);

/// Unix time now, seconds.
pub(crate) fn now() -> f64 {
    rperf3_sys::time::unix_millis() as f64 / 1000.0
}

/// Why the loop ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ended {
    /// `--cycles` were run.
    Done,
    /// A signal.
    Stopped,
}

/// The agent's state across cycles.
pub(crate) struct Agent<'a> {
    pub(crate) prog: &'a str,
    pub(crate) args: &'a MeshArgs,
    pub(crate) sink: &'a Sink,
    pub(crate) series: Arc<Series>,
    pub(crate) exclusive: Arc<Exclusive>,
    pub(crate) discovery: Discovery,
    pub(crate) intr: &'a mut Interrupt,
    /// Said once until it changes: whether this agent is a member.
    pub(crate) member_said: Option<bool>,
}

/// What one cycle is: its plan, place and time.
struct Cycle {
    view: View,
    plan: CyclePlan,
    start: f64,
    len: f64,
}

impl Agent<'_> {
    fn timing(&self) -> Timing {
        Timing {
            slot: self.args.slot,
            min_period: self.args.period,
            anchor: self.args.start_at,
        }
    }

    /// Waits until Unix time `t`; false if a signal came first.
    fn wait_until(&mut self, t: f64) -> bool {
        loop {
            let left = t - now();
            if left <= 0.0 {
                return true;
            }
            let d = Duration::from_secs_f64(left).min(CLOCK_RECHECK);
            if let Ok(r) = rperf3_sys::poll::wait_readable(&[self.intr.fd()], d) {
                if r[0] && self.intr.triggered() {
                    return false;
                }
            }
        }
    }

    /// Runs cycles until `--cycles` are done or a signal.
    pub(crate) fn run(&mut self) -> Ended {
        let mut after = now();
        let mut done = 0u64;
        loop {
            let c = self.plan_cycle(after);
            let member = c.view.me.is_some();
            if self.member_said != Some(member) {
                self.member_said = Some(member);
                if !member {
                    // Not an alarm: a pod is no endpoint before it is ready.
                    log::info!(
                        "{} is not among the {} members: serving tests only until it is",
                        self.discovery.name(),
                        c.view.members.len()
                    );
                }
            }
            // The slots end before the period does; the last cycle ends there.
            let slots_end = c.start + c.plan.slots.len() as f64 * self.args.slot;
            if !self.run_cycle(&c) || !self.wait_until(slots_end) {
                return Ended::Stopped;
            }
            if member {
                self.series.cycle_done();
                done += 1;
                if self.args.cycles > 0 && done >= self.args.cycles {
                    return Ended::Done;
                }
            }
            if !self.wait_until(c.start + c.len) {
                return Ended::Stopped;
            }
            after = c.start + c.len;
        }
    }

    /// The next cycle from the membership seen now.
    fn plan_cycle(&mut self, after: f64) -> Cycle {
        let (view, err) = self.discovery.look();
        if let Some(e) = err {
            match &view {
                Some(v) => log::error!("{e}; testing the {} members seen last", v.members.len()),
                None => log::error!("{e}; no members known yet"),
            }
        }
        let view = view.unwrap_or(View {
            members: Vec::new(),
            me: None,
        });
        let n = view.members.len();
        self.series.set_source(&self.discovery.name());
        self.series
            .keep_only(view.members.iter().map(|m| m.name.as_str()));
        let mode = Mode::for_members(n, self.args.full_max, self.args.sample);
        let rounds = match mode {
            Mode::Full => round_count(n),
            Mode::Sample { rounds } => rounds,
        };
        self.series.set_cap(match mode {
            Mode::Full => None,
            Mode::Sample { rounds } => Some(rounds),
        });
        let timing = self.timing();
        let len = timing.cycle_len(2 * rounds);
        let (index, start) = timing.next_cycle(after, len);
        let plan = CyclePlan::new(n, mode, index);
        if let Some(me) = view.me {
            let dests = (0..plan.slots.len()).filter_map(|s| match plan.role(s, me) {
                Role::Source(d) => Some(view.members[d].name.as_str()),
                _ => None,
            });
            self.series.expect(dests);
        }
        let what = match mode {
            Mode::Full => "every pair".to_string(),
            Mode::Sample { rounds } => format!("a sample of {rounds} rounds of {}", round_count(n)),
        };
        log::info!(
            "cycle {index}: {n} members, {what}: {} slots of {} s from {}",
            plan.slots.len(),
            self.args.slot,
            crate::logger::utc((start * 1000.0) as u64)
        );
        Cycle {
            view,
            plan,
            start,
            len,
        }
    }

    /// Runs this agent's tests of the cycle; false on a signal.
    fn run_cycle(&mut self, c: &Cycle) -> bool {
        let Some(me) = c.view.me else {
            return true;
        };
        let timing = self.timing();
        let mut sent = 0u64;
        for s in 0..c.plan.slots.len() {
            let Role::Source(d) = c.plan.role(s, me) else {
                continue;
            };
            let slot_start = timing.slot_start(c.start, s);
            if !self.wait_until(slot_start) {
                return false;
            }
            let mut rec = TestRecord {
                source: c.view.members[me].name.clone(),
                destination: c.view.members[d].name.clone(),
                cycle: c.plan.cycle,
                slot: s,
                start: now(),
                end: now(),
                outcome: Outcome::Budget,
                error: None,
                figures: None,
            };
            let over_time = self
                .args
                .cycle_time
                .is_some_and(|t| slot_start >= c.start + t);
            let over_bytes = self.args.cycle_bytes.is_some_and(|b| sent >= b);
            if over_time || over_bytes {
                rec.error = Some(if over_time {
                    "the cycle's time budget (--cycle-time) is spent".into()
                } else {
                    "the cycle's byte budget (--cycle-bytes) is spent".into()
                });
            } else {
                let m = &c.view.members[d];
                let latest = slot_start + (self.args.slot - self.args.time).max(0.0);
                self.test(&mut rec, &m.host, m.port.unwrap_or(self.args.port), latest);
                if let Some(f) = &rec.figures {
                    sent += f.bytes_sent;
                }
            }
            self.series.record(&rec);
            self.write(&rec);
            if self.intr.triggered() {
                return false;
            }
        }
        true
    }

    /// Runs one test into `rec`: the node's slot first (its server may be
    /// serving), then the client, again while the destination is busy and
    /// a start is still in time (`latest`, Unix seconds).
    fn test(&mut self, rec: &mut TestRecord, host: &str, port: u16, latest: f64) {
        if now() > latest {
            rec.outcome = Outcome::Late;
            rec.error = Some("the previous test ran past this one's start".into());
            return;
        }
        let argv = pair_test::client_argv(self.args, host, port);
        loop {
            let held = loop {
                if let Some(h) = self.exclusive.try_hold() {
                    break Some(h);
                }
                if now() > latest || self.intr.triggered() {
                    break None;
                }
                std::thread::sleep(SLOT_RECHECK);
            };
            let Some(held) = held else {
                rec.outcome = Outcome::SelfBusy;
                rec.error = Some("this agent's server was serving a test".into());
                rec.end = now();
                return;
            };
            rec.start = now();
            // At most one slot late: then the next test's time has come.
            let deadline = Instant::now() + Duration::from_secs_f64(2.0 * self.args.slot);
            let ran = pair_test::run(self.prog, &argv, deadline, self.intr);
            drop(held);
            rec.end = now();
            rec.outcome = ran.outcome;
            rec.error = ran.error;
            rec.figures = ran.figures;
            let again = rec.outcome == Outcome::Busy
                && now() + BUSY_RETRY.as_secs_f64() <= latest
                && !self.intr.triggered();
            if !again {
                return;
            }
            log::debug!("{} is busy: trying again", rec.destination);
            if !self.wait_until(now() + BUSY_RETRY.as_secs_f64()) {
                return;
            }
        }
    }

    /// Writes a test's line: JSON with `-J`, else a line of text.
    fn write(&self, rec: &TestRecord) {
        let line = if self.args.json {
            rec.to_json()
        } else {
            super::text::line(rec)
        };
        self.sink.out().push(format!("{line}\n").into_bytes());
        // Text lines already say it on stdout.
        if self.args.json && !rec.outcome.measured() {
            log::warn!(
                "{} -> {}: {}{}",
                rec.source,
                rec.destination,
                rec.outcome.label(),
                rec.error
                    .as_deref()
                    .map_or(String::new(), |e| format!(": {e}"))
            );
        }
    }
}
