//! Multicast socket options: the hop limit a sender puts on its datagrams and
//! the group (or source-specific) membership a receiver asks for.
//!
//! Through socket2 where it has the call; the source-specific join by
//! interface index (MCAST_JOIN_SOURCE_GROUP, IPv4 and IPv6 alike) is a plain
//! setsockopt with its request struct.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd};

use socket2::{InterfaceIndexOrAddress, SockRef};

/// Whether `ip` is a multicast group address.
pub fn is_multicast(ip: IpAddr) -> bool {
    ip.is_multicast()
}

/// The interface index of a device name (`%dev`).
pub fn interface_index(dev: &str) -> io::Result<u32> {
    nix::net::if_::if_nametoindex(dev).map_err(io::Error::from)
}

/// Sets the TTL (IPv4, IP_MULTICAST_TTL) or hop limit (IPv6,
/// IPV6_MULTICAST_HOPS) of the multicast datagrams a socket sends.
pub fn set_multicast_ttl(sock: &impl AsFd, v6: bool, ttl: u8) -> io::Result<()> {
    let s = SockRef::from(sock);
    if v6 {
        s.set_multicast_hops_v6(u32::from(ttl))
    } else {
        s.set_multicast_ttl_v4(u32::from(ttl))
    }
}

/// Chooses the interface a socket's multicast datagrams leave by: the one
/// with address `local` (IPv4) or index `ifindex` (IPv6). An IPv4 socket
/// without an address is steered by its bound device, if any.
pub fn set_multicast_interface(sock: &impl AsFd, local: IpAddr, ifindex: u32) -> io::Result<()> {
    let s = SockRef::from(sock);
    match local {
        IpAddr::V4(a) if !a.is_unspecified() => s.set_multicast_if_v4(&a),
        IpAddr::V4(_) => Ok(()),
        IpAddr::V6(_) => s.set_multicast_if_v6(ifindex),
    }
}

/// Joins `group` on a socket bound to it: any source, or only `source` (a
/// source-specific join), on the interface `ifindex` (0: the kernel's choice).
/// An IPv4 socket then stops receiving groups it did not join itself
/// (IP_MULTICAST_ALL off), so two tests on one port stay apart.
pub fn join(
    sock: &impl AsFd,
    group: IpAddr,
    source: Option<IpAddr>,
    ifindex: u32,
) -> io::Result<()> {
    let s = SockRef::from(sock);
    match (group, source) {
        (IpAddr::V4(g), None) => {
            s.join_multicast_v4_n(&g, &InterfaceIndexOrAddress::Index(ifindex))?;
            let _ = s.set_multicast_all_v4(false);
            Ok(())
        }
        (IpAddr::V6(g), None) => s.join_multicast_v6(&g, ifindex),
        (g, Some(src)) if g.is_ipv4() == src.is_ipv4() => {
            join_source_group(sock, g, src, ifindex)?;
            if g.is_ipv4() {
                let _ = s.set_multicast_all_v4(false);
            }
            Ok(())
        }
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "multicast source and group are of different address families",
        )),
    }
}

/// Writes `a` into a zeroed `sockaddr_storage`.
fn storage(a: IpAddr) -> libc::sockaddr_storage {
    let sa = socket2::SockAddr::from(SocketAddr::new(a, 0));
    // SAFETY: sockaddr_storage is plain data; all-zero is a valid value.
    let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let n = (sa.len() as usize).min(size_of::<libc::sockaddr_storage>());
    // SAFETY: `sa.as_ptr()` points at `sa.len()` initialized bytes of a socket
    // address, `st` has room for `n` <= its size, and the two do not overlap.
    unsafe {
        std::ptr::copy_nonoverlapping(
            sa.as_ptr().cast::<u8>(),
            (&mut st as *mut libc::sockaddr_storage).cast::<u8>(),
            n,
        );
    }
    st
}

fn join_source_group(
    sock: &impl AsFd,
    group: IpAddr,
    source: IpAddr,
    ifindex: u32,
) -> io::Result<()> {
    let req = libc::group_source_req {
        gsr_interface: ifindex,
        gsr_group: storage(group),
        gsr_source: storage(source),
    };
    let level = if group.is_ipv4() {
        libc::IPPROTO_IP
    } else {
        libc::IPPROTO_IPV6
    };
    let fd = sock.as_fd().as_raw_fd();
    // SAFETY: passes a pointer to a live, fully initialized group_source_req
    // and its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            level,
            libc::MCAST_JOIN_SOURCE_GROUP,
            (&req as *const libc::group_source_req).cast(),
            size_of::<libc::group_source_req>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, UdpSocket};

    #[test]
    fn the_outgoing_interface_is_what_the_socket_reports() {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_multicast_interface(&u, Ipv4Addr::LOCALHOST.into(), 0).unwrap();
        assert_eq!(
            SockRef::from(&u).multicast_if_v4().unwrap(),
            Ipv4Addr::LOCALHOST
        );
    }

    #[test]
    fn ttl_is_what_the_socket_reports() {
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        set_multicast_ttl(&u, false, 3).unwrap();
        assert_eq!(u.multicast_ttl_v4().unwrap(), 3);
    }

    #[test]
    fn joins_any_source_and_source_specific_on_loopback() {
        let lo = interface_index("lo").unwrap();
        assert!(lo > 0);
        let u = UdpSocket::bind("239.255.77.1:0").unwrap();
        join(&u, "239.255.77.1".parse().unwrap(), None, lo).unwrap();
        let s = UdpSocket::bind("232.77.0.1:0").unwrap();
        let src: IpAddr = Ipv4Addr::LOCALHOST.into();
        join(&s, "232.77.0.1".parse().unwrap(), Some(src), lo).unwrap();
        // Joining the same (S,G) twice is refused (Linux: EADDRNOTAVAIL): the
        // first join took effect.
        let again = join(&s, "232.77.0.1".parse().unwrap(), Some(src), lo).unwrap_err();
        assert_eq!(again.raw_os_error(), Some(libc::EADDRNOTAVAIL));
        assert!(interface_index("no-such-dev0").is_err());
        let mixed = join(
            &s,
            "232.77.0.1".parse().unwrap(),
            Some("::1".parse().unwrap()),
            lo,
        );
        assert_eq!(mixed.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }
}
