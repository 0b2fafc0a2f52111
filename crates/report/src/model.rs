//! The result model: what iperf3 reports, already combined, ready to format.
//!
//! The builders (`interval`, `end`) turn the drivers' raw figures into these
//! values, applying iperf3's rules (which duration a row uses, what a server
//! leaves at zero, how groups are summed). The JSON and text formatters only read
//! them, so both outputs always agree and neither computes anything.

use crate::input::{Cpu, LatencyFinal, Protocol, Side, TcpSample, TestInfo};

/// How the streams of a test split into report groups, derived from the
/// parameters. A group is the set of streams whose `sender` flag equals the
/// group's; non-bidir tests have one group holding every stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// This process's side.
    pub side: Side,
    /// Transport.
    pub protocol: Protocol,
    /// `--bidir`.
    pub bidir: bool,
    /// `-P`: streams per direction.
    pub num_streams: u32,
    /// Outside bidir mode: whether this side is the sender.
    pub local_sender: bool,
}

impl Layout {
    /// The layout of a test.
    pub fn new(side: Side, test: &TestInfo) -> Self {
        let local_sender = match side {
            Side::Client => !test.reverse,
            Side::Server => test.reverse,
        };
        Self {
            side,
            protocol: test.protocol,
            bidir: test.bidir,
            num_streams: test.num_streams,
            local_sender,
        }
    }

    /// The `sender` value of each group, in print order: a bidir client
    /// reports its sending streams first, a bidir server its receiving ones.
    pub fn groups(&self) -> Vec<bool> {
        match (self.bidir, self.side) {
            (true, Side::Client) => vec![true, false],
            (true, Side::Server) => vec![false, true],
            (false, _) => vec![self.local_sender],
        }
    }

    /// Whether a group's JSON sums carry the `_bidir_reverse` suffix: the
    /// server-to-client direction in bidir mode, seen from either side.
    pub fn is_bidir_reverse(&self, group_sender: bool) -> bool {
        self.bidir
            && match self.side {
                Side::Client => !group_sender,
                Side::Server => group_sender,
            }
    }

    /// The text role tag of a group in bidir mode (`[TX-C]`, `[RX-S]`, ...).
    pub fn role(&self, group_sender: bool) -> Option<&'static str> {
        if !self.bidir {
            return None;
        }
        Some(match (group_sender, self.side) {
            (true, Side::Client) => "[TX-C]",
            (false, Side::Client) => "[RX-C]",
            (true, Side::Server) => "[TX-S]",
            (false, Side::Server) => "[RX-S]",
        })
    }
}

/// Rounds seconds to whole microseconds, the resolution of iperf3's clock.
pub(crate) fn usec(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// One stream's row of one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalStream {
    /// Local file descriptor.
    pub socket: i32,
    /// Seconds from the stream start to the interval start.
    pub start: f64,
    /// Seconds from the stream start to the interval end.
    pub end: f64,
    /// Interval length, as the 32-bit float iperf3 keeps it.
    pub seconds: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// `bytes * 8 / seconds`, 0 when the interval is empty.
    pub bits_per_second: f64,
    /// In the `-O` period.
    pub omitted: bool,
    /// This side sends on the stream.
    pub sender: bool,
    /// Protocol-specific columns.
    pub extra: IntervalExtra,
}

/// Protocol-specific columns of an interval row.
#[derive(Debug, Clone, PartialEq)]
pub enum IntervalExtra {
    /// TCP receiver, or sender without tcp_info.
    None,
    /// TCP sender with tcp_info.
    Tcp(TcpSample),
    /// UDP sender.
    UdpSent {
        /// Datagrams sent.
        packets: u64,
    },
    /// UDP receiver.
    UdpReceived(UdpLoss),
}

/// The receiver's loss columns of a UDP row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UdpLoss {
    /// Jitter in milliseconds.
    pub jitter_ms: f64,
    /// Lost datagrams.
    pub lost_packets: i64,
    /// Datagrams expected.
    pub packets: i64,
    /// `100 * lost / packets`, 0 without packets.
    pub lost_percent: f64,
}

/// A group's total for one interval (`sum` / `sum_bidir_reverse`).
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalSum {
    /// From the first stream of the test.
    pub start: f64,
    /// From the first stream of the test.
    pub end: f64,
    /// From the first stream of the test.
    pub seconds: f64,
    /// Sum over the group.
    pub bytes: u64,
    /// `bytes * 8 / seconds`.
    pub bits_per_second: f64,
    /// Omit flag.
    pub omitted: bool,
    /// The group's sender flag.
    pub sender: bool,
    /// Protocol-specific columns.
    pub extra: SumExtra,
}

/// Protocol-specific columns of a sum row.
#[derive(Debug, Clone, PartialEq)]
pub enum SumExtra {
    /// TCP without retransmit information.
    None,
    /// TCP sending group with tcp_info.
    Retransmits(i64),
    /// UDP sending group.
    UdpSent {
        /// Datagrams sent by the group.
        packets: i64,
    },
    /// UDP receiving group (jitter is the mean over `-P`).
    UdpReceived(UdpLoss),
}

/// One report group of an interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalGroup {
    /// The group's sender flag.
    pub sender: bool,
    /// JSON name `sum_bidir_reverse` instead of `sum`.
    pub bidir_reverse: bool,
    /// Text role tag in bidir mode.
    pub role: Option<&'static str>,
    /// Rows, in stream order.
    pub streams: Vec<IntervalStream>,
    /// Total, absent when the test has no stream at all.
    pub sum: Option<IntervalSum>,
}

/// Everything reported for one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalReport {
    /// Groups in print order.
    pub groups: Vec<IntervalGroup>,
    /// `--latency`: the interval's round trips and delays.
    pub latency: Option<Box<rperf3_latency::Figures>>,
    /// `--bounceback`: the interval's transactions.
    pub bounceback: Option<Box<crate::input::BouncebackFigures>>,
}

/// Start, end and volume of one direction of a summary row.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Flow {
    /// `end` value.
    pub end: f64,
    /// `seconds` value (not always equal to `end`: iperf3 quirks).
    pub seconds: f64,
    /// Bytes.
    pub bytes: u64,
    /// Bits per second.
    pub bits_per_second: f64,
}

/// tcp_info totals shown when the sending side has retransmit information.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RetransEnd {
    /// Total retransmits (local count, or the peer's).
    pub retransmits: i64,
    /// Last reordering count of the local socket.
    pub reorder: i64,
    /// Largest congestion window of the local socket.
    pub max_snd_cwnd: u64,
    /// Largest send window of the local socket.
    pub max_snd_wnd: u64,
    /// Largest RTT of the local socket.
    pub max_rtt: u64,
    /// Smallest RTT of the local socket.
    pub min_rtt: u64,
    /// Mean RTT of the local socket.
    pub mean_rtt: u64,
}

/// UDP figures of one stream in the summary.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpEnd {
    /// Receiver jitter, ms.
    pub jitter_ms: f64,
    /// Lost after the omit period (JSON).
    pub lost_packets: i64,
    /// Packets after the omit period (JSON).
    pub packets: i64,
    /// Loss in percent of the sender's count (JSON).
    pub lost_percent: f64,
    /// Out-of-order datagrams seen locally after the omit period.
    pub out_of_order: i64,
    /// Text sender line: datagrams sent.
    pub sender_packets: i64,
    /// Text receiver line: datagrams expected by the receiver.
    pub receiver_packets: i64,
    /// Text receiver line: lost, `None` when the omitted loss is unknown.
    pub receiver_lost: Option<i64>,
    /// Text receiver line: loss percent.
    pub receiver_lost_percent: f64,
}

/// One stream in the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct EndStream {
    /// Local file descriptor.
    pub socket: i32,
    /// This side sends on the stream.
    pub local_sender: bool,
    /// Sending direction (TCP `sender` object; UDP `udp` object).
    pub sent: Flow,
    /// Receiving direction (TCP `receiver` object).
    pub received: Flow,
    /// tcp_info totals, when the group has retransmit information.
    pub retrans: Option<RetransEnd>,
    /// UDP figures.
    pub udp: Option<UdpEnd>,
    /// `-F` progress of this stream.
    pub diskfile: Option<DiskFileEnd>,
}

/// How much of the `-F` file a stream moved (iperf3's `diskfile` object).
#[derive(Debug, Clone, PartialEq)]
pub struct DiskFileEnd {
    /// Bytes sent on the stream.
    pub sent: u64,
    /// Bytes received on the stream.
    pub received: u64,
    /// The file's size.
    pub size: u64,
    /// `sent` as a whole percentage of `size` (truncated).
    pub percent_sent: u64,
    /// `received` as a whole percentage of `size` (truncated).
    pub percent_received: u64,
    /// The file name as given.
    pub filename: String,
}

/// UDP totals of a group.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct UdpSums {
    /// Legacy `sum`: receiver time, bytes sent, sent rate.
    pub sum: Flow,
    /// Mean jitter, ms.
    pub jitter_ms: f64,
    /// Lost datagrams.
    pub lost_packets: i64,
    /// Packets (sender counts preferred).
    pub packets: i64,
    /// `100 * lost / packets`.
    pub lost_percent: f64,
    /// Sender packet total.
    pub sender_packets: i64,
    /// Receiver packet total.
    pub receiver_packets: i64,
    /// Text `[SUM] ... receiver` rate.
    pub text_received_bits_per_second: f64,
}

/// One report group of the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct EndGroup {
    /// The group's sender flag.
    pub sender: bool,
    /// JSON names carry `_bidir_reverse`.
    pub bidir_reverse: bool,
    /// Text role tag in bidir mode.
    pub role: Option<&'static str>,
    /// Whether the group's sending side has retransmit information.
    pub has_retransmits: bool,
    /// Streams of the group.
    pub streams: Vec<EndStream>,
    /// `sum_sent`.
    pub sum_sent: Flow,
    /// `sum_sent.retransmits`, with retransmit information.
    pub sum_retransmits: Option<i64>,
    /// `sum_received`.
    pub sum_received: Flow,
    /// UDP totals.
    pub udp: Option<UdpSums>,
}

/// Everything in the final summary.
#[derive(Debug, Clone, PartialEq)]
pub struct EndReport {
    /// Test layout.
    pub layout: Layout,
    /// Groups in print order.
    pub groups: Vec<EndGroup>,
    /// This process's CPU.
    pub host_cpu: Cpu,
    /// The peer's CPU (zero on a server).
    pub remote_cpu: Cpu,
    /// Local congestion algorithm.
    pub local_congestion: Option<String>,
    /// Peer congestion algorithm.
    pub remote_congestion: Option<String>,
    /// Text summary header with a `Retr` column.
    pub retransmits_header: bool,
    /// `--latency`: the whole test's round trips and delays.
    pub latency: Option<LatencyFinal>,
    /// `--bounceback`: the whole test's transactions.
    pub bounceback: Option<crate::input::BouncebackFigures>,
}

impl EndReport {
    /// `(sender_tcp_congestion, receiver_tcp_congestion)` as iperf3 picks them for
    /// a group: the local algorithm is the sender's when the group sends.
    pub fn congestion_for(&self, group_sender: bool) -> (Option<&str>, Option<&str>) {
        let local = self.local_congestion.as_deref();
        let remote = self.remote_congestion.as_deref();
        if group_sender {
            (local, remote)
        } else {
            (remote, local)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_info(reverse: bool, bidir: bool) -> TestInfo {
        TestInfo {
            reverse,
            bidir,
            ..crate::testutil::test_info(Side::Client, Protocol::Tcp)
        }
    }

    #[test]
    fn groups_and_names_by_mode() {
        let c = Layout::new(Side::Client, &test_info(false, true));
        assert_eq!(c.groups(), vec![true, false]);
        assert!(!c.is_bidir_reverse(true) && c.is_bidir_reverse(false));
        assert_eq!(c.role(false), Some("[RX-C]"));
        let s = Layout::new(Side::Server, &test_info(false, true));
        assert_eq!(s.groups(), vec![false, true]);
        assert!(s.is_bidir_reverse(true) && !s.is_bidir_reverse(false));
        let r = Layout::new(Side::Client, &test_info(true, false));
        assert_eq!(r.groups(), vec![false]);
        assert_eq!(r.role(false), None);
        let sr = Layout::new(Side::Server, &test_info(true, false));
        assert_eq!(sr.groups(), vec![true]);
    }

    #[test]
    fn usec_is_idempotent() {
        let x = usec(1.001076123);
        assert_eq!(x, 1.001076);
        assert_eq!(usec(x), x);
    }
}
