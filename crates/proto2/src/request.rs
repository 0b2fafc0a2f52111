//! What a client asked for, read from the first bytes of a TCP connection or the
//! first datagram of a UDP flow.
//!
//! iperf 2 has no parameter exchange: the test header is the request. This
//! module turns a decoded header into a typed [`TestRequest`] (transport, end
//! condition, direction mode, streams, rate, lengths, trip-times...) and applies
//! the checks a server makes before serving: connect-back ports, stamps too far
//! from its clock, and limits against absurd counts.

use std::time::Duration;

use crate::base::BaseHeader;
use crate::error::HeaderError;
use crate::fields::{Amount, IsochSettings, Timeval, Version};
use crate::flags::{BaseFlags, LowerFlags, UpperFlags};
use crate::tcp_header::{tcp_header_len, Decoded, TcpTestHeader};
use crate::udp_datagram::DatagramHeader;
use crate::udp_header::{SmallTripTimes, UdpTestHeader};

/// A trip-times start stamp further than this from the server's clock is
/// ignored, and trip-times with it.
pub const TRIP_TIMES_MAX_SKEW_S: i64 = 600;
/// A `--txstart-time` epoch further than this from the server's clock is ignored.
pub const TXSTART_MAX_SKEW_S: i64 = 3600;

/// Transport of the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transport {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// When the sending side stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TestEnd {
    /// `-t`, in 10 ms steps.
    Time(Duration),
    /// `-n` (below 2^31).
    Bytes(u64),
}

/// Who sends, and whether the server opens a connection back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The client sends.
    Normal,
    /// `-R`: the server sends on the same connection.
    Reverse,
    /// `--full-duplex`: both send on the same connection.
    FullDuplex,
    /// `-d`: the server also connects back to the client's `port` at once.
    Dual {
        /// Where to connect back.
        port: u16,
    },
    /// `-r`: the server connects back to `port` after this test ends.
    Tradeoff {
        /// Where to connect back.
        port: u16,
    },
}

/// A test request, typed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TestRequest {
    /// TCP or UDP.
    pub transport: Transport,
    /// When the sender stops (the server uses it only for directions it sends).
    pub end: TestEnd,
    /// Direction mode.
    pub mode: Mode,
    /// `-P` (at least 1).
    pub streams: u32,
    /// 2.2.1 `--sync-transfer-id`: the client's transfer id.
    pub transfer_id: Option<u16>,
    /// `-b` as sent: bits per second, except that a normal UDP `-b Npps` test
    /// sends the raw packet count (the server does not pace then). 0 = none.
    pub rate: u64,
    /// The rate counts packets per second (UNITS_PPS; no client sets it).
    pub rate_is_pps: bool,
    /// `-l` if the client gave it.
    pub buf_len: Option<u32>,
    /// The window/bandwidth word (clients send 0).
    pub win_band: u32,
    /// `-S`: the TOS byte to apply to the server's socket.
    pub tos: u8,
    /// The client's version, if it sent one.
    pub peer_version: Option<Version>,
    /// The server must answer with a header ack (TCP).
    pub wants_ack: bool,
    /// `-X`: the client waits for the ack.
    pub peer_detect: bool,
    /// `--trip-times`, and its start stamp was usable.
    pub trip_times: bool,
    /// The trip-times start stamp (TCP: report start; UDP: first send time).
    pub trip_start: Option<Timeval>,
    /// `--txstart-time`: the epoch to start at.
    pub txstart: Option<Timeval>,
    /// A start stamp was dropped for lying too far from the server's clock.
    pub skewed_start: bool,
    /// `--isochronous`.
    pub isochronous: bool,
    /// The isochronous settings, if sent.
    pub isoch_settings: Option<IsochSettings>,
    /// UDP: no FIN handshake and no report at the end.
    pub no_udp_fin: bool,
    /// UDP: 64-bit sequence numbers.
    pub seq64: bool,
    /// UDP: the small trip-times header (short datagrams).
    pub small_trip_times: bool,
    /// `--fq-rate` in bytes per second.
    pub fq_rate: Option<u64>,
    /// `--tcp-write-prefetch` bytes.
    pub write_prefetch: Option<u32>,
    /// 2.2.1: microseconds this stream waited at the start barrier.
    pub barrier_us: Option<u32>,
    /// TCP quick ack.
    pub quickack: bool,
    /// TCP `--burst-period` (the same bit means L4S over UDP).
    pub periodic_burst: bool,
    /// UDP L4S (2.2.1).
    pub l4s: bool,
    /// 2.2.1 `-Z`: the congestion-control name (invalid UTF-8 replaced).
    pub cca: Option<String>,
    /// `--permit-key`.
    pub permit_key: Option<Vec<u8>>,
}

/// Bounds a server puts on what a header may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Most parallel streams.
    pub max_streams: u32,
    /// Largest TCP read/write length.
    pub max_tcp_buf_len: u32,
    /// Largest UDP datagram length.
    pub max_udp_buf_len: u32,
}

impl Default for RequestLimits {
    /// 256 streams, 16 MiB TCP buffers, 65535-byte datagrams.
    fn default() -> Self {
        Self {
            max_streams: 256,
            max_tcp_buf_len: 16 << 20,
            max_udp_buf_len: 65_535,
        }
    }
}

/// What the first bytes of a TCP connection are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpStart {
    /// A test header.
    Test(Box<TestRequest>),
    /// A bounceback request (its own layout; nothing consumed).
    Bounceback,
    /// No header: a compat (`-C`) client or a legacy connect-back, test data
    /// from the first byte (nothing consumed).
    Compat,
}

/// What the first datagram of a UDP flow is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UdpStart {
    /// A test header (full or small trip-times).
    Test(Box<TestRequest>),
    /// No header: compat data after the datagram header.
    Compat,
}

/// Reads the start of a TCP connection: `NeedMore` until the announced header
/// (and key) is in; `len` is the header's length, which counts as test data.
/// At end of stream, turn `NeedMore { need }` into [`HeaderError::Truncated`].
pub fn classify_tcp(
    buf: &[u8],
    now: Timeval,
    limits: &RequestLimits,
) -> Result<Decoded<TcpStart>, HeaderError> {
    let Some(word) = buf.get(..4) else {
        return Ok(Decoded::NeedMore { need: 4 });
    };
    let flags = BaseFlags(u32::from_be_bytes([word[0], word[1], word[2], word[3]]));
    if flags.has(BaseFlags::BOUNCEBACK) {
        return Ok(Decoded::Done {
            value: TcpStart::Bounceback,
            len: 0,
        });
    }
    if flags.0 & (BaseFlags::EXTEND | BaseFlags::VERSION1) == 0 || tcp_header_len(flags) == 0 {
        return Ok(Decoded::Done {
            value: TcpStart::Compat,
            len: 0,
        });
    }
    let (h, len) = match TcpTestHeader::decode(buf)? {
        Decoded::NeedMore { need } => return Ok(Decoded::NeedMore { need }),
        Decoded::Done { value, len } => (value, len),
    };
    let mut r = from_base(&h.base, Transport::Tcp, limits)?;
    let timed = h.base.upper.has(UpperFlags::TRIPTIME);
    let start = h.start.map(|s| s.start);
    apply_start(&mut r, timed, start, h.base.upper, now);
    r.fq_rate = h
        .start
        .filter(|_| h.base.upper.has(UpperFlags::FQRATESET))
        .map(|s| s.fq_rate);
    r.isoch_settings = h.isoch;
    r.cca = h.cca.map(|c| String::from_utf8_lossy(&c).into_owned());
    r.permit_key = h.permit_key;
    r.wants_ack = crate::ack::ack_expected(h.base.flags);
    Ok(Decoded::Done {
        value: TcpStart::Test(Box::new(r)),
        len,
    })
}

/// Reads the first datagram of a UDP flow. A negative sequence number (a late
/// FIN) cannot start a test.
pub fn classify_udp(
    datagram: &[u8],
    now: Timeval,
    limits: &RequestLimits,
) -> Result<UdpStart, HeaderError> {
    let small = SmallTripTimes::decode(datagram);
    let seq64 = datagram.len() >= 20
        && small.is_none()
        && BaseFlags(u32::from_be_bytes([
            datagram[16],
            datagram[17],
            datagram[18],
            datagram[19],
        ]))
        .has(BaseFlags::SEQNO64B);
    let Some(dh) = DatagramHeader::decode(datagram, seq64) else {
        return Err(HeaderError::Truncated {
            have: datagram.len(),
            need: 16,
        });
    };
    if dh.is_fin() {
        return Err(HeaderError::StaleFin(dh.seq));
    }
    if let Some(s) = small {
        let mut r = from_base(&BaseHeader::default(), Transport::Udp, limits)?;
        r.small_trip_times = true;
        r.seq64 = false;
        let tx = (s.txstart != Timeval::default()).then_some(s.txstart);
        apply_start(&mut r, true, Some(dh.sent), UpperFlags::default(), now);
        if let Some(t) = tx {
            apply_start(
                &mut r,
                false,
                Some(t),
                UpperFlags(UpperFlags::EPOCH_START),
                now,
            );
        }
        return Ok(UdpStart::Test(Box::new(r)));
    }
    let flags = match datagram.get(16..20) {
        Some(w) => BaseFlags(u32::from_be_bytes([w[0], w[1], w[2], w[3]])),
        None => return Ok(UdpStart::Compat),
    };
    if flags.0 & (BaseFlags::EXTEND | BaseFlags::VERSION1) == 0 {
        return Ok(UdpStart::Compat);
    }
    let h = UdpTestHeader::decode(datagram)?;
    let mut r = from_base(&h.base, Transport::Udp, limits)?;
    r.seq64 = h.base.flags.has(BaseFlags::SEQNO64B);
    r.no_udp_fin = h.base.upper.has(UpperFlags::NOUDPFIN);
    r.l4s = h.base.upper.has(UpperFlags::UDPL4S);
    let timed = h.base.upper.has(UpperFlags::TRIPTIME);
    apply_start(&mut r, timed, h.start, h.base.upper, now);
    r.fq_rate = h.fq_rate;
    r.isoch_settings = h.settings;
    Ok(UdpStart::Test(Box::new(r)))
}

/// The fields both transports read the same way, with the limit checks.
fn from_base(
    b: &BaseHeader,
    transport: Transport,
    limits: &RequestLimits,
) -> Result<TestRequest, HeaderError> {
    let f = b.flags;
    let sync_id = b.num_threads & 0x8000_0000 != 0;
    let (streams, transfer_id) = if sync_id {
        (
            b.num_threads & 0x000F_FFFF,
            Some(((b.num_threads >> 20) & 0x7FF) as u16),
        )
    } else {
        (b.num_threads, None)
    };
    let streams = streams.max(1);
    if streams > limits.max_streams {
        return Err(HeaderError::TooManyStreams {
            streams,
            max: limits.max_streams,
        });
    }
    let max_len = match transport {
        Transport::Tcp => limits.max_tcp_buf_len,
        Transport::Udp => limits.max_udp_buf_len,
    };
    if b.buf_len > max_len {
        return Err(HeaderError::BufLenTooLarge {
            len: b.buf_len,
            max: max_len,
        });
    }
    let extended = f.has(BaseFlags::EXTEND);
    let upper = if extended {
        b.upper
    } else {
        UpperFlags::default()
    };
    let mode = if f.is_legacy_dual() && !sync_id {
        let port = u16::try_from(b.port)
            .ok()
            .filter(|&p| p != 0)
            .ok_or(HeaderError::BadPort(b.port))?;
        if f.has(BaseFlags::RUN_NOW) {
            Mode::Dual { port }
        } else {
            Mode::Tradeoff { port }
        }
    } else if f.has(BaseFlags::VERSION2) {
        match (
            upper.has(UpperFlags::REVERSE),
            upper.has(UpperFlags::FULLDUPLEX),
        ) {
            (true, true) => return Err(HeaderError::ConflictingModes),
            (true, false) => Mode::Reverse,
            (false, true) => Mode::FullDuplex,
            (false, false) => Mode::Normal,
        }
    } else {
        Mode::Normal
    };
    let end = match b.amount {
        Amount::Ticks(_) => TestEnd::Time(b.amount.duration().unwrap_or_default()),
        Amount::Bytes(n) => TestEnd::Bytes(u64::from(n)),
    };
    Ok(TestRequest {
        transport,
        end,
        mode,
        streams,
        transfer_id,
        rate: b.rate,
        rate_is_pps: upper.has(UpperFlags::UNITS_PPS),
        buf_len: (b.buf_len != 0).then_some(b.buf_len),
        win_band: b.win_band,
        tos: if extended { b.tos as u8 } else { 0 },
        peer_version: (extended && !b.version.is_zero()).then_some(b.version),
        wants_ack: false,
        peer_detect: f.has(BaseFlags::PEERDETECT),
        trip_times: false,
        trip_start: None,
        txstart: None,
        skewed_start: false,
        isochronous: upper.has(UpperFlags::ISOCH),
        isoch_settings: None,
        no_udp_fin: false,
        seq64: false,
        small_trip_times: false,
        fq_rate: None,
        write_prefetch: upper
            .has(UpperFlags::WRITEPREFETCH)
            .then_some(b.write_prefetch),
        barrier_us: (extended && b.lower.has(LowerFlags::BARRIER_TIME)).then_some(b.barrier_us),
        quickack: upper.has(UpperFlags::TCPQUICKACK),
        periodic_burst: transport == Transport::Tcp && upper.has(UpperFlags::PERIODICBURST),
        l4s: false,
        cca: None,
        permit_key: None,
    })
}

/// Takes a start stamp as trip-times start or txstart epoch, if it lies close
/// enough to the server's clock.
fn apply_start(
    r: &mut TestRequest,
    trip_times: bool,
    start: Option<Timeval>,
    upper: UpperFlags,
    now: Timeval,
) {
    if trip_times {
        match start.filter(|s| s.within(now, TRIP_TIMES_MAX_SKEW_S)) {
            Some(s) => {
                r.trip_times = true;
                r.trip_start = Some(s);
            }
            None => r.skewed_start = true,
        }
    }
    if upper.has(UpperFlags::EPOCH_START) {
        match start.filter(|s| s.within(now, TXSTART_MAX_SKEW_S)) {
            Some(s) => r.txstart = Some(s),
            None => r.skewed_start = true,
        }
    }
}
