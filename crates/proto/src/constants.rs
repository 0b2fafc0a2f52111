//! Numbers the protocol fixes: ports, sizes, limits and the timeouts iperf3 uses.
//!
//! They live in one place so that the parameter checks, the CLI validation and the
//! error texts (which quote several of them) cannot drift apart.

use std::time::Duration;

/// Default TCP (control and data) and UDP (data) port.
pub const DEFAULT_PORT: u16 = 5201;

/// Default block size for TCP (`-l`): 128 KiB.
pub const DEFAULT_TCP_BLKSIZE: u32 = 128 * 1024;
/// Default block size for SCTP.
pub const DEFAULT_SCTP_BLKSIZE: u32 = 64 * 1024;
/// UDP datagram size used when the control connection's MSS is unusable.
pub const DEFAULT_UDP_BLKSIZE: u32 = 1460;
/// Largest TCP/SCTP block (`-l`), and error 7's limit.
pub const MAX_BLOCK: u32 = 1024 * 1024;
/// Smallest UDP datagram: 32-bit time stamps plus a 64-bit sequence number.
pub const MIN_UDP_BLOCKSIZE: u32 = 4 + 4 + 8;
/// Largest UDP datagram: 65535 minus UDP (8) and IPv4 (20) headers.
pub const MAX_UDP_BLOCKSIZE: u32 = 65535 - 8 - 20;

/// Default UDP rate per stream in bit/s ("1 Mbit/s" as 1024 × 1024).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// Default test duration in seconds (`-t`).
pub const DEFAULT_DURATION: u32 = 10;
/// Longest test a server accepts (`time`), error 5's limit.
pub const MAX_TIME: u32 = 86400;
/// Most streams per direction (`-P`), error 6's limit.
pub const MAX_STREAMS: u32 = 128;
/// Longest omit period a server accepts (`omit`), error 12's limit.
pub const MAX_OMIT: u32 = 600;
/// Most packets per burst (`-b rate/N`), error 15's limit.
pub const MAX_BURST: u32 = 1000;
/// Largest `-M` value (3.21; 3.12 allowed 9216), error 10's limit.
pub const MAX_MSS: u32 = 32 * 1024 - 1;
/// Largest socket buffer (`-w`), error 8's limit: 512 MiB.
pub const MAX_TCP_BUFFER: u32 = 512 * 1024 * 1024;
/// Largest IP TOS byte, error 21's limit.
pub const MAX_TOS: u32 = 255;
/// Largest IPv6 flow label (20 bits).
pub const MAX_FLOWLABEL: u32 = 0xFFFFF;
/// Shortest report interval (`-i`) other than 0, error 9's lower limit.
pub const MIN_INTERVAL: f64 = 0.1;
/// Longest report interval (`-i`), error 9's upper limit.
pub const MAX_INTERVAL: f64 = 60.0;
/// Shortest `--rcv-timeout` in milliseconds, error 31's lower limit.
pub const MIN_RCV_TIMEOUT_MS: u32 = 100;
/// Highest CPU number `-A` takes, error 132's limit.
pub const MAX_AFFINITY_CPU: u32 = 1024;
/// Default `pacing_timer` in microseconds (sent by every client; unused by 3.21).
pub const DEFAULT_PACING_TIMER: u32 = 1000;
/// Default `gso_bf_size` / `gro_bf_size` a 3.21 client sends for UDP.
pub const DEFAULT_GSRO_BF_SIZE: u32 = MAX_UDP_BLOCKSIZE;

/// Largest parameters document a server reads (3.18+ servers enforce it).
pub const MAX_PARAMS_LEN: u32 = 8192;
/// Largest results document our server reads from a client. iperf3 has no limit; a
/// client's results hold only per-stream counters (about 250 bytes a stream, at most
/// 256 streams), so 1 MiB leaves a wide margin while a hostile length prefix cannot
/// make a session buffer more than that.
pub const MAX_CLIENT_RESULTS_LEN: u32 = 1024 * 1024;
/// Largest results document our client reads from a server. A server's results can
/// carry its whole JSON output (`--get-server-output`), so this is large. It stays
/// below `0x0B00_0000` so that a length prefix whose first byte is a state code the
/// server may send instead (SERVER_TERMINATE 0x0B, SERVER_ERROR 0xFE, ACCESS_DENIED
/// 0xFF) is recognised as that message (see [`crate::ClientMachine`]).
pub const MAX_SERVER_RESULTS_LEN: u32 = 0x0AFF_FFFF;

/// The `client_version` our client sends.
pub const CLIENT_VERSION: &str = "3.21";

/// How long a UDP client waits for the "6789" reply (error 206 after that).
pub const UDP_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default idle limit for a receiving side (`--rcv-timeout`), error 144.
pub const DEFAULT_RCV_TIMEOUT: Duration = Duration::from_secs(120);

/// rperf3's own state byte: the server will answer `--latency` probes (its probe
/// connections are welcome). Sent once, after the parameters and before
/// CREATE_STREAMS, only to a client whose parameters carried
/// [`LATENCY_PARAM_KEY`]; no iperf3 version defines 76 (`'L'`), and a stock client
/// never asks, so it never sees it.
pub const LATENCY_READY: u8 = 76;
/// The parameters key by which an rperf3 client asks for latency probes. Every
/// iperf3 version ignores keys it does not know.
pub const LATENCY_PARAM_KEY: &str = "rperf3_latency";
/// Version of the probe exchange this build speaks.
pub const LATENCY_VERSION: u32 = 1;
/// The cookie's 37th byte (NUL on data streams) on the test's dedicated probe
/// connection.
pub const MARKER_PROBE: u8 = b'P';
/// The cookie's 37th byte on a foreign probe (a new connection per probe).
pub const MARKER_FOREIGN: u8 = b'F';
/// Default foreign probes per second: a few hundred bytes each, far below 1% of
/// any path worth measuring.
pub const DEFAULT_PROBE_RATE: u32 = 10;
/// Most probes per second (the responsiveness method's MPS).
pub const MAX_PROBE_RATE: u32 = 100;
