//! The TCP bounceback request (§6): with `--bounceback` every request is its own
//! header, which the server stamps and writes back.
//!
//! 2.1.8's header is 60 bytes and 2.2.1's 64 (a reply size at 60, valid only
//! with its flag); the rest of a request up to its size is pattern. A server
//! reads every later request with the first request's size, so that size is
//! bounded before anything is allocated from it.

use crate::error::HeaderError;
use crate::fields::{be16, be32, put16, put32, Timeval};
use crate::flags::BaseFlags;
use crate::tcp_header::{Decoded, Layout};

/// Filler in unused header bytes.
const FILLER: u8 = 0x5A;
/// Offset of the server's receive stamp.
const RECV_OFF: usize = 28;
/// Offset of the server's send stamp.
const SEND_OFF: usize = 36;

/// The bounceback flags word (16 bits at offset 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BbFlags(pub u16);

impl BbFlags {
    /// TCP quick ack (on by default).
    pub const QUICKACK: u16 = 0x8000;
    /// The client's clock is synchronised (`--trip-times`).
    pub const CLOCK_SYNCED: u16 = 0x4000;
    /// The TOS field is valid.
    pub const TOS_VALID: u16 = 0x2000;
    /// Stop (defined and honoured; no client sends it).
    pub const STOP: u16 = 0x1000;
    /// 2.2.1: the reply size at 60 is valid.
    pub const REPLY_SIZE: u16 = 0x0800;

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u16) -> bool {
        self.0 & mask == mask
    }
}

/// A bounceback request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BouncebackHeader {
    /// Bytes in each request (`--bounceback-request`, 100 by default).
    pub request_size: u32,
    /// Same for every request of one period (1, 1, 1, 2, 2, 2...).
    pub burst_id: u32,
    /// Bounceback flags (the reply-size bit follows from `reply_size`).
    pub bb_flags: BbFlags,
    /// TOS, meaningful with [`BbFlags::TOS_VALID`] (else filler 0x5A5A).
    pub tos: u16,
    /// Run time in 10 ms units (clients send 0).
    pub run_time: u32,
    /// When the client sent the request.
    pub client_send: Timeval,
    /// Server's receive stamp (all ones from the client).
    pub server_recv: Timeval,
    /// Server's send stamp (all ones from the client).
    pub server_send: Timeval,
    /// `--bounceback-hold` in µs (applied by 2.1.8 servers only).
    pub hold_us: u32,
    /// 2.2.1: the reply size, when [`BbFlags::REPLY_SIZE`] is set.
    pub reply_size: Option<u32>,
}

/// The smallest request a server accepts: its own 64-byte header.
pub const BOUNCEBACK_MIN_REQUEST: u32 = 64;

impl BouncebackHeader {
    /// The header's bytes (60 or 64 by layout); the caller pads the request to
    /// `request_size` with test data. A reply size needs the 2.2.1 layout.
    pub fn encode(&self, layout: Layout) -> Vec<u8> {
        let mut b = vec![FILLER; layout.base_len()];
        put32(&mut b, 0, BaseFlags::BOUNCEBACK);
        put32(&mut b, 4, self.request_size);
        put32(&mut b, 8, self.burst_id);
        let mut flags = self.bb_flags.0 & !BbFlags::REPLY_SIZE;
        if self.reply_size.is_some() && layout == Layout::V2_2_1 {
            flags |= BbFlags::REPLY_SIZE;
        }
        put16(&mut b, 12, flags);
        put16(&mut b, 14, self.tos);
        put32(&mut b, 16, self.run_time);
        self.client_send.write(&mut b, 20);
        self.server_recv.write(&mut b, RECV_OFF);
        self.server_send.write(&mut b, SEND_OFF);
        put32(&mut b, 44, self.hold_us);
        if layout == Layout::V2_2_1 {
            put32(&mut b, 60, self.reply_size.unwrap_or(0));
        }
        b
    }

    /// Reads a request's header as a 2.2.1 server does (64 bytes; bytes 60..64
    /// count only with the reply-size flag). Sizes below 64 or above `max`
    /// are refused.
    pub fn decode(buf: &[u8], max: u32) -> Result<Decoded<Self>, HeaderError> {
        let need = BOUNCEBACK_MIN_REQUEST as usize;
        if buf.len() < need {
            return Ok(Decoded::NeedMore { need });
        }
        let flags = be32(buf, 0);
        if !BaseFlags(flags).has(BaseFlags::BOUNCEBACK) {
            return Err(HeaderError::NoHeader(flags));
        }
        let bb_flags = BbFlags(be16(buf, 12));
        let reply_size = bb_flags.has(BbFlags::REPLY_SIZE).then(|| be32(buf, 60));
        for size in [Some(be32(buf, 4)), reply_size].into_iter().flatten() {
            if size < BOUNCEBACK_MIN_REQUEST {
                return Err(HeaderError::TooShort {
                    len: size as usize,
                    min: need,
                });
            }
            if size > max {
                return Err(HeaderError::BufLenTooLarge { len: size, max });
            }
        }
        let h = Self {
            request_size: be32(buf, 4),
            burst_id: be32(buf, 8),
            // The reply-size bit is carried by `reply_size`.
            bb_flags: BbFlags(bb_flags.0 & !BbFlags::REPLY_SIZE),
            tos: be16(buf, 14),
            run_time: be32(buf, 16),
            client_send: Timeval::read(buf, 20),
            server_recv: Timeval::read(buf, RECV_OFF),
            server_send: Timeval::read(buf, SEND_OFF),
            hold_us: be32(buf, 44),
            reply_size,
        };
        Ok(Decoded::Done {
            len: h.request_size as usize,
            value: h,
        })
    }

    /// Bytes the server writes back: the reply size if valid, else the request
    /// size.
    pub fn reply_len(&self) -> u32 {
        self.reply_size.unwrap_or(self.request_size)
    }
}

/// Stamps a received request with the server's receive and send times before it
/// is written back; `false` if `request` is too short to hold them.
pub fn stamp_reply(request: &mut [u8], recv: Timeval, send: Timeval) -> bool {
    if request.len() < SEND_OFF + 8 {
        return false;
    }
    recv.write(request, RECV_OFF);
    send.write(request, SEND_OFF);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn client_request() -> BouncebackHeader {
        BouncebackHeader {
            request_size: 100,
            burst_id: 1,
            bb_flags: BbFlags(BbFlags::QUICKACK),
            tos: 0x5A5A,
            run_time: 0,
            client_send: Timeval {
                sec: 1_700_000_000,
                usec: 42,
            },
            server_recv: Timeval {
                sec: u32::MAX,
                usec: u32::MAX,
            },
            server_send: Timeval {
                sec: u32::MAX,
                usec: u32::MAX,
            },
            hold_us: 0,
            reply_size: Some(100),
        }
    }

    /// §6's table: flags, size 100, burst 1, quick ack, filler TOS, stamps of
    /// all ones, 0x5A filler at 48..60, the reply size at 60 (2.2.1).
    #[test]
    fn client_layouts() {
        let h = client_request();
        let b = h.encode(Layout::V2_2_1);
        assert_eq!(b.len(), 64);
        assert_eq!(
            &b[..16],
            &[0, 0x80, 0, 0, 0, 0, 0, 100, 0, 0, 0, 1, 0x88, 0, 0x5A, 0x5A]
        );
        assert_eq!(&b[28..44], &[0xFF; 16]);
        assert_eq!(&b[48..60], &[0x5A; 12]);
        assert_eq!(&b[60..64], &[0, 0, 0, 100]);
        let b218 = h.encode(Layout::V2_1_8);
        assert_eq!((b218.len(), b218[12]), (60, 0x80));
        let mut req = b.clone();
        req.resize(100, b'0');
        let Decoded::Done { value, len } = BouncebackHeader::decode(&req, 1 << 20).unwrap() else {
            panic!("incomplete")
        };
        assert_eq!((value, len, value.reply_len()), (h, 100, 100));
        // A 2.1.8 request: pattern at 60..64 is not a reply size.
        let mut req = b218;
        req.resize(100, b'7');
        let Decoded::Done { value, .. } = BouncebackHeader::decode(&req, 1 << 20).unwrap() else {
            panic!("incomplete")
        };
        assert_eq!((value.reply_size, value.reply_len()), (None, 100));
    }

    #[test]
    fn sizes_are_bounded() {
        let mut h = client_request();
        assert_eq!(
            BouncebackHeader::decode(&h.encode(Layout::V2_2_1)[..63], 1000),
            Ok(Decoded::NeedMore { need: 64 })
        );
        h.request_size = u32::MAX;
        assert_eq!(
            BouncebackHeader::decode(&h.encode(Layout::V2_2_1), 1 << 20),
            Err(HeaderError::BufLenTooLarge {
                len: u32::MAX,
                max: 1 << 20
            })
        );
        h.request_size = 63;
        assert_eq!(
            BouncebackHeader::decode(&h.encode(Layout::V2_2_1), 1 << 20),
            Err(HeaderError::TooShort { len: 63, min: 64 })
        );
        h.request_size = 100;
        h.reply_size = Some(1 << 30);
        assert!(BouncebackHeader::decode(&h.encode(Layout::V2_2_1), 1 << 20).is_err());
        assert_eq!(
            BouncebackHeader::decode(&[0x40; 64], 1000),
            Err(HeaderError::NoHeader(0x4040_4040))
        );
    }

    #[test]
    fn server_stamps() {
        let mut req = client_request().encode(Layout::V2_2_1);
        let (r, s) = (Timeval { sec: 1, usec: 2 }, Timeval { sec: 3, usec: 4 });
        assert!(stamp_reply(&mut req, r, s));
        assert_eq!(
            &req[28..44],
            &[0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4]
        );
        assert!(!stamp_reply(&mut [0u8; 43], r, s));
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..100), max in any::<u32>()) {
            if let Ok(Decoded::Done { value, len }) = BouncebackHeader::decode(&b, max) {
                prop_assert!(len >= 64 && len as u64 <= u64::from(max));
                let again = value.encode(Layout::V2_2_1);
                prop_assert_eq!(BouncebackHeader::decode(&again, max), Ok(Decoded::Done { value, len }));
            }
        }
    }
}
