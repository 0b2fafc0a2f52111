//! The TCP burst header (§3.5): 92 bytes at the start of every burst of test
//! data when `--trip-times`, `--isochronous` or `--burst-period` is active. It
//! carries the write time a receiver needs for one-way delay.
//!
//! Only the fields below are set by senders; the rest of the 92 bytes is left
//! over buffer content and must not be read.

use crate::error::HeaderError;
use crate::fields::{be32, put32, Timeval};

/// Size of the burst header.
pub const BURST_HEADER_LEN: usize = 92;

/// The fields of a burst header a sender sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BurstHeader {
    /// The client's report start time.
    pub start: Timeval,
    /// When this burst was written.
    pub write_time: Timeval,
    /// Burst period in µs (isochronous only).
    pub period_us: u32,
    /// Burst id, 1, 2, ...
    pub burst_id: u32,
    /// Bytes in the burst, these 92 included.
    pub burst_size: u32,
    /// Running byte-based counter (not used by receivers).
    pub seq: u64,
}

impl BurstHeader {
    /// Writes the fields into the start of a burst, leaving the other bytes;
    /// `false` if `buf` is shorter than 92 bytes.
    pub fn write(&self, buf: &mut [u8]) -> bool {
        if buf.len() < BURST_HEADER_LEN {
            return false;
        }
        self.start.write(buf, 12);
        self.write_time.write(buf, 20);
        put32(buf, 40, self.period_us);
        put32(buf, 44, self.burst_id);
        put32(buf, 48, self.burst_size);
        put32(buf, 52, self.seq as u32);
        put32(buf, 56, (self.seq >> 32) as u32);
        true
    }

    /// Reads a burst header: `Ok(None)` until 92 bytes are in; a burst size
    /// below 92 or above `max` is refused (the reader sizes its next read
    /// from it).
    pub fn read(buf: &[u8], max: u32) -> Result<Option<Self>, HeaderError> {
        if buf.len() < BURST_HEADER_LEN {
            return Ok(None);
        }
        let burst_size = be32(buf, 48);
        if (burst_size as usize) < BURST_HEADER_LEN {
            return Err(HeaderError::TooShort {
                len: burst_size as usize,
                min: BURST_HEADER_LEN,
            });
        }
        if burst_size > max {
            return Err(HeaderError::BufLenTooLarge {
                len: burst_size,
                max,
            });
        }
        Ok(Some(Self {
            start: Timeval::read(buf, 12),
            write_time: Timeval::read(buf, 20),
            period_us: be32(buf, 40),
            burst_id: be32(buf, 44),
            burst_size,
            seq: u64::from(be32(buf, 56)) << 32 | u64::from(be32(buf, 52)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn offsets_from_the_table() {
        let h = BurstHeader {
            start: Timeval { sec: 1, usec: 2 },
            write_time: Timeval { sec: 3, usec: 4 },
            period_us: 5,
            burst_id: 6,
            burst_size: 131_072,
            seq: 0x7_0000_0008,
        };
        let mut b = vec![0xA5u8; 131_072];
        assert!(h.write(&mut b));
        assert_eq!(&b[..12], &[0xA5; 12]);
        assert_eq!(
            &b[12..28],
            &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]
        );
        assert_eq!(
            &b[40..60],
            &[0, 0, 0, 5, 0, 0, 0, 6, 0, 2, 0, 0, 0, 0, 0, 8, 0, 0, 0, 7]
        );
        assert_eq!(&b[60..92], &[0xA5; 32]);
        assert_eq!(BurstHeader::read(&b, 1 << 20), Ok(Some(h)));
        assert_eq!(BurstHeader::read(&b[..91], 1 << 20), Ok(None));
        assert_eq!(
            BurstHeader::read(&b, 65_536),
            Err(HeaderError::BufLenTooLarge {
                len: 131_072,
                max: 65_536
            })
        );
        b[48..52].copy_from_slice(&91u32.to_be_bytes());
        assert_eq!(
            BurstHeader::read(&b, 1 << 20),
            Err(HeaderError::TooShort { len: 91, min: 92 })
        );
        assert!(!h.write(&mut [0u8; 91]));
    }

    proptest! {
        #[test]
        fn round_trip_and_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..120), max in any::<u32>()) {
            if let Ok(Some(h)) = BurstHeader::read(&b, max) {
                prop_assert!(h.burst_size >= 92 && h.burst_size <= max);
                let mut out = vec![0u8; 92];
                prop_assert!(h.write(&mut out));
                prop_assert_eq!(BurstHeader::read(&out, max), Ok(Some(h)));
            }
        }
    }
}
