//! What the drivers hand to the report: raw measured figures, no presentation.
//!
//! Drivers fill these from counters, socket samples and the peer's results; the
//! report turns them into iperf3's start/intervals/end model and then into text or
//! JSON. Everything iperf3-specific about how figures are combined (which duration a
//! row uses, what a server leaves at zero) lives in the report, not in the drivers.

use std::net::SocketAddr;

/// Which end of the test this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The `-c` side.
    Client,
    /// The `-s` side.
    Server,
}

/// Transport of the data streams: the protocol's own type. SCTP streams are
/// reported as TCP's, without TCP_INFO; [`Protocol::name`] is the name iperf3
/// prints and puts in `test_start.protocol`.
pub use rperf3_proto::Protocol;

/// Test parameters as in effect, known at TEST_START (JSON `start.test_start`).
#[derive(Debug, Clone, PartialEq)]
pub struct TestInfo {
    /// This process's side.
    pub side: Side,
    /// Transport.
    pub protocol: Protocol,
    /// Streams per direction (`-P`).
    pub num_streams: u32,
    /// Block or datagram size in use.
    pub blksize: u32,
    /// `-O` seconds.
    pub omit: u32,
    /// `-t` seconds (0 in byte/block mode).
    pub duration: u32,
    /// `-n` (0 if unset).
    pub bytes: u64,
    /// `-k` (0 if unset).
    pub blocks: u64,
    /// `-R`.
    pub reverse: bool,
    /// `--bidir`.
    pub bidir: bool,
    /// TOS byte.
    pub tos: u32,
    /// Target bit/s per stream, 0 = unlimited.
    pub target_bitrate: u64,
    /// `--fq-rate` bit/s, 0 if unset.
    pub fq_rate: u64,
    /// `-i` seconds, 0 = no interval reports.
    pub interval: f64,
    /// UDP GSO in effect.
    pub gso: bool,
    /// UDP GRO in effect.
    pub gro: bool,
}

/// One data stream, as set up.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamInfo {
    /// Local file descriptor: iperf3 prints it as the stream's `[ ID]`.
    pub socket: i32,
    /// Protocol stream id (1, 3, 4, 5, ...), used to match the peer's results.
    pub id: u32,
    /// Whether this process sends on the stream.
    pub sender: bool,
    /// Local address of the data connection.
    pub local: SocketAddr,
    /// Remote address of the data connection.
    pub remote: SocketAddr,
}

/// How the TCP MSS line of `start` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MssInfo {
    /// `tcp_mss_default`: the control connection's MSS (client) or 0 (server).
    Default(u32),
    /// `tcp_mss`: the MSS asked for with `-M`.
    Set(u32),
}

/// Everything in JSON `start` besides `connected` and `test_start`.
#[derive(Debug, Clone, PartialEq)]
pub struct StartInfo {
    /// `"iperf 3.21"`-style version string.
    pub version: String,
    /// uname line.
    pub system_info: String,
    /// Wall-clock Unix time in milliseconds when the control connection was set up.
    pub timestamp_millis: u64,
    /// Client: the `-c` argument as typed and the port.
    pub connecting_to: Option<(String, u16)>,
    /// Server: the client's address and control-connection port.
    pub accepted_connection: Option<SocketAddr>,
    /// The 36-character cookie.
    pub cookie: String,
    /// TCP tests only.
    pub tcp_mss: Option<MssInfo>,
    /// `-w` value, 0 = default.
    pub sock_bufsize: u64,
    /// SO_SNDBUF read back.
    pub sndbuf_actual: u64,
    /// SO_RCVBUF read back.
    pub rcvbuf_actual: u64,
}

/// A local TCP sender's tcp_info sample at the end of an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpSample {
    /// Retransmits during this interval.
    pub retransmits: u64,
    /// Congestion window in bytes.
    pub snd_cwnd: u64,
    /// Send window in bytes.
    pub snd_wnd: u64,
    /// Smoothed RTT, microseconds.
    pub rtt: u64,
    /// RTT variance, microseconds.
    pub rttvar: u64,
    /// Path MTU in bytes.
    pub pmtu: u64,
    /// Reordering events seen so far (-1 unknown).
    pub reorder: i64,
}

/// A UDP receiver's statistics for one interval.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpRecvSample {
    /// Current smoothed jitter, seconds.
    pub jitter: f64,
    /// Change of the lost counter in this interval (may be negative).
    pub lost: i64,
    /// Change of the highest sequence number in this interval.
    pub packets: i64,
    /// Out-of-order datagrams in this interval.
    pub out_of_order: u64,
}

/// Protocol- and direction-specific part of an interval sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SampleExtra {
    /// TCP receiver, or TCP sender without tcp_info.
    None,
    /// Local TCP sender with tcp_info.
    TcpSender(TcpSample),
    /// Local UDP sender: datagrams sent in the interval.
    UdpSender {
        /// Datagrams sent.
        packets: u64,
    },
    /// Local UDP receiver.
    UdpReceiver(UdpRecvSample),
}

/// One stream's figures for one reporting interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamSample {
    /// Seconds from the stream's (post-omit) start to the interval start.
    /// Negative when the interval began before the omit-period reset (the
    /// first interval after `-O`): iperf3 prints the magnitude and still counts
    /// the whole interval in `seconds`.
    pub start: f64,
    /// Seconds from the stream's (post-omit) start to the interval end.
    pub end: f64,
    /// Bytes moved in the interval.
    pub bytes: u64,
    /// Whether the interval falls in the `-O` period.
    pub omitted: bool,
    /// Protocol-specific figures.
    pub extra: SampleExtra,
}

/// One interval: a sample per stream, in stream order.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalInput {
    /// Same order and length as the streams in [`StreamInfo`] order.
    pub streams: Vec<StreamSample>,
    /// `--latency`: the interval's round trips and delays (boxed: `-J` keeps every
    /// interval, and most tests have none).
    pub latency: Option<Box<rperf3_latency::Figures>>,
    /// `--bounceback`: the interval's transactions.
    pub bounceback: Option<Box<BouncebackFigures>>,
}

/// `--bounceback`: the transactions of one span (an interval, or the test).
#[derive(Debug, Clone, PartialEq)]
pub struct BouncebackFigures {
    /// Transactions completed (client) or requests answered (server).
    pub count: u64,
    /// `count` over the span's seconds.
    pub tps: f64,
    /// The client's round trips, from the latency core; `None` on the server,
    /// which times nothing.
    pub rtt: Option<rperf3_latency::Summary>,
    /// `--bounceback-load`: the working load's bits per second, up and down
    /// (what the peer acknowledged, what arrived).
    pub load_bps: Option<(f64, f64)>,
}

/// A local TCP sender's totals from tcp_info.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpTotals {
    /// Retransmits after the omit period.
    pub retransmits: u64,
    /// Last reordering count (-1 unknown).
    pub reorder: i64,
    /// Largest congestion window seen, bytes.
    pub max_snd_cwnd: u64,
    /// Largest send window seen, bytes.
    pub max_snd_wnd: u64,
    /// Largest RTT sample, microseconds.
    pub max_rtt: u64,
    /// Smallest RTT sample, microseconds.
    pub min_rtt: u64,
    /// Integer mean of the RTT samples, microseconds.
    pub mean_rtt: u64,
}

/// UDP totals of one stream, this side's view.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpTotals {
    /// Sender: datagrams sent; receiver: highest sequence number seen.
    pub packets: u64,
    /// Packet count at the end of the omit period.
    pub omitted_packets: u64,
    /// Receiver: lost datagrams (whole test, omit included).
    pub lost: i64,
    /// Receiver: lost during the omit period.
    pub omitted_lost: i64,
    /// Receiver: out-of-order datagrams (whole test, omit included).
    pub out_of_order: u64,
    /// Receiver: out-of-order datagrams counted during the omit period.
    pub omitted_out_of_order: u64,
    /// Receiver: final smoothed jitter, seconds.
    pub jitter: f64,
}

/// One stream's local totals at the end of the test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamFinal {
    /// Bytes sent or received after the omit period.
    pub bytes: u64,
    /// Seconds from the stream's (post-omit) start to its last sample.
    pub duration: f64,
    /// Local TCP sender with tcp_info.
    pub tcp: Option<TcpTotals>,
    /// UDP streams.
    pub udp: Option<UdpTotals>,
}

/// CPU use over the test, percent of one core.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cpu {
    /// User plus system.
    pub total: f64,
    /// User.
    pub user: f64,
    /// System.
    pub system: f64,
}

/// The peer's figures for one stream, from the results exchange.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PeerStream {
    /// Stream id.
    pub id: u32,
    /// Bytes the peer sent or received.
    pub bytes: u64,
    /// Peer sender's retransmits, -1 if none.
    pub retransmits: i64,
    /// Receiver jitter, seconds.
    pub jitter: f64,
    /// Receiver's lost count.
    pub errors: i64,
    /// Lost during omit, if the peer sent it.
    pub omitted_errors: Option<i64>,
    /// Packet count.
    pub packets: u64,
    /// Omitted packet count, if the peer sent it.
    pub omitted_packets: Option<u64>,
    /// `end_time - start_time`, if sent.
    pub duration: Option<f64>,
}

/// The peer's results document, decoded.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PeerSummary {
    /// Peer CPU.
    pub cpu: Cpu,
    /// -1 pure receiver, 1 TCP sender with retransmit info, 0 otherwise.
    pub sender_has_retransmits: i64,
    /// Peer's congestion algorithm, if sent.
    pub congestion: Option<String>,
    /// Per stream, any order (matched by id).
    pub streams: Vec<PeerStream>,
}

/// Everything known at the end of the test.
#[derive(Debug, Clone, PartialEq)]
pub struct FinalInput {
    /// Same order as the streams.
    pub streams: Vec<StreamFinal>,
    /// This process's CPU.
    pub cpu: Cpu,
    /// This side's congestion algorithm (TCP), if known.
    pub congestion: Option<String>,
    /// Whether this side is a TCP sender with tcp_info retransmit counters.
    pub has_retransmits: bool,
    /// The peer's results: `None` on a server (its report is built before the exchange).
    pub peer: Option<PeerSummary>,
    /// `-F`: the file this side sent or stored.
    pub diskfile: Option<DiskFileFacts>,
    /// `--latency`: the whole test's round trips and delays.
    pub latency: Option<LatencyFinal>,
    /// `--bounceback`: the whole test's transactions.
    pub bounceback: Option<BouncebackFigures>,
}

/// The test's latency at the end (`--latency`).
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyFinal {
    /// The figures of the whole test.
    pub figures: rperf3_latency::Figures,
    /// The server took part (an rperf3 server: probe connections, its own streams'
    /// round trips, one-way delays). `false`: only what the client measures alone
    /// (its own TCP streams' round trips and connect times), against a stock server.
    pub with_server: bool,
    /// Why the data's one-way delays are missing or short though the client
    /// offered to time them (an older rperf3 server; its last delays late).
    pub data_note: Option<String>,
}

/// The `-F` file at the end of the test.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskFileFacts {
    /// The name as given.
    pub name: String,
    /// Its size now (a stored file has grown to what arrived).
    pub size: u64,
}
