//! What a plot shows of one run: time series, already in plot units, with names.
//!
//! Extraction fills this from JSON and rendering draws it, so neither knows the
//! other's details: a renderer never looks at iperf3 keys.

/// One value per interval: `(time in seconds, value)`, the time being the middle
/// of the interval (its figure is an average over the interval).
pub type Points = Vec<(f64, f64)>;

/// The transport a run used; it decides the lower panels: for UDP loss and
/// jitter below the throughput, otherwise retransmits, congestion window and RTT.
pub use rperf3_proto::Protocol;

/// One data stream, or the sum of a direction, across the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    /// Legend text: `stream 1`, `sum`, `stream 2 (receive)`.
    pub name: String,
    /// Whether the document's host sends on it.
    pub sends: bool,
    /// Bits per second.
    pub throughput: Points,
    /// TCP retransmits per interval (sender's figure).
    pub retransmits: Points,
    /// TCP congestion window in bytes (sender's figure).
    pub cwnd: Points,
    /// TCP smoothed RTT in milliseconds (sender's figure).
    pub rtt_ms: Points,
    /// UDP datagrams lost in the interval, percent (receiver's figure).
    pub lost_percent: Points,
    /// UDP jitter in milliseconds (receiver's figure).
    pub jitter_ms: Points,
}

/// One test run as read from a document.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Names the run in legends and titles (usually the file name).
    pub label: String,
    /// TCP, UDP or SCTP.
    pub protocol: Protocol,
    /// A one-line description: protocol, streams, direction, side, peer, date.
    pub description: String,
    /// Each stream, in the order the document lists them.
    pub streams: Vec<Series>,
    /// The sum of each direction: one, or two with `--bidir`.
    pub sums: Vec<Series>,
    /// The document's own `"error"`, when the run failed after some intervals.
    pub error: Option<String>,
    /// The last interval's end, in seconds.
    pub end_secs: f64,
    /// `--latency` round trips, when the document has `intervals[].latency`.
    pub latency: Option<Latency>,
    /// The one-way delays of the test's own data (`--latency` between rperf3
    /// ends), when an interval has `latency.data_one_way`.
    pub data_one_way: Option<DataOneWay>,
    /// `--bounceback` round trips, when an interval's `bounceback` has them
    /// (the client's document: the server times nothing).
    pub bounceback: Option<Percentiles>,
}

/// Round trips under load per interval (rperf3's `--latency`), in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Latency {
    /// Median of the interval's loaded round trips.
    pub p50_ms: Points,
    /// 99th percentile of the interval's loaded round trips.
    pub p99_ms: Points,
    /// Median idle round trip of the test (`end.latency.idle`), the reference.
    pub idle_p50_ms: Option<f64>,
}

/// A median and a 99th percentile per interval, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Percentiles {
    /// Median of the interval's samples.
    pub p50_ms: Points,
    /// 99th percentile of the interval's samples.
    pub p99_ms: Points,
}

/// The one-way delays of the test's data per interval, each direction apart.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataOneWay {
    /// Client to server.
    pub up: Percentiles,
    /// Server to client.
    pub down: Percentiles,
}
