//! The responsiveness test (`--rpm`) as a pure planner: the method's stages, its
//! ramp-up, its stability rules and its confidence, fed per-interval goodput and
//! probe samples and answering with what the driver should do next.
//!
//! A stage (downlink, uplink, or both at once) starts INP load-generating
//! connections per direction, adds INC each interval until the goodput of every
//! direction is stable (by [`Stability`]), then keeps probing until the
//! responsiveness computed from the last MAD intervals of probes is stable too, or
//! its budget of intervals ends. Nothing here reads a clock or touches a socket: the
//! driver calls [`StagePlan::interval`] every ID and carries out the [`Action`]s, so
//! every path through the method is tested with made-up series.

use std::collections::VecDeque;
use std::time::Duration;

use crate::figures::{Figures, Samples};
use crate::histogram::Histogram;
use crate::stability::{Confidence, Stability, MAD, SDT};

/// Bytes on the wire of one foreign probe: a new connection's handshake, a small
/// request and its answer, the close; about ten packets with their headers.
pub const FOREIGN_PROBE_BYTES: f64 = 1500.0;
/// Bytes of one self probe: a small request and its answer on a loaded connection.
pub const SELF_PROBE_BYTES: f64 = 300.0;
/// Probe pairs per second before any goodput is known: low enough that a 1 Mbit/s
/// path spends one interval at about 14% on probes, high enough that the first
/// intervals of a fast path already carry probes.
pub const FIRST_PROBE_RATE: f64 = 10.0;
/// The method's interval (ID) as rperf3 runs it. The draft-09 default is 5 s, which
/// puts High confidence at least 20 s into a stage (MAD intervals of stable
/// goodput averages, then MAD of responsiveness); at 1 s, the value of the draft's
/// earlier revisions, a stage can reach High after 10 s, so a direction fits in
/// 20 s with room for slow convergence, and each responsiveness value still rests on
/// MAD seconds of probes (up to MPS x MAD pairs), which keeps repeated runs close.
pub const DEFAULT_ID: Duration = Duration::from_secs(1);
/// Each stage's default budget; with the idle probes and the set-up before it, a
/// direction ends within 20 s.
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(15);

/// The method's parameters (the trimmed mean keeps [`crate::rpm::KEEP`], the TMP).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// Moving average distance: intervals in a moving average (MAD).
    pub mad: usize,
    /// Interval at which stability is re-evaluated (ID).
    pub id: Duration,
    /// Standard deviation tolerance, a fraction (SDT).
    pub sdt: f64,
    /// Load-generating connections per direction at the start (INP).
    pub inp: u32,
    /// Connections added per direction each interval while ramping up (INC).
    pub inc: u32,
    /// Most load-generating connections per direction (MNP).
    pub mnp: u32,
    /// Most probe pairs per second (MPS).
    pub mps: u32,
    /// Share of the measured goodput the probes may use, a fraction (PTC).
    pub ptc: f64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            mad: MAD,
            id: DEFAULT_ID,
            sdt: SDT,
            inp: 1,
            inc: 1,
            mnp: 16,
            mps: 100,
            ptc: 0.05,
        }
    }
}

impl Params {
    /// Whole intervals that fit in `budget` (at least one).
    pub fn intervals_in(&self, budget: Duration) -> usize {
        let id = self.id.as_secs_f64();
        if id <= 0.0 {
            return 1;
        }
        ((budget.as_secs_f64() / id + 1e-9).floor() as usize).max(1)
    }

    /// Probe pairs per second allowed when the path carries `goodput_bps`: MPS, or
    /// less where the pairs would cost more than PTC of it; at least one pair per
    /// interval, so that every interval has a figure.
    pub fn probe_rate(&self, goodput_bps: f64) -> f64 {
        let pair_bits = (FOREIGN_PROBE_BYTES + SELF_PROBE_BYTES) * 8.0;
        let floor = 1.0 / self.id.as_secs_f64().max(1e-3);
        (self.ptc * goodput_bps / pair_bits)
            .min(f64::from(self.mps))
            .max(floor.min(f64::from(self.mps)))
    }
}

/// Which way a load-generating connection carries its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// Server to client.
    Down,
    /// Client to server.
    Up,
}

impl Load {
    fn index(self) -> usize {
        match self {
            Self::Down => 0,
            Self::Up => 1,
        }
    }
}

/// One stage of the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The server sends.
    Downlink,
    /// The client sends.
    Uplink,
    /// Both at once, each direction with its own connections.
    Bidirectional,
}

impl Stage {
    /// Every stage, in the order a full test runs them.
    pub const ALL: [Self; 3] = [Self::Downlink, Self::Uplink, Self::Bidirectional];

    /// The name in text and JSON output.
    pub fn name(self) -> &'static str {
        match self {
            Self::Downlink => "downlink",
            Self::Uplink => "uplink",
            Self::Bidirectional => "bidirectional",
        }
    }

    /// The directions its load goes.
    pub fn loads(self) -> &'static [Load] {
        match self {
            Self::Downlink => &[Load::Down],
            Self::Uplink => &[Load::Up],
            Self::Bidirectional => &[Load::Down, Load::Up],
        }
    }
}

/// What the driver does next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action {
    /// Open `count` more load-generating connections carrying data `load`.
    Open {
        /// Their direction.
        load: Load,
        /// How many.
        count: u32,
    },
    /// Send probe pairs (one foreign, one self) at this many per second.
    ProbeRate(f64),
    /// The stage is over: stop its load and probes and read [`StagePlan::result`].
    End,
}

/// What one interval brought.
#[derive(Clone, Debug, Default)]
pub struct IntervalData {
    /// Bytes received server to client (counted by the receiver).
    pub down_bytes: u64,
    /// Bytes received client to server.
    pub up_bytes: u64,
    /// The probes that completed in it.
    pub samples: Samples,
}

/// What a stage measured.
#[derive(Clone, Debug, PartialEq)]
pub struct StageResult {
    /// Which stage.
    pub stage: Stage,
    /// Goodput of every direction together, bits/s: each direction's median
    /// of the last MAD intervals (fewer when the stage ran fewer).
    pub throughput_bps: f64,
    /// The same, server to client only.
    pub downlink_bps: f64,
    /// The same, client to server only.
    pub uplink_bps: f64,
    /// How far the responsiveness can be trusted (the method's confidence).
    pub confidence: Confidence,
    /// How far the goodput can be trusted: High once every direction settled,
    /// else by the intervals run (the lowest of its directions).
    pub throughput_confidence: Confidence,
    /// Load-generating connections opened, every direction.
    pub connections: u32,
    /// Intervals the stage ran.
    pub intervals: usize,
    /// Idle round trips and the round trips of the last MAD intervals (the ones
    /// the RPM comes from), with the RPM by the method's formula.
    pub figures: Figures,
}

/// One stage of the method, from its start to its end.
#[derive(Clone, Debug)]
pub struct StagePlan {
    stage: Stage,
    params: Params,
    max_intervals: usize,
    intervals: usize,
    open: [u32; 2],
    goodput: [Stability; 2],
    rates: [VecDeque<f64>; 2],
    saturated: bool,
    responsiveness: Stability,
    window: VecDeque<Samples>,
    idle: Histogram,
    ended: bool,
}

impl StagePlan {
    /// A stage that may run for `budget`.
    pub fn new(stage: Stage, params: Params, budget: Duration) -> Self {
        let mad = params.mad.max(1);
        Self {
            stage,
            params,
            max_intervals: params.intervals_in(budget),
            intervals: 0,
            open: [0; 2],
            goodput: [
                Stability::new(mad, params.sdt),
                Stability::new(mad, params.sdt),
            ],
            rates: [VecDeque::new(), VecDeque::new()],
            saturated: false,
            responsiveness: Stability::new(mad, params.sdt),
            window: VecDeque::new(),
            idle: Histogram::new(),
            ended: false,
        }
    }

    /// Its stage.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Adds idle round trips (timed before the stage's load started).
    pub fn record_idle(&mut self, idle: &Histogram) {
        self.idle.merge(idle);
    }

    /// The first actions: INP connections per direction and the first probe rate.
    pub fn start(&mut self) -> Vec<Action> {
        let mut actions = Vec::new();
        for &load in self.stage.loads() {
            self.open_more(load, self.params.inp, &mut actions);
        }
        let rate = FIRST_PROBE_RATE.min(f64::from(self.params.mps));
        actions.push(Action::ProbeRate(rate));
        actions
    }

    fn open_more(&mut self, load: Load, want: u32, actions: &mut Vec<Action>) {
        let open = &mut self.open[load.index()];
        let count = want.min(self.params.mnp.saturating_sub(*open));
        if count > 0 {
            *open += count;
            actions.push(Action::Open { load, count });
        }
    }

    /// One interval has passed: its goodput and probes in, the next actions out.
    pub fn interval(&mut self, data: IntervalData) -> Vec<Action> {
        if self.ended {
            return Vec::new();
        }
        self.intervals += 1;
        let mad = self.params.mad.max(1);
        let secs = self.params.id.as_secs_f64();
        for &load in self.stage.loads() {
            let bytes = match load {
                Load::Down => data.down_bytes,
                Load::Up => data.up_bytes,
            };
            let bps = if secs > 0.0 {
                bytes as f64 * 8.0 / secs
            } else {
                0.0
            };
            let i = load.index();
            self.goodput[i].push(bps);
            push_capped(&mut self.rates[i], bps, mad);
        }
        self.idle.merge(&data.samples.idle);
        push_capped(&mut self.window, data.samples, mad);

        let mut actions = Vec::new();
        if !self.saturated {
            // A direction that carries nothing is failing, not saturated.
            self.saturated = self.stage.loads().iter().all(|l| {
                let g = &self.goodput[l.index()];
                g.is_stable() && g.moving_average().is_some_and(|a| a > 0.0)
            });
        }
        if self.saturated {
            let rpm = self.window_figures().responsiveness.rpm;
            // A window without a probe has no figure; it must not count as settled.
            if rpm > 0.0 {
                self.responsiveness.push_average(rpm);
            }
            if self.responsiveness.is_stable() {
                return self.end(actions);
            }
        }
        if self.intervals >= self.max_intervals {
            return self.end(actions);
        }
        if !self.saturated {
            for &load in self.stage.loads() {
                self.open_more(load, self.params.inc, &mut actions);
            }
        }
        actions.push(Action::ProbeRate(
            self.params.probe_rate(self.goodput_bps()),
        ));
        actions
    }

    fn end(&mut self, mut actions: Vec<Action>) -> Vec<Action> {
        self.ended = true;
        actions.push(Action::End);
        actions
    }

    /// The stage has ended.
    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// The median of the last MAD intervals' goodput, not their mean: a lost
    /// packet holds the in-order count back for a round trip, then it catches
    /// up (an interval low, the next as much high: 10.26 and 13.39 MB around
    /// 11.83 through a 100 Mbit/s tbf and a 150 ms FIFO), and a window that
    /// took the catch-up without the dip read 2% over what the link carries.
    fn window_bps(&self, load: Load) -> f64 {
        let mut r: Vec<f64> = self.rates[load.index()].iter().copied().collect();
        r.sort_by(f64::total_cmp);
        match r.len() {
            0 => 0.0,
            n if n % 2 == 1 => r[n / 2],
            n => (r[n / 2 - 1] + r[n / 2]) / 2.0,
        }
    }

    fn goodput_bps(&self) -> f64 {
        self.stage.loads().iter().map(|l| self.window_bps(*l)).sum()
    }

    fn window_figures(&self) -> Figures {
        let mut all = Samples::default();
        for s in &self.window {
            all.merge(s);
        }
        all.idle = self.idle.clone();
        all.figures()
    }

    /// What the stage measured so far (its final figures once it has ended).
    pub fn result(&self) -> StageResult {
        // Once saturated the goodput stage has reached its stability, however
        // the goodput moves afterwards; before, at most Medium.
        let throughput_confidence = if self.saturated {
            Confidence::High
        } else {
            self.stage
                .loads()
                .iter()
                .map(|l| self.goodput[l.index()].confidence())
                .min()
                .unwrap_or(Confidence::Low)
                .min(Confidence::Medium)
        };
        let confidence = if self.saturated {
            self.responsiveness.confidence()
        } else {
            // The responsiveness stage never started, so it ran no interval.
            Confidence::Low
        };
        StageResult {
            stage: self.stage,
            throughput_bps: self.goodput_bps(),
            downlink_bps: self.window_bps(Load::Down),
            uplink_bps: self.window_bps(Load::Up),
            confidence,
            throughput_confidence,
            connections: self.open.iter().sum(),
            intervals: self.intervals,
            figures: self.window_figures(),
        }
    }
}

fn push_capped<T>(q: &mut VecDeque<T>, v: T, cap: usize) {
    if q.len() == cap {
        q.pop_front();
    }
    q.push_back(v);
}

/// A whole responsiveness test: its parameters and each stage it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct RpmRun {
    /// The parameters in effect.
    pub params: Params,
    /// Each stage's budget.
    pub budget: Duration,
    /// The stages in the order they ran.
    pub stages: Vec<StageResult>,
}

#[cfg(test)]
#[path = "rpm_plan_tests.rs"]
mod tests;
