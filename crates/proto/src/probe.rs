//! Frames on `--latency` probe connections (rperf3 to rperf3 only).
//!
//! A probe connection opens like a data stream, with the test's cookie whose 37th
//! byte is a marker instead of NUL ([`crate::MARKER_PROBE`],
//! [`crate::MARKER_FOREIGN`]). Then frames flow: the client's [`Frame::Request`]
//! carries a sequence number, its wall-clock send time and the sizes; the server's
//! [`Frame::Answer`] echoes them and adds its own wall-clock receive and send times,
//! so one round trip also gives the one-way delay each way. On the dedicated probe
//! connection the server may also push [`Frame::Sample`]: round trips it measured
//! itself (its sending TCP streams' TCP_INFO), which the client cannot see; and
//! the client sends the same frames the other way with what it measured, so the
//! server's metrics hold every kind. When the test's own data is timed (`"owd"`
//! in the latency parameters), the end that receives UDP data pushes
//! [`Frame::Delays`] on the dedicated connection: the one-way delays of the
//! datagrams since its last push, as an opaque body the latency core encodes.
//! The server says it times the data with a bodiless [`Frame::Delays`] before
//! anything else on the dedicated connection (a server that ignores `"owd"`
//! never sends one), and once the test is over and its streams are read to the
//! end it sends one frame marked [`Delays::last`], before EXCHANGE_RESULTS on
//! the control connection: the client reads up to it, so the end figures hold
//! every datagram the server counted.
//!
//! Every frame starts with the same 12 bytes: `"RP"`, a type byte, the version,
//! the frame's total length (u32, big endian, header included) and a sequence
//! number; a frame may be longer than its fields (padding to the requested size),
//! and the padding is skipped. Nothing here reads a socket or a clock.

use std::fmt;

/// First two bytes of every frame.
pub const PROBE_MAGIC: [u8; 2] = *b"RP";
/// The frame layout version.
pub const PROBE_VERSION: u8 = 1;
/// Bytes before a frame's fields.
pub const PROBE_HEADER_LEN: usize = 12;
/// Smallest request: header, send time, two sizes.
pub const REQUEST_MIN_LEN: u32 = PROBE_HEADER_LEN as u32 + 16;
/// Smallest answer: a request's fields and the server's two times.
pub const ANSWER_MIN_LEN: u32 = REQUEST_MIN_LEN + 16;
/// A sample frame's length.
pub const SAMPLE_LEN: u32 = PROBE_HEADER_LEN as u32 + 20;
/// Largest frame either side accepts: a hostile length cannot make a reader
/// buffer more.
pub const MAX_PROBE_FRAME: u32 = 64 * 1024;

const TYPE_REQUEST: u8 = b'Q';
const TYPE_ANSWER: u8 = b'A';
const TYPE_SAMPLE: u8 = b'S';
const TYPE_DELAYS: u8 = b'O';
/// Smallest delays frame: header, direction and three reserved bytes.
pub const DELAYS_MIN_LEN: u32 = PROBE_HEADER_LEN as u32 + 4;
/// Longest body of a delays frame.
pub const MAX_DELAYS_BODY: usize = MAX_PROBE_FRAME as usize - DELAYS_MIN_LEN as usize;

/// What a sample timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleKind {
    /// A round trip of a sending TCP stream (TCP_INFO), behind the data it has
    /// queued: a self probe.
    SelfLoaded,
    /// A round trip on the probe connection before the load.
    Idle,
    /// A foreign probe's handshake.
    ForeignConnect,
    /// A foreign probe's request and answer.
    ForeignRequest,
}

impl SampleKind {
    fn code(self) -> u8 {
        match self {
            Self::SelfLoaded => 1,
            Self::Idle => 2,
            Self::ForeignConnect => 3,
            Self::ForeignRequest => 4,
        }
    }

    fn from_code(c: u8) -> Option<Self> {
        match c {
            1 => Some(Self::SelfLoaded),
            2 => Some(Self::Idle),
            3 => Some(Self::ForeignConnect),
            4 => Some(Self::ForeignRequest),
            _ => None,
        }
    }
}

/// A client's probe request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Numbers the requests of one connection.
    pub seq: u32,
    /// The client's wall clock at sending, ns since the Unix epoch.
    pub client_send_ns: i64,
    /// This request's length on the wire (padded up to it).
    pub size: u32,
    /// The answer's length wanted on the wire.
    pub reply_size: u32,
}

/// The server's answer to a [`Request`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The request, echoed.
    pub request: Request,
    /// The server's wall clock when the request was read.
    pub server_recv_ns: i64,
    /// The server's wall clock when the answer was written.
    pub server_send_ns: i64,
}

/// A round trip one end measured and sends to the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Numbers the samples of one connection.
    pub seq: u32,
    /// What was timed.
    pub kind: SampleKind,
    /// The round trip, nanoseconds.
    pub rtt_ns: u64,
    /// The sender's wall clock when it took the sample.
    pub server_ns: i64,
}

/// One-way delays of the test's data, measured where it arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delays {
    /// Numbers the frames of one connection.
    pub seq: u32,
    /// The data went client to server (else server to client).
    pub up: bool,
    /// The test is over: nothing follows (the third byte after the header, 1;
    /// a reserved byte to readers that predate it).
    pub last: bool,
    /// The delays, as the latency core encodes them (at most [`MAX_DELAYS_BODY`]);
    /// empty in the frame that says the data is timed.
    pub body: Vec<u8>,
}

impl Delays {
    /// The frame that says the data is timed: first on the dedicated connection.
    pub fn agreed() -> Self {
        Self {
            seq: 0,
            up: true,
            last: false,
            body: Vec::new(),
        }
    }

    /// Whether this is the frame of [`Delays::agreed`] (no delays in it).
    pub fn is_agreement(&self) -> bool {
        self.body.is_empty() && !self.last
    }
}

/// One frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Client to server.
    Request(Request),
    /// Server to client.
    Answer(Answer),
    /// Either way on the dedicated probe connection, unasked.
    Sample(Sample),
    /// On the dedicated probe connection, unasked, from the end the data reached.
    Delays(Delays),
}

/// Why bytes are not a frame: the connection is closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeError {
    /// The first two bytes are not [`PROBE_MAGIC`].
    BadMagic([u8; 2]),
    /// A version this build does not speak.
    BadVersion(u8),
    /// An unknown frame type.
    UnknownType(u8),
    /// A length below the type's fields or above [`MAX_PROBE_FRAME`].
    BadLength(u32),
    /// A sample of an unknown kind.
    UnknownSample(u8),
}

impl fmt::Display for ProbeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic(m) => write!(f, "not a probe frame (starts {m:02x?})"),
            Self::BadVersion(v) => write!(f, "probe frame version {v} unknown"),
            Self::UnknownType(t) => write!(f, "probe frame type {t:#04x} unknown"),
            Self::BadLength(n) => write!(f, "probe frame length {n} out of range"),
            Self::UnknownSample(k) => write!(f, "probe sample kind {k} unknown"),
        }
    }
}

impl std::error::Error for ProbeError {}

impl Request {
    /// A request of at least [`REQUEST_MIN_LEN`] bytes; sizes are clamped to
    /// what a reader accepts.
    pub fn new(seq: u32, client_send_ns: i64, size: u32, reply_size: u32) -> Self {
        Self {
            seq,
            client_send_ns,
            size: size.clamp(REQUEST_MIN_LEN, MAX_PROBE_FRAME),
            reply_size: reply_size.clamp(ANSWER_MIN_LEN, MAX_PROBE_FRAME),
        }
    }

    /// The answer, read at `server_recv_ns` and written at `server_send_ns`.
    pub fn answer(&self, server_recv_ns: i64, server_send_ns: i64) -> Answer {
        Answer {
            request: *self,
            server_recv_ns,
            server_send_ns,
        }
    }
}

impl Frame {
    /// The bytes on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let (ty, seq, len) = match self {
            Self::Request(r) => (TYPE_REQUEST, r.seq, r.size.max(REQUEST_MIN_LEN)),
            Self::Answer(a) => (
                TYPE_ANSWER,
                a.request.seq,
                a.request.reply_size.max(ANSWER_MIN_LEN),
            ),
            Self::Sample(s) => (TYPE_SAMPLE, s.seq, SAMPLE_LEN),
            Self::Delays(d) => (
                TYPE_DELAYS,
                d.seq,
                DELAYS_MIN_LEN + d.body.len().min(MAX_DELAYS_BODY) as u32,
            ),
        };
        let mut b = Vec::with_capacity(len as usize);
        b.extend_from_slice(&PROBE_MAGIC);
        b.push(ty);
        b.push(PROBE_VERSION);
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(&seq.to_be_bytes());
        match self {
            Self::Request(r) => put_request(&mut b, r),
            Self::Answer(a) => {
                put_request(&mut b, &a.request);
                b.extend_from_slice(&a.server_recv_ns.to_be_bytes());
                b.extend_from_slice(&a.server_send_ns.to_be_bytes());
            }
            Self::Sample(s) => {
                b.extend_from_slice(&[s.kind.code(), 0, 0, 0]);
                b.extend_from_slice(&s.rtt_ns.to_be_bytes());
                b.extend_from_slice(&s.server_ns.to_be_bytes());
            }
            Self::Delays(d) => {
                b.extend_from_slice(&[u8::from(d.up), u8::from(d.last), 0, 0]);
                b.extend_from_slice(&d.body[..d.body.len().min(MAX_DELAYS_BODY)]);
            }
        }
        b.resize(len as usize, 0);
        b
    }
}

fn put_request(b: &mut Vec<u8>, r: &Request) {
    b.extend_from_slice(&r.client_send_ns.to_be_bytes());
    b.extend_from_slice(&r.size.to_be_bytes());
    b.extend_from_slice(&r.reply_size.to_be_bytes());
}

/// Reassembles frames from what a probe connection reads.
#[derive(Debug, Default, Clone)]
pub struct ProbeDecoder {
    buf: Vec<u8>,
}

impl ProbeDecoder {
    /// Nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes read.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes held that are not yet a whole frame.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// The next whole frame, `None` until one is there. An error is final: the
    /// stream is out of step and the connection must close.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ProbeError> {
        if self.buf.len() < PROBE_HEADER_LEN {
            // A wrong start is known from its first bytes.
            if self.buf.len() >= 2 && self.buf[..2] != PROBE_MAGIC {
                return Err(ProbeError::BadMagic([self.buf[0], self.buf[1]]));
            }
            return Ok(None);
        }
        let h = &self.buf[..PROBE_HEADER_LEN];
        if h[..2] != PROBE_MAGIC {
            return Err(ProbeError::BadMagic([h[0], h[1]]));
        }
        let (ty, version) = (h[2], h[3]);
        if version != PROBE_VERSION {
            return Err(ProbeError::BadVersion(version));
        }
        let len = be_u32(&h[4..8]);
        let seq = be_u32(&h[8..12]);
        let min = match ty {
            TYPE_REQUEST => REQUEST_MIN_LEN,
            TYPE_ANSWER => ANSWER_MIN_LEN,
            TYPE_SAMPLE => SAMPLE_LEN,
            TYPE_DELAYS => DELAYS_MIN_LEN,
            t => return Err(ProbeError::UnknownType(t)),
        };
        if !(min..=MAX_PROBE_FRAME).contains(&len) {
            return Err(ProbeError::BadLength(len));
        }
        if self.buf.len() < len as usize {
            return Ok(None);
        }
        let f = &self.buf[PROBE_HEADER_LEN..len as usize];
        let request = || Request {
            seq,
            client_send_ns: be_i64(&f[0..8]),
            size: be_u32(&f[8..12]),
            reply_size: be_u32(&f[12..16]),
        };
        let frame = match ty {
            TYPE_REQUEST => Frame::Request(request()),
            TYPE_ANSWER => Frame::Answer(Answer {
                request: request(),
                server_recv_ns: be_i64(&f[16..24]),
                server_send_ns: be_i64(&f[24..32]),
            }),
            TYPE_DELAYS => Frame::Delays(Delays {
                seq,
                up: f[0] != 0,
                last: f[1] == 1,
                body: f[4..].to_vec(),
            }),
            _ => Frame::Sample(Sample {
                seq,
                kind: SampleKind::from_code(f[0]).ok_or(ProbeError::UnknownSample(f[0]))?,
                rtt_ns: be_u64(&f[4..12]),
                server_ns: be_i64(&f[12..20]),
            }),
        };
        self.buf.drain(..len as usize);
        Ok(Some(frame))
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

fn be_i64(b: &[u8]) -> i64 {
    be_u64(b) as i64
}

#[cfg(test)]
#[path = "probe_tests.rs"]
mod tests;
