//! The header ack (§3.3): the server's answer to a TCP test header, 28 bytes, or
//! 52 with the trip-times stamps.
//!
//! The server sends it for every forward, `-d` and `-r` test and for `-X`. Only an
//! `-X` client reads it at once; any other client leaves it unread until its
//! end-of-test drain, so a client must never take these bytes for an error.

use crate::error::HeaderError;
use crate::fields::{be32, put32, Timeval, Version};
use crate::flags::BaseFlags;

/// The ack's type word.
pub const ACK_TYPE: u32 = 2;
/// Length of an ack without stamps.
pub const ACK_LEN: usize = 28;
/// Length of an ack with the trip-times stamps.
pub const ACK_LEN_TIMES: usize = 52;

/// The three stamps of a trip-times ack, from which an `-X` client checks the
/// clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct AckTimes {
    /// The client's start time, echoed from its header (offset 64).
    pub client_start: Timeval,
    /// When the server accepted the connection.
    pub server_accept: Timeval,
    /// When the server sent the ack.
    pub server_sent: Timeval,
}

/// The header ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HeaderAck {
    /// The server's version.
    pub version: Version,
    /// Present when trip-times are active on the server for this test.
    pub times: Option<AckTimes>,
}

/// Whether a server answers a header with these flags with an ack: a plain
/// extended header without VERSION2 (forward, `-d`, `-r`), or `-X`.
pub fn ack_expected(flags: BaseFlags) -> bool {
    (flags.has(BaseFlags::EXTEND) && !flags.has(BaseFlags::VERSION2))
        || flags.has(BaseFlags::PEERDETECT)
}

impl HeaderAck {
    /// Its length on the wire.
    pub fn len(&self) -> usize {
        if self.times.is_some() {
            ACK_LEN_TIMES
        } else {
            ACK_LEN
        }
    }

    /// Never empty; here for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The ack's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; self.len()];
        put32(&mut b, 0, ACK_TYPE);
        put32(&mut b, 4, self.len() as u32);
        let (vu, vl) = self.version.to_words();
        put32(&mut b, 12, vu);
        put32(&mut b, 16, vl);
        if let Some(t) = self.times {
            t.client_start.write(&mut b, 28);
            t.server_accept.write(&mut b, 36);
            t.server_sent.write(&mut b, 44);
        }
        b
    }

    /// Reads an ack from the start of `buf`: `Ok(None)` until its announced
    /// length has arrived; the flags and reserved words are not checked.
    pub fn decode(buf: &[u8]) -> Result<Option<Self>, HeaderError> {
        if buf.len() < 8 {
            return Ok(None);
        }
        let ty = be32(buf, 0);
        if ty != ACK_TYPE {
            return Err(HeaderError::AckType(ty));
        }
        let len = be32(buf, 4);
        if len as usize != ACK_LEN && len as usize != ACK_LEN_TIMES {
            return Err(HeaderError::AckLength(len));
        }
        if buf.len() < len as usize {
            return Ok(None);
        }
        let times = (len as usize == ACK_LEN_TIMES).then(|| AckTimes {
            client_start: Timeval::read(buf, 28),
            server_accept: Timeval::read(buf, 36),
            server_sent: Timeval::read(buf, 44),
        });
        Ok(Some(Self {
            version: Version::from_words(be32(buf, 12), be32(buf, 16)),
            times,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::{VERSION_2_1_8, VERSION_2_2_1};
    use proptest::prelude::*;

    /// §3.3: the 28-byte ack of a 2.1.8 server, as captured.
    const ACK_218: [u8; 28] = [
        0, 0, 0, 2, 0, 0, 0, 0x1c, 0, 0, 0, 0, 0, 2, 0, 1, 0, 8, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn captured_ack_golden() {
        let a = HeaderAck {
            version: VERSION_2_1_8,
            times: None,
        };
        assert_eq!(a.encode(), ACK_218);
        assert_eq!(HeaderAck::decode(&ACK_218), Ok(Some(a)));
        assert_eq!(a.len(), 28);
        assert!(!a.is_empty());
    }

    #[test]
    fn trip_times_ack_is_52_bytes() {
        let t = |s| Timeval {
            sec: s,
            usec: s + 1,
        };
        let a = HeaderAck {
            version: VERSION_2_2_1,
            times: Some(AckTimes {
                client_start: t(10),
                server_accept: t(20),
                server_sent: t(30),
            }),
        };
        let b = a.encode();
        assert_eq!(b.len(), 52);
        assert_eq!(&b[4..8], &[0, 0, 0, 52]);
        assert_eq!(&b[28..32], &[0, 0, 0, 10]);
        assert_eq!(&b[48..52], &[0, 0, 0, 31]);
        assert_eq!(HeaderAck::decode(&b[..51]), Ok(None));
        assert_eq!(HeaderAck::decode(&b), Ok(Some(a)));
    }

    #[test]
    fn bad_acks_are_named() {
        assert_eq!(HeaderAck::decode(&ACK_218[..7]), Ok(None));
        let mut b = ACK_218;
        b[3] = 3;
        assert_eq!(HeaderAck::decode(&b), Err(HeaderError::AckType(3)));
        let mut b = ACK_218;
        b[7] = 0xFF;
        assert_eq!(HeaderAck::decode(&b), Err(HeaderError::AckLength(0xFF)));
        // Test data is not an ack: 2.2.1's pattern.
        assert_eq!(
            HeaderAck::decode(b"0123456789"),
            Err(HeaderError::AckType(0x3031_3233))
        );
    }

    /// §3.2 rule 4 against §3.1's observed flag words.
    #[test]
    fn which_headers_get_an_ack() {
        for (w, want) in [
            (0x4001_0078, true),  // 2.1.8 plain
            (0x4001_0080, true),  // 2.2.1 plain
            (0xC001_0081, true),  // -d
            (0xC001_0078, true),  // -r
            (0x4601_0080, true),  // -X
            (0x4401_0080, false), // -R, --full-duplex
            (0x0080_0000, false), // bounceback
        ] {
            assert_eq!(ack_expected(BaseFlags(w)), want, "{w:#x}");
        }
    }

    proptest! {
        #[test]
        fn any_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(Some(a)) = HeaderAck::decode(&b) {
                prop_assert_eq!(HeaderAck::decode(&a.encode()), Ok(Some(a)));
            }
        }

        #[test]
        fn acks_round_trip(u in any::<u32>(), l in any::<u32>(), times in any::<Option<[u32; 6]>>()) {
            let tv = |a: u32, b: u32| Timeval { sec: a, usec: b };
            let a = HeaderAck {
                version: Version::from_words(u, l),
                times: times.map(|t| AckTimes {
                    client_start: tv(t[0], t[1]),
                    server_accept: tv(t[2], t[3]),
                    server_sent: tv(t[4], t[5]),
                }),
            };
            let b = a.encode();
            prop_assert_eq!(b.len(), a.len());
            prop_assert_eq!(HeaderAck::decode(&b), Ok(Some(a)));
        }
    }
}
