//! One test on the server, from the accepted control connection to IPERF_DONE.
//! A failure ends only this session: it is logged and the listener goes on.

use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_proto::*;
use rperf3_report::input::{MssInfo, Side, StartInfo};
use rperf3_report::Reporter;

use crate::config::CommonConfig;
use crate::ctrl::{Ctrl, Read0};
use crate::interrupt::Interrupt;
use crate::setup::{test_info, version_string};
use crate::streams::LiveStream;
use crate::testrun::TestRun;
use crate::udp_setup::UdpAcceptor;

/// Longest wait for all data streams after CREATE_STREAMS.
const STREAMS_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest wait for a data connection's cookie.
const STREAM_COOKIE_TIMEOUT: Duration = Duration::from_secs(10);

/// What the listener and a session share.
#[derive(Debug, Default)]
pub struct SessionLink {
    want_streams: AtomicBool,
    finishing: AtomicBool,
}

impl SessionLink {
    /// Whether new connections are this session's data streams.
    pub fn wants_streams(&self) -> bool {
        self.want_streams.load(Ordering::Acquire)
    }

    fn set_wants_streams(&self, v: bool) {
        self.want_streams.store(v, Ordering::Release);
    }

    /// Whether the session's test is over and it is only tidying up: a new
    /// client should wait for it rather than be refused.
    pub fn finishing(&self) -> bool {
        self.finishing.load(Ordering::Acquire)
    }

    fn set_finishing(&self) {
        self.finishing.store(true, Ordering::Release);
    }
}

/// A server-side test.
pub struct Session {
    ctrl: Ctrl,
    peer: SocketAddr,
    rep: Reporter,
    common: CommonConfig,
    link: Arc<SessionLink>,
    incoming: Receiver<TcpStream>,
    stop: Interrupt,
    machine: ServerMachine,
    cookie: Option<[u8; COOKIE_LEN]>,
    run: Option<TestRun>,
    params: Option<TestParams>,
    reported_end: bool,
}

enum End {
    Done,
    Failed(IperfError),
    /// Error 142: does not count as the one test of `-1`.
    AuthFailed,
    Interrupted,
}

impl Session {
    /// A session for an accepted control connection (fails only if the socket
    /// is already unusable).
    pub fn new(
        conn: TcpStream,
        peer: SocketAddr,
        rep: Reporter,
        common: CommonConfig,
        link: Arc<SessionLink>,
        incoming: Receiver<TcpStream>,
        stop: Interrupt,
    ) -> std::io::Result<Self> {
        let ctrl = Ctrl::new(conn)?;
        Ok(Self {
            ctrl,
            peer: rperf3_sys::net::unmap(peer),
            rep,
            common,
            link,
            incoming,
            stop,
            machine: ServerMachine::new(ServerLimits::default()),
            cookie: None,
            run: None,
            params: None,
            reported_end: false,
        })
    }

    /// Runs the session to its end. Returns whether it counts as a test (for `-1`).
    pub fn run(mut self) -> bool {
        let end = self.drive();
        self.link.set_wants_streams(false);
        self.link.set_finishing();
        let mut last_iv = self.run.as_mut().and_then(TestRun::finish);
        if matches!(end, End::Interrupted) {
            // Tell the client before its data connections close, so it learns why
            // (a sender that hits a reset first reports a write error instead); the
            // streams stay open, unread, until it answers or a short deadline.
            let bytes = self.machine.terminate();
            let _ = self.ctrl.send(&bytes, IE_SEND_MESSAGE);
            self.await_client_close(Duration::from_secs(2));
        }
        let counted = !matches!(end, End::AuthFailed);
        if let Some(run) = self.run.as_mut() {
            if let Some(iv) = last_iv.take() {
                self.rep.interval(&iv);
            }
            run.close();
        }
        let (err, interrupted) = match end {
            End::Done => (None, false),
            End::Failed(e) => (Some(e), false),
            End::AuthFailed => (Some(IperfError::new(IE_AUTH_TEST)), false),
            End::Interrupted => (Some(IperfError::new(IE_SERVER_TERM)), true),
        };
        if let (Some(e), Some(run)) = (&err, self.run.as_ref()) {
            // A test cut short still shows what it measured.
            if e.code != IE_AUTH_TEST && !self.reported_end {
                let fin = run.final_input(self.congestion(), None);
                self.rep.end(&fin);
            }
        }
        match &err {
            Some(e) if interrupted => self.rep.interrupted(&e.text()),
            Some(e) => self.rep.error(&e.text()),
            None => {}
        }
        let _ = self.rep.finish();
        self.ctrl.close_gracefully(Duration::from_secs(2));
        counted
    }

    /// Reads and discards until the client closes the control connection (after
    /// its IPERF_DONE) or `limit` passes.
    fn await_client_close(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            match self.ctrl.read(left) {
                Ok((Read0::Data(_), _)) => {}
                _ => return,
            }
        }
    }

    fn drive(&mut self) -> End {
        loop {
            let timeout = self
                .machine
                .phase()
                .read_timeout()
                .unwrap_or(UNIT_READ_TOTAL_TIMEOUT);
            let events = match self.read_events(timeout) {
                Ok(Some(ev)) => ev,
                Ok(None) => return End::Interrupted,
                Err(e) => return self.fail(e),
            };
            for ev in events {
                match ev {
                    ServerEvent::Send(b) => {
                        if let Err(e) = self.ctrl.send(&b, IE_SEND_MESSAGE) {
                            return End::Failed(e);
                        }
                    }
                    ServerEvent::Cookie(c) => self.cookie = Some(c),
                    ServerEvent::ParamsReady(p) => {
                        if let Err(e) = self.setup_streams(p) {
                            return self.fail(e);
                        }
                        match self.running() {
                            Ok(Some(())) => {}
                            Ok(None) => return End::Interrupted,
                            Err(e) => return self.fail(e),
                        }
                    }
                    ServerEvent::TestEnd => {
                        // Handled inside running(); a stray one is ignored.
                    }
                    ServerEvent::PeerResults(_) => {
                        let r = self.local_results();
                        let bytes = self.machine.send_results(&r);
                        if let Err(e) = self.ctrl.send(&bytes, IE_SEND_RESULTS) {
                            return End::Failed(e);
                        }
                    }
                    ServerEvent::Done => {
                        self.link.set_finishing();
                        return End::Done;
                    }
                    ServerEvent::ClientTerminated => {
                        return End::Failed(IperfError::new(IE_CLIENT_TERM))
                    }
                }
            }
        }
    }

    /// Logs the error and tells the client (SERVER_ERROR), as 3.21 does for most
    /// failures after the cookie.
    fn fail(&mut self, e: IperfError) -> End {
        if e.code == IE_AUTH_TEST {
            return End::AuthFailed;
        }
        if self.cookie.is_some() && e.code != IE_CTRL_CLOSE && e.code != IE_CLIENT_TERM {
            let bytes = self.machine.fail(&e);
            let _ = self.ctrl.send(&bytes, IE_SEND_MESSAGE);
        }
        End::Failed(e)
    }

    /// Reads once, up to `timeout`: `Ok(None)` if interrupted.
    fn read_events(&mut self, timeout: Duration) -> Result<Option<Vec<ServerEvent>>, IperfError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(match self.machine.phase() {
                    ServerPhase::AwaitCookie => IperfError::new(IE_RECV_COOKIE),
                    ServerPhase::AwaitParams => IperfError::new(IE_RECV_PARAMS),
                    ServerPhase::AwaitClientResults => IperfError::new(IE_RECV_RESULTS),
                    _ => IperfError::new(IE_RECV_MESSAGE),
                });
            }
            let ready = rperf3_sys::poll::wait_readable(&[self.ctrl.fd(), self.stop.fd()], left)
                .map_err(|e| IperfError::from_io(IE_SELECT, &e))?;
            if ready[1] && self.stop.triggered() {
                return Ok(None);
            }
            if !ready[0] {
                continue;
            }
            return match self.ctrl.read(Duration::ZERO) {
                Ok((Read0::Data(_), b)) => self.machine.on_bytes(b).map(Some),
                Ok((Read0::Idle, _)) => Ok(Some(Vec::new())),
                Ok((Read0::Eof, _)) => self.machine.on_eof().map(Some),
                Err(e) => Err(IperfError::from_io(IE_CTRL_READ, &e)),
            };
        }
    }

    /// After valid parameters: CREATE_STREAMS, accept and check every stream,
    /// then TEST_START + TEST_RUNNING.
    fn setup_streams(&mut self, p: TestParams) -> Result<(), IperfError> {
        if p.protocol == Protocol::Sctp {
            return Err(IperfError::new(IE_NO_SCTP));
        }
        let udp = p.protocol == Protocol::Udp;
        let cookie = self.cookie.ok_or_else(|| IperfError::new(IE_RECV_COOKIE))?;
        let n = p.parallel.max(1) as usize;
        // Server roles: receivers first, then senders.
        let roles: Vec<bool> = match (p.reverse, p.bidirectional) {
            (_, true) => std::iter::repeat_n(false, n)
                .chain(std::iter::repeat_n(true, n))
                .collect(),
            (true, false) => vec![true; n],
            (false, false) => vec![false; n],
        };
        let info = test_info(&p, &self.common, Side::Server);
        let mut start = StartInfo {
            version: version_string(),
            system_info: rperf3_sys::system::uname_line(),
            timestamp_millis: rperf3_sys::time::unix_millis(),
            connecting_to: None,
            accepted_connection: Some(self.peer),
            cookie: std::str::from_utf8(&cookie[..COOKIE_LEN - 1])
                .unwrap_or("")
                .to_string(),
            tcp_mss: (!udp).then_some(if p.mss > 0 {
                MssInfo::Set(p.mss as u32)
            } else {
                MssInfo::Default(0)
            }),
            sock_bufsize: p.window.max(0) as u64,
            sndbuf_actual: 0,
            rcvbuf_actual: 0,
        };
        self.rep.set_server_output_requested(p.get_server_output);
        self.rep
            .set_peer_labels(p.title.clone(), p.extra_data.clone());
        self.rep.control_connected(&start, &info);
        let mut streams = Vec::with_capacity(roles.len());
        if udp {
            // The UDP listener exists before CREATE_STREAMS; earlier datagrams are lost.
            let addr = rperf3_sys::net::listen_addr(
                self.common.bind.as_deref(),
                self.common.port,
                self.common.family.into(),
            )
            .map_err(|e| IperfError::from_io(IE_STREAM_LISTEN, &e))?;
            let mut acc = UdpAcceptor::bind(
                addr,
                self.common
                    .bind
                    .as_deref()
                    .and_then(rperf3_sys::net::device_part),
            )
            .map_err(|e| IperfError::from_io(IE_STREAM_LISTEN, &e))?;
            let bytes = self.machine.begin_create_streams();
            self.ctrl.send(&bytes, IE_SEND_MESSAGE)?;
            let deadline = Instant::now() + STREAMS_TIMEOUT;
            let window = (p.window > 0).then_some(p.window as u32);
            while streams.len() < roles.len() {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(IperfError::new(IE_STREAM_ACCEPT));
                }
                self.check_abort()?;
                let last = streams.len() + 1 == roles.len();
                let got = acc
                    .accept(
                        left.min(Duration::from_millis(200)),
                        last,
                        p.len.max(1) as usize,
                        window,
                    )
                    .map_err(|e| IperfError::from_io(IE_STREAM_ACCEPT, &e))?;
                if let Some(sock) = got {
                    if p.dont_fragment && addr.is_ipv4() {
                        let _ = rperf3_sys::sockopt::set_dont_fragment(&sock);
                    }
                    let i = streams.len();
                    let s = LiveStream::udp(sock, i, roles[i])
                        .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
                    self.rep.stream_connected(&s.info);
                    streams.push(s);
                }
            }
        }
        if !udp {
            self.link.set_wants_streams(true);
            let bytes = self.machine.begin_create_streams();
            self.ctrl.send(&bytes, IE_SEND_MESSAGE)?;
        }
        let deadline = Instant::now() + STREAMS_TIMEOUT;
        while streams.len() < roles.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            self.check_abort()?;
            let conn = match self
                .incoming
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                Ok(c) => c,
                Err(RecvTimeoutError::Timeout) if !left.is_zero() => continue,
                Err(_) => return Err(IperfError::new(IE_STREAM_ACCEPT)),
            };
            if !stream_cookie_ok(&conn, &cookie) {
                // A wrong cookie: ACCESS_DENIED on that socket; the test goes on.
                let mut c = conn;
                let _ = std::io::Write::write_all(&mut c, &ACCESS_DENIED_BYTES);
                continue;
            }
            if p.window > 0 {
                let _ = rperf3_sys::net::set_buffer_sizes(&conn, p.window as usize);
            }
            if p.nodelay {
                let _ = conn.set_nodelay(true);
            }
            let i = streams.len();
            let s = LiveStream::tcp(conn, i, roles[i])
                .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?;
            self.rep.stream_connected(&s.info);
            streams.push(s);
        }
        self.link.set_wants_streams(false);
        let (snd, rcv) = streams.first().map_or((0, 0), LiveStream::buffer_sizes);
        start.sndbuf_actual = snd;
        start.rcvbuf_actual = rcv;
        let bytes = self.machine.all_streams_connected();
        self.ctrl.send(&bytes, IE_SEND_MESSAGE)?;
        let omit = Duration::from_secs(p.omit.max(0) as u64);
        let mut run = TestRun::start(streams, self.common.interval, omit, None);
        self.rep.start(&start, &info);
        let blk = p.len.max(1) as usize;
        let spec = crate::setup::send_spec(&p);
        run.spawn_workers(blk, &spec)
            .map_err(|e| IperfError::from_io(IE_PTHREAD_CREATE, &e))?;
        self.run = Some(run);
        self.params = Some(p);
        Ok(())
    }

    /// While waiting for streams: a signal, or the client giving up, ends the wait.
    fn check_abort(&mut self) -> Result<(), IperfError> {
        if self.stop.triggered() {
            return Err(IperfError::new(IE_SERVER_TERM));
        }
        if rperf3_sys::poll::readable(self.ctrl.sock(), Duration::ZERO).unwrap_or(false) {
            match self.read_events(Duration::from_millis(1))? {
                Some(ev)
                    if ev
                        .iter()
                        .any(|e| matches!(e, ServerEvent::ClientTerminated)) =>
                {
                    return Err(IperfError::new(IE_CLIENT_TERM))
                }
                None => return Err(IperfError::new(IE_SERVER_TERM)),
                _ => {}
            }
        }
        Ok(())
    }

    /// TEST_RUNNING until TEST_END: interval reports, safety and idle timers.
    /// `Ok(None)` if interrupted.
    fn running(&mut self) -> Result<Option<()>, IperfError> {
        let p = self.params.clone().expect("set by setup_streams");
        let safety = (p.time > 0).then(|| {
            Instant::now()
                + Duration::from_secs((p.time + p.omit.max(0)) as u64)
                + SERVER_TEST_DURATION_SLACK
        });
        let idle_limit = self.common.rcv_timeout;
        let mut last_rx = (0u64, Instant::now());
        loop {
            let now = Instant::now();
            let run = self.run.as_mut().expect("running");
            for iv in run.tick(now) {
                self.rep.interval(&iv);
            }
            if let Some(e) = run.worker_error() {
                let code = if run.has_senders() {
                    IE_STREAM_WRITE
                } else {
                    IE_STREAM_READ
                };
                return Err(IperfError::from_io(code, &e));
            }
            if safety.is_some_and(|t| now >= t) {
                return Err(IperfError::new(IE_SERVER_TEST_DURATION_EXPIRED));
            }
            let recv = run.totals().1.bytes;
            if recv != last_rx.0 {
                last_rx = (recv, now);
            } else if !p.bidirectional
                && run.streams.iter().any(|s| !s.info.sender)
                && now - last_rx.1 >= idle_limit
            {
                return Err(IperfError::new(IE_NO_MSG));
            }
            let wake = run.next_wake().map_or(Duration::from_millis(250), |w| {
                w.saturating_duration_since(now)
            });
            let events = match self.read_events(wake.min(Duration::from_millis(250))) {
                Ok(Some(ev)) => ev,
                Ok(None) => return Ok(None),
                Err(e) if e.code == IE_RECV_MESSAGE => continue,
                Err(e) => return Err(e),
            };
            for ev in events {
                match ev {
                    ServerEvent::TestEnd => {
                        self.end_of_test()?;
                        return Ok(Some(()));
                    }
                    ServerEvent::ClientTerminated => return Err(IperfError::new(IE_CLIENT_TERM)),
                    ServerEvent::Send(b) => self.ctrl.send(&b, IE_SEND_MESSAGE)?,
                    _ => return Err(IperfError::new(IE_MESSAGE)),
                }
            }
        }
    }

    /// TEST_END: last sample, close the streams, our report, EXCHANGE_RESULTS.
    fn end_of_test(&mut self) -> Result<(), IperfError> {
        let cong = self.congestion();
        let run = self.run.as_mut().expect("running");
        if let Some(iv) = run.finish() {
            self.rep.interval(&iv);
        }
        run.close();
        // The server's report is built before it knows the client's figures.
        let fin = run.final_input(cong, None);
        self.rep.end(&fin);
        self.reported_end = true;
        let bytes = self.machine.exchange_results();
        self.ctrl.send(&bytes, IE_SEND_MESSAGE)
    }

    fn congestion(&self) -> Option<String> {
        self.run
            .as_ref()?
            .streams
            .iter()
            .find_map(|s| s.tcp_socket().and_then(rperf3_sys::net::tcp_congestion))
    }

    fn local_results(&self) -> TestResults {
        let mut r = self
            .run
            .as_ref()
            .map(|run| run.results(self.congestion()))
            .unwrap_or_default();
        if self.params.as_ref().is_some_and(|p| p.get_server_output) {
            match self.rep.server_output_for_peer() {
                Some(rperf3_report::ServerOutput::Json(v)) => r.server_output_json = Some(v),
                Some(rperf3_report::ServerOutput::Text(t)) => r.server_output_text = Some(t),
                None => {}
            }
        }
        r
    }
}

/// Reads the 37-byte cookie of a data connection (bounded) and compares it.
fn stream_cookie_ok(conn: &TcpStream, cookie: &[u8; COOKIE_LEN]) -> bool {
    let mut got = [0u8; COOKIE_LEN];
    let _ = conn.set_read_timeout(Some(STREAM_COOKIE_TIMEOUT));
    let mut r = conn;
    let ok = r.read_exact(&mut got).is_ok() && cookie_matches(&got, cookie);
    let _ = conn.set_read_timeout(None);
    ok
}
