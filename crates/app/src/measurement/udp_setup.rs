//! UDP stream setup: the "9876" / "6789" handshake on both sides.
//!
//! The server receives each stream's first datagram on a listening socket bound to
//! the test port, connects that socket to the sender (it becomes the stream), binds
//! a fresh listening socket on the same port for the next stream, and only then
//! replies. Opening the next socket before replying is what lets a fast client's
//! next handshake find a listener.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rperf3_proto::{is_connect_reply, UDP_CONNECT_MSG};

use crate::interrupt::Interrupt;

/// Largest number of non-reply datagrams a client skips while waiting for the reply.
const MAX_SKIPPED: usize = 64;

/// Receive buffer a UDP stream asks for when `-w` is not given. With
/// offload, one send call delivers up to 256 KiB of trains at once; the usual
/// 208 KiB default overflows before a sleeping receiver thread is back, so
/// `-b 0` on loopback lost 30-50% in the socket, not on the path. The kernel
/// caps the request at `net.core.rmem_max`.
pub(crate) const UDP_RECV_BUFFER: usize = 4 << 20;

/// Makes sure the socket buffers hold at least one datagram (iperf3 raises them to
/// `len + 1024` when smaller) and the receive buffer [`UDP_RECV_BUFFER`], or
/// sets `-w`.
pub(crate) fn size_buffers(s: &UdpSocket, len: usize, window: Option<u32>) -> io::Result<()> {
    match window {
        Some(w) => rperf3_sys::net::set_buffer_sizes(s, w as usize),
        None => {
            let (snd, rcv) = rperf3_sys::net::buffer_sizes(s);
            if (snd as usize) < len || (rcv as usize) < len {
                rperf3_sys::net::set_buffer_sizes(s, len + 1024)?;
            }
            rperf3_sys::net::raise_recv_buffer(s, UDP_RECV_BUFFER.max(len + 1024))?;
            Ok(())
        }
    }
}

/// The client's socket of one stream, connected to the server, before the
/// hello: options set now (the TOS byte) are on every datagram, the hello too.
pub(crate) fn open_stream(
    server: SocketAddr,
    bind: Option<&str>,
    local_port: u16,
    device: Option<&str>,
    len: usize,
    window: Option<u32>,
) -> io::Result<UdpSocket> {
    let local = match bind {
        Some(b) => {
            let fam = if server.is_ipv4() {
                rperf3_sys::net::Family::V4
            } else {
                rperf3_sys::net::Family::V6
            };
            let mut a = rperf3_sys::net::resolve(b, 0, fam)?[0];
            a.set_port(0);
            a
        }
        None if server.is_ipv4() => SocketAddr::from(([0, 0, 0, 0], 0)),
        None => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0)),
    };
    let mut local = local;
    local.set_port(local_port);
    let sock = rperf3_sys::net::udp_bind(local, false, device)?;
    sock.connect(server)?;
    size_buffers(&sock, len, window)?;
    Ok(sock)
}

/// Sends "9876" and waits up to `timeout` for the reply (TimedOut without it;
/// Interrupted as soon as `intr` fires: a lost hello must not hold Ctrl-C for
/// the whole setup time).
pub(crate) fn hello(
    sock: &UdpSocket,
    len: usize,
    timeout: Duration,
    intr: &mut Interrupt,
) -> io::Result<()> {
    sock.send(&UDP_CONNECT_MSG)?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; len.max(4)];
    let mut skipped = 0;
    while skipped < MAX_SKIPPED {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let ready = rperf3_sys::poll::wait_readable(&[sock.as_fd(), intr.fd()], left)?;
        if ready[1] && intr.triggered() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        if !ready[0] {
            continue;
        }
        let n = sock.recv(&mut buf)?;
        if is_connect_reply(&buf[..n.min(4)]) {
            return Ok(());
        }
        skipped += 1;
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "no UDP connect reply",
    ))
}
