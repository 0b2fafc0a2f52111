//! `--rpm` on the client: each stage is one iperf3 TCP test on its own control
//! connection (`-P 1`, `-R` for downlink, `--bidir` for both), asking the server
//! for `"rpm": 1`; once its stream runs, the stage's loop ([`super::run_one`])
//! runs beside the client's driver on a thread of its own, opening the marked
//! load connections and setting the prober's rate. The planner's end (or the
//! loop's wall-clock stop) ends the iperf3 test through the client's normal
//! TEST_END, so the server's session and its load host end with it.
//!
//! The test's own stream is paced to a trickle: the planner opens and counts
//! every load connection itself, so the goodput it judges is all of the load.

use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rperf3_latency::{Histogram, Params, RpmRun, Samples, Stage, StageResult};
use rperf3_proto::COOKIE_LEN;
use rperf3_report::{ReportOptions, Reporter};

use super::link::{Probes, SleepTicks, SocketLink};
use crate::auth::ClientAuth;
use crate::client::Rider;
use crate::config::{ClientConfig, CommonConfig, Direction, EndCondition};
use crate::interrupt::Interrupt;
use crate::latency::prober::Prober;

/// Probe pairs per second before any goodput is known (the planner's first rate).
const FIRST_RATE: u32 = 10;
/// The test's own stream: one small block a second.
const TRICKLE_LEN: u32 = 1024;
const TRICKLE_BPS: u64 = 8 * TRICKLE_LEN as u64;

/// The `--latency` prober as the loop's source of round trips.
struct ProberProbes(Prober);

impl Probes for ProberProbes {
    fn idle(&mut self) -> Histogram {
        // The driver waited for the idle round trips before the stream opened.
        self.0.take_interval().idle
    }

    fn set_rate(&mut self, pairs_per_sec: f64) {
        self.0.set_rate(pairs_per_sec);
    }

    fn load_started(&mut self, senders: Vec<TcpStream>) {
        self.0
            .set_senders(senders.into_iter().map(Arc::new).collect());
    }

    fn take(&mut self) -> Samples {
        self.0.take_interval()
    }
}

/// One stage as the client's driver sees it.
pub(crate) struct StageCtx {
    stage: Stage,
    params: Params,
    budget: Duration,
    /// Set by the driver when its test is over: the loop stops.
    stop: Arc<AtomicBool>,
    /// Set by the loop when the stage has ended: the driver sends TEST_END.
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<(StageResult, std::io::Result<bool>)>>,
    /// The prober, from LATENCY_READY until the load starts.
    prober: Option<Prober>,
    /// Why the stage's test failed, when it did.
    error: Option<String>,
}

impl StageCtx {
    fn new(stage: Stage, params: Params, budget: Duration) -> Self {
        Self {
            stage,
            params,
            budget,
            stop: Arc::new(AtomicBool::new(false)),
            done: Arc::new(AtomicBool::new(false)),
            thread: None,
            prober: None,
            error: None,
        }
    }

    /// Waits for the loop: its result, if it ran.
    fn join(&mut self) -> Option<(StageResult, std::io::Result<bool>)> {
        self.stop();
        self.thread.take().and_then(|t| t.join().ok())
    }
}

impl Rider for StageCtx {
    fn take_prober(&mut self, prober: Prober) {
        self.prober = Some(prober);
    }

    fn prober(&mut self) -> Option<&mut Prober> {
        self.prober.as_mut()
    }

    /// The stream runs: the stage's loop starts on its own thread.
    fn launch(&mut self, server: SocketAddr, cookie: [u8; COOKIE_LEN]) {
        let Some(prober) = self.prober.take() else {
            return;
        };
        let (stage, params, budget) = (self.stage, self.params, self.budget);
        let (stop, done) = (self.stop.clone(), self.done.clone());
        let t = std::thread::Builder::new()
            .name("rpm".into())
            .spawn(move || {
                let mut link = SocketLink::new(server, cookie, ProberProbes(prober));
                let mut ticks = SleepTicks::new(stop);
                let r = super::run_one(&mut link, &mut ticks, stage, params, budget);
                done.store(true, Ordering::SeqCst);
                r
            });
        match t {
            Ok(t) => self.thread = Some(t),
            Err(e) => self.error = Some(format!("unable to start the responsiveness test: {e}")),
        }
    }

    /// Whether the loop has ended the stage.
    fn is_done(&self) -> bool {
        self.done.load(Ordering::SeqCst)
    }

    /// The driver's test is over.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    fn check_every(&self) -> Duration {
        super::link::STEP
    }

    fn fail(&mut self, why: String) {
        self.error.get_or_insert(why);
    }
}

/// How the whole test ended.
pub struct RpmOutcome {
    /// What the stages measured (those that ran).
    pub run: RpmRun,
    /// The error that ended it, if any.
    pub error: Option<String>,
    /// SIGINT/SIGTERM cut it short.
    pub interrupted: bool,
}

/// The iperf3 test that carries `stage`.
fn stage_config(cc: &ClientConfig, stage: Stage, budget: Duration) -> ClientConfig {
    let mut c = cc.clone();
    c.parallel = 1;
    c.direction = match stage {
        Stage::Downlink => Direction::Reverse,
        Stage::Uplink => Direction::Normal,
        Stage::Bidirectional => Direction::Bidir,
    };
    // Past the loop's own stop (half an interval after the budget).
    c.end = EndCondition::Time(budget.as_secs_f64().ceil() as u32 + 2);
    c.omit = 0;
    c.length = Some(TRICKLE_LEN);
    c.bitrate = Some(TRICKLE_BPS);
    c.latency = Some(FIRST_RATE);
    c
}

/// A reporter for a stage's iperf3 test: its output is not the test's.
fn quiet_reporter() -> Reporter {
    let mut opts = ReportOptions::new(
        rperf3_report::input::Side::Client,
        crate::version_string(),
        String::new(),
    );
    opts.json = true;
    Reporter::new(opts, Box::new(std::io::sink()), Box::new(std::io::sink()))
}

/// Runs `--rpm`'s stages against `cc.host`, one iperf3 test each.
pub fn run(
    cc: &ClientConfig,
    common: &CommonConfig,
    intr: &mut Interrupt,
    auth: Option<&ClientAuth>,
) -> RpmOutcome {
    let rc = cc.rpm.unwrap_or(crate::config::RpmConfig {
        downlink: true,
        uplink: true,
        bidirectional: true,
        stage_budget: rperf3_latency::rpm_plan::DEFAULT_BUDGET,
    });
    let params = Params::default();
    let mut out = RpmOutcome {
        run: RpmRun {
            params,
            budget: rc.stage_budget,
            stages: Vec::new(),
        },
        error: None,
        interrupted: false,
    };
    for stage in super::stages(&rc) {
        let scc = stage_config(cc, stage, rc.stage_budget);
        let mut ctx = StageCtx::new(stage, params, rc.stage_budget);
        let t = Instant::now();
        let outcome =
            crate::client::run_stage(&scc, common, quiet_reporter(), intr, auth, &mut ctx);
        let joined = ctx.join();
        log::debug!("rpm: {} took {:?}", stage.name(), t.elapsed());
        if intr.triggered() {
            out.interrupted = true;
        }
        match joined {
            Some((r, Ok(cut))) => {
                out.run.stages.push(r);
                out.interrupted |= cut;
            }
            Some((_, Err(e))) => {
                out.error = Some(format!("a load connection failed: {e}"));
            }
            None => {}
        }
        if out.error.is_none() && outcome.status != 0 {
            let e = ctx
                .error
                .take()
                .unwrap_or_else(|| format!("the {} stage failed", stage.name()));
            out.error = Some(explain_later_stage(e, stage, &out.run.stages));
        }
        if out.error.is_some() || out.interrupted {
            break;
        }
    }
    out
}

/// A stage after the first that could not even talk to the server, which
/// served the stages before it: most likely a server that takes one test
/// (`-1`), since each stage is a test of its own. Said plainly after the
/// error, which alone ("Connection reset by peer") does not tell why.
fn explain_later_stage(e: String, stage: Stage, done: &[StageResult]) -> String {
    let at_the_door = e.starts_with("unable to connect")
        || e.contains("control socket")
        || e.contains("Connection reset")
        || e.contains("Connection refused");
    if done.is_empty() || !at_the_door {
        return e;
    }
    format!(
        "{e} (the server ran the {} stage but not the {} stage: each stage is a test of \
         its own, and a server started with -1 serves one test)",
        done.last().map_or("first", |r| r.stage.name()),
        stage.name()
    )
}
