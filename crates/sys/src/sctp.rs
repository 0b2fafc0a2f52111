//! SCTP one-to-one sockets (`--sctp`) and the options iperf3 sets on them.
//!
//! The data streams of an SCTP test are `socket(domain, SOCK_STREAM,
//! IPPROTO_SCTP)` sockets: byte streams as far as the stream loops care, so
//! they travel as `TcpStream`/`TcpListener` values (only the fd matters). What
//! TCP does not have is set here: SCTP_NODELAY, SCTP_MAXSEG, SCTP_INITMSG
//! (`--nstreams`), SCTP_DISABLE_FRAGMENTS and `sctp_bindx` (`-X`), which libc
//! exposes neither as constants nor as structs; their values are Linux's
//! `linux/sctp.h`. A kernel without the SCTP module refuses the socket itself
//! with EPROTONOSUPPORT.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, AsRawFd};

use socket2::{Domain, Socket, Type};

/// SCTP socket options (`linux/sctp.h`), at level IPPROTO_SCTP.
const SCTP_INITMSG: i32 = 2;
const SCTP_NODELAY: i32 = 3;
const SCTP_DISABLE_FRAGMENTS: i32 = 8;
const SCTP_MAXSEG: i32 = 13;
const SCTP_SOCKOPT_BINDX_ADD: i32 = 100;
/// `assoc_id` meaning "associations made from now on".
const SCTP_FUTURE_ASSOC: i32 = 0;

/// `struct sctp_initmsg`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct InitMsg {
    num_ostreams: u16,
    max_instreams: u16,
    max_attempts: u16,
    max_init_timeo: u16,
}

/// `struct sctp_assoc_value`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct AssocValue {
    assoc_id: i32,
    assoc_value: u32,
}

/// The protocol argument of `socket()` for SCTP.
pub fn protocol() -> socket2::Protocol {
    socket2::Protocol::from(libc::IPPROTO_SCTP)
}

/// A new SCTP one-to-one socket for `addr`'s family.
pub fn socket_for(addr: &SocketAddr) -> io::Result<Socket> {
    Socket::new(Domain::for_address(*addr), Type::STREAM, Some(protocol()))
}

fn set_bytes(fd: &impl AsRawFd, name: i32, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: passes a pointer to a live byte slice and its exact length; the
    // kernel only reads that many bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_SCTP,
            name,
            bytes.as_ptr().cast(),
            bytes.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn set_struct<T: Copy>(fd: &impl AsRawFd, name: i32, value: &T) -> io::Result<()> {
    // SAFETY: passes a pointer to a live, fully initialised repr(C) value of
    // plain integers and its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_SCTP,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// SCTP_NODELAY (`-N`).
pub fn set_nodelay(fd: &impl AsRawFd) -> io::Result<()> {
    set_struct(fd, SCTP_NODELAY, &1i32)
}

/// SCTP_MAXSEG (`-M`) for the associations this socket makes.
pub fn set_maxseg(fd: &impl AsRawFd, mss: u32) -> io::Result<()> {
    let v = AssocValue {
        assoc_id: SCTP_FUTURE_ASSOC,
        assoc_value: mss,
    };
    set_struct(fd, SCTP_MAXSEG, &v)
}

/// SCTP_INITMSG with `n` outbound streams (`--nstreams`); the rest stays the
/// kernel's default (zero), as iperf3 sends it.
pub fn set_out_streams(fd: &impl AsRawFd, n: u16) -> io::Result<()> {
    let m = InitMsg {
        num_ostreams: n,
        ..InitMsg::default()
    };
    set_struct(fd, SCTP_INITMSG, &m)
}

/// SCTP_DISABLE_FRAGMENTS off: messages larger than the path MTU are split,
/// which a byte stream needs (iperf3 sets it after the cookie). A stack
/// without the option (ENOPROTOOPT) is not an error, as in iperf3.
pub fn allow_fragments(fd: &impl AsRawFd) -> io::Result<()> {
    match set_struct(fd, SCTP_DISABLE_FRAGMENTS, &0i32) {
        Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => Ok(()),
        r => r,
    }
}

/// `sctp_bindx(fd, addrs, SCTP_BINDX_ADD_ADDR)`: adds local addresses to the
/// socket's endpoint (`-X`). Their ports must be the socket's own.
pub fn bindx_add(fd: &impl AsRawFd, addrs: &[SocketAddr]) -> io::Result<()> {
    if addrs.is_empty() {
        return Ok(());
    }
    set_bytes(fd, SCTP_SOCKOPT_BINDX_ADD, &pack_addrs(addrs))
}

/// The packed address array `sctp_bindx` takes: `sockaddr_in` (16 bytes) and
/// `sockaddr_in6` (28 bytes) back to back, each as the kernel lays it out.
pub fn pack_addrs(addrs: &[SocketAddr]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in addrs {
        match a {
            SocketAddr::V4(v4) => {
                out.extend_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
                out.extend_from_slice(&v4.port().to_be_bytes());
                out.extend_from_slice(&v4.ip().octets());
                out.extend_from_slice(&[0; 8]);
            }
            SocketAddr::V6(v6) => {
                out.extend_from_slice(&(libc::AF_INET6 as u16).to_ne_bytes());
                out.extend_from_slice(&v6.port().to_be_bytes());
                out.extend_from_slice(&v6.flowinfo().to_be_bytes());
                out.extend_from_slice(&v6.ip().octets());
                out.extend_from_slice(&v6.scope_id().to_ne_bytes());
            }
        }
    }
    out
}

/// A new socket for the server's SCTP listener on `addr` (iperf3 opens one
/// when a test asks for SCTP), before any address is bound: the first step to
/// fail where the kernel lacks SCTP. `dual_stack`: an IPv6 wildcard that takes
/// IPv4 too.
pub fn listener_socket(addr: &SocketAddr, dual_stack: bool) -> io::Result<Socket> {
    let sock = socket_for(addr)?;
    if addr.is_ipv6() {
        sock.set_only_v6(!dual_stack)?;
    }
    sock.set_reuse_address(true)?;
    Ok(sock)
}

/// Binds the listener to `addr`, or with `extra` (`-X`) addresses to those
/// instead, all on `addr`'s port as iperf3's server does, and listens.
pub fn listen_on(sock: Socket, addr: SocketAddr, extra: &[SocketAddr]) -> io::Result<TcpListener> {
    match extra.split_first() {
        None => sock.bind(&addr.into())?,
        Some((first, rest)) => {
            sock.bind(&(*first).into())?;
            bindx_add(&sock, rest)?;
        }
    }
    sock.listen(128)?;
    Ok(sock.into())
}

/// Client side of `-X`: binds the first address (port `port`, 0 for any, unless
/// the socket is bound already) and adds the others on the port it got.
pub fn bind_client(sock: &impl AsFd, port: u16, addrs: &[SocketAddr]) -> io::Result<()> {
    let s = socket2::SockRef::from(sock);
    let bound = s.local_addr()?.as_socket().is_some_and(|a| a.port() != 0);
    let rest = if bound {
        addrs
    } else {
        let Some((first, rest)) = addrs.split_first() else {
            return Ok(());
        };
        let mut f = *first;
        f.set_port(port);
        s.bind(&f.into())?;
        rest
    };
    let port = s.local_addr()?.as_socket().map_or(port, |a| a.port());
    let rest: Vec<SocketAddr> = rest
        .iter()
        .map(|a| {
            let mut a = *a;
            a.set_port(port);
            a
        })
        .collect();
    bindx_add(&sock.as_fd(), &rest)
}

/// Whether an error means this host has no SCTP (no kernel module).
pub fn unavailable(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EPROTONOSUPPORT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv6Addr, SocketAddrV6};

    #[test]
    fn structs_have_the_kernel_sizes() {
        assert_eq!(size_of::<InitMsg>(), 8);
        assert_eq!(size_of::<AssocValue>(), 8);
    }

    #[test]
    fn bindx_addresses_pack_as_sockaddrs() {
        let v4: SocketAddr = "10.1.2.3:5201".parse().unwrap();
        let v6 = SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::LOCALHOST, 5201, 0, 7));
        let b = pack_addrs(&[v4, v6]);
        assert_eq!(b.len(), 16 + 28);
        assert_eq!(&b[0..2], &(libc::AF_INET as u16).to_ne_bytes());
        assert_eq!(&b[2..4], &[0x14, 0x51]);
        assert_eq!(&b[4..8], &[10, 1, 2, 3]);
        assert_eq!(&b[8..16], &[0; 8]);
        assert_eq!(&b[16..18], &(libc::AF_INET6 as u16).to_ne_bytes());
        assert_eq!(&b[18..20], &[0x14, 0x51]);
        assert_eq!(&b[20..24], &[0; 4]);
        assert_eq!(b[39], 1);
        assert_eq!(&b[40..44], &7u32.to_ne_bytes());
    }

    #[test]
    fn socket_works_or_the_kernel_lacks_sctp() {
        let a: SocketAddr = "127.0.0.1:0".parse().unwrap();
        match socket_for(&a) {
            Ok(s) => {
                set_nodelay(&s).unwrap();
                set_out_streams(&s, 5).unwrap();
                allow_fragments(&s).unwrap();
            }
            Err(e) => assert!(unavailable(&e), "{e}"),
        }
        match listener_socket(&a, false) {
            Ok(s) => drop(listen_on(s, a, &[]).unwrap()),
            Err(e) => assert!(unavailable(&e), "{e}"),
        }
    }

    #[test]
    fn options_reach_the_kernel_at_the_sctp_level() {
        // A TCP socket has no SCTP options: the kernel answers for the level.
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = set_out_streams(&l, 3).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOPROTOOPT), "{e}");
        assert!(set_maxseg(&l, 1000).is_err());
        assert!(bindx_add(&l, &["127.0.0.1:1".parse().unwrap()]).is_err());
        bindx_add(&l, &[]).unwrap();
    }
}
