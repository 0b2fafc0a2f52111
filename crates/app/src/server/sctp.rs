//! The SCTP listener of the port, open while some test asks for SCTP.
//!
//! iperf3's server opens an SCTP listener on its port when a test's parameters
//! say `"sctp": true`, and takes that test's data streams there (each sends
//! the cookie first, as on TCP). SCTP ports are apart from TCP's, so here one
//! listener serves every SCTP test running at the time and the connections go
//! through the same cookie routing as TCP ones; it closes when the last of
//! those tests is released. A kernel without SCTP fails the socket: that test
//! gets error 202 ("unable to start stream listener: Protocol not supported")
//! and the server goes on.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::time::Instant;

use rperf3_proto::{IperfError, IE_SET_SCTP_BINDX, IE_STREAM_LISTEN};
use rperf3_sys::net::Family;

use super::pending::Pending;

/// Connections taken per wakeup, as for the TCP listener.
const ACCEPT_BATCH: usize = 64;

/// Where and how to listen, and who needs it.
#[derive(Debug)]
pub(super) struct SctpListener {
    addr: SocketAddr,
    dual_stack: bool,
    family: Family,
    xbind: Vec<String>,
    listener: Option<TcpListener>,
    users: Vec<u64>,
}

impl SctpListener {
    /// For the server's address (`-B`, `-4`/`-6`, port) and its `-X` names.
    pub(super) fn new(
        addr: SocketAddr,
        bind: Option<&str>,
        family: Family,
        xbind: &[String],
    ) -> Self {
        Self {
            addr,
            dual_stack: bind.is_none() && family != Family::V6,
            family,
            xbind: xbind.to_vec(),
            listener: None,
            users: Vec::new(),
        }
    }

    /// Session `id` runs an SCTP test: opens the listener if it is not open.
    pub(super) fn request(&mut self, id: u64) -> Result<(), IperfError> {
        if self.listener.is_none() {
            self.listener = Some(self.open()?);
        }
        if !self.users.contains(&id) {
            self.users.push(id);
        }
        Ok(())
    }

    fn open(&self) -> Result<TcpListener, IperfError> {
        let listen_err = |e: io::Error| IperfError::from_io(IE_STREAM_LISTEN, &e);
        // In iperf3's order: the socket (where a kernel without SCTP fails),
        // then the -X addresses, bound (all on the server's port) instead of
        // the usual one.
        let sock =
            rperf3_sys::sctp::listener_socket(&self.addr, self.dual_stack).map_err(listen_err)?;
        let mut extra = Vec::new();
        for name in &self.xbind {
            let a = rperf3_sys::net::resolve(name, self.addr.port(), self.family)
                .map_err(|e| IperfError::from_io(IE_SET_SCTP_BINDX, &e))?;
            extra.extend(a);
        }
        let l = rperf3_sys::sctp::listen_on(sock, self.addr, &extra).map_err(|e| {
            let code = if extra.is_empty() {
                IE_STREAM_LISTEN
            } else {
                IE_SET_SCTP_BINDX
            };
            IperfError::from_io(code, &e)
        })?;
        l.set_nonblocking(true).map_err(listen_err)?;
        Ok(l)
    }

    /// Session `id` is over; the last one closes the listener.
    pub(super) fn release(&mut self, id: u64) {
        self.users.retain(|&u| u != id);
        if self.users.is_empty() {
            self.listener = None;
        }
    }

    /// The listener to poll, while open.
    pub(super) fn socket(&self) -> Option<&TcpListener> {
        self.listener.as_ref()
    }

    /// Takes waiting associations into the handshake set (their cookies are
    /// read there). Returns an error worth logging, if accept() gave one.
    pub(super) fn accept(&mut self, pending: &mut Pending, now: Instant) -> Option<io::Error> {
        let l = self.listener.as_ref()?;
        for _ in 0..ACCEPT_BATCH {
            match l.accept() {
                Ok((conn, peer)) => {
                    if let Ok(Some(old)) = pending.add_from(conn, peer, true, now) {
                        drop(old);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Some(e),
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_sctp_gives_iperf3s_listener_error() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let mut l = SctpListener::new(addr, Some("127.0.0.1"), Family::V4, &[]);
        match l.request(7) {
            Ok(()) => {
                assert!(l.socket().is_some());
                l.release(7);
                assert!(l.socket().is_none());
            }
            Err(e) => {
                assert_eq!(e.code, IE_STREAM_LISTEN);
                assert_eq!(
                    e.to_string(),
                    "unable to start stream listener: Protocol not supported"
                );
            }
        }
    }

    #[test]
    fn an_unresolvable_xbind_name_is_a_bindx_error_after_the_socket() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let names = ["no-such-host.invalid".to_string()];
        let mut l = SctpListener::new(addr, None, Family::V4, &names);
        let code = l.request(1).unwrap_err().code;
        // Without SCTP the socket fails first, as in iperf3.
        let no_sctp = rperf3_sys::sctp::socket_for(&addr).is_err();
        assert_eq!(
            code,
            if no_sctp {
                IE_STREAM_LISTEN
            } else {
                IE_SET_SCTP_BINDX
            }
        );
        assert!(l.socket().is_none());
    }
}
