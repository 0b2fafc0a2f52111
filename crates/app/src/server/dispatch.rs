//! Where a connection whose cookie has arrived goes: a running test's data
//! stream or extra connection, a new test started now, a client queued for a
//! slot, or ACCESS_DENIED.

use std::io;
use std::net::{SocketAddr, TcpStream};

use rperf3_proto::{ServerLimits, COOKIE_LEN};

use super::admission::Decision;
use super::mail::{self, ToSession};
use super::metrics::TestOutcome;
use super::refuse::access_denied;
use super::session::{Session, SessionSetup};
use super::{Host, Running, Waiting, START_HEADROOM};
use crate::exclusive::Held;

impl Host<'_, '_> {
    /// A whole cookie arrived: a data stream of a running test, or a new test.
    pub(super) fn route(&mut self, conn: TcpStream, peer: SocketAddr, cookie: [u8; COOKIE_LEN]) {
        if conn.set_nonblocking(false).is_err() {
            return;
        }
        if let Some(s) = self.sessions.values().find(|s| s.cookie == cookie) {
            s.mailbox.send(ToSession::Tcp(conn));
            return;
        }
        if let Some((test, marker)) = rperf3_proto::cookie_marker(&cookie) {
            // An rperf3 connection of a test (a probe, or any other marker):
            // its session decides. No such test (over, or never was): closed.
            match self.sessions.values().find(|s| s.cookie == test) {
                Some(s) => {
                    s.mailbox.send(ToSession::Extra { conn, marker });
                }
                None => log::info!(
                    "closed a connection from {peer} marked {:?} for no running test",
                    char::from(marker)
                ),
            }
            return;
        }
        if self.exiting {
            self.refuse_busy(conn);
            return;
        }
        // A node shared with tests outside the server (a mesh agent's own)
        // takes one test at a time, whichever side runs it.
        let held = match &self.hooks.exclusive {
            Some(x) => match x.try_hold() {
                Some(h) => Some(h),
                None => return self.refuse_busy(conn),
            },
            None => None,
        };
        let ip = rperf3_sys::net::unmap(peer).ip();
        match self.admission.arrive(ip) {
            Decision::Run => self.start(conn, peer, cookie, held),
            Decision::Queue(t) => {
                self.waiting.insert(t, Waiting { conn, peer, cookie });
            }
            Decision::QueueEvicting { ticket, evicted } => {
                if let Some(w) = self.waiting.remove(&evicted) {
                    self.refuse_busy(w.conn);
                }
                self.waiting.insert(ticket, Waiting { conn, peer, cookie });
            }
            Decision::Refuse => self.refuse_busy(conn),
        }
    }

    /// ACCESS_DENIED to a client the server has no room for.
    pub(super) fn refuse_busy(&self, conn: TcpStream) {
        let peer = conn.peer_addr().map(rperf3_sys::net::unmap);
        log::info!(
            "refused a test from {}: server busy",
            peer.map_or_else(|_| "?".to_string(), |p| p.to_string())
        );
        self.metrics.count(TestOutcome::Refused);
        access_denied(conn);
    }

    /// An SCTP association's cookie: a data stream of a running SCTP test, or
    /// refused (the SCTP listener carries no control connections).
    pub(super) fn route_sctp(&mut self, conn: TcpStream, cookie: [u8; COOKIE_LEN]) {
        match self.sessions.values().find(|s| s.cookie == cookie) {
            Some(s) if conn.set_nonblocking(false).is_ok() => {
                s.mailbox.send(ToSession::Sctp(conn));
            }
            _ => access_denied(conn),
        }
    }

    /// Starts waiting clients while slots are free.
    pub(super) fn start_waiting(&mut self) {
        if self.exiting || self.waiting.is_empty() {
            return;
        }
        loop {
            let held = match &self.hooks.exclusive {
                Some(x) => match x.try_hold() {
                    Some(h) => Some(h),
                    // The node's slot is taken: they wait on.
                    None => return,
                },
                None => None,
            };
            let Some((t, ip)) = self.admission.start_next() else {
                return;
            };
            match self.waiting.remove(&t) {
                Some(w) => self.start(w.conn, w.peer, w.cookie, held),
                // Not there (cannot happen: leaving the queue removes both).
                None => self.admission.finished(ip),
            }
        }
    }

    /// Starts a session thread for a test that has a slot.
    fn start(
        &mut self,
        conn: TcpStream,
        peer: SocketAddr,
        cookie: [u8; COOKIE_LEN],
        held: Option<Held>,
    ) {
        let ip = rperf3_sys::net::unmap(peer).ip();
        let id = self.next_id;
        self.next_id += 1;
        let label = (self.sc.max_tests > 1).then_some(id);
        let fds = || -> io::Result<_> { Ok((mail::pair()?, self.to_host.try_clone()?)) };
        let fds = match fds() {
            // Idle handshakes hold every descriptor: a test that has a slot
            // comes first.
            Err(e) if rperf3_sys::net::out_of_resources(&e) && !self.pending.is_empty() => {
                for _ in 0..START_HEADROOM {
                    drop(self.pending.evict_oldest());
                }
                fds()
            }
            r => r,
        };
        let started = (|| -> io::Result<Running> {
            let ((mailbox, inbox), host) = fds?;
            let setup = SessionSetup {
                id,
                conn,
                cookie,
                peer,
                rep: (self.make_reporter)(label),
                inbox,
                host,
                budget: self.budget.clone(),
                metrics: self.metrics.clone(),
                rate_limit: self.sc.bitrate_limit,
                listener: (self.sc.max_tests == 1).then(|| self.listener.clone()),
                auth: self.auth.clone(),
            };
            let limits = ServerLimits {
                max_duration: self.sc.max_duration,
                total_rate_limit: self.sc.bitrate_limit.map(|l| l.bits_per_second),
                file_transfer: self.common.file.is_some(),
                sctp_supported: true,
                auth_first: self.auth.is_some(),
                ..ServerLimits::default()
            };
            let session = Session::new(setup, self.common.clone(), limits)?;
            let thread = std::thread::Builder::new()
                .name(format!("test-{id}"))
                .spawn(move || session.run())?;
            Ok(Running {
                cookie,
                ip,
                mailbox,
                thread,
                _held: held,
            })
        })();
        match started {
            Ok(r) => {
                self.sessions.insert(id, r);
            }
            Err(e) => {
                self.admission.finished(ip);
                self.rep.log_error(&format!("unable to start a test: {e}"));
            }
        }
    }
}
