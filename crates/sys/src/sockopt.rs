//! Socket options of data streams, and the ones socket2 does not wrap.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

use socket2::SockRef;

fn set_int(fd: &impl AsRawFd, level: i32, name: i32, value: i32) -> io::Result<()> {
    // SAFETY: passes a pointer to a live i32 and its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const i32).cast(),
            size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// An int socket option's value.
pub(crate) fn get_int(fd: &impl AsRawFd, level: i32, name: i32) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are live locals of the sizes the kernel is told.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(v)
    }
}

/// Sets the IPv4 don't-fragment flag (IP_MTU_DISCOVER = IP_PMTUDISC_DO).
pub fn set_dont_fragment(fd: &impl AsRawFd) -> io::Result<()> {
    set_int(
        fd,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    )
}

/// Sets TCP_NODELAY (`-N`).
pub fn set_nodelay(fd: &impl AsFd) -> io::Result<()> {
    SockRef::from(fd).set_tcp_nodelay(true)
}

/// Sets or clears TCP_CORK: while set, a segment shorter than the MSS waits
/// for the bytes that fill it; clearing it sends what waits at once.
pub fn set_cork(fd: &impl AsFd, on: bool) -> io::Result<()> {
    SockRef::from(fd).set_tcp_cork(on)
}

/// Sets TCP_QUICKACK: the next ACKs go at once. The kernel clears it again
/// by itself, so a reader that wants it sets it before each read.
pub fn set_quickack(fd: &impl AsFd) -> io::Result<()> {
    SockRef::from(fd).set_tcp_quickack(true)
}

/// Sets TCP_MAXSEG (`-M`). A negative value is passed on as iperf3 does, so the
/// kernel refuses it with its own error.
pub fn set_mss(fd: &impl AsRawFd, mss: i32) -> io::Result<()> {
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, mss)
}

/// Sets SO_RCVLOWAT: readiness (poll) and blocking reads wait for this many
/// bytes, or the end of the stream.
pub fn set_recv_lowat(fd: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let v = i32::try_from(bytes).unwrap_or(i32::MAX).max(1);
    set_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, v)
}

/// Sets TCP_NOTSENT_LOWAT: the socket polls writable only while fewer than
/// `bytes` written bytes wait unsent, so a writer that multiplexes streams keeps
/// its queue in user space, where a newer, smaller reply can still go first.
pub fn set_notsent_lowat(fd: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let v = i32::try_from(bytes).unwrap_or(i32::MAX).max(1);
    set_int(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, v)
}

/// Bytes waiting in a stream socket's receive queue (FIONREAD).
pub fn bytes_waiting(fd: &impl AsRawFd) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which points at a live int.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n as *mut libc::c_int) };
    if rc == 0 {
        Ok(usize::try_from(n).unwrap_or(0))
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets TCP_CONGESTION (`-C`). ENOENT means this host lacks the algorithm.
pub fn set_congestion(fd: &impl AsFd, algo: &str) -> io::Result<()> {
    SockRef::from(fd).set_tcp_congestion(algo.as_bytes())
}

/// Sets SO_MAX_PACING_RATE in bytes/s (`--fq-rate`); like iperf3, an unsigned
/// 32-bit value, so rates above 4 GB/s saturate.
pub fn set_max_pacing_rate(fd: &impl AsRawFd, bytes_per_sec: u64) -> io::Result<()> {
    let v = u32::try_from(bytes_per_sec).unwrap_or(u32::MAX);
    // The kernel reads the 4 bytes as an unsigned value; the cast keeps the bits.
    set_int(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, v as i32)
}

/// Whether SO_MAX_PACING_RATE caps the socket (`--fq-rate`): the kernel
/// then paces its sending, whatever the congestion control.
pub fn pacing_capped(fd: &impl AsRawFd) -> bool {
    get_int(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE).is_ok_and(|v| v as u32 != u32::MAX)
}

/// Sets TCP_USER_TIMEOUT (`--snd-timeout`): how long sent data may stay
/// unacknowledged before the connection is dropped.
pub fn set_user_timeout(fd: &impl AsFd, ms: u32) -> io::Result<()> {
    let t = std::time::Duration::from_millis(u64::from(ms));
    SockRef::from(fd).set_tcp_user_timeout(Some(t))
}

/// Turns SO_KEEPALIVE on (`--cntl-ka`), with TCP_KEEPIDLE, TCP_KEEPINTVL and
/// TCP_KEEPCNT where nonzero (zero keeps the system's value).
pub fn set_keepalive(fd: &impl AsFd, idle_s: u32, intvl_s: u32, count: u32) -> io::Result<()> {
    let r = SockRef::from(fd);
    r.set_keepalive(true)?;
    let secs = |s: u32| std::time::Duration::from_secs(u64::from(s));
    let mut ka = socket2::TcpKeepalive::new();
    if idle_s > 0 {
        ka = ka.with_time(secs(idle_s));
    }
    if intvl_s > 0 {
        ka = ka.with_interval(secs(intvl_s));
    }
    if count > 0 {
        ka = ka.with_retries(count);
    }
    r.set_tcp_keepalive(&ka)
}

/// Linux's `struct in6_flowlabel_req` (linux/in6.h), which libc does not define.
#[repr(C)]
struct FlowLabelReq {
    dst: [u8; 16],
    label: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}

const IPV6_FL_A_GET: u8 = 0;
const IPV6_FL_S_ANY: u8 = 255;
const IPV6_FL_F_CREATE: u16 = 1;

/// Reserves IPv6 flow label `label` towards `dst` (IPV6_FLOWLABEL_MGR) and turns
/// on sending the flow information given to connect() (IPV6_FLOWINFO_SEND).
pub fn set_flowlabel(fd: &impl AsRawFd, dst: std::net::Ipv6Addr, label: u32) -> io::Result<()> {
    let req = FlowLabelReq {
        dst: dst.octets(),
        label: (label & 0x000f_ffff).to_be(),
        action: IPV6_FL_A_GET,
        share: IPV6_FL_S_ANY,
        flags: IPV6_FL_F_CREATE,
        expires: 0,
        linger: 0,
        pad: 0,
    };
    // SAFETY: passes a pointer to a live, fully initialised repr(C) struct laid out
    // as the kernel's in6_flowlabel_req, with its exact size; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_IPV6,
            libc::IPV6_FLOWLABEL_MGR,
            (&req as *const FlowLabelReq).cast(),
            size_of::<FlowLabelReq>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    set_int(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWINFO_SEND, 1)
}

/// Whether a [`set_congestion`] error means the host lacks that algorithm.
pub fn lacks_algorithm(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOENT)
}

/// Sets the TOS byte (`-S`, `--dscp`): IPV6_TCLASS on IPv6 sockets, IP_TOS else.
/// An IPv6 socket that may carry IPv4 (mapped addresses) gets both.
pub fn set_tos(fd: &impl AsFd, v6: bool, tos: u8) -> io::Result<()> {
    let r = SockRef::from(fd);
    if v6 {
        r.set_tclass_v6(u32::from(tos))?;
        // A dual-stack socket talking IPv4 reads IP_TOS; failing here is harmless.
        let _ = r.set_tos_v4(u32::from(tos));
        Ok(())
    } else {
        r.set_tos_v4(u32::from(tos))
    }
}

/// Linger 0: the last close resets the connection instead of a FIN (the
/// iperf 2 server's Ctrl-C, which a peer blocked on a zero window would not
/// otherwise notice).
pub fn set_linger_reset(fd: &impl AsFd) -> io::Result<()> {
    SockRef::from(fd).set_linger(Some(std::time::Duration::ZERO))
}

#[cfg(test)]
mod tests {
    #[test]
    fn dont_fragment_on_udp_v4() {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        super::set_dont_fragment(&u).unwrap();
    }

    #[test]
    fn tcp_options_take_effect() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        super::set_nodelay(&s).unwrap();
        assert!(s.nodelay().unwrap());
        super::set_congestion(&s, "reno").unwrap();
        assert_eq!(crate::net::tcp_congestion(&s).as_deref(), Some("reno"));
        let e = super::set_congestion(&s, "no-such-algo").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        super::set_tos(&s, false, 0x20).unwrap();
        assert_eq!(socket2::SockRef::from(&s).tos_v4().unwrap(), 0x20);
        assert!(super::set_mss(&s, -5).is_err());
        assert!(!super::pacing_capped(&s));
        super::set_max_pacing_rate(&s, 1_000_000).unwrap();
        assert!(super::pacing_capped(&s));
        super::set_cork(&s, true).unwrap();
        assert!(socket2::SockRef::from(&s).tcp_cork().unwrap());
        super::set_cork(&s, false).unwrap();
        assert!(!socket2::SockRef::from(&s).tcp_cork().unwrap());
        super::set_user_timeout(&s, 5000).unwrap();
        super::set_keepalive(&s, 30, 5, 3).unwrap();
        assert!(socket2::SockRef::from(&s).keepalive().unwrap());
    }
}
