//! The server: a host of sessions on one port.
//!
//! The host thread accepts connections and reads each one's cookie itself
//! ([`pending`]); a cookie it knows makes the connection a data stream of that
//! session, a new one a new test: run now, queued, or refused by [`admission`].
//! Each test runs on its own session thread ([`crate::server::session`]); the two sides
//! talk through [`mail`]. UDP streams of all tests share the port through one
//! [`udp`] router. The host holds no test state, and nothing it does blocks:
//! every socket it reads is non-blocking and every wait has a deadline.

mod admission;
mod budget;
mod dispatch;
mod mail;
mod metrics;
mod pending;
mod refuse;
mod sctp;
mod session;
mod side;
mod udp;

pub use side::{Answer, SideService, StartSide, TestGate};

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use rperf3_proto::{IperfError, COOKIE_LEN, IE_LISTEN, IE_RECV_COOKIE, IE_SERVER_TERM};
use rperf3_report::Reporter;

use crate::auth::ServerAuth;
use crate::config::{CommonConfig, ServerConfig};
use crate::exclusive::{Exclusive, Held};
use crate::interrupt::Interrupt;
use crate::Outcome;
use admission::{Admission, Ticket};
use budget::StreamBudget;
use mail::VisitMsg;
use mail::{Inbox, Mailbox, ToHost, ToSession};
use metrics::{http::Endpoint, Metrics};
use pending::Pending;
use sctp::SctpListener;
use udp::UdpRouter;

/// Most data streams (threads) all tests together may have.
pub(crate) const MAX_TOTAL_STREAMS: usize = 1024;
/// Pause after accept() fails for lack of resources (EMFILE and friends).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);
/// Connections taken from the listener per wakeup (others wait for the next).
const ACCEPT_BATCH: usize = 64;
/// Handshakes freed when a test cannot start for lack of descriptors: its
/// session and its first data streams need a few.
const START_HEADROOM: usize = 8;
/// A wait with nothing due still wakes this often to reap finished threads.
const IDLE_WAKE: Duration = Duration::from_secs(1);

/// A running session, as the host sees it.
struct Running {
    cookie: [u8; COOKIE_LEN],
    ip: IpAddr,
    mailbox: Mailbox<ToSession>,
    thread: JoinHandle<()>,
    /// The node's slot, when the host shares it ([`ServeHooks::exclusive`]).
    _held: Option<Held>,
}

/// A client waiting for a slot: its cookie is read, it waits for PARAM_EXCHANGE.
struct Waiting {
    conn: TcpStream,
    peer: SocketAddr,
    cookie: [u8; COOKIE_LEN],
}

/// Makes a test's reporter; `Some(n)` labels the lines of test `n` when tests
/// may run side by side.
pub(crate) type MakeReporter<'a> = dyn FnMut(Option<u64>) -> Reporter + 'a;

/// What an embedder (the mesh agent) adds to a server.
#[derive(Debug, Default, Clone)]
pub struct ServeHooks {
    /// A slot the server shares with tests run outside it: a new test is
    /// refused as busy while anyone holds it, and holds it while it runs.
    pub exclusive: Option<Arc<Exclusive>>,
    /// More series for `--metrics`, encoded after the server's own.
    pub extra_metrics: Option<Arc<dyn Collector>>,
    /// Told once the server listens (and its metrics endpoint with it).
    pub ready: Option<std::sync::mpsc::SyncSender<()>>,
    /// A service beside the iperf3 port whose visitors take test slots
    /// (`--rpm-http`), started once the port listens.
    pub side: Option<SideService>,
}

/// Serves tests until interrupted (or after one with `-1`).
pub fn serve(
    sc: &ServerConfig,
    common: &CommonConfig,
    make_reporter: &mut MakeReporter<'_>,
    intr: &mut Interrupt,
    auth: Option<Arc<ServerAuth>>,
) -> Outcome {
    serve_with(sc, common, make_reporter, intr, auth, ServeHooks::default())
}

/// [`serve`], with what an embedder adds.
pub fn serve_with(
    sc: &ServerConfig,
    common: &CommonConfig,
    make_reporter: &mut MakeReporter<'_>,
    intr: &mut Interrupt,
    auth: Option<Arc<ServerAuth>>,
    hooks: ServeHooks,
) -> Outcome {
    let mut rep = make_reporter(None);
    let listener = match rperf3_sys::net::listen_tcp(
        common.bind.as_deref(),
        common.bind_dev.as_deref(),
        common.port,
        common.family,
    )
    .and_then(|l| l.set_nonblocking(true).map(|()| l))
    {
        Ok(l) => l,
        Err(e) => return Outcome::finish(&mut rep, Some(IperfError::from_io(IE_LISTEN, &e))),
    };
    let udp_addr =
        match rperf3_sys::net::listen_addr(common.bind.as_deref(), common.port, common.family) {
            Ok(a) => a,
            Err(e) => return Outcome::finish(&mut rep, Some(IperfError::from_io(IE_LISTEN, &e))),
        };
    let (to_host, inbox) = match mail::pair() {
        Ok(p) => p,
        Err(e) => return Outcome::finish(&mut rep, Some(IperfError::from_io(IE_LISTEN, &e))),
    };
    let metrics = Metrics::with_extra(hooks.extra_metrics.clone());
    // Bound before the banner: a taken or bad address is a startup error.
    let _endpoint = match sc.metrics {
        Some(addr) => match Endpoint::start(addr, metrics.clone()) {
            Ok(ep) => Some(ep),
            Err(e) => {
                let e = IperfError::with_detail(IE_LISTEN, format!("metrics on {addr}: {e}"));
                return Outcome::finish(&mut rep, Some(e));
            }
        },
        None => None,
    };
    let side = match &hooks.side {
        Some(start) => {
            let gate = match to_host.try_clone() {
                Ok(m) => TestGate::new(m),
                Err(e) => {
                    return Outcome::finish(&mut rep, Some(IperfError::from_io(IE_LISTEN, &e)))
                }
            };
            match (start.0)(gate) {
                Ok(running) => Some(running),
                Err(e) => {
                    let e = IperfError::with_detail(IE_LISTEN, format!("rpm-http: {e}"));
                    return Outcome::finish(&mut rep, Some(e));
                }
            }
        }
        None => None,
    };
    let device = common.bind_dev.clone().or_else(|| {
        common
            .bind
            .as_deref()
            .and_then(rperf3_sys::net::device_part)
            .map(str::to_string)
    });
    let mut host = Host {
        auth,
        hooks,
        sc,
        common,
        make_reporter,
        rep,
        listener: Arc::new(listener),
        pending: Pending::new(rperf3_proto::PhaseLimits::default().cookie),
        admission: Admission::new(sc.max_tests, sc.queue),
        waiting: HashMap::new(),
        sessions: HashMap::new(),
        visits: HashMap::new(),
        side,
        closing: Vec::new(),
        udp: UdpRouter::new(udp_addr, device),
        sctp: SctpListener::new(
            udp_addr,
            common.bind.as_deref(),
            common.family,
            &common.xbind,
        ),
        inbox,
        to_host,
        budget: StreamBudget::new(MAX_TOTAL_STREAMS),
        metrics,
        next_id: 1,
        backoff_until: None,
        last_accept_warning: None,
        idle_since: Some(Instant::now()),
        exiting: false,
    };
    host.rep.server_banner(common.port, host.next_id);
    if let Some(tx) = host.hooks.ready.take() {
        let _ = tx.send(());
    }
    host.run(intr)
}

struct Host<'a, 'b> {
    /// Clients must authenticate.
    auth: Option<Arc<ServerAuth>>,
    hooks: ServeHooks,
    sc: &'a ServerConfig,
    common: &'a CommonConfig,
    make_reporter: &'a mut MakeReporter<'b>,
    /// Banners and the host's own messages.
    rep: Reporter,
    listener: Arc<TcpListener>,
    pending: Pending,
    admission: Admission,
    waiting: HashMap<Ticket, Waiting>,
    sessions: HashMap<u64, Running>,
    /// Visits of the side service holding a slot: test number and address.
    visits: HashMap<u64, IpAddr>,
    /// The side service, while it runs.
    side: Option<Box<dyn Send>>,
    /// Threads of released sessions that may still be closing.
    closing: Vec<JoinHandle<()>>,
    udp: UdpRouter,
    sctp: SctpListener,
    inbox: Inbox<ToHost>,
    to_host: Mailbox<ToHost>,
    budget: Arc<StreamBudget>,
    metrics: Arc<Metrics>,
    next_id: u64,
    backoff_until: Option<Instant>,
    last_accept_warning: Option<Instant>,
    /// Since when the host has had no client at all (none running, queued or
    /// handshaking): `--idle-timeout` counts from there.
    idle_since: Option<Instant>,
    /// `-1` served its test, or a signal: no new tests; exit once all ended.
    exiting: bool,
}

/// Which poll slot is what.
#[derive(Clone, Copy)]
enum Slot {
    Signal,
    Inbox,
    Listener,
    Sctp,
    Udp,
    Pending,
    Waiting(Ticket),
}

impl Host<'_, '_> {
    fn run(mut self, intr: &mut Interrupt) -> Outcome {
        // Set by a signal; true if no test was running then: the host itself
        // reports the interruption (a running test reports it in its own output).
        let mut interrupted = false;
        let mut idle_at_signal = false;
        loop {
            self.reap_closing(false);
            if self.exiting && self.sessions.is_empty() && self.visits.is_empty() {
                break;
            }
            let now = Instant::now();
            if self.backoff_until.is_some_and(|t| now >= t) {
                self.backoff_until = None;
            }
            if self.idle_deadline().is_some_and(|t| now >= t) {
                // iperf3 3.21 restarts an idle server (nothing to reset here:
                // every phase has its own deadline), and a one-off one exits.
                break;
            }
            let (ready, slots) = match self.poll(intr, now) {
                Ok(r) => r,
                Err(e) => {
                    self.rep
                        .log_error(&IperfError::from_io(rperf3_proto::IE_SELECT, &e).text());
                    std::thread::sleep(ACCEPT_BACKOFF);
                    continue;
                }
            };
            let now = Instant::now();
            let mut pending_ready = Vec::new();
            let mut gone = Vec::new();
            for (r, slot) in ready.into_iter().zip(slots) {
                match slot {
                    Slot::Pending => pending_ready.push(r),
                    _ if !r => {}
                    Slot::Signal => {
                        if intr.triggered() && !interrupted {
                            interrupted = true;
                            idle_at_signal = self.sessions.is_empty();
                            self.shut_down();
                        }
                    }
                    Slot::Inbox => self.on_messages(),
                    Slot::Listener => self.accept(now),
                    Slot::Sctp => {
                        if let Some(e) = self.sctp.accept(&mut self.pending, now) {
                            self.rep.log_error(
                                &IperfError::from_io(rperf3_proto::IE_STREAM_ACCEPT, &e).text(),
                            );
                        }
                    }
                    Slot::Udp => self.route_udp(),
                    Slot::Waiting(t) => gone.push(t),
                }
            }
            for t in gone {
                // A waiting client may only wait: it left or spoke out of turn.
                self.admission.leave_queue(t);
                self.waiting.remove(&t);
            }
            let (done, expired) = self.pending.on_ready(&pending_ready, now);
            for (h, why) in expired {
                // As iperf3 does for a connection that never sent its cookie.
                self.rep
                    .log_error(&IperfError::with_detail(IE_RECV_COOKIE, why).text());
                drop(h);
            }
            for (h, cookie) in done {
                if h.sctp {
                    self.route_sctp(h.conn, cookie);
                } else {
                    self.route(h.conn, h.peer, cookie);
                }
            }
            self.start_waiting();
            self.metrics
                .set_load(self.sessions.len() + self.visits.len(), self.waiting.len());
            let idle = self.sessions.is_empty()
                && self.visits.is_empty()
                && self.pending.is_empty()
                && self.waiting.is_empty();
            match (idle, self.idle_since) {
                (false, _) => self.idle_since = None,
                (true, None) => self.idle_since = Some(now),
                (true, Some(_)) => {}
            }
        }
        // Stops the side service (its runtime and connections) before the exit.
        self.side = None;
        self.reap_closing(true);
        if idle_at_signal {
            // Signal exit: iperf3 3.19+ exits 0.
            self.rep
                .interrupted(&IperfError::new(IE_SERVER_TERM).text());
            let _ = self.rep.finish();
        }
        Outcome { status: 0 }
    }

    /// When a one-off server with `--idle-timeout` gives up waiting for a client.
    fn idle_deadline(&self) -> Option<Instant> {
        let limit = self.sc.idle_timeout.filter(|_| self.sc.one_off)?;
        Some(self.idle_since? + limit)
    }

    /// Waits for any of the host's sockets, up to the next deadline.
    fn poll(&self, intr: &Interrupt, now: Instant) -> io::Result<(Vec<bool>, Vec<Slot>)> {
        let mut fds: Vec<BorrowedFd<'_>> = vec![intr.fd(), self.inbox.fd()];
        let mut slots = vec![Slot::Signal, Slot::Inbox];
        if self.backoff_until.is_none() && !self.exiting {
            fds.push(self.listener.as_fd());
            slots.push(Slot::Listener);
        }
        if let Some(u) = self.udp.socket() {
            fds.push(u.as_fd());
            slots.push(Slot::Udp);
        }
        if let Some(l) = self.sctp.socket() {
            fds.push(l.as_fd());
            slots.push(Slot::Sctp);
        }
        for (t, w) in &self.waiting {
            fds.push(w.conn.as_fd());
            slots.push(Slot::Waiting(*t));
        }
        for fd in self.pending.fds() {
            fds.push(fd);
            slots.push(Slot::Pending);
        }
        let wake = [
            self.pending.next_deadline(),
            self.backoff_until,
            self.idle_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
        .map_or(IDLE_WAKE, |t| t.saturating_duration_since(now))
        .min(IDLE_WAKE);
        let ready = rperf3_sys::poll::wait_readable(&fds, wake)?;
        Ok((ready, slots))
    }

    /// Takes new connections into the handshake set.
    fn accept(&mut self, now: Instant) {
        for _ in 0..ACCEPT_BATCH {
            match self.listener.accept() {
                Ok((conn, peer)) => {
                    if let Ok(Some(old)) = self.pending.add(conn, peer, now) {
                        drop(old);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    // Out of descriptors or memory: free the oldest handshake
                    // (so clients behind a flood of idle connections still get
                    // in), or pause when there is none to free; say so once a
                    // second. Other errors (a connection reset while
                    // queued) concern only that connection.
                    if rperf3_sys::net::out_of_resources(&e) {
                        let freed = self.pending.evict_oldest().is_some();
                        if !freed {
                            self.backoff_until = Some(now + ACCEPT_BACKOFF);
                        }
                        if self
                            .last_accept_warning
                            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
                        {
                            self.last_accept_warning = Some(now);
                            self.rep.log_error(
                                &IperfError::from_io(rperf3_proto::IE_ACCEPT, &e).text(),
                            );
                        }
                        // Back to poll before the next accept: cookies that
                        // have arrived are read and routed first.
                        return;
                    }
                }
            }
        }
    }

    fn on_messages(&mut self) {
        for msg in self.inbox.drain() {
            match msg {
                ToHost::UdpWanted { id, ip, streams } => {
                    let r = self.udp.request(id, ip, streams);
                    self.grant_udp(r);
                }
                ToHost::SctpWanted { id } => {
                    let r = self.sctp.request(id);
                    if let Some(s) = self.sessions.get(&id) {
                        s.mailbox.send(ToSession::SctpListening(r));
                    }
                }
                ToHost::UdpDone { id } => {
                    let r = self.udp.release(id);
                    self.grant_udp(r);
                }
                ToHost::Released { id, counted } => self.released(id, counted),
                ToHost::Visit(VisitMsg::Arrive { ip, answer }) => self.visit_arrived(ip, answer),
                ToHost::Visit(VisitMsg::Left { id, received, sent }) => {
                    self.visit_left(id, received, sent);
                }
            }
        }
    }

    fn grant_udp(&mut self, granted: io::Result<Vec<u64>>) {
        match granted {
            Ok(ids) => {
                for id in ids {
                    if let Some(s) = self.sessions.get(&id) {
                        s.mailbox.send(ToSession::UdpGranted);
                    }
                }
            }
            Err(e) => {
                self.rep
                    .log_error(&IperfError::from_io(rperf3_proto::IE_STREAM_LISTEN, &e).text());
            }
        }
    }

    fn route_udp(&mut self) {
        match self.udp.on_readable() {
            Ok(Some((id, sock))) => {
                if let Some(s) = self.sessions.get(&id) {
                    s.mailbox.send(ToSession::Udp(sock));
                }
            }
            Ok(None) => {}
            Err(e) => self
                .rep
                .log_error(&IperfError::from_io(rperf3_proto::IE_STREAM_ACCEPT, &e).text()),
        }
    }

    /// A test is over: free its slot, and with `-1` stop taking tests.
    fn released(&mut self, id: u64, counted: bool) {
        let Some(s) = self.sessions.remove(&id) else {
            return;
        };
        self.admission.finished(s.ip);
        self.sctp.release(id);
        let r = self.udp.release(id);
        self.grant_udp(r);
        self.closing.push(s.thread);
        if self.sc.one_off && counted {
            self.exiting = true;
            for t in self.admission.take_queue() {
                if let Some(w) = self.waiting.remove(&t) {
                    self.refuse_busy(w.conn);
                }
            }
        }
        if !self.exiting {
            self.rep.server_banner(self.common.port, self.next_id);
        }
    }

    /// A side service's visitor wants a slot: it gets one now or is refused
    /// (it cannot wait in the queue: its client would time out instead).
    fn visit_arrived(&mut self, ip: IpAddr, answer: Answer) {
        let busy = self.exiting || !self.admission.arrive_now(ip);
        if busy {
            self.metrics.visit_refused();
            answer(None);
            return;
        }
        let id = self.next_id;
        self.next_id += 1;
        self.visits.insert(id, ip);
        answer(Some(id));
    }

    /// A visit ended: its slot is free, and with `-1` the server stops taking tests.
    fn visit_left(&mut self, id: u64, received: u64, sent: u64) {
        let Some(ip) = self.visits.remove(&id) else {
            return;
        };
        self.admission.finished(ip);
        self.metrics.visit_ended(received, sent);
        if self.sc.one_off {
            self.exiting = true;
            for t in self.admission.take_queue() {
                if let Some(w) = self.waiting.remove(&t) {
                    self.refuse_busy(w.conn);
                }
            }
        }
    }

    /// A signal: every session is told to stop; no new tests.
    fn shut_down(&mut self) {
        self.exiting = true;
        // The side service's visits end with it.
        self.side = None;
        for (_, ip) in self.visits.drain() {
            self.admission.finished(ip);
        }
        for s in self.sessions.values() {
            s.mailbox.send(ToSession::Stop);
        }
        for t in self.admission.take_queue() {
            if let Some(w) = self.waiting.remove(&t) {
                self.refuse_busy(w.conn);
            }
        }
    }

    /// Joins the threads of released sessions (all of them with `wait`).
    fn reap_closing(&mut self, wait: bool) {
        let (done, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.closing)
            .into_iter()
            .partition(|t| wait || t.is_finished());
        self.closing = still;
        for t in done {
            let _ = t.join();
        }
    }
}
