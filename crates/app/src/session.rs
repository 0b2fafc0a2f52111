//! One test on the server, from its control connection to IPERF_DONE.
//!
//! The host has read the cookie; the session runs the rest on its own thread
//! with the shared [`Driver`]: parameters, streams (TCP connections and UDP
//! streams arrive from the host through the inbox), the test, the results. A
//! failure ends only this session: it is reported and the host goes on.

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_proto::*;
use rperf3_report::input::{MssInfo, Side, StartInfo, TestInfo};
use rperf3_report::Reporter;

use crate::auth::ServerAuth;
use crate::config::{CommonConfig, RateLimit};
use crate::ctrl::Ctrl;
use crate::driver::{Driver, Test, Wake};
use crate::host::mail::{Inbox, Mailbox, ToHost, ToSession};
use crate::host::StreamBudget;
use crate::metrics::{Metrics, TestOutcome};
use crate::setup::{stream_roles, test_info, version_string};
use crate::streams::LiveStream;
use crate::testrun::TestRun;

/// Longest the server waits for the client to close after SERVER_TERMINATE or
/// at the end.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// What a session is given by the host.
pub struct SessionSetup {
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

/// What the test is, once the parameters are accepted.
struct Accepted {
    params: TestParams,
    start: StartInfo,
    info: TestInfo,
    roles: Vec<bool>,
    /// Waiting for the host's go-ahead for UDP setup, or set up and not yet done.
    udp_pending: bool,
}

/// Where the exchange is.
enum Stage {
    /// Before the parameters.
    Handshake,
    /// The parameters are accepted.
    Test(Box<Accepted>),
}

/// A server-side test.
pub struct Session {
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
    reserved: usize,
    peer: SocketAddr,
    cookie: [u8; COOKIE_LEN],
    common: CommonConfig,
    stage: Stage,
    reported_end: bool,
    auth: Option<Arc<ServerAuth>>,
    /// The parameter checks, made here after the token when `auth_first`.
    limits: ServerLimits,
    /// The client failed to authenticate: with `-1` this does not count as the
    /// one test (as in iperf3 3.21).
    auth_failed: bool,
}

enum End {
    Done,
    Failed(IperfError),
    Interrupted,
}

impl Session {
    /// A session for an accepted control connection whose cookie the host read.
    pub fn new(
        s: SessionSetup,
        common: CommonConfig,
        limits: ServerLimits,
    ) -> std::io::Result<Self> {
        let now = Instant::now();
        let peer = rperf3_sys::net::unmap(s.peer);
        log::debug!("test {}: control connection from {peer}", s.id);
        crate::sockopts::apply_keepalive(&s.conn, common.cntl_ka);
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
            reserved: 0,
            peer: rperf3_sys::net::unmap(s.peer),
            cookie: s.cookie,
            common,
            stage: Stage::Handshake,
            reported_end: false,
            auth: s.auth,
            limits,
            auth_failed: false,
        })
    }

    /// Runs the session to its end and tells the host when its slot is free.
    pub fn run(mut self) {
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
        self.release_udp();
        if matches!(end, End::Interrupted) {
            // Tell the client before its data connections close, so it learns
            // why; the streams stay open, unread, until it answers.
            let bytes = self.d.machine.terminate();
            let _ = self.d.send(&bytes, IE_SEND_MESSAGE);
            self.d.ctrl.drain_until_closed(CLOSE_GRACE);
        } else if matches!(&end, End::Failed(e) if e.code == IE_TOTAL_RATE) {
            // The same when the server's rate limit stops a healthy client: one
            // that writes to a stream closed under it reports "Broken pipe"
            // instead of the reason it was just sent (seen with 3.12).
            self.d.ctrl.drain_until_closed(CLOSE_GRACE);
        }
        self.d.stop_test();
        self.budget.give_back(self.reserved);
        let err = match end {
            End::Done => None,
            End::Failed(e) => Some(e),
            End::Interrupted => Some(IperfError::new(IE_SERVER_TERM)),
        };
        self.log_end(err.as_ref());
        if let (Some(_), Some(run), false) = (&err, self.d.test.run(), self.reported_end) {
            // A test cut short still shows what it measured.
            let fin = run.final_input(run.congestion(), None);
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
            let bytes = self.d.machine.fail(&e);
            let _ = self.d.send(&bytes, IE_SEND_MESSAGE);
        }
        End::Failed(e)
    }

    fn handle(&mut self, events: Vec<ServerEvent>) -> Result<Option<End>, IperfError> {
        for ev in events {
            match ev {
                ServerEvent::Send(b) => self.d.send(&b, IE_SEND_MESSAGE)?,
                // Known already: the host routes streams by it.
                ServerEvent::Cookie(_) => {}
                ServerEvent::ParamsReady(p) => self.on_params(p)?,
                ServerEvent::TestEnd => {
                    log::debug!("test {}: TEST_END", self.id);
                    self.end_of_test()?;
                }
                ServerEvent::PeerResults(_) => {
                    let r = self.local_results();
                    let bytes = self.d.machine.send_results(&r);
                    self.d.send(&bytes, IE_SEND_RESULTS)?;
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
                ToSession::SctpListening(r) => {
                    r?;
                    let bytes = self.d.machine.begin_create_streams();
                    self.d.send(&bytes, IE_SEND_MESSAGE)?;
                }
                ToSession::UdpGranted => {
                    let bytes = self.d.machine.begin_create_streams();
                    self.d.send(&bytes, IE_SEND_MESSAGE)?;
                }
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
        let roles = stream_roles(&p, Side::Server);
        if !self.budget.take(roles.len()) {
            // Every stream is a thread: the server as a whole has a bound.
            return Err(IperfError::new(IE_ACCESS_DENIED));
        }
        self.reserved = roles.len();
        let udp = p.protocol == Protocol::Udp;
        let info = test_info(&p, &self.common, Side::Server);
        let start = StartInfo {
            version: version_string(),
            system_info: rperf3_sys::system::uname_line(),
            timestamp_millis: rperf3_sys::time::unix_millis(),
            connecting_to: None,
            accepted_connection: Some(self.peer),
            cookie: cookie_str(&self.cookie).to_string(),
            tcp_mss: (!udp).then_some(if p.mss > 0 {
                MssInfo::Set(p.mss as u32)
            } else {
                MssInfo::Default(0)
            }),
            sock_bufsize: p.window.max(0) as u64,
            sndbuf_actual: 0,
            rcvbuf_actual: 0,
        };
        log::info!(
            "test {} from {} starts: {}, {} stream(s), {}, {} s",
            self.id,
            self.peer,
            if p.protocol == Protocol::Udp {
                "UDP"
            } else {
                "TCP"
            },
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
        self.d.rep.control_connected(&start, &info);
        self.d.test = Test::Setup(Vec::with_capacity(roles.len()));
        if udp {
            self.host.send(ToHost::UdpWanted {
                id: self.id,
                ip: self.peer.ip(),
                streams: roles.len(),
            });
        } else if p.protocol == Protocol::Sctp {
            // CREATE_STREAMS once the host listens for SCTP (or the error).
            self.host.send(ToHost::SctpWanted { id: self.id });
        } else {
            let bytes = self.d.machine.begin_create_streams();
            self.d.send(&bytes, IE_SEND_MESSAGE)?;
        }
        self.stage = Stage::Test(Box::new(Accepted {
            params: p,
            start,
            info,
            roles,
            udp_pending: udp,
        }));
        Ok(())
    }

    /// A TCP connection (or SCTP association, `sctp`) with this test's cookie:
    /// a data stream while streams are set up, else refused (as iperf3
    /// refuses a connection outside that state).
    fn on_tcp(&mut self, conn: TcpStream, sctp: bool) -> Result<(), IperfError> {
        let (Stage::Test(a), Test::Setup(streams)) = (&self.stage, &mut self.d.test) else {
            refuse(conn);
            return Ok(());
        };
        let wanted = if sctp { Protocol::Sctp } else { Protocol::Tcp };
        if a.params.protocol != wanted || streams.len() >= a.roles.len() {
            refuse(conn);
            return Ok(());
        }
        if a.params.window > 0 {
            let _ = rperf3_sys::net::set_buffer_sizes(&conn, a.params.window as usize);
        }
        if sctp {
            // iperf3's server sets nothing else on SCTP streams.
            let i = streams.len();
            let s = LiveStream::sctp(conn, i, a.roles[i])
                .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
            self.d.rep.stream_connected(&s.info);
            streams.push(s);
            return self.maybe_start();
        }
        let v6 = conn.local_addr().is_ok_and(|l| l.is_ipv6());
        let applied = crate::sockopts::apply_tcp(conn.as_fd(), v6, &a.params, true)?;
        crate::sockopts::apply_snd_timeout(&conn, self.common.snd_timeout_ms);
        if applied.congestion_missing {
            self.d
                .rep
                .warning("TCP congestion control algorithm not supported");
        }
        let i = streams.len();
        let s = LiveStream::tcp(conn, i, a.roles[i])
            .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
        self.d.rep.stream_connected(&s.info);
        log::debug!(
            "test {}: TCP stream {} from {}",
            self.id,
            s.info.id,
            s.info.remote
        );
        streams.push(s);
        self.maybe_start()
    }

    /// A UDP stream the host took from the listener: reply "6789" on it.
    fn on_udp(&mut self, sock: UdpSocket) -> Result<(), IperfError> {
        let (Stage::Test(a), Test::Setup(streams)) = (&self.stage, &mut self.d.test) else {
            return Ok(());
        };
        if streams.len() >= a.roles.len() {
            return Ok(());
        }
        let p = &a.params;
        let window = (p.window > 0).then_some(p.window as u32);
        crate::udp_setup::size_buffers(&sock, p.len.max(1) as usize, window)
            .map_err(|e| IperfError::from_io(IE_STREAM_ACCEPT, &e))?;
        let v6 = sock.local_addr().is_ok_and(|l| l.is_ipv6());
        crate::sockopts::apply_tos(&sock, v6, p)?;
        crate::sockopts::apply_pacing(&sock, p);
        if p.dont_fragment && self.peer.is_ipv4() {
            let _ = rperf3_sys::sockopt::set_dont_fragment(&sock);
        }
        sock.send(&UDP_CONNECT_REPLY)
            .map_err(|e| IperfError::from_io(IE_STREAM_WRITE, &e))?;
        let i = streams.len();
        let s = LiveStream::udp(sock, i, a.roles[i])
            .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
        self.d.rep.stream_connected(&s.info);
        log::debug!(
            "test {}: UDP stream {} from {}",
            self.id,
            s.info.id,
            s.info.remote
        );
        streams.push(s);
        self.maybe_start()
    }

    /// Every stream is there: TEST_START + TEST_RUNNING, then the workers.
    fn maybe_start(&mut self) -> Result<(), IperfError> {
        let (Stage::Test(a), Test::Setup(streams)) = (&mut self.stage, &mut self.d.test) else {
            return Ok(());
        };
        if streams.len() < a.roles.len() {
            return Ok(());
        }
        if a.udp_pending {
            a.udp_pending = false;
            self.host.send(ToHost::UdpDone { id: self.id });
        }
        let streams = std::mem::take(streams);
        if let Some(first) = streams.first() {
            (a.start.sndbuf_actual, a.start.rcvbuf_actual) = first.buffer_sizes();
        }
        // `-F`: the server sends the file in reverse tests, else stores what arrives.
        let disk = match self.common.file.as_deref() {
            Some(f) => Some(crate::streams::DiskFile::open(f, a.params.reverse)?),
            None => None,
        };
        let bytes = self.d.machine.all_streams_connected(Instant::now());
        self.d.send(&bytes, IE_SEND_MESSAGE)?;
        let omit = Duration::from_secs(a.params.omit.max(0) as u64);
        let idle = crate::setup::idle_limits(&a.params, self.common.rcv_timeout);
        let mut run = TestRun::start(streams, self.common.interval, omit, None, idle);
        if let Some(l) = self.rate_limit {
            run.limit_rate(l);
        }
        self.metrics.test_started(self.id, &run.streams);
        self.d.rep.start(&a.start, &a.info);
        let mut spec = crate::setup::send_spec(&a.params);
        spec.file = disk;
        let spawned = run.spawn_workers(a.params.len.max(1) as usize, &spec);
        // Whatever started is stopped and joined when the run is dropped.
        self.d.test = Test::Running(run);
        spawned.map_err(|e| IperfError::from_io(IE_PTHREAD_CREATE, &e))
    }

    /// TEST_END: last sample, close the streams, our report, EXCHANGE_RESULTS.
    fn end_of_test(&mut self) -> Result<(), IperfError> {
        self.release_udp();
        self.d.stop_test();
        if let Some(run) = self.d.test.run() {
            // The server's report is built before it knows the client's figures.
            let fin = run.final_input(run.congestion(), None);
            self.d.rep.end(&fin);
            self.reported_end = true;
        }
        let bytes = self.d.machine.exchange_results();
        self.d.send(&bytes, IE_SEND_MESSAGE)
    }

    fn release_udp(&mut self) {
        if let Stage::Test(a) = &mut self.stage {
            if a.udp_pending {
                a.udp_pending = false;
                self.host.send(ToHost::UdpDone { id: self.id });
            }
        }
    }

    fn local_results(&self) -> TestResults {
        let mut r = self
            .d
            .test
            .run()
            .map(|run| run.results(run.congestion()))
            .unwrap_or_default();
        let wants_output = matches!(&self.stage, Stage::Test(a) if a.params.get_server_output);
        if wants_output {
            match self.d.rep.server_output_for_peer() {
                Some(rperf3_report::ServerOutput::Json(v)) => r.server_output_json = Some(v),
                Some(rperf3_report::ServerOutput::Text(t)) => r.server_output_text = Some(t),
                None => {}
            }
        }
        r
    }
}

/// ACCESS_DENIED on a connection, then close (best effort, never blocking).
pub fn refuse(conn: TcpStream) {
    let _ = conn.set_nonblocking(true);
    let _ = std::io::Write::write(&mut &conn, &ACCESS_DENIED_BYTES);
}
