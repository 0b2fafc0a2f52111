//! Waiting for readability with a deadline, so no blocking step waits forever.
#![forbid(unsafe_code)]

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use nix::poll::{PollFd, PollFlags, PollTimeout};

/// Waits until one of `fds` is readable (or hung up / in error) or `timeout` passes.
/// Returns one flag per fd, true if it is ready. EINTR counts as "nothing ready".
pub fn wait_readable(fds: &[BorrowedFd<'_>], timeout: Duration) -> io::Result<Vec<bool>> {
    let fds: Vec<_> = fds.iter().map(|fd| (*fd, false)).collect();
    wait_ready(&fds, timeout)
}

/// Waits until each of `fds` is ready for what its flag asks (true: writable,
/// false: readable), hung up or in error, or `timeout` passes. One flag per fd.
pub fn wait_ready(fds: &[(BorrowedFd<'_>, bool)], timeout: Duration) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<PollFd<'_>> = fds
        .iter()
        .map(|(fd, write)| {
            let want = if *write {
                PollFlags::POLLOUT
            } else {
                PollFlags::POLLIN
            };
            PollFd::new(*fd, want)
        })
        .collect();
    match nix::poll::poll(&mut pfds, poll_timeout(timeout)) {
        Ok(_) => Ok(pfds
            .iter()
            .map(|p| p.revents().is_some_and(|r| !r.is_empty()))
            .collect()),
        Err(nix::errno::Errno::EINTR) => Ok(vec![false; fds.len()]),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// `timeout` in poll's milliseconds.
pub(crate) fn poll_timeout(timeout: Duration) -> PollTimeout {
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // Round sub-millisecond waits up so a caller's deadline loop makes progress.
    let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
}

/// Waits for a single fd. Allocates nothing: a TCP receiver calls it before
/// every read.
pub fn readable(fd: &impl AsFd, timeout: Duration) -> io::Result<bool> {
    let mut pfd = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    match nix::poll::poll(&mut pfd, poll_timeout(timeout)) {
        Ok(_) => Ok(pfd[0].revents().is_some_and(|r| !r.is_empty())),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(io::Error::from(e)),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    use std::time::{Duration, Instant};

    #[test]
    fn times_out_when_nothing_arrives() {
        let (a, _b) = UnixStream::pair().unwrap();
        let t = Instant::now();
        assert!(!super::readable(&a, Duration::from_millis(30)).unwrap());
        assert!(t.elapsed() >= Duration::from_millis(25));
    }

    #[test]
    fn sees_data() {
        let (a, mut b) = UnixStream::pair().unwrap();
        b.write_all(b"x").unwrap();
        assert!(super::readable(&a, Duration::from_secs(1)).unwrap());
    }
}
