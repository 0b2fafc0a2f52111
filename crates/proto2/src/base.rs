//! The part of the test header both transports share: 64 bytes at TCP offset 0
//! and at UDP payload offset 16 (flags, streams, port, lengths, amount, upper and
//! lower flags, version, TOS, rate, write prefetch, barrier).
//!
//! A header may be shorter than 64 bytes (2.1.8's TCP header stops at 60, older
//! clients at 24); fields it does not reach read as zero.

use crate::fields::{be16, be32, put16, put32, rate_from_words, rate_to_words, Amount, Version};
use crate::flags::{BaseFlags, LowerFlags, UpperFlags};

/// Size of the shared part when complete.
pub const BASE_LEN: usize = 64;

/// Size of the original (version 1) fields: flags through amount.
pub const V1_LEN: usize = 24;

/// The shared fields, typed. Words that carry nothing (ext type and length,
/// the reserved 16 bits, the low byte of uRate) are written as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BaseHeader {
    /// Base flags (the length bits included as read; encoders set them).
    pub flags: BaseFlags,
    /// `-P` streams; with bit 31 (2.2.1 `--sync-transfer-id`) a transfer id in
    /// bits 20..31.
    pub num_threads: u32,
    /// `-L` (or the destination port): where a legacy dual test connects back.
    pub port: u32,
    /// `-l` if the user gave it, else 0.
    pub buf_len: u32,
    /// Window/bandwidth word; clients send 0.
    pub win_band: u32,
    /// `-t` or `-n`.
    pub amount: Amount,
    /// Upper flags.
    pub upper: UpperFlags,
    /// Lower flags (2.2.1).
    pub lower: LowerFlags,
    /// The sender's version.
    pub version: Version,
    /// `-S` (its low 8 bits are the TOS byte).
    pub tos: u16,
    /// `-b`: bits per second (UDP: a raw packet count for a normal `-b Npps`).
    pub rate: u64,
    /// `--tcp-write-prefetch` bytes.
    pub write_prefetch: u32,
    /// 2.2.1: microseconds this stream waited at the start barrier.
    pub barrier_us: u32,
}

impl Default for BaseHeader {
    fn default() -> Self {
        Self {
            flags: BaseFlags::default(),
            num_threads: 1,
            port: 0,
            buf_len: 0,
            win_band: 0,
            amount: Amount::Ticks(1000),
            upper: UpperFlags::default(),
            lower: LowerFlags::default(),
            version: Version::default(),
            tos: 0,
            rate: 0,
            write_prefetch: 0,
            barrier_us: 0,
        }
    }
}

impl BaseHeader {
    /// Reads the fields from `b` (the header's first bytes; those past its end
    /// read as zero).
    pub(crate) fn read(b: &[u8]) -> Self {
        let mut w = [0u8; BASE_LEN];
        let n = b.len().min(BASE_LEN);
        w[..n].copy_from_slice(&b[..n]);
        Self {
            flags: BaseFlags(be32(&w, 0)),
            num_threads: be32(&w, 4),
            port: be32(&w, 8),
            buf_len: be32(&w, 12),
            win_band: be32(&w, 16),
            amount: Amount::from_word(be32(&w, 20)),
            upper: UpperFlags(be16(&w, 32)),
            lower: LowerFlags(be16(&w, 34)),
            version: Version::from_words(be32(&w, 36), be32(&w, 40)),
            tos: be16(&w, 46),
            rate: rate_from_words(be32(&w, 48), be32(&w, 52)),
            write_prefetch: be32(&w, 56),
            barrier_us: be32(&w, 60),
        }
    }

    /// Writes the fields into `b`, as far as `b` reaches (60 bytes for 2.1.8's
    /// TCP layout, 64 otherwise).
    pub(crate) fn write(&self, b: &mut [u8]) {
        let mut w = [0u8; BASE_LEN];
        put32(&mut w, 0, self.flags.0);
        put32(&mut w, 4, self.num_threads);
        put32(&mut w, 8, self.port);
        put32(&mut w, 12, self.buf_len);
        put32(&mut w, 16, self.win_band);
        put32(&mut w, 20, self.amount.to_word());
        put16(&mut w, 32, self.upper.0);
        put16(&mut w, 34, self.lower.0);
        let (vu, vl) = self.version.to_words();
        put32(&mut w, 36, vu);
        put32(&mut w, 40, vl);
        put16(&mut w, 46, self.tos);
        let (rl, ru) = rate_to_words(self.rate);
        put32(&mut w, 48, rl);
        put32(&mut w, 52, ru);
        put32(&mut w, 56, self.write_prefetch);
        put32(&mut w, 60, self.barrier_us);
        let n = b.len().min(BASE_LEN);
        b[..n].copy_from_slice(&w[..n]);
    }
}
