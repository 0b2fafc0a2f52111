//! The command line's errors, with iperf3 3.21's texts and numbers.
//!
//! A bad command line ends the process with status 1 and, on stderr, one line
//! naming the problem followed by a short usage hint, exactly as iperf3 3.21 does
//! (3.12 printed the whole help instead). Problems getopt finds read
//! `<prog>: <glibc's text>`; problems of meaning read `<prog>: parameter error - …`.

use std::fmt;

use super::getopt::GetoptError;
use super::units::UnitError;

/// A command-line problem of meaning. Display is iperf3's text; `code` its number.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParamError {
    /// 1: both `-s` and `-c`.
    ServerAndClient,
    /// 2: neither `-s` nor `-c`.
    NoRole,
    /// 3: a server-only option with `-c`.
    ServerOnly,
    /// 4: a client-only option with `-s`.
    ClientOnly,
    /// 5: `-t` out of 0..=86400.
    Duration,
    /// 6: `-P` out of 1..=128.
    NumStreams,
    /// 7: `-l` too large (or not positive for TCP).
    BlockSize,
    /// 8: `-w` above 512 MiB.
    BufSize,
    /// 9: `-i` neither 0 nor within 0.1..=60.
    Interval,
    /// 10: `-M` above the largest MSS.
    Mss,
    /// 12: `-O` out of 0..=600.
    Omit,
    /// 15: `-b rate/burst` with burst out of 1..=1000.
    Burst,
    /// 16: more than one of `-t`, `-n`, `-k`.
    EndConditions,
    /// 20: UDP `-l` out of 16..=65507.
    UdpBlockSize,
    /// 21: `-S` not a number within 0..=255.
    Tos,
    /// 34: `-F` with `-u`.
    UdpFileTransfer,
    /// 24: `-f` not one of kmgtKMGT.
    BadFormat,
    /// 25: `-R` with `--bidir`.
    ReverseBidir,
    /// 26: `-p` out of 1..=65535.
    BadPort,
    /// 31: `--rcv-timeout` out of 100..=86400000 ms.
    RcvTimeout,
    /// 32: `--rcv-timeout` on a client that only sends.
    RcvTimeoutReceiverOnly,
    /// 28: `--server-bitrate-limit rate/secs` with secs out of 0.1..=60.
    TotalInterval,
    /// 30: `--idle-timeout` out of 1..=86400.
    IdleTimeout,
    /// 132: `-A` not a CPU number in 0..=1024.
    Affinity,
    /// 40: `--dscp` neither 0..=63 nor a known name.
    Dscp,
    /// 33: `--snd-timeout` out of 0..=86400000 ms.
    SndTimeout,
    /// 36: `--cntl-ka` idle time not above interval × count.
    CntlKa,
    /// A negative `--pacing-timer`: iperf3 refuses it without setting an error
    /// number, so its message is the one for no error.
    PacingTimer,
    /// 127: `-L` not within 1..=0xFFFFF.
    FlowLabel,
    /// 22: `--username` without `--rsa-public-key-path` or the reverse, or a
    /// key or password that cannot be used.
    SetClientAuth,
    /// 23: `--rsa-private-key-path` without `--authorized-users-path` or the
    /// reverse, or a key that cannot be used.
    SetServerAuth,
    /// 29: `--time-skew-threshold` not a positive number.
    SkewThreshold,
    /// 35: the users file cannot be read.
    ServerAuthUsers,
    /// 38: a size or rate that does not parse.
    Unit(UnitError),
    /// An iperf3 option rperf3 does not implement yet (no iperf3 number): its long name.
    Unsupported(String),
    /// `--nstreams` not a whole number of SCTP streams, 1..=65535 (iperf3 takes
    /// any text and uses what `atoi` makes of it; no iperf3 number).
    NStreams,
    /// One of rperf3's own server options out of range: its long name and the
    /// smallest value it takes (no iperf3 number).
    BadCount(&'static str, i64),
    /// `--metrics` not an IP address and a port (no iperf3 number): the text.
    MetricsAddress(String),
}

/// iperf3's limits, as printed in its messages.
pub(crate) const MAX_TIME: i32 = 86400;
pub(crate) const MAX_STREAMS: i32 = 128;
pub(crate) const MAX_BLOCKSIZE: i64 = 1024 * 1024;
pub(crate) const MAX_TCP_BUFFER: f64 = 512.0 * 1024.0 * 1024.0;
pub(crate) const MIN_INTERVAL: f64 = 0.1;
pub(crate) const MAX_INTERVAL: f64 = 60.0;
pub(crate) const MAX_OMIT_TIME: i32 = 600;
pub(crate) const MAX_BURST: i32 = 1000;
pub(crate) const MAX_MSS: i32 = 32767;
pub(crate) const MIN_UDP_BLOCKSIZE: i64 = 16;
pub(crate) const MAX_UDP_BLOCKSIZE: i64 = 65507;
pub(crate) const MIN_RCV_TIMEOUT_MS: i32 = 100;
pub(crate) const MAX_AFFINITY_CPU: u32 = 1024;

impl ParamError {
    /// iperf3's error number (`i_errno`), if iperf3 has this error.
    pub(crate) fn code(&self) -> Option<i32> {
        Some(match self {
            Self::ServerAndClient => 1,
            Self::NoRole => 2,
            Self::ServerOnly => 3,
            Self::ClientOnly => 4,
            Self::Duration => 5,
            Self::NumStreams => 6,
            Self::BlockSize => 7,
            Self::BufSize => 8,
            Self::Interval => 9,
            Self::Mss => 10,
            Self::Omit => 12,
            Self::Burst => 15,
            Self::EndConditions => 16,
            Self::UdpBlockSize => 20,
            Self::Tos => 21,
            Self::UdpFileTransfer => 34,
            Self::BadFormat => 24,
            Self::ReverseBidir => 25,
            Self::BadPort => 26,
            Self::RcvTimeout => 31,
            Self::RcvTimeoutReceiverOnly => 32,
            Self::TotalInterval => 28,
            Self::IdleTimeout => 30,
            Self::Affinity => 132,
            Self::SndTimeout => 33,
            Self::CntlKa => 36,
            Self::PacingTimer => 0,
            Self::FlowLabel => 127,
            Self::Unit(_) => 38,
            Self::SetClientAuth => 22,
            Self::SetServerAuth => 23,
            Self::SkewThreshold => 29,
            Self::ServerAuthUsers => 35,
            Self::Dscp => 40,
            Self::Unsupported(_)
            | Self::BadCount(..)
            | Self::MetricsAddress(_)
            | Self::NStreams => return None,
        })
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ServerAndClient => f.write_str("cannot be both server and client"),
            Self::NoRole => f.write_str("must either be a client (-c) or server (-s)"),
            Self::ServerOnly => f.write_str("some option you are trying to set is server only"),
            Self::ClientOnly => f.write_str("some option you are trying to set is client only"),
            Self::Duration => write!(f, "test duration valid values are 0 to {MAX_TIME} seconds"),
            Self::NumStreams => write!(
                f,
                "invalid number of parallel streams (min = 1, max = {MAX_STREAMS})"
            ),
            Self::BlockSize => write!(f, "block size too large (maximum = {MAX_BLOCKSIZE} bytes)"),
            Self::BufSize => write!(
                f,
                "socket buffer size too large (maximum = {MAX_TCP_BUFFER} bytes)"
            ),
            Self::Interval => write!(
                f,
                "invalid report interval (min = {MIN_INTERVAL}, max = {MAX_INTERVAL} seconds)"
            ),
            Self::Omit => write!(
                f,
                "bogus value for --omit (maximum = {MAX_OMIT_TIME} seconds)"
            ),
            Self::Mss => write!(f, "TCP MSS too large (maximum = {MAX_MSS} bytes)"),
            Self::Tos => f.write_str("bad TOS value (must be between 0 and 255 inclusive)"),
            Self::Dscp => f.write_str(
                "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, \
                 af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])",
            ),
            Self::Burst => write!(f, "invalid burst count (maximum = {MAX_BURST})"),
            Self::UdpFileTransfer => f.write_str("cannot transfer file using UDP"),
            Self::EndConditions => {
                f.write_str("only one test end condition (-t, -n, -k) may be specified")
            }
            Self::UdpBlockSize => write!(
                f,
                "block size invalid (minimum = {MIN_UDP_BLOCKSIZE} bytes, maximum = \
                 {MAX_UDP_BLOCKSIZE} bytes)"
            ),
            Self::BadFormat => {
                f.write_str("bad format specifier (valid formats are in the set [kmgtKMGT])")
            }
            Self::ReverseBidir => f.write_str("cannot be both reverse and bidirectional"),
            Self::BadPort => f.write_str("port number must be between 1 and 65535 inclusive"),
            // iperf3 appends ": " and strerror(errno) to these two; errno is 0 while
            // parsing, so only ": " remains.
            Self::RcvTimeout => f.write_str("receive timeout value is incorrect or not in range: "),
            Self::RcvTimeoutReceiverOnly => {
                f.write_str("client receive timeout is valid only in receiving mode: ")
            }
            Self::TotalInterval => {
                f.write_str("invalid time interval for calculating average data rate")
            }
            Self::IdleTimeout => {
                f.write_str("idle timeout parameter is not positive or larger than allowed limit")
            }
            // iperf3 appends strerror(errno), empty while parsing.
            Self::Affinity => f.write_str("unable to set CPU affinity: "),
            Self::SndTimeout => f.write_str("send timeout value is incorrect or not in range: "),
            Self::CntlKa => f.write_str(
                "control connection Keepalive period should be larger than the full retry \
                 period (interval * count): ",
            ),
            Self::PacingTimer => f.write_str("no error"),
            Self::FlowLabel => f.write_str("unable to set IPv6 flow label"),
            Self::Unit(e) => e.fmt(f),
            Self::SetClientAuth => f.write_str(
                "you must specify a username, password, and path to a valid RSA public key",
            ),
            Self::SetServerAuth => f.write_str(
                "you must specify a path to a valid RSA private key and a user credential file",
            ),
            Self::SkewThreshold => f.write_str("skew threshold must be a positive number"),
            Self::ServerAuthUsers => f.write_str("cannot access authorized users file"),
            Self::Unsupported(long) => write!(f, "option --{long} is not supported yet"),
            Self::NStreams => f.write_str("--nstreams must be a whole number from 1 to 65535"),
            Self::BadCount(long, min) => {
                write!(f, "--{long} must be a whole number, at least {min}")
            }
            Self::MetricsAddress(v) => write!(
                f,
                "--metrics wants <addr>:<port> (an IP address and a port 1-65535, \
                 e.g. 127.0.0.1:9464 or [::1]:9464), not \"{v}\""
            ),
        }
    }
}

impl From<UnitError> for ParamError {
    fn from(e: UnitError) -> Self {
        Self::Unit(e)
    }
}

/// The two lines iperf3 3.21 prints after a command-line error.
pub(crate) fn usage_hint(prog: &str) -> String {
    format!("Usage: {prog} [-s|-c host] [options]\nTry `{prog} --help' for more information.\n")
}

/// stderr text for a getopt complaint.
pub(crate) fn getopt_text(prog: &str, e: &GetoptError) -> String {
    format!("{prog}: {e}\n\n{}", usage_hint(prog))
}

/// stderr text for a parameter error.
pub(crate) fn param_text(prog: &str, e: &ParamError) -> String {
    format!("{prog}: parameter error - {e}\n\n{}", usage_hint(prog))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_with_limits_filled_in() {
        assert_eq!(
            ParamError::Interval.to_string(),
            "invalid report interval (min = 0.1, max = 60 seconds)"
        );
        assert_eq!(
            ParamError::BufSize.to_string(),
            "socket buffer size too large (maximum = 536870912 bytes)"
        );
        assert_eq!(
            ParamError::BlockSize.to_string(),
            "block size too large (maximum = 1048576 bytes)"
        );
        assert_eq!(
            ParamError::UdpBlockSize.to_string(),
            "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)"
        );
        assert_eq!(
            ParamError::Duration.to_string(),
            "test duration valid values are 0 to 86400 seconds"
        );
        assert_eq!(
            ParamError::Burst.to_string(),
            "invalid burst count (maximum = 1000)"
        );
        assert_eq!(
            ParamError::Unsupported("zerocopy".into()).to_string(),
            "option --zerocopy is not supported yet"
        );
    }

    #[test]
    fn codes_are_iperf3s() {
        assert_eq!(ParamError::ServerAndClient.code(), Some(1));
        assert_eq!(ParamError::BadPort.code(), Some(26));
        assert_eq!(ParamError::Unit(UnitError("x".into())).code(), Some(38));
        assert_eq!(ParamError::Unsupported("sctp".into()).code(), None);
    }

    #[test]
    fn full_stderr_text() {
        assert_eq!(
            param_text("rperf3", &ParamError::NoRole),
            "rperf3: parameter error - must either be a client (-c) or server (-s)\n\n\
             Usage: rperf3 [-s|-c host] [options]\n\
             Try `rperf3 --help' for more information.\n"
        );
        assert_eq!(
            getopt_text("rperf3", &GetoptError::InvalidShort('Q')),
            "rperf3: invalid option -- 'Q'\n\nUsage: rperf3 [-s|-c host] [options]\n\
             Try `rperf3 --help' for more information.\n"
        );
    }
}
