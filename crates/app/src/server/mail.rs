//! Messages between the server host and its sessions, with a doorbell each
//! receiver can poll beside its sockets.
//!
//! A channel carries the messages (sockets among them); one byte on a socket
//! pair wakes the receiver's poll. The bell is non-blocking on both ends: a full
//! bell already rings, so a sender never waits.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{IpAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, Receiver, Sender};

/// The receiving end: poll [`Inbox::fd`], then [`Inbox::drain`].
#[derive(Debug)]
pub(super) struct Inbox<T> {
    rx: Receiver<T>,
    bell: UnixStream,
}

/// A sending end (cheap to clone for many senders).
#[derive(Debug)]
pub(super) struct Mailbox<T> {
    tx: Sender<T>,
    bell: UnixStream,
}

/// A connected pair.
pub(super) fn pair<T>() -> io::Result<(Mailbox<T>, Inbox<T>)> {
    let (a, b) = UnixStream::pair()?;
    a.set_nonblocking(true)?;
    b.set_nonblocking(true)?;
    let (tx, rx) = mpsc::channel();
    Ok((Mailbox { tx, bell: a }, Inbox { rx, bell: b }))
}

impl<T> Inbox<T> {
    /// The fd that becomes readable when a message is waiting.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.bell.as_fd()
    }

    /// Every message waiting now, in the order sent.
    pub(super) fn drain(&mut self) -> Vec<T> {
        let mut b = [0u8; 64];
        while matches!(self.bell.read(&mut b), Ok(n) if n > 0) {}
        self.rx.try_iter().collect()
    }
}

impl<T> Mailbox<T> {
    /// Sends `msg`; false if the inbox is gone (its owner has ended).
    pub(super) fn send(&self, msg: T) -> bool {
        self.send_back(msg).is_ok()
    }

    /// Sends `msg`, or hands it back if the inbox is gone.
    pub(super) fn send_back(&self, msg: T) -> Result<(), T> {
        self.tx.send(msg).map_err(|e| e.0)?;
        // WouldBlock: the bell already holds unread bytes, so it rings anyway.
        let _ = (&self.bell).write(b"!");
        Ok(())
    }

    /// Another sender to the same inbox.
    pub(super) fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            tx: self.tx.clone(),
            bell: self.bell.try_clone()?,
        })
    }
}

/// From the host to one session.
#[derive(Debug)]
pub(super) enum ToSession {
    /// A TCP connection that sent this session's cookie (already read).
    Tcp(TcpStream),
    /// A TCP connection that sent this session's cookie with an rperf3 marker as
    /// its 37th byte (a probe connection, or another kind the session knows).
    /// The host routes every marker alike; the session decides.
    Extra {
        /// The connection, its cookie read.
        conn: TcpStream,
        /// The cookie's 37th byte.
        marker: u8,
    },
    /// An SCTP association that sent this session's cookie (already read).
    Sctp(TcpStream),
    /// The SCTP listener for this session's streams is open, or why not.
    SctpListening(Result<(), rperf3_proto::IperfError>),
    /// UDP stream setup may begin: the host listens for this client's hellos.
    UdpGranted,
    /// A UDP stream: the socket that got this client's hello, connected to it.
    /// The session replies on it.
    Udp(UdpSocket),
    /// The server is shutting down.
    Stop,
}

/// From a session to the host.
#[derive(Debug)]
pub(super) enum ToHost {
    /// The session needs `streams` UDP streams from the client at `ip`.
    UdpWanted {
        /// The session.
        id: u64,
        /// The client's address (its control connection's).
        ip: IpAddr,
        /// How many hellos to route to it.
        streams: usize,
    },
    /// The session's test is SCTP: its streams come to an SCTP listener on
    /// the port, open until the session is released.
    SctpWanted {
        /// The session.
        id: u64,
    },
    /// The session's UDP setup is over (done or failed).
    UdpDone {
        /// The session.
        id: u64,
    },
    /// A visitor of a side service (RPM over HTTP/2).
    Visit(VisitMsg),
    /// The test is over and its output written: the slot is free. The thread
    /// may still be closing its connection.
    Released {
        /// The session.
        id: u64,
        /// Whether it counts as a test (for `-1`).
        counted: bool,
    },
}

/// The host's answer to a side service's visitor: its test number, or `None`
/// when busy.
pub type Answer = Box<dyn FnOnce(Option<u64>) + Send>;

/// A visitor's messages to the host.
pub(super) enum VisitMsg {
    /// Wants a slot.
    Arrive {
        /// Its address (fairness and per-address counts are the host's).
        ip: IpAddr,
        /// Called with the answer.
        answer: Answer,
    },
    /// Its visit ended.
    Left {
        /// Its test number.
        id: u64,
        /// Bytes it sent the server.
        received: u64,
        /// Bytes the server sent it.
        sent: u64,
    },
}

impl fmt::Debug for VisitMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Arrive { ip, .. } => write!(f, "Arrive({ip})"),
            Self::Left { id, .. } => write!(f, "Left({id})"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn messages_ring_the_bell_and_arrive_in_order() {
        let (tx, mut rx) = pair::<u32>().unwrap();
        assert!(!rperf3_sys::poll::readable(&rx.fd(), Duration::ZERO).unwrap());
        let tx2 = tx.try_clone().unwrap();
        for i in 0..10_000 {
            assert!(if i % 2 == 0 { &tx } else { &tx2 }.send(i));
        }
        assert!(rperf3_sys::poll::readable(&rx.fd(), Duration::ZERO).unwrap());
        assert_eq!(rx.drain(), (0..10_000).collect::<Vec<_>>());
        assert!(!rperf3_sys::poll::readable(&rx.fd(), Duration::ZERO).unwrap());
        drop(rx);
        assert!(!tx.send(1));
    }
}
