//! The UDP data stream's wire format: the per-datagram header and the
//! "9876"/"6789" handshake that stands in for a connection.
//!
//! Every datagram carries the sender's monotonic send time and a per-stream
//! sequence number (32 or 64 bits, as agreed by `udp_counters_64bit`); the receiver
//! derives loss, reordering and jitter from them (see [`crate::UdpRecvStats`]).

use std::time::Duration;

/// What a client sends to open a UDP stream: ASCII "9876".
pub const UDP_CONNECT_MSG: [u8; 4] = *b"9876";
/// What a server answers: ASCII "6789".
pub const UDP_CONNECT_REPLY: [u8; 4] = *b"6789";
/// The reply of servers up to 3.11: 987654321 in the server's host order, here as
/// sent by a little-endian host.
pub const UDP_CONNECT_REPLY_LEGACY: [u8; 4] = [0xB1, 0x68, 0xDE, 0x3A];
/// The legacy reply as a big-endian host sends it.
pub const UDP_CONNECT_REPLY_LEGACY_SWAPPED: [u8; 4] = [0x3A, 0xDE, 0x68, 0xB1];

/// Header size with 32-bit sequence numbers.
pub const UDP_HEADER_LEN_32: usize = 12;
/// Header size with 64-bit sequence numbers.
pub const UDP_HEADER_LEN_64: usize = 16;

/// Whether a datagram is the server's handshake reply. Only its first 4 bytes count
/// (iperf3 reads 4 bytes of each datagram); shorter datagrams are not a reply.
pub fn is_connect_reply(datagram: &[u8]) -> bool {
    match datagram.get(..4) {
        Some(h) => {
            h == UDP_CONNECT_REPLY
                || h == UDP_CONNECT_REPLY_LEGACY
                || h == UDP_CONNECT_REPLY_LEGACY_SWAPPED
        }
        None => false,
    }
}

/// The header at the start of every UDP test datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpHeader {
    /// Sender's monotonic clock, whole seconds.
    pub sec: u32,
    /// Sender's monotonic clock, microseconds (0..999999).
    pub usec: u32,
    /// Sequence number, 1 for the first datagram of a stream.
    pub seq: u64,
}

impl UdpHeader {
    /// A header stamped with a monotonic time (whole seconds wrap at 2^32, as in
    /// iperf3's 32-bit field).
    pub fn new(now: Duration, seq: u64) -> Self {
        Self {
            sec: now.as_secs() as u32,
            usec: now.subsec_micros(),
            seq,
        }
    }

    /// Header length for the counter width.
    pub fn len(counters_64bit: bool) -> usize {
        if counters_64bit {
            UDP_HEADER_LEN_64
        } else {
            UDP_HEADER_LEN_32
        }
    }

    /// Writes the header at the start of `buf` (big-endian). In 32-bit mode the
    /// sequence number is truncated to 32 bits. Returns the bytes written, or `None`
    /// if `buf` is too short.
    pub fn encode(&self, buf: &mut [u8], counters_64bit: bool) -> Option<usize> {
        let n = Self::len(counters_64bit);
        let b = buf.get_mut(..n)?;
        b[0..4].copy_from_slice(&self.sec.to_be_bytes());
        b[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        } else {
            b[8..12].copy_from_slice(&(self.seq as u32).to_be_bytes());
        }
        Some(n)
    }

    /// Reads the header from the start of a datagram; `None` if it is too short.
    pub fn decode(buf: &[u8], counters_64bit: bool) -> Option<Self> {
        let b = buf.get(..Self::len(counters_64bit))?;
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let seq = if counters_64bit {
            let mut s = [0u8; 8];
            s.copy_from_slice(&b[8..16]);
            u64::from_be_bytes(s)
        } else {
            u64::from(u32_at(8))
        };
        Some(Self {
            sec: u32_at(0),
            usec: u32_at(4),
            seq,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn captured_32bit_header() {
        let wire = [0, 0, 2, 0xad, 0, 0x0b, 0x4c, 0x71, 0, 0, 0, 1, 0xdb, 0x5c];
        let h = UdpHeader::decode(&wire, false).unwrap();
        assert_eq!(
            h,
            UdpHeader {
                sec: 685,
                usec: 740465,
                seq: 1
            }
        );
        let mut out = [0u8; 12];
        assert_eq!(h.encode(&mut out, false), Some(12));
        assert_eq!(out, wire[..12]);
    }

    #[test]
    fn captured_64bit_header() {
        let wire = [
            0, 0, 2, 0xa5, 0, 0x0c, 0xf1, 0xe3, 0, 0, 0, 0, 0, 0, 0, 1, 0xe4, 0x75,
        ];
        let h = UdpHeader::decode(&wire, true).unwrap();
        assert_eq!(
            h,
            UdpHeader {
                sec: 677,
                usec: 848355,
                seq: 1
            }
        );
        let mut out = [0u8; 16];
        h.encode(&mut out, true).unwrap();
        assert_eq!(out, wire[..16]);
    }

    #[test]
    fn short_buffers_are_refused() {
        assert_eq!(UdpHeader::decode(&[0; 11], false), None);
        assert_eq!(UdpHeader::decode(&[0; 15], true), None);
        let h = UdpHeader::new(Duration::from_micros(1_500_000), 7);
        assert_eq!(h.encode(&mut [0; 11], false), None);
        assert_eq!((h.sec, h.usec), (1, 500_000));
    }

    #[test]
    fn sequence_truncates_in_32bit_mode() {
        let h = UdpHeader {
            sec: 1,
            usec: 2,
            seq: 0x1_0000_0005,
        };
        let mut b = [0u8; 12];
        h.encode(&mut b, false).unwrap();
        assert_eq!(UdpHeader::decode(&b, false).unwrap().seq, 5);
    }

    #[test]
    fn handshake_replies() {
        assert!(is_connect_reply(b"6789"));
        assert!(is_connect_reply(b"6789 and more"));
        assert!(is_connect_reply(&[0xB1, 0x68, 0xDE, 0x3A]));
        assert!(is_connect_reply(&[0x3A, 0xDE, 0x68, 0xB1]));
        assert_eq!(u32::from_le_bytes(UDP_CONNECT_REPLY_LEGACY), 987654321);
        assert!(!is_connect_reply(b"9876"));
        assert!(!is_connect_reply(b"678"));
        assert_eq!(&UDP_CONNECT_MSG, &[0x39, 0x38, 0x37, 0x36]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10_000))]

        /// Any datagram: a header is read exactly when the datagram is long
        /// enough, only from its first bytes, and writes back to them.
        #[test]
        fn any_datagram_decodes_from_its_first_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..40),
            wide in any::<bool>(),
        ) {
            let n = UdpHeader::len(wide);
            match UdpHeader::decode(&bytes, wide) {
                None => prop_assert!(bytes.len() < n),
                Some(h) => {
                    prop_assert!(bytes.len() >= n);
                    prop_assert!(wide || h.seq <= u64::from(u32::MAX));
                    prop_assert_eq!(UdpHeader::decode(&bytes[..n], wide), Some(h));
                    let mut out = vec![0u8; n];
                    prop_assert_eq!(h.encode(&mut out, wide), Some(n));
                    prop_assert_eq!(&out[..], &bytes[..n]);
                }
            }
            let replies = [UDP_CONNECT_REPLY, UDP_CONNECT_REPLY_LEGACY, UDP_CONNECT_REPLY_LEGACY_SWAPPED];
            let want = bytes.len() >= 4 && replies.iter().any(|r| r[..] == bytes[..4]);
            prop_assert_eq!(is_connect_reply(&bytes), want);
        }

        /// Any header into any buffer: written when it fits, and read back
        /// (the sequence number cut to 32 bits in 32-bit mode).
        #[test]
        fn any_header_round_trips(
            sec in any::<u32>(), usec in any::<u32>(), seq in any::<u64>(),
            wide in any::<bool>(), size in 0usize..24,
        ) {
            let h = UdpHeader { sec, usec, seq };
            let mut buf = vec![0xAAu8; size];
            match h.encode(&mut buf, wide) {
                None => prop_assert!(size < UdpHeader::len(wide)),
                Some(n) => {
                    let seq = if wide { seq } else { seq & u64::from(u32::MAX) };
                    prop_assert_eq!(UdpHeader::decode(&buf, wide), Some(UdpHeader { sec, usec, seq }));
                    prop_assert!(buf[n..].iter().all(|&b| b == 0xAA));
                }
            }
        }
    }
}
