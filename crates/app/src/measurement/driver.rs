//! The control loop both sides share: one place that waits on the control
//! socket, the outside world (signals, the server host) and the clock.
//!
//! A driver owns the control connection, the protocol machine and the test's data
//! side. Each [`Driver::wait`] checks the machine's deadline and the running test
//! (interval ticks, worker failures, idleness), then sleeps until the earliest of:
//! bytes from the peer (fed to the machine, whose events are returned), the
//! outside fd becoming readable, the next tick or deadline. The client and the
//! server session only decide what the events mean.

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use rperf3_proto::*;
use rperf3_report::Reporter;

use crate::measurement::choice::SendSpec;
use crate::measurement::ctrl::{Ctrl, Read0};
use crate::measurement::plan::TestPlan;
use crate::measurement::run::TestRun;
use crate::measurement::streams::LiveStream;

/// Longest single sleep: a wait with no deadline at all still wakes now and then.
const MAX_SLEEP: Duration = Duration::from_secs(3600);

/// A control-connection state machine, as the driver feeds it.
pub(crate) trait Machine {
    /// What the machine tells its driver.
    type Event;
    /// Bytes read from the control connection at `now`.
    fn on_bytes(&mut self, bytes: &[u8], now: Instant) -> Result<Vec<Self::Event>, IperfError>;
    /// The peer closed the control connection.
    fn on_eof(&mut self) -> Result<Vec<Self::Event>, IperfError>;
    /// The current phase's deadline.
    fn poll_timeout(&self) -> Option<Instant>;
    /// The deadline has come: the phase's error.
    fn handle_timeout(&mut self, now: Instant) -> Result<(), IperfError>;
    /// The next queued write for the control connection.
    fn poll_transmit(&mut self) -> Option<Transmit>;
}

impl Machine for ServerMachine {
    type Event = ServerEvent;
    fn on_bytes(&mut self, bytes: &[u8], now: Instant) -> Result<Vec<ServerEvent>, IperfError> {
        Self::on_bytes(self, bytes, now)
    }
    fn on_eof(&mut self) -> Result<Vec<ServerEvent>, IperfError> {
        Self::on_eof(self)
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Self::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Instant) -> Result<(), IperfError> {
        Self::handle_timeout(self, now)
    }
    fn poll_transmit(&mut self) -> Option<Transmit> {
        Self::poll_transmit(self)
    }
}

impl Machine for ClientMachine {
    type Event = ClientEvent;
    fn on_bytes(&mut self, bytes: &[u8], now: Instant) -> Result<Vec<ClientEvent>, IperfError> {
        Self::on_bytes(self, bytes, now)
    }
    /// A close that ends nothing the machine knows of is error 109.
    fn on_eof(&mut self) -> Result<Vec<ClientEvent>, IperfError> {
        match Self::on_eof(self) {
            Ok(ev) if ev.is_empty() && self.phase() != ClientPhase::Finished => {
                Err(IperfError::new(IE_CTRL_CLOSE))
            }
            other => other,
        }
    }
    fn poll_timeout(&self) -> Option<Instant> {
        Self::poll_timeout(self)
    }
    fn handle_timeout(&mut self, now: Instant) -> Result<(), IperfError> {
        Self::handle_timeout(self, now)
    }
    fn poll_transmit(&mut self) -> Option<Transmit> {
        Self::poll_transmit(self)
    }
}

/// The data side of a test, by phase.
#[derive(Debug, Default)]
pub(crate) enum Test {
    /// No streams yet.
    #[default]
    Idle,
    /// Streams being set up, in protocol order; nothing is counted yet.
    Setup(Vec<LiveStream>),
    /// TEST_START seen: counting.
    Running(TestRun),
    /// Counting stopped: the figures are final.
    Ended(TestRun),
}

impl Test {
    /// The run, once the test has started.
    pub(crate) fn run(&self) -> Option<&TestRun> {
        match self {
            Self::Running(r) | Self::Ended(r) => Some(r),
            Self::Idle | Self::Setup(_) => None,
        }
    }

    /// The run, to change (once it exists).
    pub(crate) fn run_mut(&mut self) -> Option<&mut TestRun> {
        match self {
            Self::Running(r) | Self::Ended(r) => Some(r),
            Self::Idle | Self::Setup(_) => None,
        }
    }

    /// Stops counting (if it was): the last, possibly short, interval goes to
    /// `rep`. Workers get a short grace; sockets stay open.
    fn end(&mut self, rep: &mut Reporter) {
        if let Self::Running(_) = self {
            let Self::Running(mut run) = std::mem::take(self) else {
                unreachable!()
            };
            if let Some(iv) = run.finish() {
                rep.interval(&iv);
            }
            *self = Self::Ended(run);
        }
    }
}

/// What woke [`Driver::wait`].
#[derive(Debug)]
pub(crate) enum Wake<E> {
    /// Bytes from the peer, and the events they made (possibly none).
    Events(Vec<E>),
    /// The outside fd is readable (a signal, a message from the host).
    Outside,
    /// Time: a tick was handled or the caller's own deadline may have come.
    Timer,
}

/// One side's control loop state.
pub(crate) struct Driver<M> {
    /// The control connection.
    pub ctrl: Ctrl,
    /// The protocol machine.
    pub machine: M,
    /// The test's data side.
    pub test: Test,
    /// What the test is, once the parameters are agreed.
    plan: Option<Box<TestPlan>>,
    /// This test's report.
    pub rep: Reporter,
}

impl<M: Machine> Driver<M> {
    /// A driver for a connected control socket.
    pub(crate) fn new(ctrl: Ctrl, machine: M, rep: Reporter) -> Self {
        Self {
            ctrl,
            machine,
            test: Test::Idle,
            plan: None,
            rep,
        }
    }

    /// The test's plan, once the parameters are agreed.
    pub(crate) fn plan(&self) -> Option<&TestPlan> {
        self.plan.as_deref()
    }

    /// The test's plan, to complete before TEST_START (the `-F` file).
    pub(crate) fn plan_mut(&mut self) -> Option<&mut TestPlan> {
        self.plan.as_deref_mut()
    }

    /// The parameters are agreed: the report says the control connection is
    /// up, and stream setup begins.
    pub(crate) fn accept(&mut self, plan: TestPlan) {
        self.rep.control_connected(&plan.start, &plan.info);
        self.test = Test::Setup(Vec::with_capacity(plan.roles.len()));
        self.plan = Some(Box::new(plan));
    }

    /// The index and role (true = sends) of the next stream to set up; None
    /// when every stream is there or setup is over.
    pub(crate) fn next_stream(&self) -> Option<(usize, bool)> {
        let (Test::Setup(streams), Some(plan)) = (&self.test, &self.plan) else {
            return None;
        };
        let i = streams.len();
        plan.roles.get(i).map(|&sender| (i, sender))
    }

    /// A stream is set up: reported and kept. True once every stream is there.
    pub(crate) fn add_stream(&mut self, s: LiveStream) -> bool {
        self.rep.stream_connected(&s.info);
        if let Test::Setup(streams) = &mut self.test {
            streams.push(s);
        }
        self.next_stream().is_none()
    }

    /// TEST_START: counting starts now; the report shows the test's start.
    pub(crate) fn start_test(&mut self) {
        let (Test::Setup(streams), Some(plan)) = (&mut self.test, &mut self.plan) else {
            return;
        };
        let streams = std::mem::take(&mut *streams);
        if let Some(first) = streams.first() {
            (plan.start.sndbuf_actual, plan.start.rcvbuf_actual) = first.buffer_sizes();
        }
        let mut run = TestRun::start(
            streams,
            plan.interval,
            plan.omit,
            plan.budget.take(),
            plan.idle,
        );
        if let Some(l) = plan.rate_limit {
            run.limit_rate(l);
        }
        if let Some(p) = plan.latency.take() {
            run.attach_prober(p);
            // The client times the data once an rperf3 server took its offer;
            // one that answers probes but not the offer predates it.
            if plan.params.latency.is_some_and(|l| l.owd) && run.probes_with_server() {
                if run.server_times_data() {
                    run.time_data();
                } else {
                    run.note_data(DATA_UNTIMED);
                }
            }
        }
        self.rep.start(&plan.start, &plan.info);
        self.test = Test::Running(run);
    }

    /// TEST_RUNNING: a worker per stream. Whatever started is stopped and
    /// joined when the run is dropped.
    pub(crate) fn run_workers(&mut self) -> Result<(), IperfError> {
        if let (Test::Running(run), Some(plan)) = (&mut self.test, &self.plan) {
            // A time-bound test's paced senders send nothing due at or after
            // its end (the client's end; the server's is its own TEST_START
            // plus the same time, a round trip earlier).
            let time = u64::try_from(plan.params.time).unwrap_or(0);
            let pace_end =
                (time > 0).then(|| run.started_at() + Duration::from_secs(time) + plan.omit);
            let send = SendSpec {
                pace_end,
                ..plan.send.clone()
            };
            run.spawn_workers(&send)
                .map_err(|e| IperfError::from_io(IE_PTHREAD_CREATE, &e))?;
        }
        Ok(())
    }

    /// Stops counting, if the test runs: the last interval is reported.
    pub(crate) fn end_test(&mut self) {
        self.test.end(&mut self.rep);
    }

    /// This side's results document for the exchange (empty before the test).
    pub(crate) fn local_results(&self) -> TestResults {
        self.test.run().map(TestRun::results).unwrap_or_default()
    }

    /// Writes what the machine has queued, in order; a failed write is the
    /// error the machine gave that message (the rest is dropped).
    pub(crate) fn flush(&mut self) -> Result<(), IperfError> {
        while let Some(t) = self.machine.poll_transmit() {
            self.ctrl.send(&t.bytes, t.error)?;
        }
        Ok(())
    }

    /// Writes what the machine queued, then waits for the next thing to act
    /// on; `own` is the caller's deadline, if any. Fails with a failed write,
    /// the machine's phase error, a worker's failure or the idle limit of a
    /// running test.
    pub(crate) fn wait(
        &mut self,
        outside: BorrowedFd<'_>,
        own: Option<Instant>,
    ) -> Result<Wake<M::Event>, IperfError> {
        self.flush()?;
        let now = Instant::now();
        self.machine.handle_timeout(now)?;
        let mut wake = [self.machine.poll_timeout(), own];
        let mut run_wake = None;
        if let Test::Running(run) = &mut self.test {
            for iv in run.tick(now) {
                self.rep.interval(&iv);
            }
            run.check(now)?;
            run_wake = run.next_wake();
        }
        wake[0] = earliest(wake[0], run_wake);
        let until = wake.into_iter().flatten().min();
        let sleep = until.map_or(MAX_SLEEP, |t| t.saturating_duration_since(now));
        let ready = rperf3_sys::poll::wait_readable(&[self.ctrl.fd(), outside], sleep)
            .map_err(|e| IperfError::from_io(IE_SELECT, &e))?;
        if ready[1] {
            return Ok(Wake::Outside);
        }
        if !ready[0] {
            return Ok(Wake::Timer);
        }
        let now = Instant::now();
        match self.ctrl.read(Duration::ZERO) {
            Ok((Read0::Data, bytes)) => self.machine.on_bytes(bytes, now).map(Wake::Events),
            Ok((Read0::Idle, _)) => Ok(Wake::Timer),
            Ok((Read0::Eof, _)) => self.machine.on_eof().map(Wake::Events),
            Err(e) => Err(IperfError::from_io(IE_CTRL_READ, &e)),
        }
    }

    /// Stops counting if the test runs, then shuts the streams and joins the
    /// workers. The run stays for the final report.
    pub(crate) fn stop_test(&mut self) {
        self.test.end(&mut self.rep);
        if let Test::Ended(run) = &mut self.test {
            run.close();
        }
    }
}

/// Why the end has no data delays against an rperf3 server that answers
/// probes but did not say it times the data.
pub(crate) const DATA_UNTIMED: &str =
    "not available, the server does not time the data (an rperf3 older than this client)";

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}
