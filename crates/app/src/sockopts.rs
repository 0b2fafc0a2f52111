//! The per-test socket options iperf3 puts on data streams (`-N`, `-M`, `-C`, `-S`).
//!
//! The client sets them before it connects, so the SYN already carries the MSS and
//! TOS; the server sets what the client asked for on each accepted stream. Both
//! read them from the parameters document, so the two ends cannot disagree.

use std::os::fd::{AsFd, BorrowedFd};

use rperf3_proto::{
    IperfError, TestParams, IE_SET_CONGESTION, IE_SET_MSS, IE_SET_NODELAY, IE_SET_TOS,
};
use rperf3_sys::sockopt;

/// What applying the options left to say.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// The congestion algorithm asked for is not on this host (server: a warning).
    pub congestion_missing: bool,
}

/// Options of a TCP data stream, in iperf3's order. `lenient_congestion`: an
/// algorithm this host lacks is reported, not an error (iperf3's server goes on).
pub fn apply_tcp(
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
    Ok(out)
}

/// The TOS byte (`TOS`), on TCP and UDP streams alike.
pub fn apply_tos(fd: impl AsFd, v6: bool, p: &TestParams) -> Result<(), IperfError> {
    match u8::try_from(p.tos) {
        Ok(0) => Ok(()),
        Ok(t) => sockopt::set_tos(&fd, v6, t).map_err(|e| IperfError::from_io(IE_SET_TOS, &e)),
        Err(_) => Err(IperfError::new(IE_SET_TOS)),
    }
}
