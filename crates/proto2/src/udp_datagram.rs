//! The 16-byte header of every UDP datagram (§7.1) and the end of a UDP test:
//! the FIN, a datagram whose sequence number is negative (§7.4).
//!
//! Sequence numbers start at 1 and are 64-bit signed when the test header has
//! SEQNO64B (every 2.1.8 and 2.2.1 client sets it), else the low word alone,
//! signed. A negative number marks the FIN; its absolute value is the FIN's own
//! sequence, and each retry counts one further down.

use std::time::Duration;

use crate::fields::{be32, put32, Timeval};

/// Length of the datagram header.
pub const DATAGRAM_HEADER_LEN: usize = 16;

/// How many FINs a client sends at most while waiting for the server report.
pub const FIN_MAX_SENDS: u32 = 200;

/// How long a client waits for the report after each FIN.
pub const FIN_RETRY_WAIT: Duration = Duration::from_millis(10);

/// The header at the start of every datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DatagramHeader {
    /// Sequence number: 1 for the first datagram, negative for a FIN.
    pub seq: i64,
    /// The sender's wall clock when it sent the datagram.
    pub sent: Timeval,
}

impl DatagramHeader {
    /// Writes the header at the start of `buf`; `None` if `buf` is shorter than
    /// 16 bytes. Without 64-bit sequence numbers the high word is 0 and the low
    /// word carries the number's low 32 bits.
    pub fn encode(&self, buf: &mut [u8], seq64: bool) -> Option<usize> {
        let b = buf.get_mut(..DATAGRAM_HEADER_LEN)?;
        put32(b, 0, self.seq as u32);
        self.sent.write(b, 4);
        put32(b, 12, if seq64 { (self.seq >> 32) as u32 } else { 0 });
        Some(DATAGRAM_HEADER_LEN)
    }

    /// Reads the header from the start of a datagram; `None` if it is shorter
    /// than 16 bytes.
    pub fn decode(buf: &[u8], seq64: bool) -> Option<Self> {
        let b = buf.get(..DATAGRAM_HEADER_LEN)?;
        let low = be32(b, 0);
        let seq = if seq64 {
            (u64::from(be32(b, 12)) << 32 | u64::from(low)) as i64
        } else {
            i64::from(low as i32)
        };
        Some(Self {
            seq,
            sent: Timeval::read(b, 4),
        })
    }

    /// Whether the datagram is a FIN.
    pub fn is_fin(&self) -> bool {
        self.seq < 0
    }
}

/// The sequence number of the first FIN after data `1..=last`: the negated next
/// number (data 1..1001 ends with FIN −1002).
pub fn fin_seq(last_data_seq: i64) -> i64 {
    -(last_data_seq.saturating_add(1))
}

/// The sequence number of the FIN sent after `prev` went unanswered.
pub fn next_fin_seq(prev: i64) -> i64 {
    prev.saturating_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// §11: the first datagram of `-u -t 1 -b 1000pps` (2.2.1 → 2.1.8).
    #[test]
    fn captured_first_datagram_header() {
        let wire = [
            0, 0, 0, 1, 0x6b, 0x07, 0x09, 0x6b, 0x00, 0x01, 0x09, 0xb8, 0, 0, 0, 0,
        ];
        let h = DatagramHeader::decode(&wire, true).unwrap();
        assert_eq!(h.seq, 1);
        assert_eq!(
            h.sent,
            Timeval {
                sec: 0x6b07_096b,
                usec: 0x0001_09b8
            }
        );
        assert!(!h.is_fin());
        let mut out = [0u8; 16];
        assert_eq!(h.encode(&mut out, true), Some(16));
        assert_eq!(out, wire);
    }

    /// §11: the FIN after data 1..1001 is −1002, high word all ones.
    #[test]
    fn captured_fin() {
        assert_eq!(fin_seq(1001), -1002);
        assert_eq!(next_fin_seq(-1002), -1003);
        let mut wire = [0u8; 16];
        wire[..4].copy_from_slice(&[0xff, 0xff, 0xfc, 0x16]);
        wire[12..].copy_from_slice(&[0xff; 4]);
        let h = DatagramHeader::decode(&wire, true).unwrap();
        assert_eq!(h.seq, -1002);
        assert!(h.is_fin());
        let mut out = [0xAAu8; 16];
        h.encode(&mut out, true).unwrap();
        assert_eq!(out[..4], wire[..4]);
        assert_eq!(out[12..], wire[12..]);
        // The low word alone is also negative without SEQNO64B.
        assert_eq!(DatagramHeader::decode(&wire, false).unwrap().seq, -1002);
    }

    #[test]
    fn sequence_width() {
        let h = DatagramHeader {
            seq: 0x1_0000_0005,
            sent: Timeval::default(),
        };
        let mut b = [0u8; 16];
        h.encode(&mut b, true).unwrap();
        assert_eq!(DatagramHeader::decode(&b, true).unwrap().seq, 0x1_0000_0005);
        assert_eq!(DatagramHeader::decode(&b, false).unwrap().seq, 5);
        h.encode(&mut b, false).unwrap();
        assert_eq!(&b[12..], &[0; 4]);
        assert_eq!(DatagramHeader::decode(&[0; 15], true), None);
        assert_eq!(h.encode(&mut [0; 15], true), None);
        assert_eq!(fin_seq(i64::MAX), -i64::MAX);
        assert_eq!(next_fin_seq(i64::MIN), i64::MIN);
    }

    proptest! {
        #[test]
        fn headers_round_trip(seq in any::<i64>(), sec in any::<u32>(), usec in any::<u32>()) {
            let h = DatagramHeader { seq, sent: Timeval { sec, usec } };
            let mut b = [0u8; 16];
            h.encode(&mut b, true).unwrap();
            prop_assert_eq!(DatagramHeader::decode(&b, true), Some(h));
            h.encode(&mut b, false).unwrap();
            let narrow = DatagramHeader::decode(&b, false).unwrap();
            prop_assert_eq!(narrow.seq, i64::from(seq as i32));
        }

        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..32), wide in any::<bool>()) {
            match DatagramHeader::decode(&b, wide) {
                None => prop_assert!(b.len() < 16),
                Some(h) => {
                    let mut out = [0u8; 16];
                    h.encode(&mut out, wide).unwrap();
                    prop_assert_eq!(&out[..12], &b[..12]);
                }
            }
        }
    }
}
