//! The typed configuration the drivers run from.
//!
//! The binary's command-line layer turns argv into this; nothing below the binary
//! ever sees argv. Every field is already validated: drivers trust it.

use std::path::PathBuf;
use std::time::Duration;

/// What the process does.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// `-c host`: run one test against a server.
    Client(ClientConfig),
    /// `-s`: serve tests.
    Server(ServerConfig),
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Client or server, with the role's own settings.
    pub role: Role,
    /// Settings both roles share.
    pub common: CommonConfig,
    /// How results are shown.
    pub output: OutputConfig,
    /// Daemon and pid file.
    pub process: ProcessConfig,
}

/// Address family restriction (`-4`, `-6`): the one the socket layer takes.
pub use rperf3_sys::net::Family;

/// Settings shared by client and server.
#[derive(Debug, Clone, PartialEq)]
pub struct CommonConfig {
    /// `-p` (default 5201).
    pub port: u16,
    /// `-B host`: local address to bind.
    pub bind: Option<String>,
    /// `-4` / `-6`.
    pub family: Family,
    /// `-i` seconds; `None` for `-i 0` (no interval reports). Default 1 s.
    pub interval: Option<Duration>,
    /// `--rcv-timeout` (default 120 s): idle receive limit.
    pub rcv_timeout: Duration,
    /// `-d[=level]`: debug output level, 0 = off.
    pub debug: u8,
    /// `--snd-timeout` ms: TCP_USER_TIMEOUT on data streams, 0 = the system's.
    pub snd_timeout_ms: u32,
    /// `--cntl-ka[=idle/intvl/cnt]`: keepalive on the control connection (0 = the
    /// system's value for that part).
    pub cntl_ka: Option<[u32; 3]>,
    /// `--bind-dev`: SO_BINDTODEVICE for every socket (before any `%dev`).
    pub bind_dev: Option<String>,
    /// `-F`: the file to send, or to store what arrives in.
    pub file: Option<String>,
    /// `-X`: local addresses of SCTP endpoints (client: its associations;
    /// server: its SCTP listener).
    pub xbind: Vec<String>,
}

/// Output options.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OutputConfig {
    /// `-J`
    pub json: bool,
    /// `--json-stream`
    pub json_stream: bool,
    /// `--json-stream-full-output`
    pub json_stream_full_output: bool,
    /// `-V`
    pub verbose: bool,
    /// `-f`: the rate unit letter (`k m g t K M G T`); `None` = adaptive bits.
    pub format: Option<char>,
    /// `--logfile`
    pub logfile: Option<PathBuf>,
    /// `--forceflush`
    pub forceflush: bool,
    /// `--timestamps[=fmt]`: strftime format put before each text line (default "%c ").
    pub timestamps: Option<String>,
}

/// Server-only settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// `-1`: serve one test, then exit.
    pub one_off: bool,
    /// `--max-tests`: tests run at once (iperf3: 1).
    pub max_tests: usize,
    /// `--queue`: clients that may wait for a slot (iperf3: 0, refused as busy).
    pub queue: usize,
    /// `--server-max-duration` seconds: longer tests (and `-t 0`) get error 37.
    pub max_duration: Option<u32>,
    /// `--server-bitrate-limit`: tests above it get error 27.
    pub bitrate_limit: Option<RateLimit>,
    /// `--idle-timeout`: a one-off server without a client for this long exits
    /// (iperf3 3.21 restarts an idle server; rperf3's has nothing to reset).
    pub idle_timeout: Option<Duration>,
    /// `--metrics`: serve Prometheus metrics on this address.
    pub metrics: Option<std::net::SocketAddr>,
    /// `--rsa-private-key-path` and `--authorized-users-path`: clients must
    /// authenticate.
    pub auth: Option<ServerAuthConfig>,
    /// `--rpm-http`: serve the RPM protocol over HTTP/2 beside the iperf3 port.
    pub rpm_http: Option<RpmHttpConfig>,
}

/// `--rpm-http` with `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpmHttpConfig {
    /// Where to serve.
    pub addr: std::net::SocketAddr,
    /// The certificate chain and its key (PEM); `None`: self-signed at start.
    pub cert: Option<(PathBuf, PathBuf)>,
}

/// `--rpm-url` and `--insecure`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpmUrlConfig {
    /// The server's config URL (`https://host[:port]/path`).
    pub url: String,
    /// Skip the certificate checks.
    pub insecure: bool,
}

/// The server's authentication settings, as given on the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerAuthConfig {
    /// PEM private key (PKCS#1 or PKCS#8, not encrypted).
    pub private_key_path: PathBuf,
    /// The users file, re-read for every test.
    pub users_path: PathBuf,
    /// `--time-skew-threshold` seconds (iperf3: 10).
    pub skew_threshold: u32,
}

/// The client's authentication settings, as given on the command line (the
/// password comes from the environment or the terminal, not from here).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientAuthConfig {
    /// `--username`.
    pub username: String,
    /// `--rsa-public-key-path`: PEM public key (SubjectPublicKeyInfo or PKCS#1).
    pub public_key_path: PathBuf,
    /// `--use-pkcs1-padding`: PKCS#1 v1.5 instead of OAEP, for servers of
    /// iperf3 3.16 and older.
    pub pkcs1: bool,
}

/// `--server-bitrate-limit rate[/secs]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// The limit for all streams of a test together, both directions.
    pub bits_per_second: u64,
    /// The rate is averaged over this window (iperf3: 5 s).
    pub window: Duration,
}

/// iperf3's default averaging window for `--server-bitrate-limit`.
pub const DEFAULT_RATE_WINDOW: f64 = 5.0;

/// What the process does around its work, whatever the role.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcessConfig {
    /// `-I file`: the process id, written at start and removed at exit.
    pub pidfile: Option<PathBuf>,
    /// `-D`: detach from the terminal and serve in the background.
    pub daemon: bool,
    /// `-A n`: the CPU this process runs on.
    pub affinity: Option<u32>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            one_off: false,
            max_tests: 1,
            queue: 0,
            max_duration: None,
            bitrate_limit: None,
            idle_timeout: None,
            metrics: None,
            auth: None,
            rpm_http: None,
        }
    }
}

/// How the client decides the test is over (`-t`, `-n`, `-k`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EndCondition {
    /// `-t` seconds (default 10).
    Time(u32),
    /// `-n` bytes, total over all sending streams.
    Bytes(u64),
    /// `-k` blocks, total over all sending streams.
    Blocks(u64),
}

/// The direction of test data (`-R`, `--bidir`) and the transport (`-u`,
/// `--sctp`) are the protocol's own types.
pub use rperf3_proto::{Direction, Protocol};

/// Client-only settings: what the test is.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientConfig {
    /// `-c host` as typed (may carry `%dev`, kept for display).
    pub host: String,
    /// TCP, UDP or SCTP.
    pub protocol: Protocol,
    /// `-t` / `-n` / `-k`.
    pub end: EndCondition,
    /// `-O` seconds omitted at the start.
    pub omit: u32,
    /// `-l`; `None` = protocol default (TCP 128 KiB; UDP from the control MSS).
    pub length: Option<u32>,
    /// `-P` streams per direction (1..=128).
    pub parallel: u32,
    /// `-R` / `--bidir`.
    pub direction: Direction,
    /// `-b` bits per second per stream; `None` = protocol default (TCP 0, UDP 1 Mibit/s).
    pub bitrate: Option<u64>,
    /// `-b rate/N`: packets per burst.
    pub burst: Option<u32>,
    /// `-T` title put before every text line and into JSON.
    pub title: Option<String>,
    /// `--extra-data`
    pub extra_data: Option<String>,
    /// `--get-server-output`
    pub get_server_output: bool,
    /// `--connect-timeout` for the control connection.
    pub connect_timeout: Option<Duration>,
    /// `--udp-counters-64bit`
    pub udp_counters_64bit: bool,
    /// `--repeating-payload`
    pub repeating_payload: bool,
    /// `--dont-fragment`
    pub dont_fragment: bool,
    /// `-w` socket buffer bytes.
    pub window: Option<u32>,
    /// `--gsro`
    pub gsro: bool,
    /// `-A n,m`: the CPU the server runs this test on (`m`).
    pub server_affinity: Option<u32>,
    /// `-Z`: zero-copy sends. A TCP sender chooses sendfile or plain writes
    /// from its block size, this flag, the number of sending streams and the
    /// congestion control (`streams::sends_with_sendfile`); the flag also goes
    /// to the server, as iperf3 sends it.
    pub zerocopy: bool,
    /// `--skip-rx-copy`: receivers on both ends discard data with MSG_TRUNC.
    pub skip_rx_copy: bool,
    /// `--latency[=rate]`: measure round trips, with this many foreign probes a
    /// second against an rperf3 server.
    pub latency: Option<u32>,
    /// `-C`: TCP congestion control algorithm for the data streams.
    pub congestion: Option<String>,
    /// `-M`: TCP_MAXSEG for the data streams (iperf3 passes any nonzero value on).
    pub mss: Option<i32>,
    /// `-N`: TCP_NODELAY on the data streams.
    pub nodelay: bool,
    /// `-S` / `--dscp`: the IP TOS byte of the data streams, `None` if unset or 0.
    pub tos: Option<u8>,
    /// `--fq-rate` bits/s (0: none): SO_MAX_PACING_RATE on the data streams.
    pub fq_rate: u64,
    /// `--pacing-timer` µs (sent; iperf3 3.21 servers no longer use it).
    pub pacing_timer: Option<i32>,
    /// `-L`: IPv6 flow label of the TCP data streams.
    pub flowlabel: Option<u32>,
    /// `-m`: MPTCP data streams.
    pub mptcp: bool,
    /// `--nstreams`: outbound streams of each SCTP association (SCTP_INITMSG).
    pub nstreams: Option<u16>,
    /// `--cport`: local port of the first data stream; the others follow it.
    pub cport: Option<u16>,
    /// `-F` without `-t`/`-n`/`-k`: the file's size becomes the byte limit.
    pub file_ends_test: bool,
    /// `--username` and `--rsa-public-key-path`.
    pub auth: Option<ClientAuthConfig>,
    /// `--rpm`: run the responsiveness test instead of a throughput test.
    pub rpm: Option<RpmConfig>,
    /// `--rpm-url`: run it against a standard RPM server over HTTP/2 instead
    /// (with `rpm` holding its stages).
    pub rpm_url: Option<RpmUrlConfig>,
    /// `--bounceback` and its options: the TCP streams carry request/response
    /// transactions (an rperf3 server only); sent as the parameters' offer.
    pub bounceback: Option<rperf3_proto::bounceback::BouncebackOffer>,
}

/// `--rpm`, `--rpm-stages` and `--rpm-time`: which stages of the responsiveness
/// test run (always in this order) and how long each may take.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RpmConfig {
    /// The server sends.
    pub downlink: bool,
    /// The client sends.
    pub uplink: bool,
    /// Both at once.
    pub bidirectional: bool,
    /// Each stage's budget (default 15 s).
    pub stage_budget: Duration,
}
