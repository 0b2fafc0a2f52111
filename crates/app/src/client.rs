//! The client driver: one test against a server, from connect to IPERF_DONE.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rperf3_engine::budget::{Budget, BudgetUnit};
use rperf3_engine::counters::CounterSnapshot;
use rperf3_proto::*;
use rperf3_report::input::{MssInfo, Side, StartInfo};
use rperf3_report::{Reporter, ServerOutput};

use crate::config::{ClientConfig, CommonConfig, EndCondition};
use crate::ctrl::{Ctrl, Read0};
use crate::interrupt::Interrupt;
use crate::setup::{client_params, test_info, version_string};
use crate::streams::{connect_tcp_stream, LiveStream};
use crate::testrun::TestRun;
use crate::Outcome;

/// How often a byte/block-limited receiving client checks its totals.
const LIMIT_CHECK: Duration = Duration::from_millis(10);

/// Runs one client test. Errors are reported through `rep` (JSON `error` key or
/// `<prog>: error - ...`) and returned so the binary can set the exit status.
pub fn run(
    cc: &ClientConfig,
    common: &CommonConfig,
    rep: &mut Reporter,
    intr: &mut Interrupt,
) -> Outcome {
    let mut c = Client {
        cc,
        common,
        params: client_params(cc),
        run: None,
        peer: None,
        ctrl_mss: 0,
        server: None,
    };
    let res = c.drive(rep, intr);
    c.conclude(res, rep)
}

struct Client<'a> {
    cc: &'a ClientConfig,
    common: &'a CommonConfig,
    params: TestParams,
    run: Option<TestRun>,
    peer: Option<TestResults>,
    ctrl_mss: u32,
    server: Option<SocketAddr>,
}

/// Why the drive loop stopped early.
enum Stop {
    Error(IperfError),
    /// SIGINT/SIGTERM: CLIENT_TERMINATE was sent.
    Interrupted,
    /// SERVER_TERMINATE received.
    ServerTerminated,
}

impl Client<'_> {
    fn drive(
        &mut self,
        rep: &mut Reporter,
        intr: &mut Interrupt,
    ) -> Result<(Ctrl, ClientMachine), Stop> {
        let addrs =
            rperf3_sys::net::resolve(&self.cc.host, self.common.port, self.common.family.into())
                .map_err(|e| Stop::Error(IperfError::with_detail(IE_CONNECT, gai_text(&e))))?;
        let sock = rperf3_sys::net::connect_tcp(
            &addrs,
            self.common.bind.as_deref(),
            0,
            self.device(),
            self.cc.connect_timeout,
        )
        .map_err(|e| Stop::Error(IperfError::from_io(IE_CONNECT, &e)))?;
        self.server = sock.peer_addr().ok();
        let mut ctrl =
            Ctrl::new(sock).map_err(|e| Stop::Error(IperfError::from_io(IE_CONNECT, &e)))?;
        let mut random = [0u8; COOKIE_LEN - 1];
        rperf3_sys::random::fill(&mut random);
        let cookie = make_cookie(&random);
        // A busy server writes 0xFF and closes before reading the cookie; the
        // write may then fail, but the 0xFF is still there to read.
        let cookie_sent = ctrl.send(&cookie, IE_SEND_COOKIE);
        // Read after the first write, as iperf3: that settles the kernel's MSS.
        self.ctrl_mss = rperf3_sys::net::tcp_mss(ctrl.sock());
        if self.params.len == 0 {
            // UDP without -l: the control connection's MSS, as iperf3.
            self.params.len = crate::setup::default_udp_len(self.ctrl_mss) as i32;
        }
        let mut m = ClientMachine::new(cookie, &self.params);
        if let Err(e) = cookie_sent {
            if !matches!(self.pump(&mut ctrl, &mut m, rep, intr, Duration::from_secs(1)), Err(Stop::Error(ref x)) if x.code == IE_ACCESS_DENIED)
            {
                return Err(Stop::Error(e));
            }
            return Err(Stop::Error(IperfError::new(IE_ACCESS_DENIED)));
        }
        let start = StartInfo {
            version: version_string(),
            system_info: rperf3_sys::system::uname_line(),
            timestamp_millis: rperf3_sys::time::unix_millis(),
            connecting_to: Some((self.cc.host.clone(), self.common.port)),
            accepted_connection: None,
            cookie: cookie_str(&cookie).to_string(),
            tcp_mss: (self.params.protocol != Protocol::Udp)
                .then_some(MssInfo::Default(self.ctrl_mss)),
            sock_bufsize: self.cc.window.unwrap_or(0) as u64,
            sndbuf_actual: 0,
            rcvbuf_actual: 0,
        };
        let info = test_info(&self.params, self.common, Side::Client);
        rep.preamble();
        rep.control_mss(self.ctrl_mss);
        let mut start = Some(start);
        let mut cookie_once = Some(cookie);
        let mut pending: Vec<LiveStream> = Vec::new();
        loop {
            let events = self.pump(&mut ctrl, &mut m, rep, intr, UNIT_READ_TOTAL_TIMEOUT)?;
            for ev in events {
                match ev {
                    ClientEvent::SendParams(bytes) => {
                        // The server took us on: only now is the test "connected"
                        // (a refused client prints nothing but the error).
                        if let Some(st) = start.as_mut() {
                            st.timestamp_millis = rperf3_sys::time::unix_millis();
                            rep.control_connected(st, &info);
                        }
                        ctrl.send(&bytes, IE_SEND_PARAMS).map_err(Stop::Error)?
                    }
                    ClientEvent::CreateStreams => {
                        let ck = cookie_once.take().unwrap_or(cookie);
                        pending = self.create_streams(&ck, rep).map_err(Stop::Error)?;
                        if let (Some(st), Some(first)) = (start.as_mut(), pending.first()) {
                            let (snd, rcv) = first.buffer_sizes();
                            st.sndbuf_actual = snd;
                            st.rcvbuf_actual = rcv;
                        }
                    }
                    ClientEvent::TestStart => {
                        let omit = Duration::from_secs(self.params.omit.max(0) as u64);
                        let streams = std::mem::take(&mut pending);
                        self.run = Some(TestRun::start(
                            streams,
                            self.common.interval,
                            omit,
                            self.budget(),
                        ));
                        if let Some(st) = start.take() {
                            rep.start(&st, &info);
                        }
                    }
                    ClientEvent::TestRunning => {
                        let blk = self.params.len.max(1) as usize;
                        let spec = crate::setup::send_spec(&self.params);
                        if let Some(run) = self.run.as_mut() {
                            run.spawn_workers(blk, &spec).map_err(|e| {
                                Stop::Error(IperfError::from_io(IE_PTHREAD_CREATE, &e))
                            })?;
                        }
                        self.run_test(&mut ctrl, &mut m, rep, intr)?;
                    }
                    ClientEvent::ExchangeResults => {
                        let r = self.local_results();
                        let bytes = m.send_results(&r);
                        ctrl.send(&bytes, IE_SEND_RESULTS).map_err(Stop::Error)?;
                    }
                    ClientEvent::PeerResults(r) => self.peer = Some(r),
                    ClientEvent::DisplayResults => return Ok((ctrl, m)),
                    ClientEvent::ServerTerminate => {
                        let _ = ctrl.send(&m.done(), IE_SEND_MESSAGE);
                        return Err(Stop::ServerTerminated);
                    }
                    ClientEvent::AccessDenied => {
                        return Err(Stop::Error(IperfError::new(IE_ACCESS_DENIED)))
                    }
                    ClientEvent::ServerError { code, errno } => {
                        return Err(Stop::Error(IperfError::with_errno(code, errno)))
                    }
                }
            }
        }
    }

    /// Reads the control connection once (up to `wait`) and feeds the machine.
    fn pump(
        &mut self,
        ctrl: &mut Ctrl,
        m: &mut ClientMachine,
        _rep: &mut Reporter,
        intr: &mut Interrupt,
        wait: Duration,
    ) -> Result<Vec<ClientEvent>, Stop> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Stop::Error(IperfError::new(IE_RECV_MESSAGE)));
            }
            let ready = rperf3_sys::poll::wait_readable(&[ctrl.fd(), intr.fd()], left)
                .map_err(|e| Stop::Error(IperfError::from_io(IE_SELECT, &e)))?;
            if ready[1] && intr.triggered() {
                let _ = ctrl.send(&m.terminate(), IE_SEND_MESSAGE);
                return Err(Stop::Interrupted);
            }
            if !ready[0] {
                continue;
            }
            return match ctrl.read(Duration::ZERO) {
                Ok((Read0::Data(_), bytes)) => m.on_bytes(bytes).map_err(Stop::Error),
                Ok((Read0::Idle, _)) => Ok(Vec::new()),
                Ok((Read0::Eof, _)) => match m.on_eof() {
                    Ok(ev) if !ev.is_empty() => Ok(ev),
                    Ok(_) => Err(Stop::Error(IperfError::new(IE_CTRL_CLOSE))),
                    Err(e) => Err(Stop::Error(e)),
                },
                Err(e) => Err(Stop::Error(IperfError::from_io(IE_CTRL_READ, &e))),
            };
        }
    }

    /// `-c host%dev` or `-B addr%dev`: SO_BINDTODEVICE on every socket.
    fn device(&self) -> Option<&str> {
        rperf3_sys::net::device_part(&self.cc.host).or_else(|| {
            self.common
                .bind
                .as_deref()
                .and_then(rperf3_sys::net::device_part)
        })
    }

    fn budget(&self) -> Option<Budget> {
        match self.cc.end {
            EndCondition::Time(_) => None,
            EndCondition::Bytes(n) => Some(Budget::new(BudgetUnit::Bytes, n)),
            EndCondition::Blocks(n) => Some(Budget::new(BudgetUnit::Blocks, n)),
        }
    }

    fn create_streams(
        &mut self,
        cookie: &[u8; COOKIE_LEN],
        rep: &mut Reporter,
    ) -> Result<Vec<LiveStream>, IperfError> {
        let server = self
            .server
            .ok_or_else(|| IperfError::new(IE_CREATE_STREAM))?;
        let n = self.params.parallel.max(1) as usize;
        // The client creates its senders first, then its receivers (bidir).
        let roles: Vec<bool> = match (self.params.reverse, self.params.bidirectional) {
            (_, true) => std::iter::repeat_n(true, n)
                .chain(std::iter::repeat_n(false, n))
                .collect(),
            (true, false) => vec![false; n],
            (false, false) => vec![true; n],
        };
        let mut out = Vec::with_capacity(roles.len());
        let udp = self.params.protocol == Protocol::Udp;
        for (i, sender) in roles.into_iter().enumerate() {
            let ls = if udp {
                let len = self.params.len.max(1) as usize;
                let s = crate::udp_setup::connect_stream(
                    server,
                    self.common.bind.as_deref(),
                    self.device(),
                    len,
                    self.cc.window,
                    UDP_CONNECT_TIMEOUT,
                )
                .map_err(|e| {
                    IperfError::from_io(
                        if e.kind() == std::io::ErrorKind::TimedOut {
                            IE_STREAM_READ
                        } else {
                            IE_STREAM_CONNECT
                        },
                        &e,
                    )
                })?;
                if self.cc.dont_fragment && server.is_ipv4() {
                    rperf3_sys::sockopt::set_dont_fragment(&s)
                        .map_err(|e| IperfError::from_io(IE_SET_DONT_FRAGMENT, &e))?;
                }
                LiveStream::udp(s, i, sender)
                    .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?
            } else {
                let s = connect_tcp_stream(
                    server,
                    self.common.bind.as_deref(),
                    self.device(),
                    cookie,
                    Duration::from_secs(10),
                )
                .map_err(|e| IperfError::from_io(IE_STREAM_CONNECT, &e))?;
                if let Some(w) = self.cc.window {
                    rperf3_sys::net::set_buffer_sizes(&s, w as usize)
                        .map_err(|e| IperfError::from_io(IE_SET_BUF, &e))?;
                }
                LiveStream::tcp(s, i, sender)
                    .map_err(|e| IperfError::from_io(IE_INIT_STREAM, &e))?
            };
            rep.stream_connected(&ls.info);
            out.push(ls);
        }
        Ok(out)
    }

    /// TEST_RUNNING until the end condition: ticks, reports, then TEST_END.
    fn run_test(
        &mut self,
        ctrl: &mut Ctrl,
        m: &mut ClientMachine,
        rep: &mut Reporter,
        intr: &mut Interrupt,
    ) -> Result<(), Stop> {
        let run = self.run.as_mut().expect("streams exist at TEST_RUNNING");
        let test_end = match self.cc.end {
            // -t 0: no time limit, as iperf3.
            // Timed from TEST_START, like the interval ticks.
            EndCondition::Time(t) if t > 0 => Some(
                run.started_at()
                    + Duration::from_secs(u64::from(t) + self.params.omit.max(0) as u64),
            ),
            _ => None,
        };
        let limit = match self.cc.end {
            EndCondition::Bytes(n) => Some((n, false)),
            EndCondition::Blocks(n) => Some((n, true)),
            EndCondition::Time(_) => None,
        };
        // A client that only receives (-R) gives up after --rcv-timeout of silence.
        let mut last_rx = (0u64, Instant::now());
        loop {
            let now = Instant::now();
            if let Some(e) = run.worker_error() {
                let code = if run.has_senders() {
                    IE_STREAM_WRITE
                } else {
                    IE_STREAM_READ
                };
                return Err(Stop::Error(IperfError::from_io(code, &e)));
            }
            let (sent, recv) = run.totals();
            if recv.bytes != last_rx.0 {
                last_rx = (recv.bytes, now);
            } else if !run.has_senders() && now - last_rx.1 >= self.common.rcv_timeout {
                return Err(Stop::Error(IperfError::new(IE_NO_MSG)));
            }
            let done = match (test_end, limit) {
                (Some(t), _) => now >= t,
                // Limits count only after the omit period, as in iperf3.
                (None, Some((n, blocks))) if run.past_omit() => {
                    let pick = |c: CounterSnapshot| if blocks { c.blocks } else { c.bytes };
                    // Senders stop by themselves when the budget is used up; a
                    // receiving client counts what arrived (iperf3 checks both).
                    (run.has_senders() && run.senders_done() && run.budget_exhausted())
                        || pick(recv) >= n
                        || (pick(sent) >= n && run.senders_done())
                }
                (None, _) => false,
            };
            if done {
                if let Some(iv) = run.finish() {
                    rep.interval(&iv);
                }
                ctrl.send(&m.end_test(), IE_SEND_MESSAGE)
                    .map_err(Stop::Error)?;
                return Ok(());
            }
            // The end is checked first so the last full interval closes at the end.
            for iv in run.tick(now) {
                rep.interval(&iv);
            }
            let mut wake = run.next_wake().into_iter().chain(test_end).min();
            if limit.is_some() {
                wake = Some(wake.map_or(now + LIMIT_CHECK, |w| w.min(now + LIMIT_CHECK)));
            }
            let wait = wake
                .map_or(Duration::from_millis(250), |w| {
                    w.saturating_duration_since(now)
                })
                .min(Duration::from_millis(250));
            let ready = rperf3_sys::poll::wait_readable(&[ctrl.fd(), intr.fd()], wait)
                .map_err(|e| Stop::Error(IperfError::from_io(IE_SELECT, &e)))?;
            if ready[1] && intr.triggered() {
                let _ = ctrl.send(&m.terminate(), IE_SEND_MESSAGE);
                return Err(Stop::Interrupted);
            }
            if ready[0] {
                let evs = match ctrl.read(Duration::ZERO) {
                    Ok((Read0::Data(_), bytes)) => m.on_bytes(bytes).map_err(Stop::Error)?,
                    Ok((Read0::Idle, _)) => Vec::new(),
                    Ok((Read0::Eof, _)) => return Err(Stop::Error(IperfError::new(IE_CTRL_CLOSE))),
                    Err(e) => return Err(Stop::Error(IperfError::from_io(IE_CTRL_READ, &e))),
                };
                // During the test the server may only stop it.
                if let Some(ev) = evs.into_iter().next() {
                    return Err(match ev {
                        ClientEvent::ServerTerminate => {
                            let _ = ctrl.send(&m.done(), IE_SEND_MESSAGE);
                            Stop::ServerTerminated
                        }
                        ClientEvent::ServerError { code, errno } => {
                            Stop::Error(IperfError::with_errno(code, errno))
                        }
                        ClientEvent::AccessDenied => Stop::Error(IperfError::new(IE_ACCESS_DENIED)),
                        _ => Stop::Error(IperfError::new(IE_MESSAGE)),
                    });
                }
            }
        }
    }

    fn local_results(&self) -> TestResults {
        let cong = self.local_congestion();
        self.run
            .as_ref()
            .map(|r| r.results(cong))
            .unwrap_or_default()
    }

    fn local_congestion(&self) -> Option<String> {
        self.run
            .as_ref()?
            .streams
            .iter()
            .find_map(|s| s.tcp_socket().and_then(rperf3_sys::net::tcp_congestion))
    }

    /// Prints the end of the test (full or partial) and the error, if any.
    fn conclude(
        &mut self,
        res: Result<(Ctrl, ClientMachine), Stop>,
        rep: &mut Reporter,
    ) -> Outcome {
        if let Some(run) = self.run.as_mut() {
            if let Some(iv) = run.finish() {
                rep.interval(&iv);
            }
            run.close();
        }
        let cong = self.local_congestion();
        let end = |rep: &mut Reporter, run: &Option<TestRun>, peer: Option<&TestResults>| {
            if let Some(r) = run {
                rep.end(&r.final_input(cong.clone(), peer));
            }
        };
        match res {
            Ok((mut ctrl, mut m)) => {
                end(rep, &self.run, self.peer.as_ref());
                if let Some(p) = &self.peer {
                    if let Some(j) = &p.server_output_json {
                        rep.server_output(ServerOutput::Json(j.clone()));
                    } else if let Some(t) = &p.server_output_text {
                        rep.server_output(ServerOutput::Text(t.clone()));
                    }
                }
                let _ = ctrl.send(&m.done(), IE_SEND_MESSAGE);
                ctrl.close_gracefully(Duration::from_secs(2));
                Outcome::finish(rep, None)
            }
            Err(Stop::ServerTerminated) => {
                end(rep, &self.run, None);
                Outcome::finish(rep, Some(IperfError::new(IE_SERVER_TERM)))
            }
            Err(Stop::Interrupted) => {
                end(rep, &self.run, None);
                Outcome::interrupted(rep, IE_CLIENT_TERM)
            }
            Err(Stop::Error(e)) => Outcome::finish(rep, Some(e)),
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
