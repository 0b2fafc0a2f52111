//! A test between TEST_START and the end: workers, ticks, samples and totals.
//! Shared by the client and the server session; the two differ only in who
//! decides the end and what the control connection carries. A run that is
//! dropped stops and joins its workers and closes its sockets.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rperf3_engine::budget::Budget;
use rperf3_engine::control::RunControl;
use rperf3_engine::counters::CounterSnapshot;
use rperf3_engine::worker::Worker;
use rperf3_latency::{OneWay, Way};
use rperf3_proto::{
    IperfError, StreamResult, TestResults, IE_NO_MSG, IE_STREAM_READ, IE_STREAM_WRITE,
};
use rperf3_report::input::{
    Cpu, DiskFileFacts, FinalInput, IntervalInput, LatencyFinal, PeerStream, PeerSummary,
};

use crate::config::RateLimit;
use crate::latency::prober::Prober;
use crate::measurement::bounceback::BbTally;
use crate::measurement::choice::{SendSpec, TcpCrowd, WorkerPlan};
use crate::measurement::cpu::CpuMeter;
use crate::measurement::diskfile::DiskFile;
use crate::measurement::pool::{self, Pooling};
use crate::measurement::ratelimit::RateGuard;
use crate::measurement::sampler::Sampler;
use crate::measurement::streams::LiveStream;
use crate::measurement::ticker::{Due, Ticker};
use crate::measurement::workers;
use crate::measurement::workers::SharedPayload;
use crate::rpm::load::LoadSet;

/// Longest wait for senders to finish their current block at the end. A block
/// that takes longer (a slow path, or a peer that stopped reading) is left out,
/// as iperf3 cancels its sender threads.
const SENDER_GRACE: Duration = Duration::from_millis(100);

/// The longest the end waits for receivers on a mark to end their last read
/// (woken by the lowered mark; a mark's wait,
/// [`rperf3_engine::tcp::MARK_WAIT`], at worst).
const MARKED_GRACE: Duration = Duration::from_millis(30);

/// A running (or finished) test's data side.
#[derive(Debug)]
pub(crate) struct TestRun {
    /// The streams, in protocol order.
    pub streams: Vec<LiveStream>,
    ctl: Arc<RunControl>,
    workers: Vec<Worker>,
    /// Each stream's worker (an index into `workers`): streams may share one.
    worker_of: Vec<usize>,
    sampler: Sampler,
    ticker: Ticker,
    cpu: CpuMeter,
    cpu_final: Option<Cpu>,
    finished: bool,
    started: Instant,
    limits: IdleLimits,
    received: Progress,
    sent: Progress,
    rate: Option<RateGuard>,
    diskfile: Option<DiskFile>,
    /// `--latency` on the client: the prober, whose samples go with each interval.
    latency: Option<Prober>,
    /// `--bounceback`: this side's transactions, taken at each interval.
    bounceback: Option<BbTally>,
    /// Why the data's one-way delays are missing or short, when the client
    /// offered to time them.
    data_note: Option<String>,
}

/// How long a test may go without progress in each direction before it is
/// ended: `--rcv-timeout` for data arriving, and for data leaving (a peer that
/// stopped reading leaves our senders blocked) the same, or longer when `-b`
/// paces blocks further apart than that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdleLimits {
    /// Nothing received for this long: error 144.
    pub recv: Duration,
    /// Nothing sent for this long: a write error.
    pub send: Duration,
}

/// When one direction of a test last made progress.
#[derive(Debug, Clone, Copy)]
struct Progress {
    bytes: u64,
    since: Instant,
}

impl Progress {
    /// Notes `bytes` at `now`; returns how long there has been none.
    fn stalled_for(&mut self, bytes: u64, now: Instant) -> Duration {
        if bytes != self.bytes {
            self.bytes = bytes;
            self.since = now;
        }
        now.saturating_duration_since(self.since)
    }
}

impl TestRun {
    /// Marks TEST_START: times, omit and interval schedule start now. The test
    /// fails when a direction makes no progress for its `limits`.
    pub(crate) fn start(
        streams: Vec<LiveStream>,
        interval: Option<Duration>,
        omit: Duration,
        budget: Option<Budget>,
        limits: IdleLimits,
    ) -> Self {
        let now = Instant::now();
        let sampler = Sampler::new(&streams, now, !omit.is_zero());
        if let Some(b) = budget.as_ref().filter(|_| !omit.is_zero()) {
            b.suspend();
        }
        Self {
            streams,
            ctl: Arc::new(RunControl::new(budget)),
            workers: Vec::new(),
            worker_of: Vec::new(),
            sampler,
            ticker: Ticker::new(now, interval, omit),
            cpu: CpuMeter::start(),
            cpu_final: None,
            diskfile: None,
            finished: false,
            started: now,
            limits,
            received: Progress {
                bytes: 0,
                since: now,
            },
            sent: Progress {
                bytes: 0,
                since: now,
            },
            rate: None,
            latency: None,
            bounceback: None,
            data_note: None,
        }
    }

    /// `--bounceback-load`: the load connections beside the streams, whose
    /// rates go with each interval and the end.
    pub(crate) fn attach_bounceback_load(&mut self, load: LoadSet) {
        if let Some(b) = &mut self.bounceback {
            b.attach_load(load);
        }
    }

    /// `--latency`: the prober's samples go with every interval and the end.
    pub(crate) fn attach_prober(&mut self, p: Prober) {
        self.latency = Some(p);
    }

    /// The ends agreed to time the data (`"owd"`): before the workers start,
    /// UDP senders stamp the wall clock and receivers time each datagram.
    pub(crate) fn time_data(&mut self) {
        for s in &mut self.streams {
            s.time_data();
        }
    }

    /// Whether an rperf3 server answers this client's probes.
    pub(crate) fn probes_with_server(&self) -> bool {
        self.latency.as_ref().is_some_and(Prober::with_server)
    }

    /// Whether the server said, on the dedicated probe connection, that it
    /// times the data (an rperf3 server that predates it answers probes only).
    pub(crate) fn server_times_data(&self) -> bool {
        self.latency.as_ref().is_some_and(Prober::server_times_data)
    }

    /// The data's one-way delays are missing or short: the end says why.
    pub(crate) fn note_data(&mut self, why: &str) {
        self.data_note = Some(why.to_string());
    }

    /// After the test: the server's last data delays, by `deadline` (sent once
    /// its streams were read to the end, before it asked for results).
    pub(crate) fn await_last_data(&mut self, deadline: Instant) {
        let complete = self
            .latency
            .as_ref()
            .is_none_or(|p| p.await_last_data(deadline));
        if !complete && self.data_note.is_none() {
            self.note_data(DATA_SHORT);
        }
    }

    /// The receiving streams' delay sinks (the server pushes what they hold).
    pub(crate) fn data_delay_sinks(&self) -> Vec<Arc<Mutex<OneWay>>> {
        self.streams
            .iter()
            .filter(|s| !s.info.sender)
            .filter_map(|s| s.owd.clone())
            .collect()
    }

    /// `--server-bitrate-limit`: the test fails (error 27) when its total
    /// rate over the limit's window is above it.
    pub(crate) fn limit_rate(&mut self, limit: RateLimit) {
        self.rate = Some(RateGuard::new(limit, self.started));
    }

    /// The TEST_START instant.
    pub(crate) fn started_at(&self) -> Instant {
        self.started
    }

    /// TEST_RUNNING: a worker thread per stream, or I/O workers shared by
    /// many bulk TCP streams (`pool.rs`).
    pub(crate) fn spawn_workers(&mut self, send: &SendSpec) -> io::Result<()> {
        self.diskfile.clone_from(&send.file);
        let payload = SharedPayload::default();
        self.bounceback = send
            .bounceback
            .as_ref()
            .map(|b| BbTally::new(b.stats.clone(), self.has_senders(), Instant::now()));
        if let Some(p) = &self.latency {
            p.load_started(self.tcp_senders());
        }
        let crowd = TcpCrowd::of(&self.streams);
        let plans: Vec<WorkerPlan> = self
            .streams
            .iter()
            .map(|s| s.plan_worker(send, crowd))
            .collect();
        self.worker_of = vec![usize::MAX; self.streams.len()];
        let over = pool::override_from_env();
        for sending in [true, false] {
            let members: Vec<(usize, WorkerPlan)> = plans
                .iter()
                .enumerate()
                .filter(|&(i, &p)| {
                    let s = &self.streams[i];
                    s.info.sender == sending && pool::can_share(s, p)
                })
                .map(|(i, &p)| (i, p))
                .collect();
            let Pooling::Workers(k) = pool::pooling(members.len(), pool::cores(), over) else {
                continue;
            };
            let spawned = pool::spawn(
                &self.streams,
                &members,
                k,
                // Only a side that does not also send: the pause cost
                // `--bidir` up to a tenth of its rate.
                !self.has_senders(),
                &self.ctl,
                send,
                payload.bytes(send),
            )?;
            for (w, driven) in spawned {
                for i in driven {
                    self.worker_of[i] = self.workers.len();
                }
                self.workers.push(w);
            }
        }
        for (i, s) in self.streams.iter().enumerate() {
            if self.worker_of[i] == usize::MAX {
                self.worker_of[i] = self.workers.len();
                self.workers
                    .push(workers::spawn(s, plans[i], &self.ctl, send, &payload)?);
            }
        }
        Ok(())
    }

    /// When the control loop must wake next for this test: a tick, or the
    /// moment a direction would be idle for too long.
    pub(crate) fn next_wake(&self) -> Option<Instant> {
        if self.finished {
            return None;
        }
        let recv = self
            .has_receivers()
            .then(|| self.received.since + self.limits.recv);
        let send = self
            .has_senders()
            .then(|| self.sent.since + self.limits.send);
        let rate = self.rate.as_ref().map(RateGuard::next_check);
        [self.ticker.next(), recv, send, rate]
            .into_iter()
            .flatten()
            .min()
    }

    /// Whether the test may go on at `now`: no worker has failed, and data
    /// still moves in every direction this side has: a peer that stops sending
    /// ends the test (error 144), one that stops reading too (a write error;
    /// its sockets are then shut, which frees our blocked senders).
    pub(crate) fn check(&mut self, now: Instant) -> Result<(), IperfError> {
        if let Some(f) = self.ctl.take_error() {
            let code = if f.sending {
                IE_STREAM_WRITE
            } else {
                IE_STREAM_READ
            };
            return Err(IperfError::from_io(code, &f.error));
        }
        if self.finished {
            return Ok(());
        }
        let (sent, recv) = self.totals();
        if self.has_receivers() && self.received.stalled_for(recv.bytes, now) >= self.limits.recv {
            return Err(IperfError::new(IE_NO_MSG));
        }
        // Senders that used up a -n/-k budget are done, not stalled.
        if self.has_senders()
            && !self.senders_done()
            && self.sent.stalled_for(sent.bytes, now) >= self.limits.send
        {
            return Err(IperfError::with_detail(
                IE_STREAM_WRITE,
                format!(
                    "nothing could be sent for {} s (the peer stopped reading)",
                    self.limits.send.as_secs_f64()
                ),
            ));
        }
        if let Some(g) = &mut self.rate {
            g.check(now, sent.bytes + recv.bytes)?;
        }
        Ok(())
    }

    /// Handles due ticks at `now`; returns interval reports to print.
    pub(crate) fn tick(&mut self, now: Instant) -> Vec<IntervalInput> {
        let mut out = Vec::new();
        if self.finished {
            return out;
        }
        loop {
            match self.ticker.poll(now) {
                Due::Nothing => break,
                Due::Interval => out.push(self.sample(now)),
                Due::OmitEnd => {
                    // An omitted interval that has not been reported closes here.
                    if now > self.sampler.last_tick() {
                        out.push(self.sample(now));
                    }
                    // Meter first, then rebase: at most the block each sender
                    // has in hand goes out unmetered after the rebase.
                    if let Some(b) = self.ctl.budget() {
                        b.restart();
                    }
                    self.sampler.end_omit(&self.streams, now);
                }
            }
        }
        out
    }

    /// Closes the interval ending at `now`, with its latency samples.
    fn sample(&mut self, now: Instant) -> IntervalInput {
        let mut iv = self.sampler.sample(&self.streams, now);
        if let Some(p) = &self.latency {
            // What this client received came from the server.
            for d in self.streams.iter().filter_map(LiveStream::take_data_delays) {
                p.merge_data(Way::Down, &d);
            }
            let f = p.take_interval().figures();
            log_figures("interval", &f);
            iv.latency = Some(Box::new(f));
        }
        if let Some(b) = &mut self.bounceback {
            iv.bounceback = Some(Box::new(b.interval(now, !self.sampler.omitting())));
        }
        iv
    }

    /// Counters (sent, received) since the post-omit start.
    pub(crate) fn totals(&self) -> (CounterSnapshot, CounterSnapshot) {
        self.sampler.totals(&self.streams)
    }

    /// Whether the omit period is over.
    pub(crate) fn past_omit(&self) -> bool {
        !self.sampler.omitting()
    }

    /// Whether every sending worker has returned (its budget is used up).
    pub(crate) fn senders_done(&self) -> bool {
        self.streams
            .iter()
            .zip(&self.worker_of)
            .filter(|(s, _)| s.info.sender)
            .all(|(_, &w)| self.workers.get(w).is_none_or(Worker::finished))
    }

    /// Whether any stream sends.
    pub(crate) fn has_senders(&self) -> bool {
        self.streams.iter().any(|s| s.info.sender)
    }

    /// Whether any stream receives.
    pub(crate) fn has_receivers(&self) -> bool {
        self.streams.iter().any(|s| !s.info.sender)
    }

    /// Whether the test has a `-n`/`-k` budget and its senders have claimed all
    /// of it (false without a budget).
    pub(crate) fn budget_exhausted(&self) -> bool {
        self.ctl.budget().is_some_and(Budget::exhausted)
    }

    /// Stops counting: workers are told to stop, senders get up to `SENDER_GRACE`
    /// to finish their block (so what they sent is all counted), then the last
    /// sample. Returns the final (possibly short) interval. Sockets stay open until
    /// [`TestRun::close`].
    pub(crate) fn finish(&mut self) -> Option<IntervalInput> {
        if self.finished {
            return None;
        }
        self.finished = true;
        // The test ends now; a block finishing during the grace still counts in
        // it (a paced sender may be asleep until its next datagram is due).
        let now = Instant::now();
        self.ctl.stop();
        for s in &self.streams {
            // A receiver waiting for its mark wakes now, not at its wait's end.
            s.lower_mark();
        }
        if let Some(p) = &mut self.latency {
            // Probes end with the test; what they measured by now counts.
            p.stop();
        }
        self.wait_until(SENDER_GRACE, Self::senders_done);
        // A receiver on a mark ends its last read (up to the mark's size)
        // before the tail is drained and the final count taken, so that read
        // is in the count too, and no later one.
        self.wait_until(MARKED_GRACE, Self::marked_receivers_done);
        for s in &self.streams {
            s.drain_below_mark();
        }
        let last = (now > self.sampler.last_tick()).then(|| self.sample(now));
        if let Some(b) = &mut self.bounceback {
            // The load ends with the test; its last interval is counted.
            b.stop_load();
        }
        self.cpu_final = Some(self.cpu.read(&self.workers));
        last
    }

    /// Whether the workers of the receivers reading on a mark have ended.
    fn marked_receivers_done(&self) -> bool {
        self.streams
            .iter()
            .zip(&self.worker_of)
            .filter(|(s, _)| s.reads_on_a_mark())
            .all(|(_, &w)| self.workers.get(w).is_none_or(Worker::finished))
    }

    /// Waits up to `grace` for `done`.
    fn wait_until(&self, grace: Duration, done: fn(&Self) -> bool) {
        let deadline = Instant::now() + grace;
        while !done(self) && Instant::now() < deadline {
            // Workers finish one block at most; polling briefly beats a condvar here.
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Shuts every socket (unblocking the workers) and joins all workers.
    pub(crate) fn close(&mut self) {
        if self.cpu_final.is_none() {
            self.cpu_final = Some(self.cpu.read(&self.workers));
        }
        // A side storing a file lets its receivers take in what is still in
        // flight; they end by themselves once the streams are quiet.
        if self.diskfile.as_ref().is_some_and(|d| !d.sending) {
            let deadline = Instant::now() + rperf3_engine::file::DRAIN_LIMIT;
            while !self.workers.iter().all(Worker::finished) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        crate::measurement::streams::stop_all(&self.streams, std::mem::take(&mut self.workers));
    }

    fn cpu(&self) -> Cpu {
        self.cpu_final
            .unwrap_or_else(|| self.cpu.read(&self.workers))
    }

    /// The congestion control algorithm of the first TCP stream.
    pub(crate) fn congestion(&self) -> Option<String> {
        self.streams
            .iter()
            .find_map(|s| s.tcp_socket().and_then(rperf3_sys::net::tcp_congestion))
    }

    /// This side's sending TCP streams (their round trips are self probes).
    pub(crate) fn tcp_senders(&self) -> Vec<Arc<std::net::TcpStream>> {
        self.streams
            .iter()
            .filter(|s| s.info.sender)
            .filter_map(|s| match &s.sock {
                crate::measurement::streams::DataSock::Tcp(t) => Some(t.clone()),
                _ => None,
            })
            .collect()
    }

    /// Whether this side is a TCP sender with retransmit counters.
    pub(crate) fn has_retransmits(&self) -> bool {
        self.streams.iter().any(|s| s.tcp_info().is_some())
    }

    /// This side's results document for the exchange.
    pub(crate) fn results(&self) -> TestResults {
        let congestion = self.congestion();
        let cpu = self.cpu();
        let finals = self.sampler.finals(&self.streams);
        let sender_has_retransmits = if !self.has_senders() {
            -1
        } else if self.has_retransmits() {
            1
        } else {
            0
        };
        let streams = self
            .streams
            .iter()
            .zip(&finals)
            .map(|(s, f)| {
                let udp = f.udp.unwrap_or_default();
                StreamResult {
                    id: s.info.id as i32,
                    bytes: f.bytes,
                    retransmits: f.tcp.map_or(-1, |t| t.retransmits as i64),
                    jitter: udp.jitter,
                    errors: udp.lost,
                    omitted_errors: Some(udp.omitted_lost),
                    packets: udp.packets,
                    omitted_packets: Some(udp.omitted_packets),
                    start_time: 0.0,
                    end_time: f.duration,
                }
            })
            .collect();
        TestResults {
            cpu_util_total: cpu.total,
            cpu_util_user: cpu.user,
            cpu_util_system: cpu.system,
            sender_has_retransmits,
            congestion_used: congestion,
            server_output_json: None,
            server_output_text: None,
            streams,
            rperf3_bounceback: self.bounceback.as_ref().and_then(BbTally::wire_total),
        }
    }

    /// The report's end input, with the peer's results when known.
    pub(crate) fn final_input(&self, peer: Option<&TestResults>) -> FinalInput {
        FinalInput {
            bounceback: self.bounceback.as_ref().map(BbTally::total),
            latency: self.latency.as_ref().map(|p| {
                let figures = p.total().figures();
                log_figures(
                    if p.with_server() {
                        "total"
                    } else {
                        "total (client alone)"
                    },
                    &figures,
                );
                LatencyFinal {
                    figures,
                    with_server: p.with_server(),
                    data_note: self.data_note.clone(),
                }
            }),
            streams: self.sampler.finals(&self.streams),
            cpu: self.cpu(),
            congestion: self.congestion(),
            has_retransmits: self.has_retransmits(),
            peer: peer.map(peer_summary),
            diskfile: self.diskfile.as_ref().map(|d| DiskFileFacts {
                name: d.name.clone(),
                // A stored file's size is what arrived.
                size: d.size(),
            }),
        }
    }
}

impl Drop for TestRun {
    fn drop(&mut self) {
        self.ctl.stop();
        self.close();
    }
}

/// Why the end's data delays up miss the last ones.
const DATA_SHORT: &str =
    "incomplete, the server's last delays of the data did not arrive in time; \
     the figures of the data up miss the end of the test";

/// A debug line per span, for `-d` (the outputs are the report's).
fn log_figures(span: &str, f: &rperf3_latency::Figures) {
    let s = |x: &rperf3_latency::Summary| {
        format!("n={} p50={:.3} max={:.3}", x.count, x.p50_ms, x.max_ms)
    };
    log::debug!(
        "latency {span}: idle {}; foreign {}; self {}; up {}; down {}; rpm {:.0}",
        s(&f.idle),
        s(&f.foreign),
        s(&f.self_loaded),
        s(&f.up),
        s(&f.down),
        f.responsiveness.rpm
    );
}

/// The peer's results, as the report reads them.
pub(crate) fn peer_summary(r: &TestResults) -> PeerSummary {
    PeerSummary {
        cpu: Cpu {
            total: r.cpu_util_total,
            user: r.cpu_util_user,
            system: r.cpu_util_system,
        },
        sender_has_retransmits: r.sender_has_retransmits,
        congestion: r.congestion_used.clone(),
        streams: r
            .streams
            .iter()
            .map(|s| PeerStream {
                id: s.id as u32,
                bytes: s.bytes,
                retransmits: s.retransmits,
                jitter: s.jitter,
                errors: s.errors,
                omitted_errors: s.omitted_errors,
                packets: s.packets,
                omitted_packets: s.omitted_packets,
                duration: Some(s.end_time - s.start_time),
            })
            .collect(),
    }
}
