//! The client's TCP and SCTP data connections: the test's socket options,
//! connect, then the cookie, each within the stream setup deadline.

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::BorrowedFd;
use std::time::Duration;

use rperf3_proto::{
    IperfError, TestParams, IE_SEND_COOKIE, IE_SET_BUF, IE_SET_MSS, IE_SET_NODELAY,
    IE_SET_SCTP_BINDX, IE_SET_SCTP_DISABLE_FRAG, IE_SET_SCTP_NSTREAM, IE_STREAM_CONNECT,
};
use rperf3_sys::net::{connect_tcp_prepared, Family, Prepared, Transport};

use crate::measurement::sockopts::{apply_flowlabel, apply_tcp};

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
