//! The test header in a UDP datagram's payload (§7.2) and the small trip-times
//! header used when datagrams are too short for it (§7.3).
//!
//! Every datagram of a test repeats the same header bytes after its 16-byte
//! datagram header; a server parses only a flow's first datagram. The
//! isochronous frame block sits at offset 76 in 2.1.8 and 80 in 2.2.1; the
//! announced length tells them apart (2.1.8 sends 76, 108 or 140).
//!
//! A datagram may be shorter than the header (`-l 64` sends 64-byte datagrams
//! against an 80-byte header, and real servers run the test): fields past the
//! datagram's end read as zero or absent, and encoders write what fits.

use crate::base::{BaseHeader, BASE_LEN, V1_LEN};
use crate::error::HeaderError;
use crate::fields::{be32, put16, put32, IsochSettings, Timeval};
use crate::flags::{BaseFlags, UpperFlags};
use crate::tcp_header::{tcp_header_len, Layout};
use crate::udp_datagram::DATAGRAM_HEADER_LEN;

const H: usize = DATAGRAM_HEADER_LEN;
/// Offset of the start time (trip-times, txstart).
const START_OFF: usize = 112;
/// Offset of the fq rate.
const FQ_OFF: usize = 120;
/// Offset of the isochronous settings.
const SETTINGS_OFF: usize = 128;
/// Where test data starts after a complete header.
pub const UDP_PATTERN_OFF: usize = 160;

/// The per-frame isochronous block (32 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IsochFrame {
    /// Frame period in microseconds.
    pub period_us: u32,
    /// Start of the isochronous schedule.
    pub start: Timeval,
    /// Previous frame id.
    pub prev_frame_id: u32,
    /// This frame's id.
    pub frame_id: u32,
    /// Bytes in this burst.
    pub burst_size: u32,
    /// Bytes of the burst still to come.
    pub remaining: u32,
}

impl IsochFrame {
    const LEN: usize = 32;

    fn read(b: &[u8], off: usize) -> Self {
        Self {
            period_us: be32(b, off),
            start: Timeval::read(b, off + 4),
            prev_frame_id: be32(b, off + 12),
            frame_id: be32(b, off + 16),
            burst_size: be32(b, off + 20),
            remaining: be32(b, off + 24),
        }
    }

    fn write(self, b: &mut [u8], off: usize) {
        put32(b, off, self.period_us);
        self.start.write(b, off + 4);
        put32(b, off + 12, self.prev_frame_id);
        put32(b, off + 16, self.frame_id);
        put32(b, off + 20, self.burst_size);
        put32(b, off + 24, self.remaining);
    }
}

/// Where the isochronous block sits, by layout.
fn isoch_off(layout: Layout) -> usize {
    match layout {
        Layout::V2_1_8 => 76,
        Layout::V2_2_1 => 80,
    }
}

/// The layout an announced UDP header length belongs to: 2.1.8's lengths are
/// 76, 108 and 140 (all 12 modulo 32), 2.2.1's 80, 112 and 144.
pub fn udp_layout_of_len(len: usize) -> Layout {
    if len % 32 == 12 {
        Layout::V2_1_8
    } else {
        Layout::V2_2_1
    }
}

/// The test header carried by UDP datagrams (offsets are from the payload's
/// first byte, the datagram header included).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UdpTestHeader {
    /// The shared fields, at 16.
    pub base: BaseHeader,
    /// `--isochronous`: the frame block (read when the upper ISOCH flag is set).
    pub isoch: Option<IsochFrame>,
    /// The start time at 112 (read when TRIPTIME or EPOCH_START is set):
    /// trip-times → the first datagram's send time; txstart → the epoch.
    pub start: Option<Timeval>,
    /// `--fq-rate` in bytes per second at 120 (read with FQRATESET).
    pub fq_rate: Option<u64>,
    /// Isochronous settings at 128 (read with ISOCH_SETTINGS).
    pub settings: Option<IsochSettings>,
}

impl UdpTestHeader {
    /// The length the header announces for a layout: datagram header, the v1
    /// fields, the extension (36 or 40 bytes), the isochronous block when any
    /// of it, a start time or an fq rate is present, and the settings. It stops
    /// short of the start time and fq rate even when they are written.
    pub fn announced_len(&self, layout: Layout) -> usize {
        let mut len = isoch_off(layout);
        if self.isoch.is_some() || self.start.is_some() || self.fq_rate.is_some() {
            len += IsochFrame::LEN;
        }
        if self.settings.is_some() {
            len += IsochSettings::LEN;
        }
        len
    }

    /// How far the header's bytes reach in a datagram.
    pub fn extent(&self, layout: Layout) -> usize {
        let mut end = self.announced_len(layout);
        if self.start.is_some() {
            end = end.max(START_OFF + 8);
        }
        if self.fq_rate.is_some() {
            end = end.max(FQ_OFF + 8);
        }
        if self.settings.is_some() {
            end = end.max(UDP_PATTERN_OFF);
        }
        end
    }

    /// Writes the header into a datagram from offset 16, as far as the datagram
    /// reaches, and returns [`Self::extent`]. The length bits and the upper
    /// ISOCH, FQRATESET and ISOCH_SETTINGS flags are set from what the header
    /// holds; a start time needs the caller's TRIPTIME or EPOCH_START to be read
    /// back.
    pub fn encode(&self, layout: Layout, datagram: &mut [u8]) -> usize {
        let end = self.extent(layout);
        let mut w = vec![0u8; end];
        let mut base = self.base;
        base.flags = base.flags.with_header_len(self.announced_len(layout));
        let mut upper = base.upper.0 & !(UpperFlags::ISOCH | UpperFlags::FQRATESET);
        upper &= !UpperFlags::ISOCH_SETTINGS;
        if self.isoch.is_some() {
            upper |= UpperFlags::ISOCH;
        }
        if self.fq_rate.is_some() {
            upper |= UpperFlags::FQRATESET;
        }
        if self.settings.is_some() {
            upper |= UpperFlags::ISOCH_SETTINGS;
        }
        base.upper = UpperFlags(upper);
        let base_end = H + if layout == Layout::V2_1_8 {
            60
        } else {
            BASE_LEN
        };
        base.write(&mut w[H..base_end]);
        if let Some(i) = self.isoch {
            i.write(&mut w, isoch_off(layout));
        }
        if let Some(s) = self.start {
            s.write(&mut w, START_OFF);
        }
        if let Some(r) = self.fq_rate {
            put32(&mut w, FQ_OFF, r as u32);
            put32(&mut w, FQ_OFF + 4, (r >> 32) as u32);
        }
        if let Some(s) = self.settings {
            s.write(&mut w, SETTINGS_OFF);
        }
        let n = datagram.len().min(end);
        if n > H {
            datagram[H..n].copy_from_slice(&w[H..n]);
        }
        end
    }

    /// Reads the header of a flow's first datagram. It must hold at least the
    /// datagram header and the v1 fields (40 bytes); the announced length must
    /// cover them.
    pub fn decode(datagram: &[u8]) -> Result<Self, HeaderError> {
        let need = H + V1_LEN;
        if datagram.len() < need {
            return Err(HeaderError::Truncated {
                have: datagram.len(),
                need,
            });
        }
        let flags = BaseFlags(be32(datagram, H));
        let len = match flags.header_len() {
            Some(l) => l,
            None => match tcp_header_len(flags) {
                0 => return Err(HeaderError::NoHeader(flags.0)),
                l => H + l,
            },
        };
        if len < need {
            return Err(HeaderError::TooShort { len, min: need });
        }
        let layout = udp_layout_of_len(len);
        let base_len = if layout == Layout::V2_1_8 {
            60
        } else {
            BASE_LEN
        };
        let end = datagram.len().min(len).min(H + base_len);
        let base = BaseHeader::read(&datagram[H..end]);
        let have = |off: usize, n: usize| datagram.len() >= off + n;
        let io = isoch_off(layout);
        let isoch = (base.upper.has(UpperFlags::ISOCH)
            && len >= io + IsochFrame::LEN
            && have(io, IsochFrame::LEN))
        .then(|| IsochFrame::read(datagram, io));
        let timed = base.upper.0 & (UpperFlags::TRIPTIME | UpperFlags::EPOCH_START) != 0;
        let start = (timed && have(START_OFF, 8)).then(|| Timeval::read(datagram, START_OFF));
        let fq_rate = (base.upper.has(UpperFlags::FQRATESET) && have(FQ_OFF, 8)).then(|| {
            u64::from(be32(datagram, FQ_OFF)) | u64::from(be32(datagram, FQ_OFF + 4)) << 32
        });
        let settings = (base.upper.has(UpperFlags::ISOCH_SETTINGS)
            && have(SETTINGS_OFF, IsochSettings::LEN))
        .then(|| IsochSettings::read(datagram, SETTINGS_OFF));
        Ok(Self {
            base,
            isoch,
            start,
            fq_rate,
            settings,
        })
    }
}

/// The small trip-times header: `-u --trip-times` with datagrams too short for
/// the full header. Offset 16 holds the 16-bit value 2 (no SEQNO64B); 2.2.1
/// then has a start time at 20 (zero unless `--txstart-time`), 2.1.8 resumes
/// its pattern at 20.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SmallTripTimes {
    /// The words at 20 and 24 as 2.2.1 means them. From a 2.1.8 client they are
    /// pattern bytes, so a server checks them against its clock before use.
    pub txstart: Timeval,
}

/// The 16-bit marker of a small trip-times header.
pub const SMALL_TT_MARKER: u16 = 0x0002;

impl SmallTripTimes {
    /// Whether a datagram carries the small header: the marker alone in the word
    /// at 16. Stricter than testing the SMALLTT bit, which compat (`-C`) pattern
    /// bytes ("6789") also set.
    pub fn is_small(datagram: &[u8]) -> bool {
        datagram.len() >= H + 4 && be32(datagram, H) == u32::from(SMALL_TT_MARKER) << 16
    }

    /// Reads the header; `None` if the datagram does not carry it. A datagram
    /// that ends before 28 bytes has a zero start.
    pub fn decode(datagram: &[u8]) -> Option<Self> {
        if !Self::is_small(datagram) {
            return None;
        }
        let txstart = if datagram.len() >= H + 12 {
            Timeval::read(datagram, H + 4)
        } else {
            Timeval::default()
        };
        Some(Self { txstart })
    }

    /// Writes the marker (and, for 2.2.1, the start time) after the datagram
    /// header, as far as the datagram reaches; returns where data resumes (20
    /// for 2.1.8, 28 for 2.2.1).
    pub fn encode(&self, layout: Layout, datagram: &mut [u8]) -> usize {
        let end = match layout {
            Layout::V2_1_8 => H + 4,
            Layout::V2_2_1 => H + 12,
        };
        let mut w = [0u8; H + 12];
        put16(&mut w, H, SMALL_TT_MARKER);
        if layout == Layout::V2_2_1 {
            self.txstart.write(&mut w, H + 4);
        }
        let n = datagram.len().min(end);
        if n > H {
            datagram[H..n].copy_from_slice(&w[H..n]);
        }
        end
    }
}
