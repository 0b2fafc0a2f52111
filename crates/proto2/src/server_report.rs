//! The UDP server report (§7.5): the 128-byte payload a server sends back after
//! a client's FIN, which the client prints as its "Server Report".
//!
//! Its first 16 bytes (where a datagram header would be) are zero and its flags
//! word always has bit 31, which tells a report from the echo of a late FIN that
//! upstream servers send when more datagrams arrive after the report.

use std::time::Duration;

use crate::error::HeaderError;
use crate::fields::{be32, put32, StatPair};
use crate::flags::BaseFlags;
use crate::udp_datagram::DATAGRAM_HEADER_LEN;

/// Length of the report payload.
pub const SERVER_REPORT_LEN: usize = 128;

const H: usize = DATAGRAM_HEADER_LEN;

/// Transit-time statistics (seconds, except `m2`, which is scaled by 10^12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TransitStats {
    /// Smallest transit.
    pub min: StatPair,
    /// Largest transit.
    pub max: StatPair,
    /// Sum of transits.
    pub sum: StatPair,
    /// Mean transit.
    pub mean: StatPair,
    /// Running sum of squared differences, times 10^12.
    pub m2: StatPair,
    /// Variance term as sent.
    pub vd: StatPair,
    /// Number of transit samples.
    pub count: u32,
}

/// What the server measured, as it tells the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ServerReport {
    /// Bit 30 of the flags: the server runs `-e` or the test has trip-times;
    /// the client uses the transit and rate words only then.
    pub enhanced: bool,
    /// Bytes received.
    pub total_bytes: u64,
    /// From the start to the end of the last datagram.
    pub duration: Duration,
    /// Datagrams lost (sequence gaps less reordering, not below 0).
    pub lost: u64,
    /// Datagrams out of order.
    pub out_of_order: u64,
    /// Datagrams: the highest sequence number seen.
    pub datagrams: u64,
    /// Jitter in seconds (2.1.8: last estimate; 2.2.1: mean estimate).
    pub jitter: StatPair,
    /// Transit statistics.
    pub transit: TransitStats,
    /// Packets per second, to be divided by `pps_divisor`.
    pub pps: u32,
    /// Divisor of `pps`; servers send 1.
    pub pps_divisor: u32,
}

impl ServerReport {
    /// The flags word: VERSION1 and SEQNO64B always, EXTEND when enhanced.
    pub fn flags(&self) -> BaseFlags {
        let f = BaseFlags(BaseFlags::VERSION1 | BaseFlags::SEQNO64B);
        if self.enhanced {
            f.with(BaseFlags::EXTEND)
        } else {
            f
        }
    }

    /// The report's payload. Durations past 2^32 s are clamped.
    pub fn encode(&self) -> [u8; SERVER_REPORT_LEN] {
        let mut b = [0u8; SERVER_REPORT_LEN];
        put32(&mut b, H, self.flags().0);
        put32(&mut b, 20, (self.total_bytes >> 32) as u32);
        put32(&mut b, 24, self.total_bytes as u32);
        let secs = self.duration.as_secs().min(u64::from(u32::MAX));
        put32(&mut b, 28, secs as u32);
        put32(&mut b, 32, self.duration.subsec_micros());
        put32(&mut b, 36, self.lost as u32);
        put32(&mut b, 40, self.out_of_order as u32);
        put32(&mut b, 44, self.datagrams as u32);
        self.jitter.write(&mut b, 48);
        let t = &self.transit;
        for (i, p) in [t.min, t.max, t.sum, t.mean, t.m2, t.vd].iter().enumerate() {
            p.write(&mut b, 56 + 8 * i);
        }
        put32(&mut b, 104, t.count);
        put32(&mut b, 108, self.pps);
        put32(&mut b, 112, self.pps_divisor);
        put32(&mut b, 116, (self.lost >> 32) as u32);
        put32(&mut b, 120, (self.out_of_order >> 32) as u32);
        put32(&mut b, 124, (self.datagrams >> 32) as u32);
        b
    }

    /// Reads a report from a datagram's payload. Anything shorter than 128
    /// bytes, with a non-zero datagram header (a FIN echo) or without bit 31 in
    /// its flags is refused. The high count words count only with SEQNO64B.
    pub fn decode(b: &[u8]) -> Result<Self, HeaderError> {
        if b.len() < SERVER_REPORT_LEN {
            return Err(HeaderError::Truncated {
                have: b.len(),
                need: SERVER_REPORT_LEN,
            });
        }
        let flags = BaseFlags(be32(b, H));
        if !flags.has(BaseFlags::VERSION1) || b[..H].iter().any(|&x| x != 0) {
            return Err(HeaderError::NotAReport(flags.0));
        }
        let wide = flags.has(BaseFlags::SEQNO64B);
        let count = |lo: usize, hi: usize| {
            let high = if wide {
                u64::from(be32(b, hi)) << 32
            } else {
                0
            };
            high | u64::from(be32(b, lo))
        };
        let p = |off| StatPair::read(b, off);
        Ok(Self {
            enhanced: flags.has(BaseFlags::EXTEND),
            total_bytes: u64::from(be32(b, 20)) << 32 | u64::from(be32(b, 24)),
            duration: Duration::from_secs(u64::from(be32(b, 28)))
                + Duration::from_micros(u64::from(be32(b, 32))),
            lost: count(36, 116),
            out_of_order: count(40, 120),
            datagrams: count(44, 124),
            jitter: p(48),
            transit: TransitStats {
                min: p(56),
                max: p(64),
                sum: p(72),
                mean: p(80),
                m2: p(88),
                vd: p(96),
                count: be32(b, 104),
            },
            pps: be32(b, 108),
            pps_divisor: be32(b, 112),
        })
    }
}
