//! One test on the server, from its control connection to IPERF_DONE.
//!
//! The host has read the cookie; the session runs the rest on its own thread
//! with the shared [`Driver`]: parameters, streams (TCP connections and UDP
//! streams arrive from the host through the inbox), the test, the results. A
//! failure ends only this session: it is reported and the host goes on.

#[path = "session_streams.rs"]
mod streams;

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_proto::*;
use rperf3_report::input::Side;
use rperf3_report::Reporter;

use crate::auth::ServerAuth;
use crate::config::{CommonConfig, RateLimit};
use crate::latency::responder::ProbeHost;
use crate::measurement::ctrl::Ctrl;
use crate::measurement::driver::{Driver, Wake};
use crate::measurement::plan::{Peer, TestPlan};
use crate::measurement::run::TestRun;
use crate::rpm::link::LoadHost;
use crate::server::budget::{StreamBudget, StreamPermit};
use crate::server::mail::{Inbox, Mailbox, ToHost, ToSession};
use crate::server::metrics::{Metrics, TestOutcome};

/// Longest the server waits for the client to close after SERVER_TERMINATE or
/// at the end.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What a session is given by the host.
pub(super) struct SessionSetup {
    /// The host's number for it.
    pub id: u64,
    /// The control connection, its cookie already read.
    pub conn: TcpStream,
    /// The cookie.
    pub cookie: [u8; COOKIE_LEN],
    /// The client.
    pub peer: SocketAddr,
    /// This test's report.
    pub rep: Reporter,
    /// Messages from the host.
    pub inbox: Inbox<ToSession>,
    /// Messages to the host.
    pub host: Mailbox<ToHost>,
    /// Data streams the server may still open, over all its tests.
    pub budget: Arc<StreamBudget>,
    /// The server's metrics: this test's streams and outcome.
    pub metrics: Arc<Metrics>,
    /// `--server-bitrate-limit`, checked while the test runs.
    pub rate_limit: Option<RateLimit>,
    /// The host's listener, when this is the only test that can be setting up
    /// streams (one slot): a client's `-M` then goes on it, so the SYN-ACKs of
    /// the data streams advertise that MSS as iperf3's do.
    pub listener: Option<Arc<TcpListener>>,
    /// Clients must authenticate.
    pub auth: Option<Arc<ServerAuth>>,
}

/// A server-side test.
pub(super) struct Session {
    id: u64,
    d: Driver<ServerMachine>,
    inbox: Inbox<ToSession>,
    host: Mailbox<ToHost>,
    budget: Arc<StreamBudget>,
    metrics: Arc<Metrics>,
    rate_limit: Option<RateLimit>,
    listener: Option<Arc<TcpListener>>,
    /// The listener carries this test's MSS until the session ends.
    listener_mss: bool,
    /// This test's streams, taken from the server's budget.
    streams: Option<StreamPermit>,
    peer: SocketAddr,
    cookie: [u8; COOKIE_LEN],
    common: CommonConfig,
    /// Waiting for the host's go-ahead for UDP setup, or set up and not yet done.
    udp_pending: bool,
    reported_end: bool,
    auth: Option<Arc<ServerAuth>>,
    /// The parameter checks, made here after the token when `auth_first`.
    limits: ServerLimits,
    /// The client failed to authenticate: with `-1` this does not count as the
    /// one test (as in iperf3 3.21).
    auth_failed: bool,
    /// `--latency` was asked for and answered: this test's probe connections.
    probes: Option<ProbeHost>,
    /// `--rpm` was asked for: this test's load connections ('D', 'U').
    load: Option<LoadHost>,
    /// The client offered to time the data (`"owd"`) and probes are answered:
    /// UDP senders stamp the wall clock, receivers push their delays.
    owd: bool,
}

enum End {
    Done,
    Failed(IperfError),
    Interrupted,
}

impl Session {
    /// A session for an accepted control connection whose cookie the host read.
    pub(super) fn new(
        s: SessionSetup,
        common: CommonConfig,
        limits: ServerLimits,
    ) -> std::io::Result<Self> {
        let now = Instant::now();
        let peer = rperf3_sys::net::unmap(s.peer);
        log::debug!("test {}: control connection from {peer}", s.id);
        crate::measurement::sockopts::apply_keepalive(&s.conn, common.cntl_ka);
        let ctrl = Ctrl::new(s.conn)?;
        let machine = ServerMachine::new(limits.clone(), PhaseLimits::default(), now);
        Ok(Self {
            id: s.id,
            d: Driver::new(ctrl, machine, s.rep),
            inbox: s.inbox,
            host: s.host,
            budget: s.budget,
            metrics: s.metrics,
            rate_limit: s.rate_limit,
            listener: s.listener,
            listener_mss: false,
            streams: None,
            peer: rperf3_sys::net::unmap(s.peer),
            cookie: s.cookie,
            common,
            udp_pending: false,
            reported_end: false,
            auth: s.auth,
            limits,
            auth_failed: false,
            probes: None,
            load: None,
            owd: false,
        })
    }

    /// Runs the session to its end and tells the host when its slot is free.
    pub(super) fn run(mut self) {
        // The host read the cookie: the machine takes it as the first bytes.
        let cookie = self.cookie;
        let end = match self.d.machine.on_bytes(&cookie, Instant::now()) {
            Ok(events) => match self.handle(events) {
                Ok(Some(end)) => end,
                Ok(None) => self.drive(),
                Err(e) => self.fail(e),
            },
            Err(e) => self.fail(e),
        };
        // What the last events queued (best effort: the test is over).
        let _ = self.d.flush();
        self.release_udp();
        if matches!(end, End::Interrupted) {
            // Tell the client before its data connections close, so it learns
            // why; the streams stay open, unread, until it answers.
            self.d.machine.terminate();
            let _ = self.d.flush();
            self.d.ctrl.drain_until_closed(CLOSE_GRACE);
        } else if matches!(&end, End::Failed(e) if e.code == IE_TOTAL_RATE) {
            // The same when the server's rate limit stops a healthy client: one
            // that writes to a stream closed under it reports "Broken pipe"
            // instead of the reason it was just sent (seen with 3.12).
            self.d.ctrl.drain_until_closed(CLOSE_GRACE);
        }
        self.d.stop_test();
        if let Some(mut l) = self.load.take() {
            // No load connection outlives its test.
            l.finish();
        }
        if let Some(mut p) = self.probes.take() {
            // No probe connection outlives its test.
            self.metrics.record_latency(&p.finish());
        }
        // The streams are closed: another test may have them.
        self.streams = None;
        let err = match end {
            End::Done => None,
            End::Failed(e) => Some(e),
            End::Interrupted => Some(IperfError::new(IE_SERVER_TERM)),
        };
        self.log_end(err.as_ref());
        if let (Some(_), Some(run), false) = (&err, self.d.test.run(), self.reported_end) {
            // A test cut short still shows what it measured.
            let fin = run.final_input(None);
            self.d.rep.end(&fin);
        }
        match &err {
            Some(e) if e.code == IE_SERVER_TERM => self.d.rep.interrupted(&e.text()),
            Some(e) if e.code == IE_CTRL_CLOSE => self.d.rep.ended_without_error(CLIENT_CLOSED),
            Some(e) => self.d.rep.error(&e.text()),
            None => {}
        }
        let _ = self.d.rep.finish();
        if let (true, Some(l)) = (self.listener_mss, &self.listener) {
            // 0: the kernel's own choice again.
            let _ = rperf3_sys::sockopt::set_mss(&**l, 0);
        }
        let Self {
            d,
            host,
            id,
            auth_failed,
            ..
        } = self;
        let Driver { ctrl, test, .. } = d;
        drop(test);
        host.send(ToHost::Released {
            id,
            counted: !auth_failed,
        });
        ctrl.close_gracefully(CLOSE_GRACE);
    }

    /// Counts the test's outcome (the workers are joined: its totals are
    /// final) and logs its end.
    fn log_end(&self, err: Option<&IperfError>) {
        let outcome = match err {
            None => TestOutcome::Ok,
            Some(e) if e.code == IE_SERVER_TERM => TestOutcome::Interrupted,
            Some(e) if e.code == IE_ACCESS_DENIED => TestOutcome::Refused,
            Some(e) if e.code == IE_AUTH_TEST => TestOutcome::AuthFailed,
            Some(_) => TestOutcome::Error,
        };
        self.metrics.test_ended(self.id, outcome);
        let (sent, received) = self.d.test.run().map(TestRun::totals).unwrap_or_default();
        let why = err.map_or_else(|| "done".to_string(), IperfError::text);
        log::info!(
            "test {} from {} ended ({}): {why}; {} bytes received, {} bytes sent",
            self.id,
            self.peer,
            outcome.label(),
            received.bytes,
            sent.bytes
        );
    }

    fn drive(&mut self) -> End {
        loop {
            let wake = match self.d.wait(self.inbox.fd(), None) {
                Ok(w) => w,
                Err(e) => return self.fail(e),
            };
            let step = match wake {
                Wake::Events(events) => self.handle(events),
                Wake::Outside => self.on_messages(),
                Wake::Timer => Ok(None),
            };
            match step {
                Ok(Some(end)) => return end,
                Ok(None) => {}
                Err(e) => return self.fail(e),
            }
        }
    }

    /// Logs the error and tells the client (SERVER_ERROR), as 3.21 does for most
    /// failures after the cookie.
    fn fail(&mut self, e: IperfError) -> End {
        if e.code != IE_CTRL_CLOSE && e.code != IE_CLIENT_TERM && e.code != IE_RECV_COOKIE {
            self.d.machine.fail(&e);
            let _ = self.d.flush();
        }
        End::Failed(e)
    }

    fn handle(&mut self, events: Vec<ServerEvent>) -> Result<Option<End>, IperfError> {
        for ev in events {
            match ev {
                // Known already: the host routes streams by it.
                ServerEvent::Cookie(_) => {}
                ServerEvent::ParamsReady(p) => self.on_params(p)?,
                ServerEvent::TestEnd => {
                    log::debug!("test {}: TEST_END", self.id);
                    self.end_of_test()?;
                }
                ServerEvent::PeerResults(peer) => {
                    self.record_bounceback(&peer);
                    let r = self.local_results();
                    self.d.machine.send_results(&r);
                }
                ServerEvent::Done => return Ok(Some(End::Done)),
                ServerEvent::ClientTerminated => {
                    return Ok(Some(End::Failed(IperfError::new(IE_CLIENT_TERM))))
                }
            }
        }
        Ok(None)
    }

    fn on_messages(&mut self) -> Result<Option<End>, IperfError> {
        for msg in self.inbox.drain() {
            match msg {
                ToSession::Stop => return Ok(Some(End::Interrupted)),
                ToSession::Tcp(conn) => self.on_tcp(conn, false)?,
                ToSession::Sctp(conn) => self.on_tcp(conn, true)?,
                ToSession::Extra { conn, marker } if LoadHost::is_load(marker) => {
                    match &mut self.load {
                        Some(l) => {
                            let _ = l.on_conn(conn, marker);
                            // Its round trips are self probes of the loaded path.
                            if let (Some(p), Some(run)) = (&self.probes, self.d.test.run()) {
                                let mut senders = run.tcp_senders();
                                senders.extend(l.senders());
                                p.set_senders(senders);
                            }
                        }
                        None => log::info!(
                            "test {}: closed a load connection: the test is not --rpm",
                            self.id
                        ),
                    }
                }
                ToSession::Extra { conn, marker } => match &mut self.probes {
                    Some(p) => p.on_conn(conn, marker, self.id),
                    None => log::info!(
                        "test {}: closed a connection marked {:?}: the test has no probes",
                        self.id,
                        char::from(marker)
                    ),
                },
                ToSession::SctpListening(r) => {
                    r?;
                    self.d.machine.begin_create_streams();
                }
                ToSession::UdpGranted => self.d.machine.begin_create_streams(),
                ToSession::Udp(sock) => self.on_udp(sock)?,
            }
        }
        Ok(None)
    }

    /// Valid parameters: announce the test, then CREATE_STREAMS (UDP: once the
    /// host has room for this client's hellos).
    fn on_params(&mut self, p: TestParams) -> Result<(), IperfError> {
        if let Some(auth) = &self.auth {
            let now = (rperf3_sys::time::unix_millis() / 1000) as i64;
            match auth.check(p.authtoken.as_deref(), now) {
                Ok(ok) if self.common.debug > 0 => self.d.rep.message(&format!(
                    "Authentication succeeded for user '{}' ({})",
                    ok.user,
                    ok.padding.name()
                )),
                Ok(_) => {}
                Err(refused) => {
                    // The reason stays here; the client learns only error 142.
                    self.d
                        .rep
                        .warning(&format!("{refused} (client {})", self.peer));
                    self.auth_failed = true;
                    return Err(IperfError::new(IE_AUTH_TEST));
                }
            }
        }
        if self.limits.auth_first {
            p.validate(&self.limits)?;
        }
        if let Some(cpu) = p.server_affinity {
            // This session's thread, and the workers it starts: only this
            // test's threads move, not the other tests'.
            rperf3_sys::process::pin_to_cpu(usize::try_from(cpu).unwrap_or(usize::MAX))
                .map_err(|e| IperfError::from_io(IE_AFFINITY, &e))?;
        }
        if let (Some(l), true) = (&self.listener, p.mss > 0 && p.protocol == Protocol::Tcp) {
            // Before CREATE_STREAMS goes out: the client's SYNs may follow at once.
            if rperf3_sys::sockopt::set_mss(&**l, p.mss).is_ok() {
                self.listener_mss = true;
            }
        }
        let streams = p.streams_expected();
        // Every stream is a thread: the server as a whole has a bound.
        let permit = self.budget.take(streams);
        self.streams = Some(permit.ok_or_else(|| IperfError::new(IE_ACCESS_DENIED))?);
        log::info!(
            "test {} from {} starts: {}, {} stream(s), {}, {} s",
            self.id,
            self.peer,
            p.protocol.name(),
            p.parallel,
            if p.bidirectional {
                "bidirectional"
            } else if p.reverse {
                "server sends"
            } else {
                "server receives"
            },
            p.time
        );
        self.d.rep.set_server_output_requested(p.get_server_output);
        self.d
            .rep
            .set_peer_labels(p.title.clone(), p.extra_data.clone());
        let protocol = p.protocol;
        let p_latency = p.latency;
        let p_bounceback = p
            .bounceback
            .filter(|b| b.version == bounceback::BOUNCEBACK_VERSION);
        let peer = Peer::AcceptedFrom(self.peer);
        let mut plan = TestPlan::new(
            p,
            Side::Server,
            &self.common,
            peer,
            cookie_str(&self.cookie),
            None,
        );
        plan.rate_limit = self.rate_limit;
        self.d.accept(plan);
        if p_latency.is_some_and(|l| l.version == LATENCY_VERSION) {
            // Said before CREATE_STREAMS: the client probes before its streams.
            self.owd = p_latency.is_some_and(|l| l.owd);
            self.probes = Some(ProbeHost::new(self.owd));
            if p_latency.is_some_and(|l| l.rpm) {
                self.load = Some(LoadHost::new());
            }
        }
        if p_bounceback.is_some_and(|b| b.load.is_some()) && self.load.is_none() {
            self.load = Some(LoadHost::new());
        }
        if self.probes.is_some() || p_bounceback.is_some() {
            // Once, also the sign of an rperf3 server a bounceback client needs.
            self.d.machine.latency_ready();
        }
        match protocol {
            Protocol::Udp => {
                self.udp_pending = true;
                self.host.send(ToHost::UdpWanted {
                    id: self.id,
                    ip: self.peer.ip(),
                    streams,
                });
            }
            // CREATE_STREAMS once the host listens for SCTP (or the error).
            Protocol::Sctp => {
                self.host.send(ToHost::SctpWanted { id: self.id });
            }
            Protocol::Tcp => {
                self.d.machine.begin_create_streams();
                // Now: the client's SYNs follow at once.
                self.d.flush()?;
            }
        }
        Ok(())
    }

    /// TEST_END: last sample, close the streams, our report, EXCHANGE_RESULTS.
    fn end_of_test(&mut self) -> Result<(), IperfError> {
        self.release_udp();
        if let Some(p) = &self.probes {
            // The load is over: its streams' round trips are no longer loaded.
            p.set_senders(Vec::new());
        }
        self.d.stop_test();
        if let Some(p) = &self.probes {
            // The streams are read to the end: the client's end figures get
            // every datagram counted here, before it is asked for results.
            p.last_data();
        }
        if let Some(run) = self.d.test.run() {
            // The server's report is built before it knows the client's figures.
            let fin = run.final_input(None);
            self.d.rep.end(&fin);
            self.reported_end = true;
        }
        self.d.machine.exchange_results();
        Ok(())
    }

    /// The round trips an rperf3 client of a `--bounceback` test sent with its
    /// results go to the metrics (the server times none itself).
    fn record_bounceback(&self, peer: &TestResults) {
        let bounceback = self.d.plan().is_some_and(|p| p.params.bounceback.is_some());
        let sent = peer.rperf3_bounceback.as_deref().filter(|_| bounceback);
        match sent.map(crate::measurement::bounceback::from_wire) {
            Some(Some(h)) => self.metrics.record_bounceback(&h),
            Some(None) => log::info!("test {}: the client's round trips are unreadable", self.id),
            None => {}
        }
    }

    fn release_udp(&mut self) {
        if self.udp_pending {
            self.udp_pending = false;
            self.host.send(ToHost::UdpDone { id: self.id });
        }
    }

    fn local_results(&self) -> TestResults {
        let mut r = self.d.local_results();
        if self.d.plan().is_some_and(|p| p.params.get_server_output) {
            match self.d.rep.server_output_for_peer() {
                Some(rperf3_report::ServerOutput::Json(v)) => r.server_output_json = Some(v),
                Some(rperf3_report::ServerOutput::Text(t)) => r.server_output_text = Some(t),
                None => {}
            }
        }
        r
    }
}
