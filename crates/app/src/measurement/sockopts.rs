//! The per-test socket options iperf3 puts on data streams (`-N`, `-M`, `-C`, `-S`).
//!
//! The client sets them before it connects, so the SYN already carries the MSS and
//! TOS; the server sets what the client asked for on each accepted stream. Both
//! read them from the parameters document, so the two ends cannot disagree.

use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd};

use rperf3_proto::{
    IperfError, TestParams, IE_SET_CONGESTION, IE_SET_FLOW, IE_SET_MSS, IE_SET_NODELAY, IE_SET_TOS,
};
use rperf3_sys::sockopt;

/// What applying the options left to say.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The congestion algorithm asked for is not on this host (server: a warning).
    pub congestion_missing: bool,
}

/// Options of a TCP data stream, in iperf3's order. `lenient_congestion`: an
/// algorithm this host lacks is reported, not an error (iperf3's server goes on).
pub(crate) fn apply_tcp(
    fd: BorrowedFd<'_>,
    v6: bool,
    p: &TestParams,
    lenient_congestion: bool,
) -> Result<Applied, IperfError> {
    let mut out = Applied::default();
    if p.nodelay {
        sockopt::set_nodelay(&fd).map_err(|e| IperfError::from_io(IE_SET_NODELAY, &e))?;
    }
    if p.mss != 0 {
        sockopt::set_mss(&fd, p.mss).map_err(|e| IperfError::from_io(IE_SET_MSS, &e))?;
    }
    if let Some(algo) = p.congestion.as_deref() {
        if let Err(e) = sockopt::set_congestion(&fd, algo) {
            if lenient_congestion && sockopt::lacks_algorithm(&e) {
                out.congestion_missing = true;
            } else {
                // iperf3 prints this one without the OS text.
                return Err(IperfError::new(IE_SET_CONGESTION));
            }
        }
    }
    apply_tos(fd, v6, p)?;
    apply_pacing(fd, p);
    Ok(out)
}

/// `flowlabel` (client TCP streams, before connect): IPv6 only, as in iperf3.
pub(crate) fn apply_flowlabel(
    fd: BorrowedFd<'_>,
    server: SocketAddr,
    p: &TestParams,
) -> Result<(), IperfError> {
    let Ok(label @ 1..) = u32::try_from(p.flowlabel) else {
        return Ok(());
    };
    match server {
        SocketAddr::V6(a) => {
            sockopt::set_flowlabel(&fd, *a.ip(), label).map_err(|_| IperfError::new(IE_SET_FLOW))
        }
        SocketAddr::V4(_) => Err(IperfError::new(IE_SET_FLOW)),
    }
}

/// `fqrate`: SO_MAX_PACING_RATE in bytes/s. iperf3 only warns when the kernel
/// refuses it (in debug mode), so a failure here is not an error either.
pub(crate) fn apply_pacing(fd: impl AsFd, p: &TestParams) {
    if p.fqrate / 8 > 0 {
        let _ = sockopt::set_max_pacing_rate(&fd.as_fd(), p.fqrate / 8);
    }
}

/// `--snd-timeout`: TCP_USER_TIMEOUT on a data stream (0: the system's).
pub(crate) fn apply_snd_timeout(fd: impl AsFd, ms: u32) {
    if ms > 0 {
        let _ = sockopt::set_user_timeout(&fd, ms);
    }
}

/// `--cntl-ka`: keepalive on the control connection.
pub(crate) fn apply_keepalive(fd: impl AsFd, ka: Option<[u32; 3]>) {
    if let Some([idle, intvl, cnt]) = ka {
        let _ = sockopt::set_keepalive(&fd, idle, intvl, cnt);
    }
}

/// The TOS byte (`TOS`), on TCP and UDP streams alike.
pub(crate) fn apply_tos(fd: impl AsFd, v6: bool, p: &TestParams) -> Result<(), IperfError> {
    match u8::try_from(p.tos) {
        Ok(0) => Ok(()),
        Ok(t) => sockopt::set_tos(&fd, v6, t).map_err(|e| IperfError::from_io(IE_SET_TOS, &e)),
        Err(_) => Err(IperfError::new(IE_SET_TOS)),
    }
}
