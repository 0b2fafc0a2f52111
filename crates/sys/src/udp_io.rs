//! UDP data I/O: many datagrams per system call. With segmentation offload
//! (UDP_SEGMENT) one message carries a train of equal-sized datagrams that the
//! kernel cuts up; with receive offload (UDP_GRO) one read returns a train and
//! the segment size it was cut at. Without them, sendmmsg / recvmmsg move one
//! datagram per message. The datagrams on the wire are the same either way.
//!
//! The call descriptions live on the stack (fixed arrays of headers, iovecs and
//! control buffers), so no call allocates. EINTR is retried here, and the errno
//! policy (what is worth retrying, what means "no offload here") is decided here
//! rather than by the callers.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Messages per system call at most.
pub const MAX_MSGS: usize = 64;
/// Datagrams in one offloaded message at most: the kernel's UDP_MAX_SEGMENTS
/// on newer kernels. Older ones allow [`OLD_MAX_SEGMENTS`]; [`send`] learns
/// which from the first refusal. Longer trains halve the per-message kernel
/// work for small datagrams (`-l 64`).
pub const MAX_SEGMENTS: usize = 128;
/// UDP_MAX_SEGMENTS on every kernel that has UDP_SEGMENT.
pub const OLD_MAX_SEGMENTS: usize = 64;
/// The limit in effect: [`MAX_SEGMENTS`] until this kernel refuses a train
/// longer than [`OLD_MAX_SEGMENTS`].
static SEGMENT_LIMIT: AtomicUsize = AtomicUsize::new(MAX_SEGMENTS);
/// Largest UDP payload of one message (IPv4's limit, the smaller of the two).
pub const MAX_MESSAGE: usize = 65_507;
/// Receive slot size with UDP_GRO: room for any coalesced train.
pub const GRO_SLOT: usize = 65_536;

/// Control buffer per message, 8-byte aligned: room for a UDP_GRO int
/// (CMSG_SPACE(4), 24 bytes) and a receive timestamp (CMSG_SPACE of a
/// timespec, 32).
type Cmsg = [u64; 8];

/// SO_TIMESTAMPNS (and its control message's type) where `time_t` is 64
/// bits: the asm-generic value, the same on x86-64 and arm64.
const SO_TIMESTAMPNS: libc::c_int = 35;

/// What a failed data call means for the caller.
#[derive(Debug)]
pub enum Failure {
    /// Nothing moved this time (full buffers, nothing to read yet, a receiver
    /// not yet listening, a receive timeout); try again.
    Retry,
    /// The kernel refused the offload (EINVAL, EIO, ENOPROTOOPT on an offloaded
    /// call): use plain batches from now on. Nothing was sent.
    NoOffload,
    /// Anything else ends the stream.
    Fatal(io::Error),
}

fn classify(e: io::Error, offloaded: bool) -> Failure {
    let code = e.raw_os_error().unwrap_or(0);
    if offloaded && matches!(code, libc::EINVAL | libc::EIO | libc::ENOPROTOOPT) {
        return Failure::NoOffload;
    }
    match code {
        libc::EAGAIN | libc::ENOBUFS | libc::ECONNREFUSED => Failure::Retry,
        _ => Failure::Fatal(e),
    }
}

/// Runs a system call, retrying it while it fails with EINTR.
fn retry_eintr(mut call: impl FnMut() -> libc::c_int) -> io::Result<usize> {
    loop {
        let rc = call();
        if rc >= 0 {
            return Ok(rc as usize);
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Which offloads this kernel has, probed once on a scratch socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offload {
    /// UDP_SEGMENT on send.
    pub gso: bool,
    /// UDP_GRO on receive.
    pub gro: bool,
}

/// The offloads the kernel offers. `RPERF3_UDP_OFFLOAD=0` in the environment
/// turns both off (to compare, or to work around a broken path).
pub fn offload() -> Offload {
    static PROBE: OnceLock<Offload> = OnceLock::new();
    *PROBE.get_or_init(|| {
        let off = Offload {
            gso: false,
            gro: false,
        };
        if std::env::var_os("RPERF3_UDP_OFFLOAD").is_some_and(|v| v == "0") {
            return off;
        }
        // Unbound: the options belong to the protocol, not to an address.
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)
            .or_else(|_| socket2::Socket::new(socket2::Domain::IPV6, socket2::Type::DGRAM, None));
        let Ok(s) = s else {
            return off;
        };
        Offload {
            gso: get_int(&s, libc::UDP_SEGMENT).is_ok(),
            gro: set_int(&s, libc::UDP_GRO, 1).is_ok(),
        }
    })
}

fn get_int(sock: &impl AsRawFd, opt: libc::c_int) -> io::Result<libc::c_int> {
    crate::sockopt::get_int(sock, libc::SOL_UDP, opt)
}

fn set_int(sock: &impl AsRawFd, opt: libc::c_int, v: libc::c_int) -> io::Result<()> {
    set_opt(sock, libc::SOL_UDP, opt, v)
}

fn set_opt(
    sock: &impl AsRawFd,
    level: libc::c_int,
    opt: libc::c_int,
    v: libc::c_int,
) -> io::Result<()> {
    // SAFETY: passes a pointer to a live int and its size.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Turns on UDP_GRO for a socket if the kernel has it; whether it is on.
pub fn enable_gro(sock: &impl AsRawFd) -> bool {
    offload().gro && set_int(sock, libc::UDP_GRO, 1).is_ok()
}

/// Asks the kernel to stamp each received message with the wall clock at
/// the moment the packet reached the host (SO_TIMESTAMPNS, the time a
/// capture shows), read by [`recv`] as [`Received::at_ns`]. A time read
/// after the call would add the reader's wake-up and the batch's wait to
/// every datagram, which is most of a fast path's jitter. Whether it is on.
pub fn enable_rx_stamps(sock: &impl AsRawFd) -> bool {
    set_opt(sock, libc::SOL_SOCKET, SO_TIMESTAMPNS, 1).is_ok()
}

/// Datagrams back to back in one buffer: every `size` bytes a new one begins
/// (the last may be shorter).
#[derive(Debug, Clone, Copy)]
pub struct Datagrams<'a> {
    /// The datagrams.
    pub buf: &'a [u8],
    /// Size of each.
    pub size: usize,
}

impl Datagrams<'_> {
    /// How many datagrams the buffer holds.
    pub fn count(&self) -> usize {
        self.buf.len().div_ceil(self.size.max(1))
    }
}

/// Datagrams one offloaded message may carry at `size` bytes each (1: no gain).
pub fn segments_per_message(size: usize) -> usize {
    (MAX_MESSAGE / size.max(1)).clamp(1, SEGMENT_LIMIT.load(Ordering::Relaxed))
}

/// Stack arrays for one call's descriptions. Only the entries a call uses are
/// written, so a call for one datagram touches one page of stack, not eight:
/// with `-P 128` that is most of a thread's footprint.
type Slots<T> = [MaybeUninit<T>; MAX_MSGS];

fn header(iov: *mut libc::iovec, control: *mut libc::c_void, controllen: usize) -> libc::mmsghdr {
    // SAFETY: mmsghdr is plain data; all-zero is a valid empty header.
    let mut h: libc::mmsghdr = unsafe { std::mem::zeroed() };
    h.msg_hdr.msg_iov = iov;
    h.msg_hdr.msg_iovlen = 1;
    h.msg_hdr.msg_control = control;
    h.msg_hdr.msg_controllen = controllen;
    h
}

/// Sends the datagrams on a connected socket: with `gso`, up to
/// [`segments_per_message`] per message with a UDP_SEGMENT control message;
/// otherwise one per message. Returns how many datagrams went out (a prefix;
/// up to [`MAX_MSGS`] messages per call).
pub fn send(sock: &impl AsRawFd, d: Datagrams<'_>, gso: bool) -> Result<usize, Failure> {
    let size = d.size.max(1);
    let per_msg = if gso { segments_per_message(size) } else { 1 };
    let gso = gso && per_msg > 1;
    let msg_bytes = per_msg * size;
    let mut iov: Slots<libc::iovec> = [const { MaybeUninit::uninit() }; MAX_MSGS];
    let mut hdrs: Slots<libc::mmsghdr> = [const { MaybeUninit::uninit() }; MAX_MSGS];
    let mut cmsg: Slots<Cmsg> = [const { MaybeUninit::uninit() }; MAX_MSGS];
    let chunks = || d.buf.chunks(msg_bytes).take(MAX_MSGS);
    let mut n = 0;
    for (i, chunk) in chunks().enumerate() {
        let v = iov[i].write(libc::iovec {
            iov_base: chunk.as_ptr() as *mut libc::c_void,
            iov_len: chunk.len(),
        });
        let h = if gso {
            let c = cmsg[i].write(Cmsg::default());
            // SAFETY: CMSG_SPACE is a pure size computation.
            let space = unsafe { libc::CMSG_SPACE(2) } as usize;
            let h = hdrs[i].write(header(v, c.as_mut_ptr().cast(), space));
            // SAFETY: the control buffer is 32 bytes, 8-byte aligned, and
            // CMSG_SPACE(2) (24) fits in it, so the first header and its
            // 2-byte payload are in bounds.
            unsafe {
                let c = libc::CMSG_FIRSTHDR(&h.msg_hdr);
                (*c).cmsg_level = libc::SOL_UDP;
                (*c).cmsg_type = libc::UDP_SEGMENT;
                (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
                std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), size as u16);
            }
            h
        } else {
            hdrs[i].write(header(v, std::ptr::null_mut(), 0))
        };
        debug_assert!(!h.msg_hdr.msg_iov.is_null());
        n = i + 1;
    }
    if n == 0 {
        return Ok(0);
    }
    let fd = sock.as_raw_fd();
    let hp = hdrs.as_mut_ptr().cast::<libc::mmsghdr>();
    // SAFETY: `hdrs[..n]` were written above and point at iovecs into `d.buf`
    // and control buffers, all alive for the call; the kernel only reads them.
    let sent = retry_eintr(|| unsafe { libc::sendmmsg(fd, hp, n as u32, 0) }).map_err(|e| {
        // An older kernel's shorter train limit: nothing was sent; the caller
        // retries and the messages are cut shorter from now on.
        let longest = chunks().next().map_or(0, |c| c.len().div_ceil(size));
        if gso && longest > OLD_MAX_SEGMENTS && e.raw_os_error() == Some(libc::EINVAL) {
            SEGMENT_LIMIT.store(OLD_MAX_SEGMENTS, Ordering::Relaxed);
            return Failure::Retry;
        }
        classify(e, gso)
    })?;
    Ok(chunks().take(sent).map(|c| c.len().div_ceil(size)).sum())
}

/// Sends one datagram made of `head` followed by `body` on a connected socket
/// (the kernel gathers the two). Lets many streams share one read-only payload
/// and keep only their header private. Returns 1 when it went out.
pub fn send_parts(sock: &impl AsFd, head: &[u8], body: &[u8]) -> Result<usize, Failure> {
    let parts = [io::IoSlice::new(head), io::IoSlice::new(body)];
    let s = socket2::SockRef::from(sock);
    loop {
        match s.send_vectored(&parts) {
            Ok(_) => return Ok(1),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(classify(e, false)),
        }
    }
}

/// One received message: `len` bytes at the start of its slot; `seg` is the
/// size the kernel coalesced equal datagrams at (0: one datagram).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Received {
    /// Bytes in the slot.
    pub len: usize,
    /// Segment size from UDP_GRO, 0 when the message is a single datagram.
    pub seg: usize,
    /// The kernel's receive time (ns since the epoch) with
    /// [`enable_rx_stamps`], else 0. A GRO train's datagrams arrived
    /// together and share it.
    pub at_ns: u64,
}

/// What [`recv`] reads besides the data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecvMeta {
    /// Each message's UDP_GRO segment size (the socket has [`enable_gro`]).
    pub gro: bool,
    /// Each message's receive time (the socket has [`enable_rx_stamps`]).
    pub stamps: bool,
}

/// Receives into `buf` cut into slots of `stride` bytes (one message each),
/// blocking for the first only (MSG_WAITFORONE). Fills `out` and returns the
/// number of messages, with what `meta` asks for from each message's
/// control data.
pub fn recv(
    sock: &impl AsRawFd,
    buf: &mut [u8],
    stride: usize,
    meta: RecvMeta,
    out: &mut [Received; MAX_MSGS],
) -> Result<usize, Failure> {
    let control = meta.gro || meta.stamps;
    let stride = stride.max(1);
    let mut iov: Slots<libc::iovec> = [const { MaybeUninit::uninit() }; MAX_MSGS];
    let mut hdrs: Slots<libc::mmsghdr> = [const { MaybeUninit::uninit() }; MAX_MSGS];
    let mut cmsg: Slots<Cmsg> = [const { MaybeUninit::uninit() }; MAX_MSGS];
    let mut n = 0;
    for (i, slot) in buf.chunks_exact_mut(stride).take(MAX_MSGS).enumerate() {
        let v = iov[i].write(libc::iovec {
            iov_base: slot.as_mut_ptr().cast(),
            iov_len: slot.len(),
        });
        if control {
            let c = cmsg[i].write(Cmsg::default());
            hdrs[i].write(header(v, c.as_mut_ptr().cast(), size_of::<Cmsg>()));
        } else {
            hdrs[i].write(header(v, std::ptr::null_mut(), 0));
        }
        n = i + 1;
    }
    if n == 0 {
        return Ok(0);
    }
    let fd = sock.as_raw_fd();
    let hp = hdrs.as_mut_ptr().cast::<libc::mmsghdr>();
    // SAFETY: `hdrs[..n]` were written above and point at distinct, live,
    // writable slots and control buffers of the stated lengths; no timeout
    // pointer is passed.
    let got = retry_eintr(|| unsafe {
        libc::recvmmsg(fd, hp, n as u32, libc::MSG_WAITFORONE, std::ptr::null_mut())
    })
    .map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Failure::Retry,
        _ => classify(e, false),
    })?;
    for (o, h) in out.iter_mut().zip(&hdrs[..got.min(n)]) {
        // SAFETY: the first `n` headers were written before the call, and the
        // kernel filled `got` <= `n` of them.
        let h = unsafe { h.assume_init_ref() };
        let (seg, at_ns) = if control {
            control_data(&h.msg_hdr)
        } else {
            (0, 0)
        };
        *o = Received {
            len: h.msg_len as usize,
            seg,
            at_ns,
        };
    }
    Ok(got)
}

/// Receives one datagram on an unconnected socket: its length, its source
/// and, with [`enable_rx_stamps`], the kernel's receive time (ns since the
/// epoch; 0 without). EINTR is retried; errors are the call's own.
pub fn recv_from_stamped(
    sock: &impl AsRawFd,
    buf: &mut [u8],
) -> io::Result<(usize, std::net::SocketAddr, u64)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut cmsg = Cmsg::default();
    let fd = sock.as_raw_fd();
    // SAFETY: socket2 hands over storage for any socket address and its
    // length, and reads back the length the kernel wrote; the header points
    // at the live locals `iov` (into `buf`) and `cmsg` with their true
    // sizes, all alive for the call.
    let ((n, at_ns), from) = unsafe {
        socket2::SockAddr::try_init(|addr, len| {
            let mut m = header(&mut iov, cmsg.as_mut_ptr().cast(), size_of::<Cmsg>()).msg_hdr;
            m.msg_name = addr.cast();
            m.msg_namelen = *len;
            let n = retry_eintr(|| libc::recvmsg(fd, &mut m, 0) as libc::c_int)?;
            *len = m.msg_namelen;
            Ok((n, control_data(&m).1))
        })?
    };
    let from = from
        .as_socket()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not an IP source"))?;
    Ok((n, from, at_ns))
}

/// The UDP_GRO segment size and the receive time (ns since the epoch) in a
/// received message's control data, each 0 when absent.
fn control_data(m: &libc::msghdr) -> (usize, u64) {
    let (mut seg, mut at_ns) = (0, 0);
    // SAFETY: `m` was filled by recvmmsg; CMSG_FIRSTHDR/NXTHDR stay within
    // msg_controllen; a UDP_GRO message carries an int and an SCM_TIMESTAMPNS
    // one a timespec, each read unaligned from its data.
    unsafe {
        let mut h = libc::CMSG_FIRSTHDR(m);
        while !h.is_null() {
            let (level, kind) = ((*h).cmsg_level, (*h).cmsg_type);
            if level == libc::SOL_UDP && kind == libc::UDP_GRO {
                let v = std::ptr::read_unaligned(libc::CMSG_DATA(h).cast::<libc::c_int>());
                seg = v.max(0) as usize;
            } else if level == libc::SOL_SOCKET && kind == SO_TIMESTAMPNS {
                let t = std::ptr::read_unaligned(libc::CMSG_DATA(h).cast::<libc::timespec>());
                at_ns = u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000
                    + u64::try_from(t.tv_nsec).unwrap_or(0);
            }
            h = libc::CMSG_NXTHDR(m, h);
        }
    }
    (seg, at_ns)
}

#[cfg(test)]
#[path = "udp_io_tests.rs"]
mod tests;
