//! The command line's errors, with iperf3 3.21's texts and numbers.
//!
//! A bad command line ends the process with status 1 and, on stderr, one line
//! naming the problem followed by a short usage hint, exactly as iperf3 3.21 does
//! (3.12 printed the whole help instead). Problems getopt finds read
//! `<prog>: <glibc's text>`; problems of meaning read `<prog>: parameter error - …`.

use std::fmt;

use rperf3_proto::{
    IperfError, IE_AFFINITY, IE_BAD_DSCP, IE_BAD_FORMAT, IE_BAD_PORT, IE_BAD_TOS, IE_BLOCK_SIZE,
    IE_BUF_SIZE, IE_BURST, IE_CLIENT_ONLY, IE_CNTL_KA, IE_DURATION, IE_END_CONDITIONS,
    IE_IDLE_TIMEOUT, IE_INTERVAL, IE_MSS, IE_NONE, IE_NO_ROLE, IE_NUM_STREAMS, IE_OMIT,
    IE_RCV_TIMEOUT, IE_REVERSE_BIDIR, IE_RVRS_ONLY_RCV_TIMEOUT, IE_SERVER_AUTH_USERS,
    IE_SERVER_ONLY, IE_SERV_CLIENT, IE_SET_CLIENT_AUTH, IE_SET_FLOW, IE_SET_SERVER_AUTH,
    IE_SKEW_THRESHOLD, IE_SND_TIMEOUT, IE_TOTAL_INTERVAL, IE_UDP_BLOCK_SIZE, IE_UDP_FILE_TRANSFER,
    IE_UNIT_VAL,
};

use super::getopt::GetoptError;
use super::units::UnitError;

/// A command-line problem of meaning. Display is iperf3's text, taken from
/// [`IperfError`] for every error iperf3 has; `code` is its number.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParamError {
    /// Both `-s` and `-c`.
    ServerAndClient,
    /// Neither `-s` nor `-c`.
    NoRole,
    /// A server-only option with `-c`.
    ServerOnly,
    /// A client-only option with `-s`.
    ClientOnly,
    /// `-t` or `--server-max-duration` out of range.
    Duration,
    /// `-P` out of range.
    NumStreams,
    /// `-l` too large (or not positive for TCP).
    BlockSize,
    /// `-w` too large.
    BufSize,
    /// `-i` neither 0 nor within range.
    Interval,
    /// `-M` above the largest MSS.
    Mss,
    /// `-O` out of range.
    Omit,
    /// `-b rate/burst` with the burst out of range.
    Burst,
    /// More than one of `-t`, `-n`, `-k`.
    EndConditions,
    /// UDP `-l` out of range.
    UdpBlockSize,
    /// `-S` not a number within 0..=255.
    Tos,
    /// `-F` with `-u`.
    UdpFileTransfer,
    /// `-f` not one of kmgtKMGT.
    BadFormat,
    /// `-R` with `--bidir`.
    ReverseBidir,
    /// `-p` or `--cport` out of 1..=65535.
    BadPort,
    /// `--rcv-timeout` out of range.
    RcvTimeout,
    /// `--rcv-timeout` on a client that only sends.
    RcvTimeoutReceiverOnly,
    /// `--server-bitrate-limit rate/secs` with secs out of range.
    TotalInterval,
    /// `--idle-timeout` out of range.
    IdleTimeout,
    /// `-A` not a CPU number in range.
    Affinity,
    /// `--dscp` neither 0..=63 nor a known name.
    Dscp,
    /// `--snd-timeout` out of range.
    SndTimeout,
    /// `--cntl-ka` idle time not above interval × count.
    CntlKa,
    /// A negative `--pacing-timer`: iperf3 refuses it without setting an error
    /// number, so its message is the one for no error.
    PacingTimer,
    /// `-L` out of range.
    FlowLabel,
    /// `--username` without `--rsa-public-key-path` or the reverse, or a
    /// key or password that cannot be used.
    SetClientAuth,
    /// `--rsa-private-key-path` without `--authorized-users-path` or the
    /// reverse, or a key that cannot be used.
    SetServerAuth,
    /// `--time-skew-threshold` not a positive number.
    SkewThreshold,
    /// The users file cannot be read.
    ServerAuthUsers,
    /// A size or rate that does not parse.
    Unit(UnitError),
    /// `--nstreams` not a whole number of SCTP streams, 1..=65535 (iperf3 takes
    /// any text and uses what `atoi` makes of it; no iperf3 number).
    NStreams,
    /// One of rperf3's own server options out of range: its long name and the
    /// smallest value it takes (no iperf3 number).
    BadCount(&'static str, i64),
    /// `--metrics` not an IP address and a port (no iperf3 number): the text.
    MetricsAddress(String),
    /// `--rpm` with an option it cannot honour, or a bad `--rpm-*` value (no
    /// iperf3 number): the text.
    Rpm(String),
    /// `--bounceback` with an option it cannot honour, or a bad
    /// `--bounceback-*` value (no iperf3 number): the text.
    Bounceback(String),
}

impl ParamError {
    /// iperf3's error number (`i_errno`), if iperf3 has this error.
    pub(crate) fn code(&self) -> Option<i32> {
        Some(match self {
            Self::ServerAndClient => IE_SERV_CLIENT,
            Self::NoRole => IE_NO_ROLE,
            Self::ServerOnly => IE_SERVER_ONLY,
            Self::ClientOnly => IE_CLIENT_ONLY,
            Self::Duration => IE_DURATION,
            Self::NumStreams => IE_NUM_STREAMS,
            Self::BlockSize => IE_BLOCK_SIZE,
            Self::BufSize => IE_BUF_SIZE,
            Self::Interval => IE_INTERVAL,
            Self::Mss => IE_MSS,
            Self::Omit => IE_OMIT,
            Self::Burst => IE_BURST,
            Self::EndConditions => IE_END_CONDITIONS,
            Self::UdpBlockSize => IE_UDP_BLOCK_SIZE,
            Self::Tos => IE_BAD_TOS,
            Self::UdpFileTransfer => IE_UDP_FILE_TRANSFER,
            Self::BadFormat => IE_BAD_FORMAT,
            Self::ReverseBidir => IE_REVERSE_BIDIR,
            Self::BadPort => IE_BAD_PORT,
            Self::RcvTimeout => IE_RCV_TIMEOUT,
            Self::RcvTimeoutReceiverOnly => IE_RVRS_ONLY_RCV_TIMEOUT,
            Self::TotalInterval => IE_TOTAL_INTERVAL,
            Self::IdleTimeout => IE_IDLE_TIMEOUT,
            Self::Affinity => IE_AFFINITY,
            Self::SndTimeout => IE_SND_TIMEOUT,
            Self::CntlKa => IE_CNTL_KA,
            Self::PacingTimer => IE_NONE,
            Self::FlowLabel => IE_SET_FLOW,
            Self::Unit(_) => IE_UNIT_VAL,
            Self::SetClientAuth => IE_SET_CLIENT_AUTH,
            Self::SetServerAuth => IE_SET_SERVER_AUTH,
            Self::SkewThreshold => IE_SKEW_THRESHOLD,
            Self::ServerAuthUsers => IE_SERVER_AUTH_USERS,
            Self::Dscp => IE_BAD_DSCP,
            Self::BadCount(..)
            | Self::MetricsAddress(_)
            | Self::NStreams
            | Self::Rpm(_)
            | Self::Bounceback(_) => return None,
        })
    }
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unit(e) => e.fmt(f),
            Self::NStreams => f.write_str("--nstreams must be a whole number from 1 to 65535"),
            Self::BadCount(long, min) => {
                write!(f, "--{long} must be a whole number, at least {min}")
            }
            Self::Rpm(text) | Self::Bounceback(text) => f.write_str(text),
            Self::MetricsAddress(v) => write!(
                f,
                "--metrics wants <addr>:<port> (an IP address and a port 1-65535, \
                 e.g. 127.0.0.1:9464 or [::1]:9464), not \"{v}\""
            ),
            // The rest all have an iperf3 number, and so iperf3's text. errno
            // is 0 while parsing, so the texts that take strerror end in a bare
            // ": ", as iperf3's do.
            other => IperfError::new(other.code().unwrap_or(IE_NONE)).fmt(f),
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

    /// Every error with the number and the exact text iperf3 3.21 gives it
    /// (the texts come from the protocol crate's table, so this pins both).
    #[test]
    fn every_error_has_iperf3s_number_and_text() {
        let dscp = "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, \
                    af21-23, af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])";
        let cntl_ka = "control connection Keepalive period should be larger than the full \
                       retry period (interval * count): ";
        let cases: Vec<(ParamError, Option<i32>, &str)> = vec![
            (ParamError::PacingTimer, Some(0), "no error"),
            (
                ParamError::ServerAndClient,
                Some(1),
                "cannot be both server and client",
            ),
            (
                ParamError::NoRole,
                Some(2),
                "must either be a client (-c) or server (-s)",
            ),
            (
                ParamError::ServerOnly,
                Some(3),
                "some option you are trying to set is server only",
            ),
            (
                ParamError::ClientOnly,
                Some(4),
                "some option you are trying to set is client only",
            ),
            (
                ParamError::Duration,
                Some(5),
                "test duration valid values are 0 to 86400 seconds",
            ),
            (
                ParamError::NumStreams,
                Some(6),
                "invalid number of parallel streams (min = 1, max = 128)",
            ),
            (
                ParamError::BlockSize,
                Some(7),
                "block size too large (maximum = 1048576 bytes)",
            ),
            (
                ParamError::BufSize,
                Some(8),
                "socket buffer size too large (maximum = 536870912 bytes)",
            ),
            (
                ParamError::Interval,
                Some(9),
                "invalid report interval (min = 0.1, max = 60 seconds)",
            ),
            (
                ParamError::Mss,
                Some(10),
                "TCP MSS too large (maximum = 32767 bytes)",
            ),
            (
                ParamError::Omit,
                Some(12),
                "bogus value for --omit (maximum = 600 seconds)",
            ),
            (
                ParamError::Burst,
                Some(15),
                "invalid burst count (maximum = 1000)",
            ),
            (
                ParamError::EndConditions,
                Some(16),
                "only one test end condition (-t, -n, -k) may be specified",
            ),
            (
                ParamError::UdpBlockSize,
                Some(20),
                "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
            ),
            (
                ParamError::Tos,
                Some(21),
                "bad TOS value (must be between 0 and 255 inclusive)",
            ),
            (
                ParamError::SetClientAuth,
                Some(22),
                "you must specify a username, password, and path to a valid RSA public key",
            ),
            (
                ParamError::SetServerAuth,
                Some(23),
                "you must specify a path to a valid RSA private key and a user credential file",
            ),
            (
                ParamError::BadFormat,
                Some(24),
                "bad format specifier (valid formats are in the set [kmgtKMGT])",
            ),
            (
                ParamError::ReverseBidir,
                Some(25),
                "cannot be both reverse and bidirectional",
            ),
            (
                ParamError::BadPort,
                Some(26),
                "port number must be between 1 and 65535 inclusive",
            ),
            (
                ParamError::TotalInterval,
                Some(28),
                "invalid time interval for calculating average data rate",
            ),
            (
                ParamError::SkewThreshold,
                Some(29),
                "skew threshold must be a positive number",
            ),
            (
                ParamError::IdleTimeout,
                Some(30),
                "idle timeout parameter is not positive or larger than allowed limit",
            ),
            (
                ParamError::RcvTimeout,
                Some(31),
                "receive timeout value is incorrect or not in range: ",
            ),
            (
                ParamError::RcvTimeoutReceiverOnly,
                Some(32),
                "client receive timeout is valid only in receiving mode: ",
            ),
            (
                ParamError::SndTimeout,
                Some(33),
                "send timeout value is incorrect or not in range: ",
            ),
            (
                ParamError::UdpFileTransfer,
                Some(34),
                "cannot transfer file using UDP",
            ),
            (
                ParamError::ServerAuthUsers,
                Some(35),
                "cannot access authorized users file",
            ),
            (ParamError::CntlKa, Some(36), cntl_ka),
            (
                ParamError::Unit(UnitError("12x".into())),
                Some(38),
                "invalid unit value or suffix: '12x'",
            ),
            (ParamError::Dscp, Some(40), dscp),
            (
                ParamError::FlowLabel,
                Some(127),
                "unable to set IPv6 flow label",
            ),
            (
                ParamError::Affinity,
                Some(132),
                "unable to set CPU affinity: ",
            ),
            (
                ParamError::NStreams,
                None,
                "--nstreams must be a whole number from 1 to 65535",
            ),
            (
                ParamError::BadCount("queue", 0),
                None,
                "--queue must be a whole number, at least 0",
            ),
            (
                ParamError::MetricsAddress("x".into()),
                None,
                "--metrics wants <addr>:<port> (an IP address and a port 1-65535, \
                 e.g. 127.0.0.1:9464 or [::1]:9464), not \"x\"",
            ),
        ];
        for (e, code, text) in cases {
            assert_eq!((e.code(), e.to_string()), (code, text.to_string()), "{e:?}");
        }
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
