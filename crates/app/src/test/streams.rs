//! Data streams of a test: their sockets, counters and workers.

use std::fs::File;
use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rperf3_engine::control::RunControl;
use rperf3_engine::counters::{CounterSnapshot, StreamCounters};
use rperf3_engine::pacing::Pacer;
use rperf3_engine::tcp::RecvMode;
use rperf3_engine::udp::UdpSendSpec;
use rperf3_engine::worker::Worker;
use rperf3_proto::{
    IperfError, TestParams, UdpRecvStats, IE_FILE, IE_SEND_COOKIE, IE_SET_BUF, IE_SET_MSS,
    IE_SET_NODELAY, IE_SET_SCTP_BINDX, IE_SET_SCTP_DISABLE_FRAG, IE_SET_SCTP_NSTREAM,
    IE_STREAM_CONNECT,
};
use rperf3_report::input::StreamInfo;

use crate::test::sockopts::{apply_flowlabel, apply_tcp};
use rperf3_sys::net::{connect_tcp_prepared, unmap, Family, Prepared, Transport};
use rperf3_sys::tcp_info::{tcp_info, TcpInfo};
use rperf3_sys::zerocopy::PayloadFile;

/// The protocol stream id of the `index`-th stream (0-based): 1, 3, 4, 5, ...
/// iperf3 skips 2; both sides must number alike to match results.
pub(crate) fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

/// The smallest TCP block sent with sendfile.
const MIN_ZEROCOPY_BLOCK: usize = 16 * 1024;

/// Whether a TCP sender sends its blocks with sendfile (page references, no
/// copy from user space) rather than plain writes.
/// - Never for blocks under [`MIN_ZEROCOPY_BLOCK`]: small sendfile calls leave
///   as small segments, where small writes coalesce as iperf3's do
///   (`-l 100 -b R/N`).
/// - Always with `-Z`, as asked.
/// - Otherwise, not when the congestion control paces in the kernel (BBR) and
///   this side sends on several streams. The copy sendfile saves is then not
///   what limits: its senders fill their queues at once and sleep, and the
///   data goes out from the receivers' ACK processing and the pacing timers
///   instead, which costs more (`-P 2` 0.66x iperf3 3.21's rate with
///   sendfile, 1.22x with writes; one stream 1.25x with sendfile, 1.0x with
///   writes; see the design notes).
fn sends_with_sendfile(sock: &TcpStream, send: &SendSpec, crowd: TcpCrowd) -> bool {
    if send.blksize < MIN_ZEROCOPY_BLOCK {
        return false;
    }
    if send.zerocopy || crowd.senders <= 1 {
        return true;
    }
    !rperf3_sys::net::tcp_congestion(sock).is_some_and(|cc| paces_itself(&cc))
}

/// How many TCP streams one side of a test sends and receives on: how a
/// stream's worker sends or reads depends on its neighbours.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TcpCrowd {
    /// Sending TCP streams.
    pub senders: usize,
    /// Receiving TCP streams.
    pub receivers: usize,
}

impl TcpCrowd {
    /// The TCP streams among `streams`.
    pub(crate) fn of(streams: &[LiveStream]) -> Self {
        let tcp = |sender: bool| {
            streams
                .iter()
                .filter(|s| s.info.sender == sender && matches!(s.sock, DataSock::Tcp(_)))
                .count()
        };
        Self {
            senders: tcp(true),
            receivers: tcp(false),
        }
    }
}

/// Congestion controls that pace their own sending (BBR and its versions).
fn paces_itself(congestion: &str) -> bool {
    congestion.starts_with("bbr")
}

/// The block the sending streams of one test write (random or repeating), made
/// once for all of them: streams only read it, so with `-P 128` there is one
/// block, not 128. Each TCP stream still gets its own memfd copy for sendfile:
/// one shared memfd cost a quarter of the throughput at `-P 8`, as every
/// stream took and dropped references to the same pages from both cores.
#[derive(Debug, Default)]
pub(crate) struct SharedPayload {
    bytes: OnceLock<Arc<[u8]>>,
}

impl SharedPayload {
    fn bytes(&self, send: &SendSpec) -> Arc<[u8]> {
        let make = || rperf3_engine::payload::make(send.blksize, send.repeating).into();
        self.bytes.get_or_init(make).clone()
    }
}

/// A data socket.
#[derive(Debug, Clone)]
pub(crate) enum DataSock {
    /// A TCP stream.
    Tcp(Arc<TcpStream>),
    /// A connected UDP socket.
    Udp(Arc<UdpSocket>),
}

/// One stream of a running test.
#[derive(Debug)]
pub(crate) struct LiveStream {
    /// Identity and role, as reported.
    pub info: StreamInfo,
    /// The socket.
    pub sock: DataSock,
    /// Counters the worker bumps.
    pub counters: Arc<StreamCounters>,
    /// UDP receiver statistics (receiving UDP streams only).
    pub udp_stats: Option<Arc<Mutex<UdpRecvStats>>>,
    /// An SCTP association in a `TcpStream`: no sendfile, no MSG_TRUNC.
    pub sctp: bool,
    /// A TCP receiver's SO_RCVLOWAT mark, 0 for none: its final sample drains
    /// the tail below the mark first.
    recv_mark: AtomicUsize,
}

/// What a sending worker needs.
#[derive(Debug, Clone)]
pub(crate) struct SendSpec {
    /// Block size.
    pub blksize: usize,
    /// `-b` pacing.
    pub pacer: Option<Pacer>,
    /// `--repeating-payload`.
    pub repeating: bool,
    /// Blocks (TCP) or datagrams (UDP) per burst (`-b rate/N`).
    pub burst: u32,
    /// UDP: 64-bit sequence numbers.
    pub counters_64bit: bool,
    /// TCP receivers: discard data in the kernel (MSG_TRUNC), no copy.
    pub skip_rx_copy: bool,
    /// `-F`: TCP senders send this file, receivers store what arrives in it.
    pub file: Option<DiskFile>,
    /// `-Z`: TCP senders always send with sendfile, as asked.
    pub zerocopy: bool,
}

/// The `-F` file of a test, opened once and shared by its streams.
#[derive(Debug, Clone)]
pub(crate) struct DiskFile {
    /// The name as given, for the report.
    pub name: String,
    /// Open for reading (sending) or writing (receiving).
    pub file: Arc<File>,
    /// Whether this side sends the file (its receiving streams, with
    /// `--bidir`, then store nothing).
    pub sending: bool,
}

impl DiskFile {
    /// Opens `name` to send it, or creates (truncates) it, private to the
    /// user as iperf3 makes it, to store what arrives. Fails with error 14.
    pub(crate) fn open(name: &str, sending: bool) -> Result<Self, IperfError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = if sending {
            File::open(name)
        } else {
            File::options()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(name)
        }
        .map_err(|e| IperfError::from_io(IE_FILE, &e))?;
        Ok(Self {
            name: name.to_string(),
            file: Arc::new(file),
            sending,
        })
    }

    /// The file's size now.
    pub(crate) fn size(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.len())
    }
}

impl LiveStream {
    /// Wraps a connected TCP data socket.
    pub(crate) fn tcp(sock: TcpStream, index: usize, sender: bool) -> io::Result<Self> {
        let info = stream_info(&sock, sock.local_addr()?, sock.peer_addr()?, index, sender);
        Ok(Self::new(info, DataSock::Tcp(Arc::new(sock))))
    }

    /// Wraps a connected SCTP data socket (one-to-one style).
    pub(crate) fn sctp(sock: TcpStream, index: usize, sender: bool) -> io::Result<Self> {
        let mut s = Self::tcp(sock, index, sender)?;
        s.sctp = true;
        Ok(s)
    }

    /// Wraps a connected UDP data socket.
    pub(crate) fn udp(sock: UdpSocket, index: usize, sender: bool) -> io::Result<Self> {
        let info = stream_info(&sock, sock.local_addr()?, sock.peer_addr()?, index, sender);
        Ok(Self::new(info, DataSock::Udp(Arc::new(sock))))
    }

    fn new(info: StreamInfo, sock: DataSock) -> Self {
        // Only UDP receivers keep loss/jitter statistics.
        let udp_stats = (matches!(sock, DataSock::Udp(_)) && !info.sender).then(Arc::default);
        Self {
            info,
            sock,
            counters: Arc::default(),
            udp_stats,
            sctp: false,
            recv_mark: AtomicUsize::new(0),
        }
    }

    /// Whether this is a UDP stream.
    pub(crate) fn is_udp(&self) -> bool {
        matches!(self.sock, DataSock::Udp(_))
    }

    /// TCP_INFO of a local TCP sender (the only streams iperf3 reports it for).
    pub(crate) fn tcp_info(&self) -> Option<TcpInfo> {
        match &self.sock {
            DataSock::Tcp(s) if self.info.sender => tcp_info(&**s),
            DataSock::Tcp(_) | DataSock::Udp(_) => None,
        }
    }

    /// Runs `f` on the live UDP receiver statistics and the counters read under
    /// the same lock (omit reset).
    pub(crate) fn with_udp_stats(&self, f: impl FnOnce(&mut UdpRecvStats, CounterSnapshot)) {
        if let Some(m) = &self.udp_stats {
            let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut g, self.counters.snapshot());
        }
    }

    /// A UDP receiver's counters and statistics, read together under its lock.
    pub(crate) fn udp_snapshot(&self) -> Option<(CounterSnapshot, UdpRecvStats)> {
        let m = self.udp_stats.as_ref()?;
        let g = m.lock().unwrap_or_else(|p| p.into_inner());
        Some((self.counters.snapshot(), g.clone()))
    }

    /// (SO_SNDBUF, SO_RCVBUF) of the data socket.
    pub(crate) fn buffer_sizes(&self) -> (u64, u64) {
        match &self.sock {
            DataSock::Tcp(s) => rperf3_sys::net::buffer_sizes(&**s),
            DataSock::Udp(s) => rperf3_sys::net::buffer_sizes(&**s),
        }
    }

    /// The TCP socket, if this is a TCP stream.
    pub(crate) fn tcp_socket(&self) -> Option<&TcpStream> {
        match &self.sock {
            DataSock::Tcp(s) => Some(s),
            DataSock::Udp(_) => None,
        }
    }

    /// Starts the stream's worker.
    pub(crate) fn spawn(
        &self,
        ctl: &Arc<RunControl>,
        send: &SendSpec,
        payload: &SharedPayload,
        crowd: TcpCrowd,
    ) -> io::Result<Worker> {
        let counters = self.counters.clone();
        let blksize = send.blksize;
        let name = format!("stream-{}", self.info.id);
        match &self.sock {
            DataSock::Tcp(s) => {
                let s = s.clone();
                if let Some(d) = send.file.as_ref().filter(|d| d.sending == self.info.sender) {
                    let (file, sender) = (d.file.clone(), self.info.sender);
                    let (blk, pacer) = (send.blksize, send.pacer);
                    return Worker::spawn(name, ctl.clone(), sender, move |c| {
                        if sender {
                            rperf3_engine::file::send_loop(&s, &file, blk, pacer, c, &counters)
                        } else {
                            rperf3_engine::file::recv_loop(&s, &file, blksize, c, &counters)
                        }
                    });
                }
                if self.info.sender {
                    let buf = payload.bytes(send);
                    let file = (!self.sctp && sends_with_sendfile(&s, send, crowd))
                        .then(|| PayloadFile::new(&buf).ok())
                        .flatten();
                    let (pacer, burst) = (send.pacer, send.burst);
                    Worker::spawn(name, ctl.clone(), true, move |c| {
                        rperf3_engine::tcp::send_loop(
                            &s,
                            &buf,
                            file.as_ref(),
                            pacer,
                            burst,
                            c,
                            &counters,
                        )
                    })
                } else {
                    let mode = self.recv_mode(&s, blksize, send, crowd);
                    if mode == RecvMode::OnMark {
                        self.recv_mark.store(blksize, Ordering::Relaxed);
                    }
                    Worker::spawn(name, ctl.clone(), false, move |c| {
                        rperf3_engine::tcp::recv_loop(&s, blksize, mode, c, &counters)
                    })
                }
            }
            DataSock::Udp(s) => {
                let s = s.clone();
                if self.info.sender {
                    let payload = payload.bytes(send);
                    let spec = UdpSendSpec {
                        len: send.blksize,
                        pacer: send.pacer,
                        burst: send.burst,
                        counters_64bit: send.counters_64bit,
                    };
                    Worker::spawn(name, ctl.clone(), true, move |c| {
                        rperf3_engine::udp::send_loop(&s, &payload, spec, c, &counters)
                    })
                } else {
                    let stats = self.udp_stats.clone().unwrap_or_default();
                    let c64 = send.counters_64bit;
                    Worker::spawn(name, ctl.clone(), false, move |c| {
                        rperf3_engine::udp::recv_loop(&s, blksize, c64, c, &counters, &stats)
                    })
                }
            }
        }
    }

    /// How a TCP receiver reads. Alone on its side, it reads on a mark of one
    /// block (SO_RCVLOWAT): the sending core, which on loopback also runs the
    /// receive path, then wakes it once a block instead of once a segment
    /// (one stream 1.64x, `-R` 1.58x the rate of plain reads, measured
    /// 2026-11-25). With several receivers the mark cost 15% at `-P 2`.
    fn recv_mode(
        &self,
        sock: &TcpStream,
        blksize: usize,
        send: &SendSpec,
        crowd: TcpCrowd,
    ) -> RecvMode {
        if self.sctp {
            RecvMode::Copy
        } else if send.skip_rx_copy {
            RecvMode::Discard
        } else if crowd.receivers == 1 && rperf3_sys::sockopt::set_recv_lowat(sock, blksize).is_ok()
        {
            RecvMode::OnMark
        } else {
            RecvMode::Copy
        }
    }

    /// Before the final sample: reads the tail a receiver's mark kept back.
    pub(crate) fn drain_below_mark(&self) {
        let mark = self.recv_mark.load(Ordering::Relaxed);
        if let (DataSock::Tcp(s), 1..) = (&self.sock, mark) {
            rperf3_engine::tcp::drain_ready(s, mark, &self.counters);
        }
    }

    /// Unblocks the worker and ends the connection.
    pub(crate) fn shutdown(&self) {
        match &self.sock {
            DataSock::Tcp(s) => {
                let _ = s.shutdown(Shutdown::Both);
            }
            // Wakes a receiver blocked in recv().
            DataSock::Udp(s) => {
                let _ = socket2::SockRef::from(&**s).shutdown(Shutdown::Both);
            }
        }
    }
}

fn stream_info(
    fd: &impl AsRawFd,
    local: SocketAddr,
    remote: SocketAddr,
    index: usize,
    sender: bool,
) -> StreamInfo {
    StreamInfo {
        socket: fd.as_raw_fd(),
        id: stream_id(index),
        sender,
        local: unmap(local),
        remote: unmap(remote),
    }
}

/// Opens one client TCP data stream: the test's socket options, connect, then
/// the 37-byte cookie.
pub(crate) fn connect_tcp_stream(
    mut at: StreamEnds<'_>,
    params: &TestParams,
    cookie: &[u8],
) -> Result<TcpStream, IperfError> {
    let server = at.server;
    let prepare = |fd: BorrowedFd<'_>, v6: bool| {
        apply_tcp(fd, v6, params, false)?;
        apply_flowlabel(fd, server, params)
    };
    // The label goes out with the flow information of the connect() address.
    if let (SocketAddr::V6(a), Ok(label @ 1..)) = (&mut at.server, u32::try_from(params.flowlabel))
    {
        a.set_flowinfo(label.to_be());
    }
    let transport = if params.mptcp {
        Transport::Mptcp
    } else {
        Transport::Tcp
    };
    connect_with_cookie(&at, transport, &prepare, cookie, IE_STREAM_CONNECT)
}

/// Where a client data stream connects from and to, and how long it may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StreamEnds<'a> {
    /// The server's address.
    pub server: SocketAddr,
    /// `-B`: the local address to bind.
    pub bind: Option<&'a str>,
    /// `--cport`: the local port (0: any).
    pub local_port: u16,
    /// `--bind-dev`.
    pub device: Option<&'a str>,
    /// For the connect and the cookie together.
    pub timeout: Duration,
}

/// Connects a socket `prepare`d with the test's options and writes the cookie,
/// both within `at.timeout`; a failed cookie write reports `cookie_error`.
fn connect_with_cookie(
    at: &StreamEnds<'_>,
    transport: Transport,
    prepare: &dyn Fn(BorrowedFd<'_>, bool) -> Result<(), IperfError>,
    cookie: &[u8],
    cookie_error: i32,
) -> Result<TcpStream, IperfError> {
    let mut s = connect_tcp_prepared(
        &[at.server],
        at.bind,
        at.local_port,
        at.device,
        Some(at.timeout),
        transport,
        prepare,
    )
    .map_err(|e| match e {
        Prepared::Options(e) => e,
        Prepared::Connect(e) => IperfError::from_io(IE_STREAM_CONNECT, &e),
    })?;
    let mut cookie_write = || -> io::Result<()> {
        s.set_write_timeout(Some(at.timeout))?;
        s.write_all(cookie)?;
        s.set_write_timeout(None)
    };
    cookie_write().map_err(|e| IperfError::from_io(cookie_error, &e))?;
    Ok(s)
}

/// What an SCTP data stream needs beyond the parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SctpOptions<'a> {
    /// `-X` names: the association's local addresses.
    pub xbind: &'a [String],
    /// `--nstreams`: outbound streams (SCTP_INITMSG).
    pub nstreams: Option<u16>,
    /// `-w`: socket buffer size, set before connecting.
    pub window: Option<u32>,
}

/// Opens one client SCTP data stream, as iperf3 does: buffers, SCTP_NODELAY,
/// SCTP_MAXSEG, SCTP_INITMSG and the `-X` addresses before connect, then the
/// cookie, then fragmentation allowed. A kernel without SCTP fails the socket
/// with EPROTONOSUPPORT: error 203 ("unable to connect stream").
pub(crate) fn connect_sctp_stream(
    at: StreamEnds<'_>,
    params: &TestParams,
    sctp: SctpOptions<'_>,
    cookie: &[u8],
) -> Result<TcpStream, IperfError> {
    use rperf3_sys::sctp;
    let local_port = at.local_port;
    let family = if at.server.is_ipv4() {
        Family::V4
    } else {
        Family::Any
    };
    let prepare = |fd: BorrowedFd<'_>, _v6: bool| {
        if let Some(w) = sctp.window {
            rperf3_sys::net::set_buffer_sizes(&fd, w as usize)
                .map_err(|e| IperfError::from_io(IE_SET_BUF, &e))?;
        }
        if params.nodelay {
            sctp::set_nodelay(&fd).map_err(|e| IperfError::from_io(IE_SET_NODELAY, &e))?;
        }
        // iperf3 leaves SCTP_MAXSEG alone outside this range.
        if let Ok(mss @ 512..=131072) = u32::try_from(params.mss) {
            sctp::set_maxseg(&fd, mss).map_err(|e| IperfError::from_io(IE_SET_MSS, &e))?;
        }
        if let Some(n @ 1..) = sctp.nstreams {
            sctp::set_out_streams(&fd, n)
                .map_err(|e| IperfError::from_io(IE_SET_SCTP_NSTREAM, &e))?;
        }
        // After socket(), as iperf3 resolves them: a host without SCTP fails first.
        let mut xaddrs = Vec::new();
        for name in sctp.xbind {
            let addrs = rperf3_sys::net::resolve(name, 0, family)
                .map_err(|e| IperfError::from_io(IE_SET_SCTP_BINDX, &e))?;
            xaddrs.extend(addrs);
        }
        sctp::bind_client(&fd, local_port, &xaddrs)
            .map_err(|e| IperfError::from_io(IE_SET_SCTP_BINDX, &e))
    };
    let s = connect_with_cookie(&at, Transport::Sctp, &prepare, cookie, IE_SEND_COOKIE)?;
    sctp::allow_fragments(&s).map_err(|e| IperfError::from_io(IE_SET_SCTP_DISABLE_FRAG, &e))?;
    Ok(s)
}

/// Shuts every stream down and waits for the workers.
pub(crate) fn stop_all(streams: &[LiveStream], workers: Vec<Worker>) {
    for s in streams {
        s.shutdown();
    }
    for w in workers {
        w.join();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_skip_two() {
        let ids: Vec<u32> = (0..5).map(super::stream_id).collect();
        assert_eq!(ids, vec![1, 3, 4, 5, 6]);
    }

    #[test]
    fn the_streams_of_a_test_share_one_payload_block() {
        let send = super::SendSpec {
            blksize: 32_768,
            pacer: None,
            repeating: true,
            burst: 1,
            counters_64bit: false,
            skip_rx_copy: false,
            file: None,
            zerocopy: false,
        };
        let p = super::SharedPayload::default();
        let (a, b) = (p.bytes(&send), p.bytes(&send));
        assert!(std::sync::Arc::ptr_eq(&a, &b));
        assert_eq!(&a[..12], b"012345678901");
        assert_eq!(a.len(), 32_768);
        // Another test gets its own.
        let q = super::SharedPayload::default();
        assert!(!std::sync::Arc::ptr_eq(&a, &q.bytes(&send)));
    }
}
