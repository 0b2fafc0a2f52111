//! Every OS call rperf3 makes, in one place.
//!
//! This is the only crate allowed `unsafe`. The blocks, each marked `// SAFETY:`:
//! - `tcp_info.rs`: `getsockopt(TCP_INFO)` into a plain-old-data struct.
//! - `time.rs`: `localtime_r` + `strftime` for `--timestamps`.
//! - `sockopt.rs`: `setsockopt` for options socket2 does not wrap (IP_MTU_DISCOVER,
//!   TCP_MAXSEG with a signed value, SO_MAX_PACING_RATE, IPV6_FLOWINFO_SEND) and
//!   IPV6_FLOWLABEL_MGR with its request struct; the FIONREAD ioctl.
//! - `sctp.rs`: `setsockopt` at the SCTP level (SCTP_INITMSG, SCTP_MAXSEG and
//!   sctp_bindx's packed address array), which libc does not wrap.
//! - `mcast.rs`: `setsockopt(MCAST_JOIN_SOURCE_GROUP)` with its request struct and
//!   the socket addresses copied into it.
//! - `udp_io.rs`: `sendmmsg` / `recvmmsg` over stack arrays of headers pointing at live
//!   buffers, UDP_SEGMENT / UDP_GRO control messages and socket options.
//!
//! Everything else goes through `socket2`, `nix` or `std`.
#![deny(missing_docs)]
// Checked on the library only: its test build also links the dev-dependencies,
// which the integration tests may use and the unit tests not.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

pub mod clock;
pub mod mcast;
pub mod net;
pub mod poll;
pub mod process;
pub mod random;
pub mod ready;
pub mod rusage;
pub mod sctp;
pub mod sockopt;
pub mod system;
pub mod tcp_info;
pub mod term;
pub mod time;
pub mod udp_io;
pub mod zerocopy;
