//! The TCP test header: the client's first write on every stream (§3.1), in
//! 2.1.8's and 2.2.1's layouts, with the optional start block, isochronous
//! settings, congestion-control name and permit key.
//!
//! The header announces its own length in the flags word, so a reader never
//! relies on a struct size: 2.1.8 writes 60 bytes and 2.2.1 64 for the same test.
//! A TCP reader gets bytes in arbitrary pieces; [`TcpTestHeader::decode`] says how
//! many it needs until the whole header (and key) is in.

use crate::base::{BaseHeader, BASE_LEN, V1_LEN};
use crate::error::{EncodeError, HeaderError};
use crate::fields::{be16, be32, put16, put32, IsochSettings, Timeval};
use crate::flags::{BaseFlags, LowerFlags};

/// Longest permit key a client may send.
pub const MAX_PERMIT_KEY: usize = 128;

/// Offset of the start block (start time and fq rate).
const START_OFF: usize = 64;
/// Offset of the isochronous settings block.
const ISOCH_OFF: usize = 80;
/// Offset of the congestion-control name's length field (2.2.1).
const CCA_OFF: usize = 112;

/// Which version's layout to write. They differ only when no optional block
/// follows the shared fields: 2.1.8 stops at 60 bytes, 2.2.1 includes the
/// barrier word (64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// iperf 2.1.8.
    V2_1_8,
    /// iperf 2.2.1.
    V2_2_1,
}

impl Layout {
    /// Length of a header with no optional block.
    pub fn base_len(self) -> usize {
        match self {
            Self::V2_1_8 => 60,
            Self::V2_2_1 => BASE_LEN,
        }
    }
}

/// The start block at TCP offset 64: present with `--trip-times`,
/// `--isochronous`, `--txstart-time` or `--fq-rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StartBlock {
    /// Trip-times: the client's report start; txstart: the epoch to start at.
    pub start: Timeval,
    /// `--fq-rate` in bytes per second (both words plain, unlike the rate).
    pub fq_rate: u64,
}

impl StartBlock {
    fn is_zero(self) -> bool {
        self == Self::default()
    }
}

/// The client's TCP test header.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TcpTestHeader {
    /// The shared fields.
    pub base: BaseHeader,
    /// The start block, if the header reaches offset 80.
    pub start: Option<StartBlock>,
    /// The isochronous settings (`--isochronous` with -R/--full-duplex, or
    /// `--burst-period`).
    pub isoch: Option<IsochSettings>,
    /// 2.2.1 `-Z`: the congestion-control name.
    pub cca: Option<Vec<u8>>,
    /// `--permit-key`.
    pub permit_key: Option<Vec<u8>>,
}

/// Progress of a stream decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded<T> {
    /// The bytes so far are a valid start; `need` bytes in all are needed.
    NeedMore {
        /// Total bytes needed from the start of the stream (a lower bound while
        /// the length fields are not yet in).
        need: usize,
    },
    /// Complete.
    Done {
        /// What was decoded.
        value: T,
        /// Bytes it occupied; what follows is test data.
        len: usize,
    },
}

/// How many bytes the header starting with `flags` occupies (its key excluded);
/// 0 when the flags announce no header (a compat `-C` client's data). Without
/// LENBIT (clients before 2.0.14) the size follows from VERSION1/EXTEND, with
/// our own extension's size.
pub fn tcp_header_len(flags: BaseFlags) -> usize {
    if let Some(len) = flags.header_len() {
        return len;
    }
    let mut len = 0;
    if flags.0 & (BaseFlags::VERSION1 | BaseFlags::EXTEND) != 0 {
        len += V1_LEN;
    }
    if flags.0 & (BaseFlags::VERSION2 | BaseFlags::EXTEND) != 0 {
        len += BASE_LEN - V1_LEN;
    }
    len
}

impl TcpTestHeader {
    /// Decodes a header from the first bytes of a connection. `Ok(NeedMore)`
    /// until the announced length (and key) has arrived. A first word with
    /// neither EXTEND nor VERSION1 (test data from a compat client), or with
    /// BOUNCEBACK, is [`HeaderError::NoHeader`] (see [`crate::classify_tcp`]).
    pub fn decode(buf: &[u8]) -> Result<Decoded<Self>, HeaderError> {
        if buf.len() < 4 {
            return Ok(Decoded::NeedMore { need: 4 });
        }
        let flags = BaseFlags(be32(buf, 0));
        let len = tcp_header_len(flags);
        let versioned = flags.0 & (BaseFlags::EXTEND | BaseFlags::VERSION1) != 0;
        if len == 0 || !versioned || flags.has(BaseFlags::BOUNCEBACK) {
            return Err(HeaderError::NoHeader(flags.0));
        }
        let keyed = flags.has(BaseFlags::KEYCHECK);
        let min = V1_LEN + if keyed { 2 } else { 0 };
        if len < min {
            return Err(HeaderError::TooShort { len, min });
        }
        if buf.len() < len {
            return Ok(Decoded::NeedMore { need: len });
        }
        let fixed = if keyed { len - 2 } else { len };
        let mut total = len;
        let mut permit_key = None;
        if keyed {
            let k = be16(buf, fixed) as usize;
            if k == 0 || k > MAX_PERMIT_KEY {
                return Err(HeaderError::PermitKeyLength {
                    len: k,
                    max: MAX_PERMIT_KEY,
                });
            }
            total = len + k;
            if buf.len() < total {
                return Ok(Decoded::NeedMore { need: total });
            }
            permit_key = Some(buf[len..total].to_vec());
        }
        let h = &buf[..fixed];
        let base = BaseHeader::read(h);
        // A zero block inside a longer header is padding before a later block.
        let start = (fixed >= ISOCH_OFF)
            .then(|| StartBlock {
                start: Timeval::read(h, START_OFF),
                fq_rate: u64::from(be32(h, START_OFF + 8))
                    | u64::from(be32(h, START_OFF + 12)) << 32,
            })
            .filter(|s| fixed < CCA_OFF || !s.is_zero());
        let isoch = (fixed >= CCA_OFF)
            .then(|| IsochSettings::read(h, ISOCH_OFF))
            .filter(|s| !s.is_zero());
        let cca = if base.lower.has(LowerFlags::CCA) {
            let room = fixed.saturating_sub(CCA_OFF + 2);
            if fixed < CCA_OFF + 2 {
                return Err(HeaderError::CcaOverrun { len: 0, room });
            }
            let n = be16(h, CCA_OFF) as usize;
            if n > room {
                return Err(HeaderError::CcaOverrun { len: n, room });
            }
            Some(h[CCA_OFF + 2..CCA_OFF + 2 + n].to_vec())
        } else {
            None
        };
        Ok(Decoded::Done {
            value: Self {
                base,
                start,
                isoch,
                cca,
                permit_key,
            },
            len: total,
        })
    }

    /// Encodes the header in a layout. The flags' length bits, KEYCHECK and the
    /// lower CCA bit are set from what the header holds; every other flag is the
    /// caller's. A zero start or isochronous block before a later block is
    /// indistinguishable from an absent one.
    pub fn encode(&self, layout: Layout) -> Result<Vec<u8>, EncodeError> {
        let mut fixed = if self.cca.is_some() || self.isoch.is_some() {
            CCA_OFF
        } else if self.start.is_some() {
            ISOCH_OFF
        } else {
            layout.base_len()
        };
        if let Some(name) = &self.cca {
            fixed += 2 + name.len();
        }
        let key = self.permit_key.as_deref();
        if let Some(k) = key {
            if k.is_empty() || k.len() > MAX_PERMIT_KEY {
                return Err(EncodeError::PermitKeyLength {
                    len: k.len(),
                    max: MAX_PERMIT_KEY,
                });
            }
        }
        let len = fixed + if key.is_some() { 2 } else { 0 };
        if len > 255 {
            return Err(EncodeError::TooLong { len });
        }
        let mut base = self.base;
        base.flags = base.flags.with_header_len(len);
        base.flags = if key.is_some() {
            base.flags.with(BaseFlags::KEYCHECK)
        } else {
            base.flags.without(BaseFlags::KEYCHECK)
        };
        base.lower = if self.cca.is_some() {
            base.lower.with(LowerFlags::CCA)
        } else {
            LowerFlags(base.lower.0 & !LowerFlags::CCA)
        };
        let mut out = vec![0u8; len + key.map_or(0, <[u8]>::len)];
        base.write(&mut out[..fixed.min(BASE_LEN)]);
        if let Some(s) = self.start {
            s.start.write(&mut out, START_OFF);
            put32(&mut out, START_OFF + 8, s.fq_rate as u32);
            put32(&mut out, START_OFF + 12, (s.fq_rate >> 32) as u32);
        }
        if let Some(i) = self.isoch {
            i.write(&mut out, ISOCH_OFF);
        }
        if let Some(name) = &self.cca {
            put16(&mut out, CCA_OFF, name.len() as u16);
            out[CCA_OFF + 2..CCA_OFF + 2 + name.len()].copy_from_slice(name);
        }
        if let Some(k) = key {
            put16(&mut out, fixed, k.len() as u16);
            out[len..].copy_from_slice(k);
        }
        Ok(out)
    }
}
