//! Sending a TCP block without copying it from user space: the payload lives in an
//! in-memory file and goes out with sendfile(2), so the kernel references its pages
//! instead of copying the buffer on every write.
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;

use nix::sys::memfd::{memfd_create, MFdFlags};

/// A payload held in an anonymous in-memory file.
#[derive(Debug)]
pub struct PayloadFile {
    file: File,
    len: usize,
}

impl PayloadFile {
    /// Stores `payload` in a new memfd. Fails where memfd is unavailable; callers
    /// then fall back to plain writes.
    pub fn new(payload: &[u8]) -> io::Result<Self> {
        let fd = memfd_create(c"rperf3-payload", MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?;
        let mut file = File::from(fd);
        file.write_all(payload)?;
        Ok(Self {
            file,
            len: payload.len(),
        })
    }

    /// The payload length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sends bytes `from..to` of the payload on `sock`; returns how many went out.
    pub fn send(&self, sock: &impl AsFd, from: usize, to: usize) -> io::Result<usize> {
        let mut off = from as libc::off_t;
        let to = to.min(self.len);
        nix::sys::sendfile::sendfile(
            sock.as_fd(),
            self.file.as_fd(),
            Some(&mut off),
            to.saturating_sub(from),
        )
        .map_err(io::Error::from)
    }
}

/// Sends up to `len` bytes of `file` from `*offset` on `sock` with sendfile(2),
/// advancing `*offset`; the file's own position is untouched, so streams can
/// share one descriptor. Returns 0 at the end of the file.
pub fn send_file(sock: &impl AsFd, file: &File, offset: &mut u64, len: usize) -> io::Result<usize> {
    let mut off = libc::off_t::try_from(*offset).map_err(|_| io::ErrorKind::InvalidInput)?;
    let n = nix::sys::sendfile::sendfile(sock.as_fd(), file.as_fd(), Some(&mut off), len)
        .map_err(io::Error::from)?;
    *offset += n as u64;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn sends_the_payload_bytes() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        let p = PayloadFile::new(b"0123456789").unwrap();
        assert_eq!(p.send(&c, 2, 7).unwrap(), 5);
        let mut got = [0u8; 5];
        s.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"23456");
    }
}
