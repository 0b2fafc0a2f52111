//! The control connection's I/O: writes with a deadline, reads that never block
//! past the caller's deadline. The protocol logic lives in the proto machines.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use rperf3_proto::IperfError;

/// Longest a control write may block (a peer that stops reading).
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// What one read attempt produced.
#[derive(Debug)]
pub(crate) enum Read0 {
    /// Nothing arrived before the timeout.
    Idle,
    /// Bytes arrived.
    Data,
    /// The peer closed the connection.
    Eof,
}

/// A control socket.
#[derive(Debug)]
pub(crate) struct Ctrl {
    sock: TcpStream,
    buf: Box<[u8; 16384]>,
}

impl Ctrl {
    /// Wraps a connected control socket (TCP_NODELAY set, as iperf3 does).
    pub(crate) fn new(sock: TcpStream) -> io::Result<Self> {
        sock.set_nodelay(true)?;
        sock.set_write_timeout(Some(WRITE_TIMEOUT))?;
        Ok(Self {
            sock,
            buf: Box::new([0u8; 16384]),
        })
    }

    /// The socket.
    pub(crate) fn sock(&self) -> &TcpStream {
        &self.sock
    }

    /// The fd to poll.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }

    /// Writes all of `bytes`; `code` is the iperf3 error to report on failure.
    pub(crate) fn send(&mut self, bytes: &[u8], code: i32) -> Result<(), IperfError> {
        self.sock
            .write_all(bytes)
            .map_err(|e| IperfError::from_io(code, &e))
    }

    /// Reads what is available now (call after poll said readable, or with a timeout).
    pub(crate) fn read(&mut self, timeout: Duration) -> io::Result<(Read0, &[u8])> {
        if !rperf3_sys::poll::readable(&self.sock, timeout)? {
            return Ok((Read0::Idle, &[]));
        }
        loop {
            match self.sock.read(&mut self.buf[..]) {
                Ok(0) => return Ok((Read0::Eof, &[])),
                Ok(n) => return Ok((Read0::Data, &self.buf[..n])),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Ends the connection as iperf3 3.21 does: shutdown(WR), read until EOF (bounded
    /// by `limit`), close. This makes sure our last message is delivered.
    pub(crate) fn close_gracefully(mut self, limit: Duration) {
        let _ = self.sock.shutdown(Shutdown::Write);
        self.drain_until_closed(limit);
    }

    /// Reads and discards until the peer closes, fails, or `limit` passes.
    pub(crate) fn drain_until_closed(&mut self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.read(left) {
                Ok((Read0::Data, _)) => {}
                _ => break,
            }
        }
    }
}
