//! What an iperf 2 run reports, as records the iperf 2 drivers emit and the
//! iperf 2 formatters (text, `-e`, CSV) print. Drivers hand over raw figures;
//! every derived figure (rates, loss percentages, NetPwr, units) is computed by
//! the formatters, in one place.
//!
//! How the printer reads the events (what a driver must send):
//! - `Connected` comes before a stream's rows, and each stream ends with its
//!   `Final`. Column titles print once while any stream is live and again for
//!   the first stream after all have ended (a server's later clients), as in
//!   iperf 2.
//! - Sums are `Tag2::Sum(n)`: printed `[SUM]`, or `[SUM-n]` under `[SUM-cnt]`
//!   titles with `-e`, and with `--sum-only` except on a TCP client (2.2.1's
//!   choice). `Sent` for a sum prints `[SUM-n] Sent ...`.
//! - `UdpRecv2::total` is received + lost; PPS and `Rx` are `total - lost`
//!   over the row's span. A UDP client's `ServerReport` rows are `UdpRecv`.
//! - CSV records name the client first on both sides: a client's `addrs` are
//!   (local, peer) as given, a server's are swapped for printing. A UDP
//!   client's `Final` prints 2.2.1's "no receiver figures" record.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime};

/// Which side prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side2 {
    /// `-c`.
    Client,
    /// `-s`.
    Server,
}

/// Transport of a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto2 {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// How the formatters print (from `-e`, `-f`, `-y C`, `-x`, `--hide-ips`,
/// `--sum-only`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Layout2 {
    /// `-e`.
    pub enhanced: bool,
    /// `-y C`.
    pub csv: bool,
    /// `-f` letter; `None` = adaptive bits.
    pub format: Option<char>,
    /// `--hide-ips`.
    pub hide_ips: bool,
    /// `--sum-only`.
    pub sum_only: bool,
    /// `-x C`: no connection lines.
    pub no_connection: bool,
    /// `-x D`: no data lines.
    pub no_data: bool,
    /// `-x M`: no multicast lines.
    pub no_multicast: bool,
    /// `-x S`: no settings blocks.
    pub no_settings: bool,
    /// `-x V`: no server report.
    pub no_server_report: bool,
    /// The local zone's offset east of UTC, seconds, for the dates of the
    /// connection lines and the CSV stamps (0 = UTC, as with `--utc`).
    pub utc_offset_secs: i32,
    /// The local zone's abbreviation printed after dates (`None` = `UTC`).
    pub tz_name: Option<String>,
}

/// The settings block between dashes ("Server listening on TCP port 5001" or
/// "Client connecting to host, UDP port 5001" and the lines after it).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings2 {
    /// Listener or connector block. A `-d`/`-r` client prints a listener block
    /// first; a `-d`/`-r` server prints a connector block for its connection back.
    pub side: Side2,
    /// TCP or UDP.
    pub proto: Proto2,
    /// The host connected to (client block), as given.
    pub host: Option<String>,
    /// The port listened on or connected to.
    pub port: u16,
    /// The process id (shown with `-e`).
    pub pid: u32,
    /// Client: parallel flows (shown with `-e`).
    pub flows: u32,
    /// Read or write length (`-l` or the default).
    pub len: u32,
    /// UDP client: inter-packet gap target in microseconds.
    pub ipg_us: Option<f64>,
    /// The socket buffer size the kernel reports, and whether it was asked for (`-w`).
    pub window: u64,
    /// `-w` was given (otherwise "(default)").
    pub window_requested: bool,
    /// The `-w` value asked for, bytes: when the kernel's size differs, iperf 2
    /// adds "(WARNING: requested ...)".
    pub requested_window: Option<u64>,
    /// The congestion control in force (TCP, shown with `-e`).
    pub congestion: Option<String>,
    /// The `-Z` algorithm asked for (client: "set to X using Y").
    pub congestion_asked: Option<String>,
    /// The TOS byte (shown with `-e`).
    pub tos: u8,
    /// The byte came from `--dscp`, which 2.2.1 does not count as set
    /// ("TOS defaults to 0x20").
    pub tos_by_dscp: bool,
    /// `--connect-only`: a client that only connects ("TCP three-way-
    /// handshake (3WHS) only" instead of its window).
    pub connect_only: bool,
    /// TCP_NODELAY (shown with `-e`: "Nagle on/off").
    pub nodelay: bool,
    /// `-m` (or a client's `-M`): the socket's MSS.
    pub mss: Option<Mss2>,
    /// Multicast: the group joined (server) and the SSM source.
    pub multicast: Option<Multicast2>,
    /// Multicast client: the TTL.
    pub ttl: Option<u8>,
    /// Direction suffixes of a client block (`-R`, `--full-duplex`, trip-times).
    pub mode_note: Option<String>,
    /// `--trip-times` (a TCP client's `-e` block warns about send-side bloat).
    pub trip_times: bool,
    /// A bounceback client: its request, reply and schedule lines.
    pub bounceback: Option<BbSettings2>,
    /// A server with `--histograms` (its block says so).
    pub histograms: bool,
    /// A UDP server with `--jitter-histograms`: the bin width, µs (its block
    /// says so).
    pub jitter_bin_us: Option<u32>,
    /// An `--isochronous` client: its frame schedule line.
    pub isoch: Option<IsochSettings2>,
    /// `--histograms[=width,bins]`: the bins a TCP client's write timer or a
    /// server's receive histograms use (shown in their settings lines).
    pub hist_bins: HistBins2,
}

/// The MSS line of a settings block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mss2 {
    /// Bytes.
    pub bytes: u32,
    /// Asked for with `-M` ("MSS req size ... (per TCP_MAXSEG)").
    pub requested: bool,
}

/// The bins of iperf 2's latency histograms (`--histograms=width,bins`):
/// 100 µs wide, 100,000 of them by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistBins2 {
    /// Bin width, nanoseconds.
    pub bin_ns: u64,
    /// Bins; samples beyond the last one count as `obu` (overflow).
    pub bins: u32,
}

impl Default for HistBins2 {
    fn default() -> Self {
        Self {
            bin_ns: 100_000,
            bins: 100_000,
        }
    }
}

/// What an `--isochronous` client sends: frames a second, the mean rate and
/// its deviation (bits per second), the gap between a frame's datagrams.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IsochSettings2 {
    /// Frames per second.
    pub fps: f64,
    /// Mean rate, bits per second.
    pub mean_bps: f64,
    /// Standard deviation of the rate, bits per second.
    pub stdev_bps: f64,
    /// Gap between a frame's datagrams, milliseconds.
    pub ipg_ms: f64,
}

/// Frames of an `--isochronous` sender's row (`isoch:tx/miss/slip`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Isoch2 {
    /// Frames sent.
    pub frames: u64,
    /// Frame slots skipped.
    pub missed: u64,
    /// Times slots were skipped.
    pub slips: u64,
}

/// What a bounceback client asks for (`--bounceback*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BbSettings2 {
    /// Request size, bytes.
    pub request: u32,
    /// Reply size, bytes.
    pub reply: u32,
    /// Server hold, microseconds.
    pub hold_us: u32,
    /// The server is asked for TCP_QUICKACK.
    pub quickack: bool,
    /// Requests per period.
    pub count: u32,
    /// Seconds between bursts of requests; 0 = back to back.
    pub period: f64,
}

/// A multicast join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multicast2 {
    /// The group.
    pub group: String,
    /// The SSM source (`-H`), if any.
    pub source: Option<String>,
}

/// How a report line is tagged: `[  1]`, `[ *1]` (the other direction of `-R`,
/// `--full-duplex`, `-d`), `[SUM]`, `[SUM-2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag2 {
    /// One stream, by transfer id.
    Id(u32),
    /// One stream of the reverse direction (`[ *1]`).
    ReverseId(u32),
    /// The sum of `n` streams.
    Sum(u32),
    /// With `-e`, both directions of full-duplex stream `n` together
    /// (`[FD1]`, plain columns).
    FullDuplex(u32),
}

/// Facts of a TCP connection shown on its connection line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpConnInfo2 {
    /// Initial congestion window, packets.
    pub icwnd: u32,
    /// MSS in bytes.
    pub mss: u32,
    /// Initial RTT, microseconds.
    pub irtt_us: u32,
}

/// A connection line ("[  1] local A port P connected with B port Q ...").
#[derive(Debug, Clone, PartialEq)]
pub struct Connection2 {
    /// The line's tag.
    pub tag: Tag2,
    /// Our address.
    pub local: SocketAddr,
    /// The device the socket is bound to or routed through (`%lo` with `-e`).
    pub device: Option<String>,
    /// The peer's address.
    pub peer: SocketAddr,
    /// `(reverse)`, `(full-duplex)`, `(trip-times)`, `(bb ...)` suffixes, in order.
    pub notes: Vec<String>,
    /// The peer's version (server with `-e`: "(peer 2.2.1-rc)").
    pub peer_version: Option<String>,
    /// TCP facts (`icwnd/mss/irtt`).
    pub tcp: Option<TcpConnInfo2>,
    /// Client: connect time (`ct=`).
    pub connect_time: Option<Duration>,
    /// `--connect-only`: the connect time and date are shown without `-e`
    /// too (the date to the second).
    pub connect_only: bool,
    /// When the connection was made (shown with `-e`).
    pub at: SystemTime,
}

/// Extra figures of a TCP sender row (`-e`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpSend2 {
    /// Writes.
    pub writes: u64,
    /// Failed writes.
    pub write_errors: u64,
    /// Retransmits.
    pub retries: u64,
    /// Bytes in flight (2.2.1's `InF`).
    pub inflight_bytes: u64,
    /// Packets in flight.
    pub inflight_pkts: u32,
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Congestion window, packets.
    pub cwnd_pkts: u32,
    /// Smoothed RTT, microseconds.
    pub rtt_us: u32,
    /// RTT variance, microseconds.
    pub rttvar_us: u32,
    /// `--isochronous`: the row's frames (the `isoch:tx/miss/slip` column
    /// replaces the in-flight one).
    pub isoch: Option<Isoch2>,
    /// `--histograms`: how long the row's writes took (the `write-times`
    /// column); the header's write is not timed.
    pub write_times: Option<TcpLatency2>,
}

/// Extra figures of a TCP receiver row (`-e`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpRecv2 {
    /// Reads.
    pub reads: u64,
    /// Read-size histogram: eight bins of `len / 8` bytes.
    pub bins: [u64; 8],
    /// With `--trip-times`: the one-way latency of the sender's writes (the
    /// `-e` row then shows latency, `(cnt/size)`, `inP` and NetPwr).
    pub latency: Option<TcpLatency2>,
    /// The sender's `--isochronous` frames: with latency, 2.2.1 leaves the
    /// `inP` column out.
    pub frames: bool,
}

/// One-way latency of a TCP receiver's writes (`--trip-times`), nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpLatency2 {
    /// Writes whose latency was measured.
    pub count: u64,
    /// Mean.
    pub mean_ns: u64,
    /// Minimum.
    pub min_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// Standard deviation.
    pub stdev_ns: u64,
}

impl TcpLatency2 {
    /// The latency core's figures of `h`.
    pub fn of(h: &rperf3_latency::Histogram) -> Self {
        Self {
            count: h.count(),
            mean_ns: h.mean_ns().round() as u64,
            min_ns: h.min_ns(),
            max_ns: h.max_ns(),
            stdev_ns: h.stdev_ns().round() as u64,
        }
    }
}

/// Extra figures of a UDP sender row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdpSend2 {
    /// Datagrams written.
    pub writes: u64,
    /// Failed writes.
    pub write_errors: u64,
    /// Writes that timed out.
    pub timeouts: u64,
    /// `--isochronous`: the row's frames (2.2.1 then shows `Write/Err` and
    /// the `isoch:tx/miss/slip` column).
    pub isoch: Option<Isoch2>,
    /// What the PPS column counts where that is not the writes: a `-d`
    /// client's `[SUM]` rates both directions' datagrams.
    pub pps_datagrams: Option<u64>,
}

/// One-way latency of a UDP receiver row (`-e` with trip-times or synced clocks).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Latency2 {
    /// Mean, seconds.
    pub mean: f64,
    /// Minimum, seconds.
    pub min: f64,
    /// Maximum, seconds.
    pub max: f64,
    /// Standard deviation, seconds.
    pub stdev: f64,
}

/// Figures of a UDP receiver row (and of the server report a client prints).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpRecv2 {
    /// Jitter, seconds.
    pub jitter: f64,
    /// Datagrams lost.
    pub lost: u64,
    /// Datagrams expected (received + lost).
    pub total: u64,
    /// Datagrams out of order.
    pub out_of_order: u64,
    /// Reads.
    pub reads: u64,
    /// Reads that timed out.
    pub timeouts: u64,
    /// Truncated datagrams.
    pub truncated: u64,
    /// Latency, when known.
    pub latency: Option<Latency2>,
    /// The test runs with `--trip-times` (a server learns it from the client's
    /// header): the server's `-e` row adds `Rx/inP` and names `Read/Timeo/Trunc`.
    pub trip_times: bool,
}

/// A bounceback client's row: its round trips (from the latency core), the
/// socket's TCP figures and the bytes each way. `Row2::bytes` is both ways.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bb2 {
    /// Round trips completed.
    pub count: u64,
    /// Mean round trip, nanoseconds.
    pub mean_ns: f64,
    /// Shortest.
    pub min_ns: u64,
    /// Longest.
    pub max_ns: u64,
    /// Standard deviation.
    pub stdev_ns: f64,
    /// Retransmits.
    pub retries: u64,
    /// TCP figures (none in a final row, which prints dashes).
    pub tcp: Option<TcpSend2>,
    /// Request bytes written.
    pub tx_bytes: u64,
    /// Reply bytes read.
    pub rx_bytes: u64,
}

/// What kind of row, with its extra figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RowKind2 {
    /// A bounceback client.
    Bounceback(Bb2),
    /// A TCP sender.
    TcpSend(TcpSend2),
    /// A TCP receiver.
    TcpRecv(TcpRecv2),
    /// A UDP sender.
    UdpSend(UdpSend2),
    /// A UDP receiver.
    UdpRecv(UdpRecv2),
    /// A UDP `--full-duplex` test's two directions together (`[FDn]`, `[SUM]`).
    UdpDuplex(UdpDuplex2),
}

/// Both directions of a UDP `--full-duplex` flow: their bytes are the row's,
/// their datagrams (sent one way, received the other) and rate are these.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpDuplex2 {
    /// Datagrams sent plus datagrams received.
    pub datagrams: u64,
    /// Those datagrams over the longer direction's time.
    pub pps: f64,
}

/// One report row: an interval, a stream's total, or a sum.
#[derive(Debug, Clone, PartialEq)]
pub struct Row2 {
    /// The line's tag.
    pub tag: Tag2,
    /// The stream's addresses (CSV rows name them): local, peer.
    pub addrs: Option<(SocketAddr, SocketAddr)>,
    /// Seconds since the stream started.
    pub start: f64,
    /// Seconds since the stream started.
    pub end: f64,
    /// Bytes moved in `start..end`.
    pub bytes: u64,
    /// Kind and extra figures.
    pub kind: RowKind2,
    /// Wall-clock time of the row (CSV stamps).
    pub at: SystemTime,
}

/// Everything an iperf 2 run reports, in the order it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum Event2 {
    /// A settings block.
    Settings(Settings2),
    /// A connection line.
    Connected(Connection2),
    /// An interval row.
    Interval(Row2),
    /// A stream's or a sum's final row.
    Final(Row2),
    /// UDP client: "Sent N datagrams".
    Sent {
        /// The stream.
        tag: Tag2,
        /// Datagrams sent.
        datagrams: u64,
    },
    /// UDP client: the server report for one stream.
    ServerReport(Row2),
    /// A finished report line (`--connect-only`'s `[ CT]` line), on stdout
    /// with the rows, not in CSV.
    Line(String),
    /// `--txstart-time`: the client waits for its start time ("Client
    /// traffic to start in N seconds at ...").
    TxStart {
        /// The stream.
        tag: Tag2,
        /// When traffic starts.
        start: SystemTime,
        /// Now.
        now: SystemTime,
    },
    /// A latency histogram line (`BB8(f)-PDF: bin(w=100us):cnt(N)=...`).
    Histogram(Hist2),
    /// A warning or error line (iperf 2's words), printed as is.
    Message(String),
}

/// A latency histogram as iperf 2 prints it: samples in fixed-width bins
/// (bin `k` holds `(k-1)·w ..< k·w`), with the bins where 5%, 95% and 99.7%
/// of the samples are reached. The buckets are the latency core's.
#[derive(Debug, Clone, PartialEq)]
pub struct Hist2 {
    /// The line's tag.
    pub tag: Tag2,
    /// Seconds since the stream started.
    pub start: f64,
    /// Seconds since the stream started.
    pub end: f64,
    /// The histogram's name (`BB8(f)`, `T8(f)`).
    pub name: String,
    /// The samples in bins, as the latency core counted them.
    pub bins: rperf3_latency::Binned,
    /// A receiver's histogram (`--histograms`): one space after `sec`, and
    /// the largest sample (ns) with the wall-clock time it arrived.
    pub max_at: Option<(u64, SystemTime)>,
}
