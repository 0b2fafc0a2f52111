//! How a signal reaches a running test: a byte on a pipe the control loops poll.
//!
//! The binary registers SIGINT/SIGTERM/SIGHUP to write to the other end; drivers
//! never install handlers themselves.

use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

/// The read end of the signal pipe.
#[derive(Debug)]
pub struct Interrupt {
    rx: UnixStream,
    hit: bool,
}

impl Interrupt {
    /// Wraps the read end; it is made non-blocking.
    pub fn new(rx: UnixStream) -> std::io::Result<Self> {
        rx.set_nonblocking(true)?;
        Ok(Self { rx, hit: false })
    }

    /// A pipe pair for tests and embedders: (interrupt, writer to trigger it).
    pub fn pair() -> std::io::Result<(Self, UnixStream)> {
        let (a, b) = UnixStream::pair()?;
        Ok((Self::new(a)?, b))
    }

    /// The fd to include in a poll set.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }

    /// Whether a signal has arrived (drains the pipe; stays true once seen).
    pub fn triggered(&mut self) -> bool {
        let mut b = [0u8; 16];
        while let Ok(n) = self.rx.read(&mut b) {
            if n == 0 {
                break;
            }
            self.hit = true;
        }
        self.hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_byte_triggers_it_for_good() {
        let (mut i, mut w) = Interrupt::pair().unwrap();
        assert!(!i.triggered());
        w.write_all(b"x").unwrap();
        assert!(i.triggered());
        assert!(i.triggered());
    }
}
