//! The client driver: one test against a server, from connect to IPERF_DONE.
//!
//! The shared [`Driver`] waits and feeds the machine; this file decides what the
//! server's messages mean for the client and when the test ends (`-t`, `-n`,
//! `-k`). The client waits for the server's first reply as long as the server
//! keeps the connection (a server may queue it), unless `--connect-timeout` is
//! given.

mod connect;
mod extras;
mod rider;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rperf3_engine::budget::{Budget, BudgetUnit};
use rperf3_engine::counters::CounterSnapshot;
use rperf3_proto::*;
use rperf3_report::input::Side;
use rperf3_report::{Reporter, ServerOutput};

use crate::auth::{ClientAuth, Padding};
use crate::config::{ClientConfig, CommonConfig, Direction, EndCondition};
use crate::interrupt::Interrupt;
use crate::measurement::ctrl::{Ctrl, Read0};
use crate::measurement::diskfile::DiskFile;
use crate::measurement::driver::{Driver, Test, Wake};
use crate::measurement::plan::{Peer, TestPlan};
use crate::measurement::setup::client_params;
use crate::measurement::streams::LiveStream;
use crate::Outcome;
use connect::{connect_sctp_stream, connect_tcp_stream, SctpOptions, StreamEnds};
pub(crate) use rider::Rider;

/// What a client sees when the server does not answer the `--rpm` offer.
pub(crate) const NOT_RPERF3_RPM: &str =
    "the server does not run the responsiveness test (it is not rperf3)";
/// Why `--bounceback` stops against a server that did not say it is rperf3.
pub(crate) const NOT_RPERF3_BOUNCEBACK: &str =
    "the server is not rperf3 (--bounceback needs an rperf3 server)";
/// How often a byte/block-limited client checks its totals.
const LIMIT_CHECK: Duration = Duration::from_millis(10);
/// Longest the client waits for the server's last data delays at the end of a
/// `--latency` test: sent before EXCHANGE_RESULTS, they are normally there
/// already; the bound covers a lost segment on the probe connection.
const LAST_DATA_LIMIT: Duration = Duration::from_secs(2);
/// Longest wait for the cookie's ACK before reading the control MSS.
const MSS_SETTLE: Duration = Duration::from_millis(200);
/// Longest wait for one data connection.
const STREAM_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs one client test. Errors are reported through `rep` (JSON `error` key or
/// `<prog>: error - ...`) and decide the exit status.
pub fn run(
    cc: &ClientConfig,
    common: &CommonConfig,
    rep: Reporter,
    intr: &mut Interrupt,
    auth: Option<&ClientAuth>,
) -> Outcome {
    run_with(cc, common, rep, intr, auth, None)
}

/// Runs the iperf3 test that carries a rider (one `--rpm` stage).
pub(crate) fn run_stage(
    cc: &ClientConfig,
    common: &CommonConfig,
    rep: Reporter,
    intr: &mut Interrupt,
    auth: Option<&ClientAuth>,
    stage: &mut (dyn Rider + 'static),
) -> Outcome {
    run_with(cc, common, rep, intr, auth, Some(stage))
}

fn run_with(
    cc: &ClientConfig,
    common: &CommonConfig,
    mut rep: Reporter,
    intr: &mut Interrupt,
    auth: Option<&ClientAuth>,
    mut rpm: Option<&mut (dyn Rider + 'static)>,
) -> Outcome {
    let mut params = client_params(cc);
    match connect(cc, common, &mut params) {
        Ok((ctrl, cookie, server, ctrl_mss, ctrl_connect)) => {
            rep.preamble();
            rep.control_mss(ctrl_mss);
            // iperf3 opens the file once connected, so its error follows
            // "Connecting to host".
            let sending = cc.direction != Direction::Reverse;
            let disk = match common.file.as_deref().map(|f| DiskFile::open(f, sending)) {
                None => None,
                Some(Ok(d)) => Some(d),
                Some(Err(e)) => return failed(&mut rep, e, rpm),
            };
            let mut sized = cc.clone();
            if let Some(d) = disk.as_ref().filter(|_| sending && cc.file_ends_test) {
                sized.end = EndCondition::Bytes(d.size());
                params.time = 0;
                params.num = d.size();
            }
            let cc = &sized;
            if let Some(a) = auth {
                // Made now, so its time is as close as can be to the server's check.
                let now = (rperf3_sys::time::unix_millis() / 1000) as i64;
                match a.token(now) {
                    Ok(t) => params.authtoken = Some(t),
                    Err(e) => return failed(&mut rep, e, rpm),
                }
            }
            let phases = PhaseLimits {
                first_reply: cc.connect_timeout,
                ..PhaseLimits::default()
            };
            let machine = ClientMachine::new(cookie, &params, phases, Instant::now());
            let peer = Peer::ConnectingTo(cc.host.clone(), common.port);
            let cookie_text = cookie_str(&cookie);
            let mut plan = TestPlan::new(
                params,
                Side::Client,
                common,
                peer,
                cookie_text,
                Some(ctrl_mss),
            );
            plan.send.file = disk;
            plan.budget = budget(cc);
            let mut c = Client {
                cc,
                common,
                d: Driver::new(ctrl, machine, rep),
                server,
                cookie,
                plan: Some(plan),
                peer: None,
                test_end: None,
                ctrl_connect,
                rpm,
                rperf3_server: false,
            };
            let res = c.drive(intr);
            if let (Some(a), Err(Stop::Error(e))) = (auth, &res) {
                c.explain_refusal(a, e);
            }
            c.conclude(res)
        }
        Err(e) => failed(&mut rep, e, rpm.take()),
    }
}

/// A test that failed before it began; an `--rpm` stage keeps the reason.
fn failed(rep: &mut Reporter, e: IperfError, rpm: Option<&mut (dyn Rider + 'static)>) -> Outcome {
    if let Some(r) = rpm {
        r.fail(e.text());
    }
    Outcome::finish(rep, Some(e))
}

/// Connects the control socket and sends the cookie. Returns the connection,
/// the cookie, the server's address, the control MSS and how long the
/// connection's handshake took.
fn connect(
    cc: &ClientConfig,
    common: &CommonConfig,
    params: &mut TestParams,
) -> Result<(Ctrl, [u8; COOKIE_LEN], SocketAddr, u32, Duration), IperfError> {
    let addrs = rperf3_sys::net::resolve(&cc.host, common.port, common.family)
        .map_err(|e| IperfError::with_detail(IE_CONNECT, gai_text(&e)))?;
    let t = Instant::now();
    let sock = rperf3_sys::net::connect_tcp(
        &addrs,
        common.bind.as_deref(),
        0,
        device(cc, common),
        cc.connect_timeout,
    )
    .map_err(|e| IperfError::from_io(IE_CONNECT, &e))?;
    let handshake = t.elapsed();
    crate::measurement::sockopts::apply_keepalive(&sock, common.cntl_ka);
    let server = sock
        .peer_addr()
        .map_err(|e| IperfError::from_io(IE_CONNECT, &e))?;
    let mut ctrl = Ctrl::new(sock).map_err(|e| IperfError::from_io(IE_CONNECT, &e))?;
    let mut random = [0u8; COOKIE_LEN - 1];
    rperf3_sys::random::fill(&mut random);
    let cookie = make_cookie(&random);
    // A busy server writes 0xFF and closes before reading the cookie; the write
    // may then fail, but the 0xFF is still there to read.
    if let Err(e) = ctrl.send(&cookie, IE_SEND_COOKIE) {
        return Err(match ctrl.read(Duration::from_secs(1)) {
            Ok((Read0::Data, [0xFF, ..])) => IperfError::new(IE_ACCESS_DENIED),
            _ => e,
        });
    }
    // Read after the first write, as iperf3 does, and once it is acknowledged,
    // so the figure does not depend on how busy the machine is.
    let ctrl_mss = rperf3_sys::net::tcp_mss_settled(ctrl.sock(), MSS_SETTLE);
    if params.len == 0 {
        // UDP without -l: the control connection's MSS, as iperf3.
        params.len = crate::measurement::setup::default_udp_len(ctrl_mss) as i32;
    }
    log::debug!(
        "control connection to {server}, cookie {}, MSS {ctrl_mss}",
        cookie_str(&cookie)
    );
    Ok((ctrl, cookie, server, ctrl_mss, handshake))
}

/// `-n`/`-k` (or `-F`'s size): what the senders may send in all.
fn budget(cc: &ClientConfig) -> Option<Budget> {
    match cc.end {
        EndCondition::Time(_) => None,
        EndCondition::Bytes(n) => Some(Budget::new(BudgetUnit::Bytes, n)),
        EndCondition::Blocks(n) => Some(Budget::new(BudgetUnit::Blocks, n)),
    }
}

/// `-c host%dev` or `-B addr%dev`: SO_BINDTODEVICE on every socket.
fn device<'a>(cc: &'a ClientConfig, common: &'a CommonConfig) -> Option<&'a str> {
    let typed = common.bind_dev.as_deref();
    typed
        .or_else(|| rperf3_sys::net::device_part(&cc.host))
        .or_else(|| {
            common
                .bind
                .as_deref()
                .and_then(rperf3_sys::net::device_part)
        })
}

struct Client<'a> {
    cc: &'a ClientConfig,
    common: &'a CommonConfig,
    d: Driver<ClientMachine>,
    server: SocketAddr,
    cookie: [u8; COOKIE_LEN],
    /// The test, until the server takes it on (then the driver has it).
    plan: Option<TestPlan>,
    peer: Option<TestResults>,
    /// `-t`: when the test ends (from TEST_START, like the interval ticks).
    test_end: Option<Instant>,
    /// The control connection's handshake (`--latency` against a stock server
    /// counts it as an idle round trip).
    ctrl_connect: Duration,
    /// `--rpm`: the stage this test carries.
    rpm: Option<&'a mut (dyn Rider + 'static)>,
    /// The server sent LATENCY_READY: it is rperf3 (`--bounceback` needs one).
    rperf3_server: bool,
}

/// Why the test stopped early.
enum Stop {
    Error(IperfError),
    /// SIGINT/SIGTERM: CLIENT_TERMINATE was sent.
    Interrupted,
    /// SERVER_TERMINATE received.
    ServerTerminated,
}

impl From<IperfError> for Stop {
    fn from(e: IperfError) -> Self {
        Self::Error(e)
    }
}

impl Client<'_> {
    /// Runs the exchange until DISPLAY_RESULTS.
    fn drive(&mut self, intr: &mut Interrupt) -> Result<(), Stop> {
        loop {
            match self.d.wait(intr.fd(), self.own_deadline())? {
                Wake::Outside => {
                    if intr.triggered() {
                        return Err(self.interrupted());
                    }
                }
                Wake::Timer => {}
                Wake::Events(events) => {
                    for ev in events {
                        if self.on_event(ev, intr)? {
                            return Ok(());
                        }
                    }
                }
            }
            self.check_end()?;
        }
    }

    fn interrupted(&mut self) -> Stop {
        self.d.machine.terminate();
        let _ = self.d.flush();
        Stop::Interrupted
    }

    /// Acts on one event; true once DISPLAY_RESULTS has come.
    fn on_event(&mut self, ev: ClientEvent, intr: &mut Interrupt) -> Result<bool, Stop> {
        match ev {
            ClientEvent::Accepted => {
                // The server took us on: only now is the test "connected" (a
                // refused client prints nothing but the error).
                log::debug!("server accepted the test: sending the parameters");
                if let Some(mut plan) = self.plan.take() {
                    plan.start.timestamp_millis = rperf3_sys::time::unix_millis();
                    self.d.accept(plan);
                }
            }
            ClientEvent::LatencyReady => {
                self.rperf3_server = true;
                self.start_prober(true);
            }
            ClientEvent::CreateStreams => {
                self.before_streams()?;
                self.create_streams(intr)?;
            }
            ClientEvent::TestStart => {
                log::debug!("TEST_START");
                self.d.start_test();
                if let (Test::Running(run), Some(plan)) = (&self.d.test, self.d.plan()) {
                    self.test_end = match self.cc.end {
                        // -t 0: no time limit, as iperf3.
                        EndCondition::Time(t) if t > 0 => {
                            Some(run.started_at() + Duration::from_secs(u64::from(t)) + plan.omit)
                        }
                        _ => None,
                    };
                }
            }
            ClientEvent::TestRunning => {
                log::debug!("TEST_RUNNING: starting the stream workers");
                self.d.run_workers()?;
                self.start_bounceback_load()?;
                if let Some(r) = self.rpm.as_deref_mut() {
                    r.launch(self.server, self.cookie);
                }
            }
            ClientEvent::ExchangeResults => {
                log::debug!("EXCHANGE_RESULTS");
                // A server may ask before our TEST_END: the test is over then too.
                self.d.end_test();
                if let Some(run) = self.d.test.run_mut() {
                    // The server sent its last data delays before asking.
                    run.await_last_data(Instant::now() + LAST_DATA_LIMIT);
                }
                let r = self.d.local_results();
                self.d.machine.send_results(&r);
            }
            ClientEvent::PeerResults(r) => self.peer = Some(r),
            ClientEvent::DisplayResults => return Ok(true),
            ClientEvent::ServerTerminate => {
                log::debug!("SERVER_TERMINATE");
                self.d.machine.done();
                let _ = self.d.flush();
                return Err(Stop::ServerTerminated);
            }
            ev => {
                let e = ev.error().unwrap_or_else(|| IperfError::new(IE_MESSAGE));
                return Err(Stop::Error(e));
            }
        }
        Ok(false)
    }

    /// When the test must be checked next: the `-t` end, or soon for `-n`/`-k`.
    fn own_deadline(&self) -> Option<Instant> {
        if !matches!(self.d.test, Test::Running(_)) {
            return None;
        }
        if let Some(r) = self.rpm.as_deref() {
            // The rider may end the test at any time.
            return Some(Instant::now() + r.check_every());
        }
        match self.cc.end {
            EndCondition::Time(_) => self.test_end,
            EndCondition::Bytes(_) | EndCondition::Blocks(_) => Some(Instant::now() + LIMIT_CHECK),
        }
    }

    /// Ends the test (TEST_END) once its end condition holds.
    fn check_end(&mut self) -> Result<(), Stop> {
        let Test::Running(run) = &self.d.test else {
            return Ok(());
        };
        let now = Instant::now();
        let stage_done = self.rpm.as_ref().is_some_and(|r| r.is_done());
        let done = stage_done
            || match self.cc.end {
                EndCondition::Time(_) => self.test_end.is_some_and(|t| now >= t),
                // Limits count only after the omit period, as in iperf3.
                EndCondition::Bytes(_) | EndCondition::Blocks(_) if !run.past_omit() => false,
                EndCondition::Bytes(n) | EndCondition::Blocks(n) => {
                    let blocks = matches!(self.cc.end, EndCondition::Blocks(_));
                    let pick = |c: CounterSnapshot| if blocks { c.blocks } else { c.bytes };
                    let (sent, recv) = run.totals();
                    // Senders stop by themselves when the budget is used up; a
                    // receiving client counts what arrived (iperf3 checks both).
                    (run.has_senders() && run.senders_done() && run.budget_exhausted())
                        || pick(recv) >= n
                        || (pick(sent) >= n && run.senders_done())
                }
            };
        if done {
            self.d.end_test();
            self.d.machine.end_test(Instant::now());
        }
        Ok(())
    }

    /// Opens the data streams one after another, within the machine's deadline
    /// for stream setup; a signal stops it between streams.
    fn create_streams(&mut self, intr: &mut Interrupt) -> Result<(), Stop> {
        let Some(plan) = self.d.plan() else {
            return Ok(());
        };
        let params = plan.params.clone();
        let deadline = self.d.machine.poll_timeout();
        let dev = device(self.cc, self.common);
        while let Some((i, sender)) = self.d.next_stream() {
            // --cport P: stream i binds P+i (a port past 65535 falls back to any).
            let local_port = self
                .cc
                .cport
                .and_then(|p| u16::try_from(usize::from(p) + i).ok())
                .unwrap_or(0);
            if intr.triggered() {
                return Err(self.interrupted());
            }
            let left = deadline.map_or(UDP_CONNECT_TIMEOUT, |d| {
                d.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return Err(IperfError::with_detail(IE_STREAM_CONNECT, "timed out").into());
            }
            let ls = if params.protocol == Protocol::Udp {
                let len = params.len.max(1) as usize;
                let io_err = |e: std::io::Error| {
                    let code = if e.kind() == std::io::ErrorKind::TimedOut {
                        IE_STREAM_READ
                    } else {
                        IE_STREAM_CONNECT
                    };
                    IperfError::from_io(code, &e)
                };
                let s = crate::measurement::udp_setup::open_stream(
                    self.server,
                    self.common.bind.as_deref(),
                    local_port,
                    dev,
                    len,
                    self.cc.window,
                )
                .map_err(io_err)?;
                // Before the hello: it carries the TOS byte as every datagram does.
                crate::measurement::sockopts::apply_tos(&s, self.server.is_ipv6(), &params)?;
                crate::measurement::sockopts::apply_pacing(&s, &params);
                if self.cc.dont_fragment && self.server.is_ipv4() {
                    rperf3_sys::sockopt::set_dont_fragment(&s)
                        .map_err(|e| IperfError::from_io(IE_SET_DONT_FRAGMENT, &e))?;
                }
                match crate::measurement::udp_setup::hello(
                    &s,
                    len,
                    left.min(UDP_CONNECT_TIMEOUT),
                    intr,
                ) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                        return Err(self.interrupted())
                    }
                    r => r.map_err(io_err)?,
                }
                LiveStream::udp(s, i, sender)
            } else if params.protocol == Protocol::Sctp {
                let ends = self.stream_ends(local_port, dev, left);
                let sctp = SctpOptions {
                    xbind: &self.common.xbind,
                    nstreams: self.cc.nstreams,
                    window: self.cc.window,
                };
                let s = connect_sctp_stream(ends, &params, sctp, &self.cookie)?;
                LiveStream::sctp(s, i, sender)
            } else {
                let ends = self.stream_ends(local_port, dev, left);
                let t = Instant::now();
                let s = connect_tcp_stream(ends, &params, &self.cookie)?;
                self.alone_idle(t.elapsed());
                crate::measurement::sockopts::apply_snd_timeout(&s, self.common.snd_timeout_ms);
                if let Some(w) = self.cc.window {
                    rperf3_sys::net::set_buffer_sizes(&s, w as usize)
                        .map_err(|e| IperfError::from_io(IE_SET_BUF, &e))?;
                }
                LiveStream::tcp(s, i, sender)
            }
            .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
            log::debug!(
                "stream {}: {} -> {}, {}",
                ls.info.id,
                ls.info.local,
                ls.info.remote,
                if sender { "sending" } else { "receiving" }
            );
            self.d.add_stream(ls);
        }
        Ok(())
    }

    /// Where a TCP or SCTP data stream connects, with `left` of the setup time.
    fn stream_ends<'s>(
        &'s self,
        local_port: u16,
        device: Option<&'s str>,
        left: Duration,
    ) -> StreamEnds<'s> {
        StreamEnds {
            server: self.server,
            bind: self.common.bind.as_deref(),
            local_port,
            device,
            timeout: left.min(STREAM_CONNECT_TIMEOUT),
        }
    }

    /// The credentials were refused, or probably were: iperf3's message alone does
    /// not say what to change, so a warning before it does.
    fn explain_refusal(&mut self, auth: &ClientAuth, e: &IperfError) {
        let before_streams = match &self.d.test {
            Test::Idle => true,
            Test::Setup(streams) => streams.is_empty(),
            Test::Running(_) | Test::Ended(_) => false,
        };
        if e.code == IE_AUTH_TEST && auth.padding() == Padding::Oaep {
            self.d.rep.warning(
                "the server refused the credentials; if it is iperf3 3.16 or older, \
                 add --use-pkcs1-padding",
            );
        } else if e.code == IE_CTRL_CLOSE && before_streams {
            self.d.rep.warning(
                "the server closed the connection after reading the credentials, as \
                 iperf3 3.17 and newer do when they refuse them (user, password, key or clock)",
            );
        }
    }

    /// Prints the end of the test (full or partial) and the error, if any.
    fn conclude(mut self, res: Result<(), Stop>) -> Outcome {
        if let Some(r) = self.rpm.as_deref_mut() {
            r.stop();
            if let Err(Stop::Error(e)) = &res {
                r.fail(e.text());
            }
        }
        self.d.stop_test();
        let d = &mut self.d;
        // A failed test shows only the error, as iperf3; a finished or
        // terminated one shows what it measured.
        if let (false, Some(run)) = (matches!(res, Err(Stop::Error(_))), d.test.run()) {
            let peer = self.peer.as_ref().filter(|_| res.is_ok());
            d.rep.end(&run.final_input(peer));
        }
        match res {
            Ok(()) => {
                if let Some(p) = &self.peer {
                    if let Some(j) = &p.server_output_json {
                        d.rep.server_output(ServerOutput::Json(j.clone()));
                    } else if let Some(t) = &p.server_output_text {
                        d.rep.server_output(ServerOutput::Text(t.clone()));
                    }
                }
                d.machine.done();
                let _ = d.flush();
                let Driver { ctrl, mut rep, .. } = self.d;
                ctrl.close_gracefully(Duration::from_secs(2));
                Outcome::finish(&mut rep, None)
            }
            Err(Stop::ServerTerminated) => {
                Outcome::finish(&mut d.rep, Some(IperfError::new(IE_SERVER_TERM)))
            }
            Err(Stop::Interrupted) => Outcome::interrupted(&mut d.rep, IE_CLIENT_TERM),
            Err(Stop::Error(e)) => Outcome::finish(&mut d.rep, Some(e)),
        }
    }
}

/// The resolver's own message (gai_strerror), as iperf3 prints it.
fn gai_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.strip_prefix("failed to lookup address information: ")
        .unwrap_or(&s)
        .to_string()
}
