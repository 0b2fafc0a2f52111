//! The iperf 2 TCP server's host loop: one listener, each accepted connection
//! its own test thread (as iperf 2), the `-P N`, `-1`, `-t` and `-c host`
//! limits, and SIGINT, which ends every running test with its final rows out.
//!
//! The listener never reads a header itself (iperf 2's does, and a silent
//! client stalls it): a session thread does, under an absolute deadline, so
//! the next client is accepted at once whatever the previous one sends.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rperf3_report::iperf2::model::Event2;
use rperf3_report::iperf2::Report2;
use rperf3_sys::net;

use super::config::{Config2, Role2, Server2};
use super::interval::Intervals;
use super::tcp_session;
use super::tcp_setup::{self, apply_opts, Wake};
use super::Outcome2;
use crate::Interrupt;

/// Connections in their header phase at once (each a thread for at most the
/// header deadline).
pub(crate) const MAX_PENDING: u32 = 64;

/// What every session of one server shares.
pub(crate) struct Shared {
    /// The configuration.
    pub(crate) cfg: Config2,
    /// Where events go.
    pub(crate) report: Arc<dyn Report2>,
    /// The next transfer id (iperf 2 numbers connections from 1 on).
    ids: AtomicU32,
    /// Tests that started (a valid header was read).
    pub(crate) served: AtomicU32,
    /// Sessions whose thread has not yet ended.
    live: AtomicU32,
    /// Connections still sending their header, oldest first: past
    /// [`MAX_PENDING`] the oldest is shut down to make room, so a flood of
    /// silent connections neither piles up threads nor keeps a real client out.
    pending: Mutex<std::collections::VecDeque<(u64, SocketAddr, TcpStream)>>,
    /// Set on SIGINT: sessions end at once.
    pub(crate) stopping: AtomicBool,
    /// The sockets of running sessions, so SIGINT can end them.
    socks: Mutex<HashMap<u64, Vec<Arc<TcpStream>>>>,
    /// The open-flow counts of the tests' report sets.
    sets: Mutex<Vec<std::sync::Weak<AtomicUsize>>>,
    next_session: AtomicU64,
    /// Open `-P` groups of streams from one client, by its address.
    pub(crate) groups: Mutex<Vec<(IpAddr, Arc<Group>)>>,
    /// The port the server listens on (a connection back there is refused).
    pub(crate) port: u16,
    /// The server's wake-up pipe (a session ended).
    waker: std::os::unix::net::UnixStream,
}

/// The streams of one `-P` client, reporting together with `[SUM]` rows.
pub(crate) struct Group {
    /// Their interval set.
    pub(crate) iv: Intervals,
    /// Streams the client announced.
    pub(crate) expected: u32,
    /// Streams that joined.
    pub(crate) joined: AtomicU32,
    /// Streams still running; the last one to end closes the set.
    pub(crate) live: AtomicU32,
}

impl Shared {
    /// A new transfer id.
    pub(crate) fn next_id(&self) -> u32 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers sockets SIGINT must shut down; returns the key to forget them.
    pub(crate) fn track(&self, socks: &[Arc<TcpStream>]) -> u64 {
        let k = self.next_session.fetch_add(1, Ordering::Relaxed);
        let mut g = self.socks.lock().unwrap_or_else(|p| p.into_inner());
        g.insert(k, socks.to_vec());
        if self.stopping.load(Ordering::Acquire) {
            shut(socks);
        }
        k
    }

    /// Adds a socket to a registration.
    pub(crate) fn track_more(&self, k: u64, s: &Arc<TcpStream>) {
        let mut g = self.socks.lock().unwrap_or_else(|p| p.into_inner());
        g.entry(k).or_default().push(s.clone());
        if self.stopping.load(Ordering::Acquire) {
            shut(std::slice::from_ref(s));
        }
    }

    /// Watches a test's flows for [`Shared::running`].
    pub(crate) fn watch(&self, open: &Arc<AtomicUsize>) {
        let mut g = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|w| w.strong_count() > 0);
        g.push(Arc::downgrade(open));
    }

    /// Whether any test still moves data: a signal then says it waits.
    fn running(&self) -> bool {
        let g = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        g.iter()
            .filter_map(std::sync::Weak::upgrade)
            .any(|n| n.load(Ordering::Acquire) > 0)
    }

    /// Forgets a registration.
    pub(crate) fn untrack(&self, k: u64) {
        self.socks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&k);
    }

    fn stop_all(&self) {
        self.stopping.store(true, Ordering::Release);
        let g = self.socks.lock().unwrap_or_else(|p| p.into_inner());
        for s in g.values() {
            shut(s);
        }
    }

    /// Registers a connection in its header phase; returns its key.
    pub(crate) fn header_wait(&self, s: &TcpStream, peer: SocketAddr) -> Option<u64> {
        let k = self.next_session.fetch_add(1, Ordering::Relaxed);
        let c = s.try_clone().ok()?;
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push_back((k, peer, c));
        Some(k)
    }

    /// The header phase of `k` is over.
    pub(crate) fn header_done(&self, k: Option<u64>) {
        let mut g = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|(x, _, _)| Some(*x) != k);
    }

    /// At the limit, ends the oldest connection still in its header phase.
    fn make_room(&self) {
        let mut g = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        while g.len() >= MAX_PENDING as usize {
            if let Some((_, peer, s)) = g.pop_front() {
                let _ = s.shutdown(std::net::Shutdown::Both);
                self.report.event(Event2::Message(format!(
                    "WARNING: {} port {}: closed while still sending its test header, \
                     to make room ({MAX_PENDING} connections were waiting)",
                    peer.ip(),
                    peer.port()
                )));
            }
        }
    }

    /// Tells the host loop a session ended.
    pub(crate) fn session_ended(&self) {
        tcp_setup::wake(&self.waker);
    }
}

/// Ends a session's connections on SIGINT: blocked reads and writes return,
/// and the last close resets the connection (linger 0). A plain FIN can leave
/// a stock client blocked for a minute: if our receive window was closed when
/// we stopped reading, its zero-window probes are answered by the orphaned
/// socket and never see an error.
fn shut(socks: &[Arc<TcpStream>]) {
    for s in socks {
        let _ = socket2::SockRef::from(&**s).set_linger(Some(Duration::ZERO));
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
}

/// Runs the server described by `cfg` (its role must be a server).
pub(crate) fn run(cfg: &Config2, report: Arc<dyn Report2>, mut intr: Interrupt) -> Outcome2 {
    let Role2::Server(sv) = &cfg.role else {
        return Outcome2 { status: 1 };
    };
    match host(cfg, sv, report.clone(), &mut intr) {
        Ok(()) => Outcome2 { status: 0 },
        Err(e) => {
            report.event(Event2::Message(e));
            Outcome2 { status: 1 }
        }
    }
}

fn listen(cfg: &Config2) -> Result<(TcpListener, u16), String> {
    let c = &cfg.common;
    let port = c.bind.as_ref().and_then(|b| b.port).unwrap_or(c.port);
    let host = c.bind.as_ref().map(|b| b.host.as_str());
    let dev = c.bind.as_ref().and_then(|b| b.device.as_deref());
    let l = net::listen_tcp(host, dev, port, c.family).map_err(|e| {
        format!(
            "ERROR: listener bind failed: {}",
            super::client_header::os_text(&e)
        )
    })?;
    let v6 = l.local_addr().map(|a| a.is_ipv6()).unwrap_or(false);
    // Accepted sockets inherit the buffer sizes, MSS and congestion control.
    apply_opts(l.as_fd(), v6, c).map_err(|e| format!("ERROR: socket option: {e}"))?;
    let port = l.local_addr().map(|a| a.port()).unwrap_or(port);
    Ok((l, port))
}

/// The addresses `-c host` admits.
fn admitted(sv: &Server2, cfg: &Config2) -> Result<Option<Vec<IpAddr>>, String> {
    let Some(h) = sv.only_from.as_deref() else {
        return Ok(None);
    };
    let ips = net::resolve(h, 0, cfg.common.family)
        .map_err(|e| format!("ERROR: failed to find host {h}: {e}"))?;
    Ok(Some(ips.into_iter().map(|a| net::unmap(a).ip()).collect()))
}

fn host(
    cfg: &Config2,
    sv: &Server2,
    report: Arc<dyn Report2>,
    intr: &mut Interrupt,
) -> Result<(), String> {
    let (l, port) = listen(cfg)?;
    let len = cfg.common.len_or_default(false);
    report.event(Event2::Settings(tcp_setup::listener_settings(
        &l,
        &cfg.common,
        port,
        len,
    )));
    let only = admitted(sv, cfg)?;
    l.set_nonblocking(true).map_err(|e| e.to_string())?;
    let wake = Wake::new().map_err(|e| e.to_string())?;
    let sh = Arc::new(Shared {
        cfg: cfg.clone(),
        report: report.clone(),
        ids: AtomicU32::new(1),
        served: AtomicU32::new(0),
        live: AtomicU32::new(0),
        pending: Mutex::new(std::collections::VecDeque::new()),
        stopping: AtomicBool::new(false),
        socks: Mutex::new(HashMap::new()),
        sets: Mutex::new(Vec::new()),
        next_session: AtomicU64::new(0),
        groups: Mutex::new(Vec::new()),
        port,
        waker: wake.waker().map_err(|e| e.to_string())?,
    });
    let until = cfg.common.time.map(|t| Instant::now() + t);
    let mut sessions: Vec<JoinHandle<()>> = Vec::new();
    let mut accepted = 0u32;
    loop {
        sessions.retain(|h| !h.is_finished());
        if intr.triggered() {
            if sh.running() {
                report.event(Event2::Message(super::WAITING.into()));
            }
            sh.stop_all();
            break;
        }
        let now = Instant::now();
        if until.is_some_and(|u| now >= u) {
            break;
        }
        if sv.max_clients.is_some_and(|n| accepted >= n) {
            break;
        }
        let busy = sv.single_client && sh.live.load(Ordering::Acquire) > 0;
        let limit = until.map(|u| u.saturating_duration_since(now));
        let mut fds = vec![intr.fd(), wake.fd()];
        if !busy {
            fds.push(l.as_fd());
        }
        tcp_setup::wait(&fds, limit);
        wake.clear();
        if busy {
            continue;
        }
        match l.accept() {
            Ok((s, peer)) => {
                let peer = net::unmap(peer);
                if let Some(ips) = &only {
                    if !ips.contains(&peer.ip()) {
                        report.event(Event2::Message(format!(
                            "WARNING: connection from {} port {} refused: only {} is served",
                            peer.ip(),
                            peer.port(),
                            sv.only_from.as_deref().unwrap_or("")
                        )));
                        continue;
                    }
                }
                sh.make_room();
                accepted += 1;
                match spawn_session(s, peer, &sh) {
                    Ok(h) => sessions.push(h),
                    Err(e) => report.event(Event2::Message(format!("WARNING: {e}"))),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if net::out_of_resources(&e) => {
                report.event(Event2::Message(format!("WARNING: accept failed: {e}")));
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => return Err(format!("ERROR: accept failed: {e}")),
        }
    }
    drop(l);
    // Running tests finish (or, after SIGINT, end now) with their final rows.
    while !sessions.is_empty() {
        if intr.triggered() {
            sh.stop_all();
        }
        sessions.retain(|h| !h.is_finished());
        if sessions.is_empty() {
            break;
        }
        tcp_setup::wait(&[intr.fd(), wake.fd()], Some(Duration::from_millis(500)));
        wake.clear();
    }
    Ok(())
}

fn spawn_session(s: TcpStream, peer: SocketAddr, sh: &Arc<Shared>) -> io::Result<JoinHandle<()>> {
    s.set_nonblocking(false)?;
    sh.live.fetch_add(1, Ordering::AcqRel);
    // Registered here, before the next accept looks at the count.
    let k = sh.header_wait(&s, peer);
    let sh2 = sh.clone();
    let h = std::thread::Builder::new()
        .name("iperf2-session".into())
        .spawn(move || {
            tcp_session::serve(s, peer, &sh2, k);
            sh2.live.fetch_sub(1, Ordering::AcqRel);
            sh2.session_ended();
        });
    if h.is_err() {
        sh.live.fetch_sub(1, Ordering::AcqRel);
        sh.header_done(k);
    }
    h
}
