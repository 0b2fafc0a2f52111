//! The typed configuration of the iperf 2 personality.
//!
//! The binary's iperf 2 command-line layer (`src/cli2`) turns argv into this; the
//! iperf 2 client and server run from it and never see argv. Values are already
//! validated and in the units the wire and the sockets take.

use std::time::Duration;

use rperf3_sys::net::Family;

/// `--isochronous` and `--ipg`, as the protocol crate schedules them.
pub use rperf3_proto2::IsochSpec;

/// `--histograms=width,bins`.
pub use rperf3_report::iperf2::model::HistBins2;

/// Default port of both roles, TCP and UDP.
pub const DEFAULT_PORT: u16 = 5001;
/// Default TCP read/write length (`-l`): 128 KiB.
pub const DEFAULT_TCP_LEN: u32 = 128 * 1024;
/// Default UDP datagram length over IPv4.
pub const DEFAULT_UDP_LEN_V4: u32 = 1470;
/// Default UDP datagram length over IPv6.
pub const DEFAULT_UDP_LEN_V6: u32 = 1450;
/// Default UDP rate: 1 Mbit/s in iperf 2's 1024-based mega.
pub const DEFAULT_UDP_RATE: u64 = 1_048_576;
/// Default test length (`-t`).
pub const DEFAULT_TIME: Duration = Duration::from_secs(10);
/// A client's `-t 0` (or negative): send until interrupted. A finite span
/// (about 136 years) so that `Instant + time` never overflows.
pub const TIME_FOREVER: Duration = Duration::from_secs(u32::MAX as u64);

/// What the process does.
#[derive(Debug, Clone, PartialEq)]
pub enum Role2 {
    /// `-c host`.
    Client(Client2),
    /// `-s`.
    Server(Server2),
}

/// The whole iperf 2 configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config2 {
    /// Client or server.
    pub role: Role2,
    /// Settings both roles share.
    pub common: Common2,
    /// How results are shown.
    pub output: Output2,
}

/// Transport (`-u`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport2 {
    /// TCP (the default).
    #[default]
    Tcp,
    /// `-u`.
    Udp,
}

/// A rate (`-b`): bits per second or packets per second (`pps` suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rate2 {
    /// Bits per second.
    Bits(u64),
    /// Packets (datagrams or writes) per second.
    Packets(u64),
}

/// Settings both roles share.
#[derive(Debug, Clone, PartialEq)]
pub struct Common2 {
    /// `-p` (default 5001).
    pub port: u16,
    /// `-u`.
    pub transport: Transport2,
    /// `-B host[:port][%dev]`: the address (a multicast group on a server means
    /// join it), already split.
    pub bind: Option<Bind2>,
    /// `-V` (V6) or `-4` (V4): the address family. As in iperf 2, an IPv6
    /// literal without `-V` leaves `Any` (it still resolves to IPv6, but the
    /// UDP default length stays the IPv4 one).
    pub family: Family,
    /// `-i` seconds; `None` = no interval reports. iperf 2 takes down to 5 ms.
    pub interval: Option<Duration>,
    /// `-l`: read/write length; `None` = the transport's default.
    pub len: Option<u32>,
    /// `-w`: socket buffer size.
    pub window: Option<u32>,
    /// `-M`: TCP_MAXSEG.
    pub mss: Option<u32>,
    /// `-N`: TCP_NODELAY.
    pub nodelay: bool,
    /// `-S` or `--dscp`: the TOS byte.
    pub tos: Option<u8>,
    /// The byte came from `--dscp` (its header line says "defaults to").
    pub tos_by_dscp: bool,
    /// `-Z`: congestion control.
    pub congestion: Option<String>,
    /// `-T`: multicast TTL (default 1).
    pub ttl: u8,
    /// `-t`: client: test length; server: how long to serve (`None` = forever).
    pub time: Option<Duration>,
    /// `-e`: enhanced reports.
    pub enhanced: bool,
    /// `-m`: print the MSS.
    pub print_mss: bool,
    /// `-z`: realtime scheduling asked for.
    pub realtime: bool,
    /// `--trip-times`.
    pub trip_times: bool,
    /// `--permit-key`. `Some("")`: `--permit-key` without a value (a server
    /// then makes a key up, as iperf 2; a client refuses it at parse time).
    pub permit_key: Option<String>,
    /// `--skip-rx-copy` (server reads with MSG_TRUNC).
    pub skip_rx_copy: bool,
    /// `--tcp-quickack`: TCP_QUICKACK before each read (and asked of the
    /// server by a client that sends).
    pub tcp_quickack: bool,
    /// `--histograms`: a receiver of `--trip-times` bursts prints their
    /// one-way delays in bins after each row; a TCP client times its writes.
    pub histograms: bool,
    /// `--histograms=width,bins`: the histograms' bins (100 µs × 100,000
    /// by default).
    pub hist_bins: HistBins2,
    /// `--jitter-histograms[=us]` (a UDP server): rows are followed by the
    /// differences of consecutive datagrams' transit times in bins this many
    /// µs wide.
    pub jitter_histograms: Option<u32>,
}

/// A bounceback client's requests (`--bounceback[=N]`, `--bounceback-*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounceback2 {
    /// Requests per period (`--bounceback=N`, 10 by default).
    pub count: u32,
    /// Seconds between the starts of bursts (`--bounceback-period`, 1 s by
    /// default); 0 = back to back.
    pub period: f64,
    /// Request bytes (`--bounceback-request`, 100 by default).
    pub request: u32,
    /// Reply bytes (`--bounceback-reply`, the request's size by default).
    pub reply: u32,
    /// How long the server holds each request, microseconds
    /// (`--bounceback-hold` milliseconds).
    pub hold_us: u32,
    /// Ask the server for TCP_QUICKACK (off with `--bounceback-no-quickack`).
    pub quickack: bool,
    /// `--bounceback-txdelay`: seconds the client waits after connecting
    /// before its first request (0: none).
    pub txdelay: f64,
}

/// `-B host[:port][%dev]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind2 {
    /// The host or address (a multicast group on a server).
    pub host: String,
    /// `:port` (client: the source port).
    pub port: Option<u16>,
    /// `%dev`: SO_BINDTODEVICE.
    pub device: Option<String>,
}

/// Client direction mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode2 {
    /// The client sends.
    #[default]
    Normal,
    /// `-R`.
    Reverse,
    /// `--full-duplex`.
    FullDuplex,
    /// `-d`: the server connects back at once.
    Dual,
    /// `-r`: the server connects back after the test.
    Tradeoff,
}

/// Where the client's data comes from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Input2 {
    /// Generated payload.
    #[default]
    Pattern,
    /// `-F name`.
    File(String),
    /// `-I`.
    Stdin,
}

/// When the client stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End2 {
    /// `-t` (default 10 s; [`TIME_FOREVER`] for `-t 0`).
    Time(Duration),
    /// `-n` bytes.
    Bytes(u64),
}

/// Client settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Client2 {
    /// `-c host`.
    pub host: String,
    /// `-t` / `-n`.
    pub end: End2,
    /// `-P` (at least 1).
    pub parallel: u32,
    /// `-b`; `None` = TCP unlimited, UDP 1 Mbit/s. `Bits(0)` (`-b 0`, or
    /// `-b abc`, which iperf 2 reads as 0) = unlimited, UDP included.
    pub rate: Option<Rate2>,
    /// `-d`, `-r`, `-R`, `--full-duplex`.
    pub mode: Mode2,
    /// `-L`: where `-d`/`-r` connections come back (default: `-p`'s port).
    pub listen_port: Option<u16>,
    /// `-C`: no test header (old servers).
    pub compat: bool,
    /// `-X`: wait for the server's header ack and its version.
    pub peer_detect: bool,
    /// `--no-udp-fin`.
    pub no_udp_fin: bool,
    /// `-F` / `-I`.
    pub input: Input2,
    /// `--sync-transfer-id`.
    pub sync_transfer_id: bool,
    /// `--txstart-time`: Unix epoch seconds to start at.
    pub txstart: Option<f64>,
    /// `--txdelay-time`: the wait between connecting and the first data (the
    /// test's clock starts after it).
    pub txdelay: Option<Duration>,
    /// `--connect-only[=n]`: connects and closes, timing each handshake;
    /// `Some(None)` without a count.
    pub connect_only: Option<Option<u32>>,
    /// `--incr-dstport`: stream i (from 0) goes to the port plus i.
    pub incr_dstport: bool,
    /// `--bounceback`: a request/reply test instead of a transfer.
    pub bounceback: Option<Bounceback2>,
    /// `--isochronous`: frames at a frame rate instead of paced datagrams
    /// (UDP) or a steady stream of writes (TCP).
    pub isoch: Option<IsochSpec>,
}

/// Server settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Server2 {
    /// `-1`: one client at a time (then exit, as iperf 2).
    pub single_client: bool,
    /// `-P N`: stop after N clients.
    pub max_clients: Option<u32>,
    /// `-U`: single-threaded UDP.
    pub single_udp: bool,
    /// `-c host`: accept only that host.
    pub only_from: Option<String>,
    /// `-H source`: SSM source for a `-B group` join.
    pub ssm_source: Option<String>,
    /// `-D`.
    pub daemon: bool,
}

/// Report format letter (`-f`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format2 {
    /// Adaptive bits (default: the letter iperf 2 calls `a`).
    #[default]
    AdaptiveBits,
    /// Adaptive bytes (`A`).
    AdaptiveBytes,
    /// A fixed letter: `b k m g` (bits, 1000-based) or `B K M G` (bytes, 1024-based).
    Fixed(char),
}

/// Which report kinds `-x` excludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Exclude2 {
    /// `C`: connection lines.
    pub connection: bool,
    /// `D`: data (interval and total) lines.
    pub data: bool,
    /// `M`: multicast lines.
    pub multicast: bool,
    /// `S`: settings (the banner blocks).
    pub settings: bool,
    /// `V`: the server report on the client.
    pub server_report: bool,
}

/// How results are shown.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Output2 {
    /// `-f`.
    pub format: Format2,
    /// `-y C`.
    pub csv: bool,
    /// `-x`.
    pub exclude: Exclude2,
    /// `-o file`.
    pub file: Option<String>,
    /// `--hide-ips`.
    pub hide_ips: bool,
    /// `--sum-only`.
    pub sum_only: bool,
    /// `--utc`.
    pub utc: bool,
}

impl Common2 {
    /// The read/write length in force: `-l`, or the transport's default.
    pub fn len_or_default(&self, v6: bool) -> u32 {
        match (self.len, self.transport) {
            (Some(l), _) => l,
            (None, Transport2::Tcp) => DEFAULT_TCP_LEN,
            (None, Transport2::Udp) if v6 => DEFAULT_UDP_LEN_V6,
            (None, Transport2::Udp) => DEFAULT_UDP_LEN_V4,
        }
    }
}

impl Default for Common2 {
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            transport: Transport2::Tcp,
            bind: None,
            family: Family::Any,
            interval: None,
            len: None,
            window: None,
            mss: None,
            nodelay: false,
            tos: None,
            tos_by_dscp: false,
            congestion: None,
            ttl: 1,
            time: None,
            enhanced: false,
            print_mss: false,
            realtime: false,
            trip_times: false,
            permit_key: None,
            skip_rx_copy: false,
            tcp_quickack: false,
            histograms: false,
            hist_bins: HistBins2::default(),
            jitter_histograms: None,
        }
    }
}
