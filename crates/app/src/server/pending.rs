//! New connections whose 37-byte cookie has not fully arrived yet.
//!
//! The host reads every cookie itself, without blocking, each connection with one
//! absolute deadline, so no connection waits behind another one's handshake. The
//! set is bounded: when it is full, the oldest handshake (the likeliest to be an
//! idle or hostile connection) is dropped to make room.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use rperf3_proto::COOKIE_LEN;

/// Most handshakes in progress at once.
pub(super) const MAX_PENDING: usize = 256;

/// A connection that is sending its cookie.
#[derive(Debug)]
pub(super) struct Handshake {
    /// The connection (non-blocking while here).
    pub conn: TcpStream,
    /// Its peer.
    pub peer: SocketAddr,
    /// Came in on the SCTP listener: it can only be a data stream.
    pub sctp: bool,
    cookie: [u8; COOKIE_LEN],
    have: usize,
    deadline: Instant,
}

/// What reading a handshake produced.
#[derive(Debug)]
pub(super) enum Progress {
    /// More bytes are needed.
    Waiting,
    /// The whole cookie.
    Cookie([u8; COOKIE_LEN]),
    /// The peer closed or the connection failed before the cookie was complete.
    Gone,
}

/// The handshakes in progress, oldest first.
#[derive(Debug, Default)]
pub(super) struct Pending {
    list: Vec<Handshake>,
    limit: Duration,
}

impl Pending {
    /// Handshakes get `limit` from their connection to their whole cookie.
    pub(super) fn new(limit: Duration) -> Self {
        Self {
            list: Vec::new(),
            limit,
        }
    }

    /// Adds a new connection; returns the handshake dropped to make room, if the
    /// set was full.
    pub(super) fn add(
        &mut self,
        conn: TcpStream,
        peer: SocketAddr,
        now: Instant,
    ) -> io::Result<Option<Handshake>> {
        self.add_from(conn, peer, false, now)
    }

    /// [`Pending::add`], saying whether it came from the SCTP listener.
    pub(super) fn add_from(
        &mut self,
        conn: TcpStream,
        peer: SocketAddr,
        sctp: bool,
        now: Instant,
    ) -> io::Result<Option<Handshake>> {
        conn.set_nonblocking(true)?;
        let evicted = (self.list.len() >= MAX_PENDING).then(|| self.list.remove(0));
        self.list.push(Handshake {
            conn,
            peer,
            sctp,
            cookie: [0; COOKIE_LEN],
            have: 0,
            deadline: now + self.limit,
        });
        Ok(evicted)
    }

    /// Drops the oldest handshake (to free a file descriptor).
    pub(super) fn evict_oldest(&mut self) -> Option<Handshake> {
        (!self.list.is_empty()).then(|| self.list.remove(0))
    }

    /// The fds to poll, in the order [`Pending::on_ready`] expects.
    pub(super) fn fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.list.iter().map(|h| h.conn.as_fd())
    }

    /// The earliest deadline.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.list.iter().map(|h| h.deadline).min()
    }

    /// Number of handshakes in progress.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether none is in progress.
    pub(super) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Reads the handshakes marked ready (same order as [`Pending::fds`]) and
    /// removes those that finished, failed or ran out of time at `now`.
    /// Returns (finished with their cookie, failed with the reason).
    #[allow(clippy::type_complexity)]
    pub(super) fn on_ready(
        &mut self,
        ready: &[bool],
        now: Instant,
    ) -> (
        Vec<(Handshake, [u8; COOKIE_LEN])>,
        Vec<(Handshake, &'static str)>,
    ) {
        let mut done = Vec::new();
        let mut expired = Vec::new();
        let list = std::mem::take(&mut self.list);
        for (mut h, r) in list
            .into_iter()
            .zip(ready.iter().copied().chain(std::iter::repeat(false)))
        {
            let p = if r { h.read() } else { Progress::Waiting };
            match p {
                Progress::Cookie(c) => done.push((h, c)),
                Progress::Gone => expired.push((h, "connection closed")),
                Progress::Waiting if now >= h.deadline => expired.push((h, "timed out")),
                Progress::Waiting => self.list.push(h),
            }
        }
        (done, expired)
    }
}

impl Handshake {
    fn read(&mut self) -> Progress {
        loop {
            match (&self.conn).read(&mut self.cookie[self.have..]) {
                Ok(0) => return Progress::Gone,
                Ok(n) => {
                    self.have += n;
                    if self.have == COOKIE_LEN {
                        return Progress::Cookie(self.cookie);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Waiting,
                Err(_) => return Progress::Gone,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    fn conn(l: &TcpListener) -> (TcpStream, TcpStream, SocketAddr) {
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, peer) = l.accept().unwrap();
        (c, s, peer)
    }

    #[test]
    fn cookie_in_pieces_then_whole() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut c, s, peer) = conn(&l);
        let t0 = Instant::now();
        let mut p = Pending::new(Duration::from_secs(10));
        assert!(p.add(s, peer, t0).unwrap().is_none());
        c.write_all(&[b'a'; 20]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let (done, exp) = p.on_ready(&[true], t0);
        assert!(done.is_empty() && exp.is_empty());
        assert_eq!(p.len(), 1);
        c.write_all(&[b'b'; 17]).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let (done, _) = p.on_ready(&[true], t0);
        assert_eq!(done.len(), 1);
        assert_eq!(&done[0].1[..20], &[b'a'; 20]);
        assert_eq!(&done[0].1[20..], &[b'b'; 17]);
        assert!(p.is_empty());
    }

    #[test]
    fn deadline_is_absolute_and_closed_peers_leave() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let (mut c1, s1, p1) = conn(&l);
        let (c2, s2, p2) = conn(&l);
        let t0 = Instant::now();
        let mut p = Pending::new(Duration::from_secs(10));
        p.add(s1, p1, t0).unwrap();
        p.add(s2, p2, t0).unwrap();
        assert_eq!(p.next_deadline(), Some(t0 + Duration::from_secs(10)));
        drop(c2);
        c1.write_all(b"x").unwrap();
        std::thread::sleep(Duration::from_millis(20));
        // Bytes arriving do not extend the deadline.
        let (done, exp) = p.on_ready(&[true, true], t0 + Duration::from_secs(10));
        assert!(done.is_empty());
        let why: Vec<&str> = exp.iter().map(|(_, w)| *w).collect();
        assert_eq!(why, ["timed out", "connection closed"]);
        assert!(p.is_empty());
    }

    #[test]
    fn a_full_set_drops_its_oldest() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut p = Pending::new(Duration::from_secs(10));
        let t0 = Instant::now();
        let mut clients = Vec::new();
        let mut first = None;
        for i in 0..=MAX_PENDING {
            let (c, s, peer) = conn(&l);
            clients.push(c);
            if i == 0 {
                first = Some(peer);
            }
            let ev = p.add(s, peer, t0).unwrap();
            assert_eq!(ev.is_some(), i == MAX_PENDING);
            if let Some(h) = ev {
                assert_eq!(Some(h.peer), first);
            }
        }
        assert_eq!(p.len(), MAX_PENDING);
    }
}
