//! UDP stream setup: the "9876" / "6789" handshake on both sides.
//!
//! The server receives each stream's first datagram on a listening socket bound to
//! the test port, connects that socket to the sender (it becomes the stream), binds
//! a fresh listening socket on the same port for the next stream, and only then
//! replies. Opening the next socket before replying is what lets a fast client's
//! next handshake find a listener.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use rperf3_proto::{is_connect_reply, UDP_CONNECT_MSG, UDP_CONNECT_REPLY};

/// Largest number of non-reply datagrams a client skips while waiting for the reply.
const MAX_SKIPPED: usize = 64;

/// Receive buffer a UDP stream asks for when `-w` is not given. With
/// offload, one send call delivers up to 256 KiB of trains at once; the usual
/// 208 KiB default overflows before a sleeping receiver thread is back, so
/// `-b 0` on loopback lost 30-50% in the socket, not on the path. The kernel
/// caps the request at `net.core.rmem_max`.
pub const UDP_RECV_BUFFER: usize = 4 << 20;

/// Makes sure the socket buffers hold at least one datagram (iperf3 raises them to
/// `len + 1024` when smaller) and the receive buffer [`UDP_RECV_BUFFER`], or
/// sets `-w`.
pub fn size_buffers(s: &UdpSocket, len: usize, window: Option<u32>) -> io::Result<()> {
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
pub fn open_stream(
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

/// Sends "9876" and waits up to `timeout` for the reply (TimedOut without it).
pub fn hello(sock: &UdpSocket, len: usize, timeout: Duration) -> io::Result<()> {
    sock.send(&UDP_CONNECT_MSG)?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; len.max(4)];
    for _ in 0..MAX_SKIPPED {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        sock.set_read_timeout(Some(left))?;
        let n = sock.recv(&mut buf)?;
        if is_connect_reply(&buf[..n.min(4)]) {
            return sock.set_read_timeout(None);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "no UDP connect reply",
    ))
}

/// Server side: the listening socket for the next stream.
#[derive(Debug)]
pub struct UdpAcceptor {
    addr: SocketAddr,
    device: Option<String>,
    listener: Option<UdpSocket>,
}

impl UdpAcceptor {
    /// Binds the first listening socket on the test port (before CREATE_STREAMS).
    pub fn bind(addr: SocketAddr, device: Option<&str>) -> io::Result<Self> {
        let listener = rperf3_sys::net::udp_bind(addr, true, device)?;
        Ok(Self {
            addr,
            device: device.map(str::to_string),
            listener: Some(listener),
        })
    }

    /// Waits up to `wait` for one stream's handshake datagram. On arrival the
    /// listening socket becomes the stream (connected to the sender); unless this is
    /// the `last` stream, a new listening socket is bound first; then "6789" goes
    /// out from the stream socket. `Ok(None)`: nothing arrived in time.
    pub fn accept(
        &mut self,
        wait: Duration,
        last: bool,
        len: usize,
        window: Option<u32>,
    ) -> io::Result<Option<UdpSocket>> {
        let Some(l) = self.listener.as_ref() else {
            return Err(io::Error::from(io::ErrorKind::NotConnected));
        };
        if !rperf3_sys::poll::readable(l, wait)? {
            return Ok(None);
        }
        let mut b = [0u8; 4];
        // Content is not checked: every iperf3 version's hello works.
        let (_, peer) = l.recv_from(&mut b)?;
        let stream = self.listener.take().expect("checked above");
        stream.connect(peer)?;
        if !last {
            self.listener = Some(rperf3_sys::net::udp_bind(
                self.addr,
                true,
                self.device.as_deref(),
            )?);
        }
        size_buffers(&stream, len, window)?;
        stream.send(&UDP_CONNECT_REPLY)?;
        Ok(Some(stream))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_streams_share_one_port() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let probe = UdpSocket::bind(addr).unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let listen = SocketAddr::from(([127, 0, 0, 1], port));
        let mut acc = UdpAcceptor::bind(listen, None).unwrap();
        let client = std::thread::spawn(move || {
            let t = Duration::from_secs(5);
            let connect = || {
                let s = open_stream(listen, None, 0, None, 100, None).unwrap();
                hello(&s, 100, t).unwrap();
                s
            };
            let (a, b) = (connect(), connect());
            (a.local_addr().unwrap(), b.local_addr().unwrap())
        });
        let s1 = acc
            .accept(Duration::from_secs(5), false, 100, None)
            .unwrap()
            .unwrap();
        let s2 = acc
            .accept(Duration::from_secs(5), true, 100, None)
            .unwrap()
            .unwrap();
        let (a, b) = client.join().unwrap();
        assert_eq!(s1.peer_addr().unwrap(), a);
        assert_eq!(s2.peer_addr().unwrap(), b);
        assert_eq!(s1.local_addr().unwrap().port(), port);
        assert_eq!(s2.local_addr().unwrap().port(), port);
    }
}
