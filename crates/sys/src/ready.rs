//! Readiness of many sockets at once (epoll, edge-triggered): one thread
//! drives many streams, and learns which of them can move bytes again.
#![forbid(unsafe_code)]

use std::io;
use std::os::fd::AsFd;
use std::time::Duration;

use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags};

/// A set of sockets, each with a caller's token. Edge-triggered: a socket is
/// reported once each time it becomes readable (or writable) again, so the
/// caller moves bytes until the call would block before it waits.
#[derive(Debug)]
pub struct ReadySet {
    epoll: Epoll,
    events: Vec<EpollEvent>,
}

impl ReadySet {
    /// An empty set reporting up to `batch` sockets per wait.
    pub fn new(batch: usize) -> io::Result<Self> {
        Ok(Self {
            epoll: Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?,
            events: vec![EpollEvent::empty(); batch.max(1)],
        })
    }

    /// Adds `fd` under `token`, watched for writing (`write`) or reading.
    /// Errors and hang-ups are reported either way.
    pub fn add(&self, fd: impl AsFd, token: u64, write: bool) -> io::Result<()> {
        let way = if write {
            EpollFlags::EPOLLOUT
        } else {
            EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP
        };
        let ev = EpollEvent::new(way | EpollFlags::EPOLLET, token);
        self.epoll.add(fd, ev).map_err(io::Error::from)
    }

    /// Waits up to `timeout` (zero: only looks) and calls `ready` with the
    /// token of each socket that became ready, and whether the peer hung up
    /// or the socket failed (a caller that stops at a short read must then
    /// read on to the end: the hang-up will not be reported again). EINTR
    /// counts as nothing ready.
    pub fn wait(&mut self, timeout: Duration, mut ready: impl FnMut(u64, bool)) -> io::Result<()> {
        let n = match self
            .epoll
            .wait(&mut self.events, crate::poll::poll_timeout(timeout))
        {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => 0,
            Err(e) => return Err(io::Error::from(e)),
        };
        let ended = EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR;
        for ev in &self.events[..n] {
            ready(ev.data(), ev.events().intersects(ended));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::Instant;

    fn tokens(set: &mut ReadySet, timeout: Duration) -> Vec<u64> {
        let mut got = Vec::new();
        set.wait(timeout, |t, _| got.push(t)).unwrap();
        got.sort_unstable();
        got
    }

    #[test]
    fn reports_the_token_of_what_became_readable_once() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let (c, _d) = UnixStream::pair().unwrap();
        let mut set = ReadySet::new(8).unwrap();
        set.add(&a, 7, false).unwrap();
        set.add(&c, 9, false).unwrap();
        let t = Instant::now();
        assert!(tokens(&mut set, Duration::from_millis(30)).is_empty());
        assert!(t.elapsed() >= Duration::from_millis(25));
        b.write_all(b"x").unwrap();
        assert_eq!(tokens(&mut set, Duration::from_secs(5)), vec![7]);
        // Edge-triggered: unread data is not reported again until more comes.
        assert!(tokens(&mut set, Duration::ZERO).is_empty());
        b.write_all(b"y").unwrap();
        assert_eq!(tokens(&mut set, Duration::from_secs(5)), vec![7]);
    }

    #[test]
    fn a_hang_up_is_told_apart_from_data() {
        let (a, mut b) = UnixStream::pair().unwrap();
        let mut set = ReadySet::new(8).unwrap();
        set.add(&a, 3, false).unwrap();
        let mut seen = Vec::new();
        b.write_all(b"x").unwrap();
        set.wait(Duration::from_secs(5), |t, end| seen.push((t, end)))
            .unwrap();
        drop(b);
        set.wait(Duration::from_secs(5), |t, end| seen.push((t, end)))
            .unwrap();
        assert_eq!(seen, vec![(3, false), (3, true)]);
    }

    #[test]
    fn a_writable_socket_and_a_hang_up_are_reported() {
        let (a, b) = UnixStream::pair().unwrap();
        let (c, d) = UnixStream::pair().unwrap();
        let mut set = ReadySet::new(8).unwrap();
        set.add(&a, 1, true).unwrap();
        set.add(&c, 2, false).unwrap();
        assert_eq!(tokens(&mut set, Duration::from_secs(5)), vec![1]);
        drop(d);
        assert_eq!(tokens(&mut set, Duration::from_secs(5)), vec![2]);
        drop(b);
    }
}
