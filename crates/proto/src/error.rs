//! iperf3's numbered errors (`i_errno`) and their exact texts.
//!
//! The numbers travel on the wire after SERVER_ERROR, and the texts appear verbatim
//! in text and JSON output, so both must match iperf3 byte for byte. Some texts are
//! followed by the C library's description of `errno` ("+errno" in the spec), some
//! by a resolver message ("+gai"); iperf3 then always adds `": "`, even when there is
//! nothing to add.

use crate::constants::{
    MAX_BLOCK, MAX_BURST, MAX_INTERVAL, MAX_MSS, MAX_OMIT, MAX_STREAMS, MAX_TCP_BUFFER, MAX_TIME,
    MAX_UDP_BLOCKSIZE, MIN_INTERVAL, MIN_UDP_BLOCKSIZE,
};
use crate::error_codes::IE_UNIT_VAL;
use crate::msg::Msg;

/// What iperf3's server says, without `error - `, when a client's control
/// connection closes mid-test: it ends that test as done, not with error 109.
pub const CLIENT_CLOSED: &str = "the client has unexpectedly closed the connection";

/// What iperf3 appends after a code's text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Suffix {
    /// Nothing.
    None,
    /// `": "` + strerror(errno) when errno ≠ 0, else the detail (a resolver
    /// message, or an OS error without a number) if any.
    Errno,
}

/// The fixed part of a code's text, and its suffix rule. `None` for codes iperf3 has
/// no text for (printed as `int_errno=<n>`, which also takes the errno suffix).
fn base_text(code: i32) -> Option<(String, Suffix)> {
    use crate::error_codes::*;
    use Suffix::{Errno, None as Plain};
    let fixed = |s: &str, x| Some((s.to_owned(), x));
    match code {
        IE_NONE => fixed("no error", Plain),
        IE_SERV_CLIENT => fixed("cannot be both server and client", Plain),
        IE_NO_ROLE => fixed("must either be a client (-c) or server (-s)", Plain),
        IE_SERVER_ONLY => fixed("some option you are trying to set is server only", Plain),
        IE_CLIENT_ONLY => fixed("some option you are trying to set is client only", Plain),
        IE_DURATION => Some((
            format!("test duration valid values are 0 to {MAX_TIME} seconds"),
            Plain,
        )),
        IE_NUM_STREAMS => Some((
            format!("invalid number of parallel streams (min = 1, max = {MAX_STREAMS})"),
            Plain,
        )),
        IE_BLOCK_SIZE => Some((
            format!("block size too large (maximum = {MAX_BLOCK} bytes)"),
            Plain,
        )),
        IE_BUF_SIZE => Some((
            format!("socket buffer size too large (maximum = {MAX_TCP_BUFFER} bytes)"),
            Plain,
        )),
        IE_INTERVAL => Some((
            format!("invalid report interval (min = {MIN_INTERVAL}, max = {MAX_INTERVAL} seconds)"),
            Plain,
        )),
        IE_MSS => Some((format!("TCP MSS too large (maximum = {MAX_MSS} bytes)"), Plain)),
        IE_NO_SENDFILE => fixed("this OS does not support sendfile", Plain),
        IE_OMIT => Some((
            format!("bogus value for --omit (maximum = {MAX_OMIT} seconds)"),
            Plain,
        )),
        IE_UNIMP => fixed("an option you are trying to set is not implemented yet", Plain),
        IE_FILE => fixed("unable to open -F file", Errno),
        IE_BURST => Some((format!("invalid burst count (maximum = {MAX_BURST})"), Plain)),
        IE_END_CONDITIONS => fixed("only one test end condition (-t, -n, -k) may be specified", Plain),
        IE_LOG_FILE => fixed("unable to open log file", Errno),
        IE_NO_SCTP => fixed("no SCTP support available", Plain),
        IE_BIND => fixed("--bind must be specified to use --cport", Plain),
        IE_UDP_BLOCK_SIZE => Some((
            format!(
                "block size invalid (minimum = {MIN_UDP_BLOCKSIZE} bytes, maximum = {MAX_UDP_BLOCKSIZE} bytes)"
            ),
            Plain,
        )),
        IE_BAD_TOS => fixed("bad TOS value (must be between 0 and 255 inclusive)", Plain),
        IE_SET_CLIENT_AUTH => fixed(
            "you must specify a username, password, and path to a valid RSA public key",
            Plain,
        ),
        IE_SET_SERVER_AUTH => fixed(
            "you must specify a path to a valid RSA private key and a user credential file",
            Plain,
        ),
        IE_BAD_FORMAT => fixed("bad format specifier (valid formats are in the set [kmgtKMGT])", Plain),
        IE_REVERSE_BIDIR => fixed("cannot be both reverse and bidirectional", Plain),
        IE_BAD_PORT => fixed("port number must be between 1 and 65535 inclusive", Plain),
        IE_TOTAL_RATE => fixed("total required bandwidth is larger than server limit", Plain),
        IE_TOTAL_INTERVAL => fixed("invalid time interval for calculating average data rate", Plain),
        IE_SKEW_THRESHOLD => fixed("skew threshold must be a positive number", Plain),
        IE_IDLE_TIMEOUT => fixed("idle timeout parameter is not positive or larger than allowed limit", Plain),
        IE_RCV_TIMEOUT => fixed("receive timeout value is incorrect or not in range", Errno),
        IE_RVRS_ONLY_RCV_TIMEOUT => fixed("client receive timeout is valid only in receiving mode", Errno),
        IE_SND_TIMEOUT => fixed("send timeout value is incorrect or not in range", Errno),
        IE_UDP_FILE_TRANSFER => fixed("cannot transfer file using UDP", Plain),
        IE_SERVER_AUTH_USERS => fixed("cannot access authorized users file", Plain),
        IE_CNTL_KA => fixed(
            "control connection Keepalive period should be larger than the full retry period (interval * count)",
            Errno,
        ),
        IE_MAX_SERVER_TEST_DURATION_EXCEEDED => fixed(
            "client's requested duration exceeds the server's maximum permitted limit",
            Plain,
        ),
        IE_UNIT_VAL => fixed("invalid unit value or suffix", Plain),
        IE_RVRS_ONLY_SKIP_RX_COPY => fixed("this OS does not support --skip-rx-copy", Errno),
        IE_BAD_DSCP => fixed(
            "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])",
            Plain,
        ),
        IE_NEW_TEST => fixed("unable to create a new test", Errno),
        IE_INIT_TEST => fixed("test initialization failed", Errno),
        IE_LISTEN => fixed("unable to start listener for connections", Errno),
        IE_CONNECT => fixed(
            "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.",
            Errno,
        ),
        IE_ACCEPT => fixed("unable to accept connection from client", Errno),
        IE_SEND_COOKIE => fixed("unable to send cookie to server", Errno),
        IE_RECV_COOKIE => fixed("unable to receive cookie at server", Errno),
        IE_CTRL_WRITE => fixed("unable to write to the control socket", Errno),
        IE_CTRL_READ => fixed("unable to read from the control socket", Errno),
        IE_CTRL_CLOSE => fixed("control socket has closed unexpectedly", Plain),
        IE_MESSAGE => fixed(
            "received an unknown control message (ensure other side is iperf3 and not iperf)",
            Plain,
        ),
        IE_SEND_MESSAGE => fixed(
            "unable to send control message - port may not be available, the other side may have stopped running, etc.",
            Errno,
        ),
        IE_RECV_MESSAGE => fixed(
            "unable to receive control message - port may not be available, the other side may have stopped running, etc.",
            Errno,
        ),
        IE_SEND_PARAMS => fixed("unable to send parameters to server", Errno),
        IE_RECV_PARAMS => fixed("unable to receive parameters from client", Errno),
        IE_PACKAGE_RESULTS => fixed("unable to package results", Errno),
        IE_SEND_RESULTS => fixed("unable to send results", Errno),
        IE_RECV_RESULTS => fixed("unable to receive results", Errno),
        IE_SELECT => fixed("select failed", Errno),
        IE_CLIENT_TERM => fixed("the client has terminated", Plain),
        IE_SERVER_TERM => fixed("the server has terminated", Plain),
        IE_ACCESS_DENIED => fixed("the server is busy running a test. try again later", Plain),
        IE_SET_NODELAY => fixed("unable to set TCP/SCTP NODELAY", Errno),
        IE_SET_MSS => fixed("unable to set TCP/SCTP MSS", Errno),
        IE_SET_BUF => fixed("unable to set socket buffer size", Errno),
        IE_SET_TOS => fixed("unable to set IP TOS", Errno),
        IE_SET_COS => fixed("unable to set IPv6 traffic class", Errno),
        IE_SET_FLOW => fixed("unable to set IPv6 flow label", Plain),
        IE_REUSE_ADDR => fixed("unable to reuse address on socket", Errno),
        IE_NON_BLOCKING => fixed("unable to set socket to non-blocking", Errno),
        IE_SET_WINDOW_SIZE => fixed("unable to set socket window size", Errno),
        IE_PROTOCOL => fixed("protocol does not exist", Plain),
        IE_AFFINITY => fixed("unable to set CPU affinity", Errno),
        IE_DAEMON => fixed("unable to become a daemon", Errno),
        IE_SET_CONGESTION => fixed(
            "unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host",
            Plain,
        ),
        IE_PID_FILE => fixed("unable to write PID file", Errno),
        IE_V6_ONLY => fixed("Unable to set/reset IPV6_V6ONLY", Errno),
        IE_SET_SCTP_DISABLE_FRAG => fixed("unable to set SCTP_DISABLE_FRAGMENTS", Errno),
        IE_SET_SCTP_NSTREAM => fixed("unable to set SCTP_INIT num of SCTP streams", Errno),
        IE_SET_PACING => fixed("unable to set socket pacing", Errno),
        IE_SET_BUF2 => fixed("socket buffer size not set correctly", Plain),
        IE_AUTH_TEST => fixed("test authorization failed", Plain),
        IE_BIND_DEV => fixed("Unable to bind-to-device (check perror, maybe permissions?)", Plain),
        IE_NO_MSG => fixed("idle timeout for receiving data", Plain),
        IE_SET_DONT_FRAGMENT => fixed("unable to set IP Do-Not-Fragment flag", Plain),
        IE_BIND_DEV_NO_SUPPORT => fixed(
            "<ip>%<dev> is not supported as system does not support bind to device",
            Plain,
        ),
        IE_HOST_DEV => fixed(
            "host device name (ip%<dev>) is supported (and required) only for IPv6 link-local address",
            Plain,
        ),
        IE_SET_USER_TIMEOUT => fixed("unable to set TCP USER_TIMEOUT", Errno),
        IE_PTHREAD_CREATE => fixed("unable to create thread", Errno),
        IE_PTHREAD_CANCEL => fixed("unable to cancel thread", Errno),
        IE_PTHREAD_JOIN => fixed("unable to join thread", Errno),
        IE_PTHREAD_ATTR_INIT => fixed("unable to create thread attributes", Errno),
        IE_PTHREAD_ATTR_DESTROY => fixed("unable to destroy thread attributes", Plain),
        IE_SET_CNTL_KA => fixed("unable to set socket keepalive (SO_KEEPALIVE) option", Errno),
        IE_SET_CNTL_KA_KEEPIDLE => fixed(
            "unable to set socket keepalive TCP period (TCP_KEEPIDLE) option",
            Errno,
        ),
        IE_SET_CNTL_KA_INTERVAL => fixed(
            "unable to set/get socket keepalive TCP retry interval (TCP_KEEPINTVL) option",
            Errno,
        ),
        IE_SET_CNTL_KA_COUNT => fixed(
            "unable to set/get socket keepalive TCP number of retries (TCP_KEEPCNT) option",
            Errno,
        ),
        IE_PTHREAD_SIGMASK => fixed("unable to change mask of blocked signals", Plain),
        IE_SERVER_TEST_DURATION_EXPIRED => fixed("server test duration expired", Errno),
        IE_CREATE_STREAM => fixed("unable to create a new stream", Errno),
        IE_INIT_STREAM => fixed("unable to initialize stream", Errno),
        IE_STREAM_LISTEN => fixed("unable to start stream listener", Errno),
        IE_STREAM_CONNECT => fixed("unable to connect stream", Errno),
        IE_STREAM_ACCEPT => fixed("unable to accept stream connection", Errno),
        IE_STREAM_WRITE => fixed("unable to write to stream socket", Errno),
        IE_STREAM_READ => fixed("unable to read from stream socket", Errno),
        IE_STREAM_CLOSE => fixed("stream socket has closed unexpectedly", Plain),
        IE_STREAM_ID => fixed("stream has an invalid id", Plain),
        IE_NEW_TIMER => fixed("unable to create new timer", Errno),
        IE_UPDATE_TIMER => fixed("unable to update timer", Errno),
        _ => None,
    }
}

/// The C library's description of `errno`, without the ` (os error N)` that Rust's
/// `io::Error` adds.
pub fn strerror(errno: i32) -> String {
    let s = std::io::Error::from_raw_os_error(errno).to_string();
    let tail = format!(" (os error {errno})");
    match s.strip_suffix(&tail) {
        Some(t) => t.to_owned(),
        None => s,
    }
}

/// One of iperf3's numbered errors, with the `errno` that came with it.
///
/// `Display` gives iperf3's exact text for the code (spec §9.4). `detail` carries
/// the text some codes add: the bad value quoted by 38, the resolver message of
/// the "+gai" codes (102–104, 200–203), or the message of an OS error that has no
/// number; it follows the `": "` of "+errno" codes only when `errno` is 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.text())]
pub struct IperfError {
    /// iperf3's error number (`i_errno`).
    pub code: i32,
    /// The OS error number that came with it, 0 if none.
    pub errno: i32,
    /// Extra text for codes that quote a value or a resolver message.
    pub detail: Option<String>,
}

impl IperfError {
    /// An error without errno.
    pub fn new(code: i32) -> Self {
        Self {
            code,
            errno: 0,
            detail: None,
        }
    }

    /// An error with the OS error number that caused it.
    pub fn with_errno(code: i32, errno: i32) -> Self {
        Self {
            code,
            errno,
            detail: None,
        }
    }

    /// An error with extra text (38's bad value, or a "+gai" resolver message).
    pub fn with_detail(code: i32, detail: impl Into<String>) -> Self {
        Self {
            code,
            errno: 0,
            detail: Some(detail.into()),
        }
    }

    /// An error caused by an OS call: its errno when it has one, else its own
    /// message as the detail (so a timeout or custom error is never printed as an
    /// empty `": "`).
    pub fn from_io(code: i32, e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(n) if n != 0 => Self::with_errno(code, n),
            _ => Self::with_detail(code, e.to_string()),
        }
    }

    /// iperf3's text for this error, exactly as it prints it after `error - `.
    pub fn text(&self) -> String {
        let (mut s, suffix) = match base_text(self.code) {
            Some(t) => t,
            None => (format!("int_errno={}", self.code), Suffix::Errno),
        };
        if self.code == IE_UNIT_VAL {
            s.push_str(&format!(": '{}'", self.detail.as_deref().unwrap_or("")));
        }
        if suffix != Suffix::None {
            s.push_str(": ");
            if self.errno != 0 {
                s.push_str(&strerror(self.errno));
            } else if let Some(d) = &self.detail {
                s.push_str(d);
            }
        }
        s
    }

    /// The SERVER_ERROR message that reports this error to a client.
    pub fn to_server_error_bytes(&self) -> [u8; 9] {
        server_error_bytes(self.code, self.errno)
    }
}

/// SERVER_ERROR on the wire: `0xFE`, the code and errno as big-endian int32.
pub fn server_error_bytes(code: i32, errno: i32) -> [u8; 9] {
    let mut b = [0u8; 9];
    b[0] = Msg::ServerError.to_byte();
    b[1..5].copy_from_slice(&code.to_be_bytes());
    b[5..9].copy_from_slice(&errno.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_codes::IE_MESSAGE;

    #[test]
    fn plain_texts_match_iperf3() {
        assert_eq!(
            IperfError::new(121).to_string(),
            "the server is busy running a test. try again later"
        );
        assert_eq!(
            IperfError::new(27).to_string(),
            "total required bandwidth is larger than server limit"
        );
        assert_eq!(
            IperfError::new(IE_MESSAGE).to_string(),
            "received an unknown control message (ensure other side is iperf3 and not iperf)"
        );
        assert_eq!(
            IperfError::new(109).to_string(),
            "control socket has closed unexpectedly"
        );
    }

    #[test]
    fn limits_are_filled_in() {
        assert_eq!(
            IperfError::new(5).to_string(),
            "test duration valid values are 0 to 86400 seconds"
        );
        assert_eq!(
            IperfError::new(6).to_string(),
            "invalid number of parallel streams (min = 1, max = 128)"
        );
        assert_eq!(
            IperfError::new(7).to_string(),
            "block size too large (maximum = 1048576 bytes)"
        );
        assert_eq!(
            IperfError::new(8).to_string(),
            "socket buffer size too large (maximum = 536870912 bytes)"
        );
        assert_eq!(
            IperfError::new(9).to_string(),
            "invalid report interval (min = 0.1, max = 60 seconds)"
        );
        assert_eq!(
            IperfError::new(10).to_string(),
            "TCP MSS too large (maximum = 32767 bytes)"
        );
        assert_eq!(
            IperfError::new(12).to_string(),
            "bogus value for --omit (maximum = 600 seconds)"
        );
        assert_eq!(
            IperfError::new(15).to_string(),
            "invalid burst count (maximum = 1000)"
        );
        assert_eq!(
            IperfError::new(20).to_string(),
            "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)"
        );
        assert_eq!(
            IperfError::with_detail(38, "12x").to_string(),
            "invalid unit value or suffix: '12x'"
        );
    }

    // Checked against the 3.12 client fed SERVER_ERROR by a fake server.
    #[test]
    fn errno_suffix_rule() {
        assert_eq!(
            IperfError::new(108).to_string(),
            "unable to read from the control socket: "
        );
        assert_eq!(
            IperfError::with_errno(108, 2).to_string(),
            "unable to read from the control socket: No such file or directory"
        );
        assert_eq!(
            IperfError::with_errno(27, 2).to_string(),
            "total required bandwidth is larger than server limit"
        );
        assert_eq!(
            IperfError::new(102).to_string(),
            "unable to start listener for connections: "
        );
        assert_eq!(
            IperfError::new(160).to_string(),
            "server test duration expired: "
        );
    }

    #[test]
    fn gai_detail_only_without_errno() {
        let e = IperfError::with_detail(103, "Name or service not known");
        assert!(e
            .to_string()
            .ends_with("firewall issue, etc.: Name or service not known"));
        let e = IperfError {
            code: 103,
            errno: 111,
            detail: Some("x".into()),
        };
        assert!(e.to_string().ends_with("etc.: Connection refused"));
        // Without detail or errno the text ends with iperf3's bare ": ".
        assert_eq!(
            IperfError::new(117).to_string(),
            "unable to receive results: "
        );
    }

    #[test]
    fn io_errors_keep_their_message() {
        let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "no reply in 30 s");
        assert_eq!(
            IperfError::from_io(206, &timed_out).to_string(),
            "unable to read from stream socket: no reply in 30 s"
        );
        let refused = std::io::Error::from_raw_os_error(111);
        assert_eq!(
            IperfError::from_io(203, &refused).to_string(),
            "unable to connect stream: Connection refused"
        );
        // Plain codes never take a detail.
        assert_eq!(
            IperfError::from_io(109, &timed_out).to_string(),
            "control socket has closed unexpectedly"
        );
    }

    #[test]
    fn unknown_codes_print_int_errno_with_errno_suffix() {
        assert_eq!(IperfError::new(999).to_string(), "int_errno=999: ");
        assert_eq!(IperfError::new(139).to_string(), "int_errno=139: ");
        assert_eq!(
            IperfError::with_errno(999, 2).to_string(),
            "int_errno=999: No such file or directory"
        );
        assert_eq!(IperfError::new(-5).to_string(), "int_errno=-5: ");
    }

    #[test]
    fn every_table_code_has_text() {
        let table: Vec<i32> = (0..=40)
            .chain(100..=148)
            .chain(150..=160)
            .chain(200..=208)
            .chain([300, 301])
            .filter(|&c| c != 139)
            .collect();
        for c in table {
            assert!(
                !IperfError::new(c).to_string().starts_with("int_errno"),
                "code {c}"
            );
        }
    }

    #[test]
    fn strerror_drops_rust_suffix() {
        assert_eq!(strerror(104), "Connection reset by peer");
        assert_eq!(strerror(32), "Broken pipe");
    }

    #[test]
    fn server_error_wire_form() {
        assert_eq!(server_error_bytes(27, 0), [0xFE, 0, 0, 0, 0x1B, 0, 0, 0, 0]);
        assert_eq!(
            IperfError::with_errno(205, 32).to_server_error_bytes(),
            [0xFE, 0, 0, 0, 0xCD, 0, 0, 0, 32]
        );
        assert_eq!(server_error_bytes(-1, -1)[1..], [0xFF; 8]);
    }
}
