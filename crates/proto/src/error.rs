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
    use Suffix::{Errno, None as Plain};
    let fixed = |s: &str, x| Some((s.to_owned(), x));
    match code {
        0 => fixed("no error", Plain),
        1 => fixed("cannot be both server and client", Plain),
        2 => fixed("must either be a client (-c) or server (-s)", Plain),
        3 => fixed("some option you are trying to set is server only", Plain),
        4 => fixed("some option you are trying to set is client only", Plain),
        5 => Some((
            format!("test duration valid values are 0 to {MAX_TIME} seconds"),
            Plain,
        )),
        6 => Some((
            format!("invalid number of parallel streams (min = 1, max = {MAX_STREAMS})"),
            Plain,
        )),
        7 => Some((
            format!("block size too large (maximum = {MAX_BLOCK} bytes)"),
            Plain,
        )),
        8 => Some((
            format!("socket buffer size too large (maximum = {MAX_TCP_BUFFER} bytes)"),
            Plain,
        )),
        9 => Some((
            format!("invalid report interval (min = {MIN_INTERVAL}, max = {MAX_INTERVAL} seconds)"),
            Plain,
        )),
        10 => Some((format!("TCP MSS too large (maximum = {MAX_MSS} bytes)"), Plain)),
        11 => fixed("this OS does not support sendfile", Plain),
        12 => Some((
            format!("bogus value for --omit (maximum = {MAX_OMIT} seconds)"),
            Plain,
        )),
        13 => fixed("an option you are trying to set is not implemented yet", Plain),
        14 => fixed("unable to open -F file", Errno),
        15 => Some((format!("invalid burst count (maximum = {MAX_BURST})"), Plain)),
        16 => fixed("only one test end condition (-t, -n, -k) may be specified", Plain),
        17 => fixed("unable to open log file", Errno),
        18 => fixed("no SCTP support available", Plain),
        19 => fixed("--bind must be specified to use --cport", Plain),
        20 => Some((
            format!(
                "block size invalid (minimum = {MIN_UDP_BLOCKSIZE} bytes, maximum = {MAX_UDP_BLOCKSIZE} bytes)"
            ),
            Plain,
        )),
        21 => fixed("bad TOS value (must be between 0 and 255 inclusive)", Plain),
        22 => fixed(
            "you must specify a username, password, and path to a valid RSA public key",
            Plain,
        ),
        23 => fixed(
            "you must specify a path to a valid RSA private key and a user credential file",
            Plain,
        ),
        24 => fixed("bad format specifier (valid formats are in the set [kmgtKMGT])", Plain),
        25 => fixed("cannot be both reverse and bidirectional", Plain),
        26 => fixed("port number must be between 1 and 65535 inclusive", Plain),
        27 => fixed("total required bandwidth is larger than server limit", Plain),
        28 => fixed("invalid time interval for calculating average data rate", Plain),
        29 => fixed("skew threshold must be a positive number", Plain),
        30 => fixed("idle timeout parameter is not positive or larger than allowed limit", Plain),
        31 => fixed("receive timeout value is incorrect or not in range", Errno),
        32 => fixed("client receive timeout is valid only in receiving mode", Errno),
        33 => fixed("send timeout value is incorrect or not in range", Errno),
        34 => fixed("cannot transfer file using UDP", Plain),
        35 => fixed("cannot access authorized users file", Plain),
        36 => fixed(
            "control connection Keepalive period should be larger than the full retry period (interval * count)",
            Errno,
        ),
        37 => fixed(
            "client's requested duration exceeds the server's maximum permitted limit",
            Plain,
        ),
        38 => fixed("invalid unit value or suffix", Plain),
        39 => fixed("this OS does not support --skip-rx-copy", Errno),
        40 => fixed(
            "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])",
            Plain,
        ),
        100 => fixed("unable to create a new test", Errno),
        101 => fixed("test initialization failed", Errno),
        102 => fixed("unable to start listener for connections", Errno),
        103 => fixed(
            "unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.",
            Errno,
        ),
        104 => fixed("unable to accept connection from client", Errno),
        105 => fixed("unable to send cookie to server", Errno),
        106 => fixed("unable to receive cookie at server", Errno),
        107 => fixed("unable to write to the control socket", Errno),
        108 => fixed("unable to read from the control socket", Errno),
        109 => fixed("control socket has closed unexpectedly", Plain),
        110 => fixed(
            "received an unknown control message (ensure other side is iperf3 and not iperf)",
            Plain,
        ),
        111 => fixed(
            "unable to send control message - port may not be available, the other side may have stopped running, etc.",
            Errno,
        ),
        112 => fixed(
            "unable to receive control message - port may not be available, the other side may have stopped running, etc.",
            Errno,
        ),
        113 => fixed("unable to send parameters to server", Errno),
        114 => fixed("unable to receive parameters from client", Errno),
        115 => fixed("unable to package results", Errno),
        116 => fixed("unable to send results", Errno),
        117 => fixed("unable to receive results", Errno),
        118 => fixed("select failed", Errno),
        119 => fixed("the client has terminated", Plain),
        120 => fixed("the server has terminated", Plain),
        121 => fixed("the server is busy running a test. try again later", Plain),
        122 => fixed("unable to set TCP/SCTP NODELAY", Errno),
        123 => fixed("unable to set TCP/SCTP MSS", Errno),
        124 => fixed("unable to set socket buffer size", Errno),
        125 => fixed("unable to set IP TOS", Errno),
        126 => fixed("unable to set IPv6 traffic class", Errno),
        127 => fixed("unable to set IPv6 flow label", Plain),
        128 => fixed("unable to reuse address on socket", Errno),
        129 => fixed("unable to set socket to non-blocking", Errno),
        130 => fixed("unable to set socket window size", Errno),
        131 => fixed("protocol does not exist", Plain),
        132 => fixed("unable to set CPU affinity", Errno),
        133 => fixed("unable to become a daemon", Errno),
        134 => fixed(
            "unable to set TCP_CONGESTION: Supplied congestion control algorithm not supported on this host",
            Plain,
        ),
        135 => fixed("unable to write PID file", Errno),
        136 => fixed("Unable to set/reset IPV6_V6ONLY", Errno),
        137 => fixed("unable to set SCTP_DISABLE_FRAGMENTS", Errno),
        138 => fixed("unable to set SCTP_INIT num of SCTP streams", Errno),
        140 => fixed("unable to set socket pacing", Errno),
        141 => fixed("socket buffer size not set correctly", Plain),
        142 => fixed("test authorization failed", Plain),
        143 => fixed("Unable to bind-to-device (check perror, maybe permissions?)", Plain),
        144 => fixed("idle timeout for receiving data", Plain),
        145 => fixed("unable to set IP Do-Not-Fragment flag", Plain),
        146 => fixed(
            "<ip>%<dev> is not supported as system does not support bind to device",
            Plain,
        ),
        147 => fixed(
            "host device name (ip%<dev>) is supported (and required) only for IPv6 link-local address",
            Plain,
        ),
        148 => fixed("unable to set TCP USER_TIMEOUT", Errno),
        150 => fixed("unable to create thread", Errno),
        151 => fixed("unable to cancel thread", Errno),
        152 => fixed("unable to join thread", Errno),
        153 => fixed("unable to create thread attributes", Errno),
        154 => fixed("unable to destroy thread attributes", Plain),
        155 => fixed("unable to set socket keepalive (SO_KEEPALIVE) option", Errno),
        156 => fixed(
            "unable to set socket keepalive TCP period (TCP_KEEPIDLE) option",
            Errno,
        ),
        157 => fixed(
            "unable to set/get socket keepalive TCP retry interval (TCP_KEEPINTVL) option",
            Errno,
        ),
        158 => fixed(
            "unable to set/get socket keepalive TCP number of retries (TCP_KEEPCNT) option",
            Errno,
        ),
        159 => fixed("unable to change mask of blocked signals", Plain),
        160 => fixed("server test duration expired", Errno),
        200 => fixed("unable to create a new stream", Errno),
        201 => fixed("unable to initialize stream", Errno),
        202 => fixed("unable to start stream listener", Errno),
        203 => fixed("unable to connect stream", Errno),
        204 => fixed("unable to accept stream connection", Errno),
        205 => fixed("unable to write to stream socket", Errno),
        206 => fixed("unable to read from stream socket", Errno),
        207 => fixed("stream socket has closed unexpectedly", Plain),
        208 => fixed("stream has an invalid id", Plain),
        300 => fixed("unable to create new timer", Errno),
        301 => fixed("unable to update timer", Errno),
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
