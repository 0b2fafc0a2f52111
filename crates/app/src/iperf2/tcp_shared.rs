//! What every session of one iperf 2 TCP server shares: its configuration and
//! report, transfer ids, the sessions and connections it tracks (so SIGINT
//! can end them), and the open `-P` groups. What a session takes from it is a
//! guard, given back on drop, whichever way the session ends.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rperf3_report::iperf2::model::Event2;
use rperf3_report::iperf2::Report2;

use super::config::Config2;
use super::interval::Intervals;
use super::tcp_setup;

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
    pending: Mutex<VecDeque<(u64, SocketAddr, TcpStream)>>,
    /// Set on SIGINT: sessions end at once.
    pub(crate) stopping: AtomicBool,
    /// The sockets of running sessions, so SIGINT can end them.
    socks: Mutex<HashMap<u64, Vec<Arc<TcpStream>>>>,
    /// The open-flow counts of the tests' report sets.
    sets: Mutex<Vec<Weak<AtomicUsize>>>,
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
    expected: u32,
    /// Streams that joined.
    joined: AtomicU32,
    /// Streams still running; the last one to end closes the set.
    live: AtomicU32,
}

impl Shared {
    /// The state of a server on `port` that wakes its host loop through
    /// `waker`.
    pub(crate) fn new(
        cfg: Config2,
        report: Arc<dyn Report2>,
        port: u16,
        waker: std::os::unix::net::UnixStream,
    ) -> Self {
        Self {
            cfg,
            report,
            ids: AtomicU32::new(1),
            served: AtomicU32::new(0),
            live: AtomicU32::new(0),
            pending: Mutex::new(VecDeque::new()),
            stopping: AtomicBool::new(false),
            socks: Mutex::new(HashMap::new()),
            sets: Mutex::new(Vec::new()),
            next_session: AtomicU64::new(0),
            groups: Mutex::new(Vec::new()),
            port,
            waker,
        }
    }

    /// A session's seat: counted until dropped, which tells the host loop.
    pub(crate) fn seat(sh: &Arc<Self>) -> Seat {
        sh.live.fetch_add(1, Ordering::AcqRel);
        Seat(sh.clone())
    }

    /// Sessions whose seat is taken.
    pub(crate) fn sessions(&self) -> u32 {
        self.live.load(Ordering::Acquire)
    }

    /// A new transfer id.
    pub(crate) fn next_id(&self) -> u32 {
        self.ids.fetch_add(1, Ordering::Relaxed)
    }

    /// Registers sockets SIGINT must shut down, until the guard is dropped.
    pub(crate) fn track(&self, socks: &[Arc<TcpStream>]) -> Tracked<'_> {
        let k = self.next_session.fetch_add(1, Ordering::Relaxed);
        let mut g = self.socks.lock().unwrap_or_else(|p| p.into_inner());
        g.insert(k, socks.to_vec());
        if self.stopping.load(Ordering::Acquire) {
            shut(socks);
        }
        Tracked { sh: self, k }
    }

    /// Watches a test's flows for [`Shared::running`].
    pub(crate) fn watch(&self, open: &Arc<AtomicUsize>) {
        let mut g = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|w| w.strong_count() > 0);
        g.push(Arc::downgrade(open));
    }

    /// Whether any test still moves data: a signal then says it waits.
    pub(crate) fn running(&self) -> bool {
        let g = self.sets.lock().unwrap_or_else(|p| p.into_inner());
        g.iter()
            .filter_map(Weak::upgrade)
            .any(|n| n.load(Ordering::Acquire) > 0)
    }

    /// Ends every tracked connection, now and as they are tracked.
    pub(crate) fn stop_all(&self) {
        self.stopping.store(true, Ordering::Release);
        let g = self.socks.lock().unwrap_or_else(|p| p.into_inner());
        for s in g.values() {
            shut(s);
        }
    }

    /// Registers a connection in its header phase, until the guard is
    /// dropped (or [`Pending::done`]).
    pub(crate) fn header_wait(self: &Arc<Self>, s: &TcpStream, peer: SocketAddr) -> Pending {
        let k = self.next_session.fetch_add(1, Ordering::Relaxed);
        if let Ok(c) = s.try_clone() {
            self.pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_back((k, peer, c));
        }
        Pending {
            sh: self.clone(),
            k,
        }
    }

    /// At the limit, ends the oldest connection still in its header phase.
    pub(crate) fn make_room(&self) {
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
}

/// A session's place in [`Shared`]'s count.
pub(crate) struct Seat(Arc<Shared>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.live.fetch_sub(1, Ordering::AcqRel);
        tcp_setup::wake(&self.0.waker);
    }
}

/// A connection in its header phase.
pub(crate) struct Pending {
    sh: Arc<Shared>,
    k: u64,
}

impl Pending {
    /// The header phase is over.
    pub(crate) fn done(self) {}
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut g = self.sh.pending.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|(x, _, _)| *x != self.k);
    }
}

/// Sockets SIGINT shuts down while the guard lives.
pub(crate) struct Tracked<'a> {
    sh: &'a Shared,
    k: u64,
}

impl Tracked<'_> {
    /// Adds a socket.
    pub(crate) fn add(&self, s: &Arc<TcpStream>) {
        let mut g = self.sh.socks.lock().unwrap_or_else(|p| p.into_inner());
        g.entry(self.k).or_default().push(s.clone());
        if self.sh.stopping.load(Ordering::Acquire) {
            shut(std::slice::from_ref(s));
        }
    }
}

impl Drop for Tracked<'_> {
    fn drop(&mut self) {
        self.sh
            .socks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.k);
    }
}

/// Ends a session's connections on SIGINT: blocked reads and writes return,
/// and the last close resets the connection (linger 0). A plain FIN can leave
/// a stock client blocked for a minute: if our receive window was closed when
/// we stopped reading, its zero-window probes are answered by the orphaned
/// socket and never see an error.
fn shut(socks: &[Arc<TcpStream>]) {
    for s in socks {
        let _ = rperf3_sys::sockopt::set_linger_reset(&**s);
        let _ = s.shutdown(std::net::Shutdown::Both);
    }
}

/// How long a `-P` set whose streams have all ended waits for the ones that
/// have not connected yet.
const JOIN_GRACE: Duration = Duration::from_secs(1);

impl Group {
    fn new(iv: Intervals, expected: u32) -> Self {
        Self {
            iv,
            expected,
            joined: 1.into(),
            live: 1.into(),
        }
    }
}

impl Shared {
    /// The set a stream of a client's `streams` from `ip` reports in: an open
    /// one of that client's with room, or a new one made by `fresh`.
    pub(crate) fn join(
        self: &Arc<Self>,
        ip: IpAddr,
        streams: u32,
        fresh: impl FnOnce() -> Intervals,
    ) -> Member {
        let member = |gr| Member {
            sh: self.clone(),
            gr,
        };
        if streams <= 1 {
            return member(Arc::new(Group::new(fresh(), 1)));
        }
        let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = g
            .iter()
            .position(|(a, gr)| *a == ip && gr.expected == streams)
        {
            let gr = g[i].1.clone();
            gr.live.fetch_add(1, Ordering::AcqRel);
            if gr.joined.fetch_add(1, Ordering::AcqRel) + 1 >= gr.expected {
                g.remove(i);
            }
            return member(gr);
        }
        let gr = Arc::new(Group::new(fresh(), streams));
        g.push((ip, gr.clone()));
        member(gr)
    }

    /// Ends a `-P` set: no stream joins it any more (a later one starts its own).
    fn close_group(&self, gr: &Arc<Group>) {
        let mut g = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        g.retain(|(_, x)| !Arc::ptr_eq(x, gr));
        drop(g);
        gr.iv.close();
    }
}

/// A stream's place in its set; the last one to leave closes the set.
pub(crate) struct Member {
    sh: Arc<Shared>,
    gr: Arc<Group>,
}

impl std::ops::Deref for Member {
    type Target = Group;
    fn deref(&self) -> &Group {
        &self.gr
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let gr = &self.gr;
        if gr.live.fetch_sub(1, Ordering::AcqRel) != 1 {
            // The last holder's drop waits for the set's final rows.
            return;
        }
        if gr.joined.load(Ordering::Acquire) >= gr.expected {
            self.sh.close_group(gr);
            return;
        }
        // Streams of a short test can all end before the client's last one
        // connects (a stalled client thread): the set waits for the rest a
        // while, so they still share one [SUM].
        let (sh, gr) = (self.sh.clone(), gr.clone());
        let waiter = std::thread::Builder::new()
            .name("iperf2-group".into())
            .spawn(move || {
                std::thread::sleep(JOIN_GRACE);
                // Checked under the lock a joining stream takes: a set that a
                // late stream has since left (or filled up) is its to close.
                let mut g = sh.groups.lock().unwrap_or_else(|p| p.into_inner());
                let at = g.iter().position(|(_, x)| Arc::ptr_eq(x, &gr));
                if let (Some(i), 0) = (at, gr.live.load(Ordering::Acquire)) {
                    g.remove(i);
                    drop(g);
                    gr.iv.close();
                }
            });
        if let Err(e) = waiter {
            // No thread to wait with: the set ends now, as without the grace.
            log::debug!("iperf 2 group: {e}");
            self.sh.close_group(&self.gr);
        }
    }
}
