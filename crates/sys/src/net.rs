//! Socket creation and the options reports need, through socket2.
#![forbid(unsafe_code)]

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsFd, BorrowedFd};
use std::time::Duration;

use nix::sys::socket::MsgFlags;
use socket2::{Domain, SockRef, Socket, Type};

/// Address family restriction (`-4` / `-6`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Family {
    /// Either.
    #[default]
    Any,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

impl Family {
    fn admits(self, a: &SocketAddr) -> bool {
        match self {
            Self::Any => true,
            Self::V4 => a.is_ipv4(),
            Self::V6 => a.is_ipv6(),
        }
    }
}

/// Strips an iperf3-style `%dev` suffix from a host, keeping IPv6 zone ids of
/// link-local addresses intact for the resolver.
pub fn host_part(host: &str) -> &str {
    match host.rsplit_once('%') {
        Some((h, _)) if !h.contains(':') => h,
        _ => host,
    }
}

/// The `%dev` suffix of a host (bind-to-device), if it has one; an IPv6 zone id is
/// not a device request.
pub fn device_part(host: &str) -> Option<&str> {
    match host.rsplit_once('%') {
        Some((h, d)) if !h.contains(':') && !d.is_empty() => Some(d),
        _ => None,
    }
}

fn bind_device(sock: &Socket, dev: Option<&str>) -> io::Result<()> {
    match dev {
        Some(d) => sock.bind_device(Some(d.as_bytes())),
        None => Ok(()),
    }
}

/// Resolves `host:port`, keeping only addresses of `family`.
pub fn resolve(host: &str, port: u16, family: Family) -> io::Result<Vec<SocketAddr>> {
    let h = host_part(host);
    let h = h
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(h);
    let addrs: Vec<SocketAddr> = (h, port)
        .to_socket_addrs()?
        .filter(|a| family.admits(a))
        .collect();
    if addrs.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "Name or service not known",
        ));
    }
    Ok(addrs)
}

/// Shows an IPv4-mapped IPv6 address as plain IPv4, as iperf3 prints it.
pub fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(IpAddr::V4(v4), v6.port()),
            None => a,
        },
        SocketAddr::V4(_) => a,
    }
}

fn local_for(bind: Option<&str>, remote: &SocketAddr) -> io::Result<Option<SocketAddr>> {
    let Some(b) = bind else { return Ok(None) };
    let fam = if remote.is_ipv4() {
        Family::V4
    } else {
        Family::V6
    };
    Ok(resolve(b, 0, fam)?.into_iter().next())
}

/// Connects a TCP socket to the first address that answers, binding to `bind`
/// (a host, any port; or `bind_port` if nonzero), to `device` if given
/// (SO_BINDTODEVICE), and giving up after `timeout`.
pub fn connect_tcp(
    addrs: &[SocketAddr],
    bind: Option<&str>,
    bind_port: u16,
    device: Option<&str>,
    timeout: Option<Duration>,
) -> io::Result<TcpStream> {
    let none = |_: BorrowedFd<'_>, _: bool| Ok::<(), io::Error>(());
    let plain = Transport::Tcp;
    connect_tcp_prepared(addrs, bind, bind_port, device, timeout, plain, &none)
        .map_err(|e| match e {
            Prepared::Options(e) | Prepared::Connect(e) => e,
        })
}

/// The stream protocol of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// Plain TCP.
    Tcp,
    /// Multipath TCP (`-m`); the kernel falls back to TCP if the peer lacks it.
    Mptcp,
    /// An SCTP one-to-one association (`--sctp`).
    Sctp,
}

/// Why [`connect_tcp_prepared`] failed.
#[derive(Debug)]
pub enum Prepared<E> {
    /// The `prepare` callback refused the socket.
    Options(E),
    /// Creating, binding or connecting failed.
    Connect(io::Error),
}

/// [`connect_tcp`], calling `prepare(socket, is_ipv6)` on each socket before it
/// connects (options that must be in the SYN, such as TCP_MAXSEG). A `prepare`
/// failure ends the attempt at once.
pub fn connect_tcp_prepared<E>(
    addrs: &[SocketAddr],
    bind: Option<&str>,
    bind_port: u16,
    device: Option<&str>,
    timeout: Option<Duration>,
    transport: Transport,
    prepare: &dyn Fn(BorrowedFd<'_>, bool) -> Result<(), E>,
) -> Result<TcpStream, Prepared<E>> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for addr in addrs {
        match try_connect(addr, bind, (bind_port, device), timeout, transport, prepare) {
            Ok(s) => return Ok(s),
            Err(Prepared::Connect(e)) => last = e,
            Err(e) => return Err(e),
        }
    }
    Err(Prepared::Connect(last))
}

fn try_connect<E>(
    addr: &SocketAddr,
    bind: Option<&str>,
    (bind_port, device): (u16, Option<&str>),
    timeout: Option<Duration>,
    transport: Transport,
    prepare: &dyn Fn(BorrowedFd<'_>, bool) -> Result<(), E>,
) -> Result<TcpStream, Prepared<E>> {
    let io = Prepared::Connect;
    let proto = match transport {
        Transport::Tcp => None,
        Transport::Mptcp => Some(socket2::Protocol::MPTCP),
        Transport::Sctp => Some(crate::sctp::protocol()),
    };
    let sock = Socket::new(Domain::for_address(*addr), Type::STREAM, proto).map_err(io)?;
    bind_device(&sock, device.or_else(|| bind.and_then(device_part))).map_err(io)?;
    let local = local_for(bind, addr).map_err(io)?;
    if local.is_some() || bind_port != 0 {
        let mut l = local.unwrap_or_else(|| match addr {
            SocketAddr::V4(_) => SocketAddr::from(([0, 0, 0, 0], 0)),
            SocketAddr::V6(_) => SocketAddr::from((Ipv6Addr::UNSPECIFIED, 0)),
        });
        l.set_port(bind_port);
        // Only a fixed local port (--cport) needs reuse; see `udp_bind`.
        sock.set_reuse_address(bind_port != 0).map_err(io)?;
        sock.bind(&l.into()).map_err(io)?;
    }
    prepare(sock.as_fd(), addr.is_ipv6()).map_err(Prepared::Options)?;
    match timeout {
        Some(t) => sock.connect_timeout(&(*addr).into(), t).map_err(io)?,
        None => sock.connect(&(*addr).into()).map_err(io)?,
    }
    Ok(sock.into())
}

/// Opens the server's TCP listener: `[::]:port` accepting IPv4 too, unless `-4`,
/// `-6` or `-B` narrow it. SO_REUSEADDR so a restarted server can bind at once.
/// `device` (`--bind-dev`) takes precedence over a `%dev` in `bind`.
///
/// The listener is an MPTCP one where the kernel has MPTCP: a client's `-m`
/// data streams are then MPTCP at both ends, as with iperf3 3.21's server,
/// while a plain TCP client's connections are handed out as plain TCP sockets.
pub fn listen_tcp(
    bind: Option<&str>,
    device: Option<&str>,
    port: u16,
    family: Family,
) -> io::Result<TcpListener> {
    let addr = listen_addr(bind, port, family)?;
    let device = device.or_else(|| bind.and_then(device_part));
    let open = |proto: Option<socket2::Protocol>| -> io::Result<TcpListener> {
        let sock = Socket::new(Domain::for_address(addr), Type::STREAM, proto)?;
        sock.set_reuse_address(true)?;
        bind_device(&sock, device)?;
        if addr.is_ipv6() && bind.is_none() {
            sock.set_only_v6(family == Family::V6)?;
        }
        sock.bind(&addr.into())?;
        sock.listen(128)?;
        Ok(sock.into())
    };
    // A kernel without MPTCP (or with it disabled) gets the plain listener.
    open(Some(socket2::Protocol::MPTCP)).or_else(|_| open(None))
}

/// The address a server binds for `-B`, `-4`, `-6` and the port.
pub fn listen_addr(bind: Option<&str>, port: u16, family: Family) -> io::Result<SocketAddr> {
    if let Some(b) = bind {
        return resolve(b, port, family)?
            .into_iter()
            .next()
            .ok_or_else(|| io::Error::from(io::ErrorKind::AddrNotAvailable));
    }
    Ok(match family {
        Family::V4 => SocketAddr::from(([0, 0, 0, 0], port)),
        Family::Any | Family::V6 => {
            if ipv6_available() {
                SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))
            } else {
                SocketAddr::from(([0, 0, 0, 0], port))
            }
        }
    })
}

fn ipv6_available() -> bool {
    Socket::new(Domain::IPV6, Type::STREAM, None).is_ok()
}

/// A UDP socket bound to `local` with SO_REUSEADDR (the server binds one per stream
/// on the same port; see the protocol spec on UDP stream setup).
pub fn udp_bind(
    local: SocketAddr,
    dual_stack: bool,
    device: Option<&str>,
) -> io::Result<UdpSocket> {
    let sock = Socket::new(Domain::for_address(local), Type::DGRAM, None)?;
    // SO_REUSEADDR only for a fixed port (the server's per-stream sockets share the
    // test port). With port 0 it would let the kernel hand out an ephemeral port
    // that another socket of ours already uses, and two streams would collide.
    sock.set_reuse_address(local.port() != 0)?;
    bind_device(&sock, device)?;
    if local.is_ipv6() {
        sock.set_only_v6(!dual_stack)?;
    }
    sock.bind(&local.into())?;
    Ok(sock.into())
}

/// Whether an accept() error means the process or system ran out of
/// descriptors or memory (wait and retry), rather than a failed connection.
pub fn out_of_resources(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

/// Receives up to `buf.len()` bytes of a TCP stream and throws them away in
/// the kernel (MSG_TRUNC): nothing is copied into `buf`.
pub fn recv_discard(s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(s, buf, MsgFlags::MSG_TRUNC)
}

/// Discards what `s` holds now, up to `buf.len()` bytes, without waiting
/// (MSG_TRUNC | MSG_DONTWAIT): `WouldBlock` when nothing is there.
pub fn recv_discard_ready(s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(s, buf, MsgFlags::MSG_TRUNC | MsgFlags::MSG_DONTWAIT)
}

/// Receives what `s` holds now, up to `buf.len()` bytes, without waiting
/// (MSG_DONTWAIT): `WouldBlock` when nothing is there.
pub fn recv_ready(s: &TcpStream, buf: &mut [u8]) -> io::Result<usize> {
    recv_flags(s, buf, MsgFlags::MSG_DONTWAIT)
}

fn recv_flags(s: &TcpStream, buf: &mut [u8], flags: MsgFlags) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    nix::sys::socket::recv(s.as_raw_fd(), buf, flags).map_err(io::Error::from)
}

/// Takes one datagram and returns its full length (even past the few bytes
/// read: MSG_TRUNC) and its sender. The content is not needed by the caller.
pub fn recv_len_from(s: &UdpSocket) -> io::Result<(usize, SocketAddr)> {
    let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 8];
    let (n, from) = SockRef::from(s).recv_from_with_flags(&mut buf, libc::MSG_TRUNC)?;
    let from = from
        .as_socket()
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidData))?;
    Ok((n, from))
}

/// TCP_MAXSEG of a TCP socket (connected, listening or fresh), 0 if unknown.
pub fn tcp_mss(s: &impl AsFd) -> u32 {
    SockRef::from(s).tcp_mss().unwrap_or(0)
}

/// A fresh, unconnected TCP socket for `a`'s family: what the kernel gives a
/// socket before options and the handshake change it.
pub fn fresh_tcp_socket(a: SocketAddr) -> io::Result<std::os::fd::OwnedFd> {
    Ok(Socket::new(Domain::for_address(a), Type::STREAM, None)?.into())
}

/// Shuts a UDP socket down both ways: a receiver blocked in `recv` wakes.
pub fn shutdown_udp(s: &UdpSocket) -> io::Result<()> {
    SockRef::from(s).shutdown(std::net::Shutdown::Both)
}

/// TCP_MAXSEG once everything written so far is acknowledged (or `limit`
/// has passed). The kernel bounds the MSS by half the largest window the
/// peer has shown, and the peer's first ACK (window scaled) usually raises
/// that above the SYN-ACK's unscaled window: read earlier, a loaded machine
/// gives e.g. 32741 where an idle one gives 32768.
pub fn tcp_mss_settled(s: &TcpStream, limit: Duration) -> u32 {
    let until = std::time::Instant::now() + limit;
    // Polled, as the kernel has no event for "acknowledged"; on loopback the
    // ACK is usually there at the first look.
    while crate::tcp_info::tcp_info(s).is_some_and(|i| i.unacked > 0)
        && std::time::Instant::now() < until
    {
        std::thread::sleep(Duration::from_micros(200));
    }
    tcp_mss(s)
}

/// The congestion control algorithm of a TCP socket.
pub fn tcp_congestion(s: &TcpStream) -> Option<String> {
    let v = SockRef::from(s).tcp_congestion().ok()?;
    let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
    Some(String::from_utf8_lossy(&v[..end]).into_owned())
}

/// (SO_SNDBUF, SO_RCVBUF) as the kernel reports them.
pub fn buffer_sizes(s: &impl AsFd) -> (u64, u64) {
    let r = SockRef::from(s);
    (
        r.send_buffer_size().unwrap_or(0) as u64,
        r.recv_buffer_size().unwrap_or(0) as u64,
    )
}

/// Sets SO_SNDBUF and SO_RCVBUF (`-w`).
pub fn set_buffer_sizes(s: &impl AsFd, size: usize) -> io::Result<()> {
    let r = SockRef::from(s);
    r.set_send_buffer_size(size)?;
    r.set_recv_buffer_size(size)
}

/// Sets SO_SNDBUF (the kernel doubles it, and stops growing it).
pub fn set_send_buffer(s: &impl AsFd, size: usize) -> io::Result<()> {
    SockRef::from(s).set_send_buffer_size(size)
}

/// Raises SO_RCVBUF to at least `size` bytes (the kernel caps it at
/// `net.core.rmem_max`); never lowers it. Returns the size now in effect.
pub fn raise_recv_buffer(s: &impl AsFd, size: usize) -> io::Result<usize> {
    let r = SockRef::from(s);
    // The kernel reports twice what was asked (its bookkeeping overhead).
    let before = r.recv_buffer_size()?;
    if before < size.saturating_mul(2) {
        r.set_recv_buffer_size(size)?;
        // Where rmem_max is below the default, the capped request would lower it.
        if r.recv_buffer_size()? < before {
            r.set_recv_buffer_size(before / 2)?;
        }
    }
    r.recv_buffer_size()
}

/// Sets TCP_NODELAY.
pub fn set_nodelay(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raise_recv_buffer_raises_and_never_lowers() {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        SockRef::from(&s).set_recv_buffer_size(100_000).unwrap();
        let before = SockRef::from(&s).recv_buffer_size().unwrap();
        assert_eq!(raise_recv_buffer(&s, 4096).unwrap(), before);
        assert!(raise_recv_buffer(&s, 150_000).unwrap() > before);
    }

    #[test]
    fn host_part_strips_device_but_not_zone() {
        assert_eq!(host_part("10.0.0.1%eth0"), "10.0.0.1");
        assert_eq!(host_part("fe80::1%eth0"), "fe80::1%eth0");
        assert_eq!(host_part("example"), "example");
    }

    #[test]
    fn device_part_ignores_zones() {
        assert_eq!(device_part("10.0.0.1%eth0"), Some("eth0"));
        assert_eq!(device_part("fe80::1%eth0"), None);
        assert_eq!(device_part("host"), None);
    }

    #[test]
    fn binding_to_loopback_device_still_connects() {
        let l = listen_tcp(Some("127.0.0.1%lo"), None, 0, Family::V4).unwrap();
        let port = l.local_addr().unwrap().port();
        let addrs = resolve("127.0.0.1", port, Family::V4).unwrap();
        connect_tcp(&addrs, None, 0, Some("lo"), Some(Duration::from_secs(2))).unwrap();
    }

    #[test]
    fn unknown_device_is_an_error() {
        let addrs = resolve("127.0.0.1", 9, Family::V4).unwrap();
        assert!(connect_tcp(
            &addrs,
            None,
            0,
            Some("nosuchdev0"),
            Some(Duration::from_secs(1))
        )
        .is_err());
    }

    #[test]
    fn unmap_shows_v4() {
        let a: SocketAddr = "[::ffff:127.0.0.1]:5201".parse().unwrap();
        assert_eq!(unmap(a).to_string(), "127.0.0.1:5201");
    }

    #[test]
    fn listener_accepts_v4_on_dual_stack() {
        let l = listen_tcp(None, Some("lo"), 0, Family::Any).unwrap();
        let port = l.local_addr().unwrap().port();
        let addrs = resolve("127.0.0.1", port, Family::Any).unwrap();
        let c = connect_tcp(&addrs, None, 0, None, Some(Duration::from_secs(2))).unwrap();
        let (s, peer) = l.accept().unwrap();
        assert_eq!(unmap(peer).ip().to_string(), "127.0.0.1");
        assert!(tcp_mss(&c) > 0);
        assert!(tcp_congestion(&s).is_some());
    }

    #[test]
    fn family_filter_rejects_other_family() {
        assert!(resolve("127.0.0.1", 1, Family::V6).is_err());
    }

    #[test]
    fn datagram_length_is_seen_past_the_bytes_read() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.send_to(&[9u8; 1000], rx.local_addr().unwrap()).unwrap();
        tx.send_to(b"9876", rx.local_addr().unwrap()).unwrap();
        assert_eq!(
            recv_len_from(&rx).unwrap(),
            (1000, tx.local_addr().unwrap())
        );
        assert_eq!(recv_len_from(&rx).unwrap().0, 4);
    }

    #[test]
    fn ephemeral_udp_ports_are_never_shared() {
        // With SO_REUSEADDR on port-0 binds the kernel handed out duplicates
        // (two -P 100 streams on one port, and a handshake that never finished).
        let socks: Vec<UdpSocket> = (0..1500)
            .map(|_| udp_bind(SocketAddr::from(([127, 0, 0, 1], 0)), false, None).unwrap())
            .collect();
        let mut ports: Vec<u16> = socks
            .iter()
            .map(|s| s.local_addr().unwrap().port())
            .collect();
        ports.sort_unstable();
        let n = ports.len();
        ports.dedup();
        assert_eq!(ports.len(), n, "duplicate ephemeral ports");
    }
}
