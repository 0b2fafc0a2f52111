//! Batched UDP: several datagrams per system call (sendmmsg / recvmmsg).

use std::io;
use std::os::fd::AsRawFd;

/// Largest batch a call handles.
pub const MAX_BATCH: usize = 64;

fn iovecs<'a>(bufs: impl Iterator<Item = (*mut libc::c_void, usize)> + 'a) -> Vec<libc::iovec> {
    bufs.map(|(p, l)| libc::iovec {
        iov_base: p,
        iov_len: l,
    })
    .collect()
}

fn headers(iov: &mut [libc::iovec]) -> Vec<libc::mmsghdr> {
    iov.iter_mut()
        .map(|v| {
            // SAFETY: msghdr is plain data; all-zero is a valid empty header.
            let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
            h.msg_hdr.msg_iov = v as *mut libc::iovec;
            h.msg_hdr.msg_iovlen = 1;
            h
        })
        .collect()
}

/// Sends each buffer as one datagram on a connected socket. Returns how many were
/// sent (a prefix of `bufs`); an error only if none was.
pub fn send_batch(sock: &impl AsRawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    if bufs.is_empty() {
        return Ok(0);
    }
    let n = bufs.len().min(MAX_BATCH);
    let mut iov = iovecs(
        bufs[..n]
            .iter()
            .map(|b| (b.as_ptr() as *mut libc::c_void, b.len())),
    );
    let mut hdrs = headers(&mut iov);
    // SAFETY: `hdrs` holds `n` initialised headers whose iovecs point into `bufs`,
    // all alive for the call; the kernel only reads the buffers (send).
    let rc = unsafe { libc::sendmmsg(sock.as_raw_fd(), hdrs.as_mut_ptr(), n as u32, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Receives up to `bufs.len()` datagrams, blocking for the first only
/// (MSG_WAITFORONE). Writes each one's length to `lens`; returns the count.
pub fn recv_batch(
    sock: &impl AsRawFd,
    bufs: &mut [Vec<u8>],
    lens: &mut [usize],
) -> io::Result<usize> {
    let n = bufs.len().min(lens.len()).min(MAX_BATCH);
    if n == 0 {
        return Ok(0);
    }
    let mut iov = iovecs(
        bufs[..n]
            .iter_mut()
            .map(|b| (b.as_mut_ptr().cast(), b.len())),
    );
    let mut hdrs = headers(&mut iov);
    // SAFETY: `hdrs` holds `n` headers whose iovecs point into distinct, live,
    // writable buffers of the stated lengths; no timeout pointer is passed.
    let rc = unsafe {
        libc::recvmmsg(
            sock.as_raw_fd(),
            hdrs.as_mut_ptr(),
            n as u32,
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let got = rc as usize;
    for (l, h) in lens.iter_mut().zip(&hdrs[..got]) {
        *l = h.msg_len as usize;
    }
    Ok(got)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn a_batch_goes_out_and_comes_back_in_order() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        a.connect(b.local_addr().unwrap()).unwrap();
        b.connect(a.local_addr().unwrap()).unwrap();
        let msgs: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 10 + i as usize]).collect();
        let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
        assert_eq!(send_batch(&a, &refs).unwrap(), 5);
        let mut bufs = vec![vec![0u8; 64]; 8];
        let mut lens = [0usize; 8];
        let mut seen = 0;
        while seen < 5 {
            let n = recv_batch(&b, &mut bufs, &mut lens).unwrap();
            for i in 0..n {
                assert_eq!(lens[i], 10 + seen);
                assert_eq!(bufs[i][0] as usize, seen);
                seen += 1;
            }
        }
    }
}
