//! Why bytes are not a header we accept, and why a header cannot be written.
//!
//! Decoders never panic and never allocate more than a header's bounded size;
//! whatever a peer announces that cannot be honoured safely (a length past the
//! bytes it sent, a key or name longer than the protocol allows, absurd counts)
//! ends here with a message naming the value.

/// A header or report that cannot be decoded or accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    /// The bytes end before the header does (a datagram, or a stream at EOF).
    #[error("test header truncated: {have} of {need} bytes")]
    Truncated {
        /// Bytes present.
        have: usize,
        /// Bytes the header announces.
        need: usize,
    },
    /// The announced length does not cover the fixed fields.
    #[error("test header length {len} is shorter than the {min} bytes of its fixed fields")]
    TooShort {
        /// Announced length.
        len: usize,
        /// Smallest length accepted.
        min: usize,
    },
    /// The bytes are not a test header (no flag announces one).
    #[error("no test header (flags {0:#010x})")]
    NoHeader(u32),
    /// A permit key length of 0 or above the protocol's maximum.
    #[error("permit key length {len} is outside 1..={max}")]
    PermitKeyLength {
        /// Announced length.
        len: usize,
        /// Largest length accepted.
        max: usize,
    },
    /// The congestion-control name does not fit in the header.
    #[error("congestion control name of {len} bytes overruns the {room} bytes left in the header")]
    CcaOverrun {
        /// Announced name length (0 if even its length field is missing).
        len: usize,
        /// Header bytes available for it.
        room: usize,
    },
    /// More parallel streams than the server accepts.
    #[error("{streams} parallel streams requested, more than the limit of {max}")]
    TooManyStreams {
        /// Requested count.
        streams: u32,
        /// Limit in force.
        max: u32,
    },
    /// A read/write length larger than the server accepts.
    #[error("buffer length {len} is larger than the limit of {max} bytes")]
    BufLenTooLarge {
        /// Requested length.
        len: u32,
        /// Limit in force.
        max: u32,
    },
    /// A legacy dual test asks to be connected back to a port that is none.
    #[error("connect-back port {0} is not a valid port")]
    BadPort(u32),
    /// Reverse and full duplex are both requested.
    #[error("reverse and full-duplex requested together")]
    ConflictingModes,
    /// The first datagram of a flow is a FIN (a late one from an earlier test).
    #[error("datagram with negative sequence number {0} cannot start a test")]
    StaleFin(i64),
    /// A header ack whose type word is not 2.
    #[error("header ack type {0} is not 2")]
    AckType(u32),
    /// A header ack whose length word is neither 28 nor 52.
    #[error("header ack length {0} is neither 28 nor 52")]
    AckLength(u32),
    /// A datagram that is not a server report (flags without bit 31, or a
    /// non-zero datagram header: an echo of the client's FIN).
    #[error("datagram is not a server report (flags {0:#010x})")]
    NotAReport(u32),
}

/// A header that cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The header would be longer than its 8-bit length field can announce.
    #[error("header of {len} bytes is longer than the 255 its length field can announce")]
    TooLong {
        /// Length the header would have.
        len: usize,
    },
    /// A permit key of 0 or more than the maximum bytes.
    #[error("permit key length {len} is outside 1..={max}")]
    PermitKeyLength {
        /// Key length.
        len: usize,
        /// Largest length allowed.
        max: usize,
    },
    /// The output buffer cannot hold the header.
    #[error("buffer of {have} bytes cannot hold {need}")]
    BufferTooSmall {
        /// Buffer size.
        have: usize,
        /// Bytes needed.
        need: usize,
    },
}
