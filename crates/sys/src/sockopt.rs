//! Socket options that socket2 does not wrap.

use std::io;
use std::os::fd::AsRawFd;

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

/// Sets the IPv4 don't-fragment flag (IP_MTU_DISCOVER = IP_PMTUDISC_DO).
pub fn set_dont_fragment(fd: &impl AsRawFd) -> io::Result<()> {
    set_int(
        fd,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_DO,
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dont_fragment_on_udp_v4() {
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        super::set_dont_fragment(&u).unwrap();
    }
}
