//! The flag words of iperf 2's test header, as typed values.
//!
//! iperf 2 has no control channel: what a client asks for travels as bits in the
//! first word of its test header (the base flags) and in two 16-bit words further
//! on (the upper and lower flags). The base word also carries the header's length
//! in bits 1..8. Unknown bits are kept, so a header decodes and encodes unchanged.

/// The 32-bit base flags word: TCP offset 0, UDP payload offset 16.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BaseFlags(pub u32);

impl BaseFlags {
    /// Legacy dual test (`-d`/`-r`) unless [`Self::VERSION2`] is also set; set in
    /// every UDP server report; 2.2.1's `--sync-transfer-id` sets it too.
    pub const VERSION1: u32 = 0x8000_0000;
    /// The extension block (upper/lower flags, version, rate...) is present.
    pub const EXTEND: u32 = 0x4000_0000;
    /// UDP: the per-datagram upper flags (isochronous, no-FIN, L4S...) are valid.
    pub const UDPTESTS: u32 = 0x2000_0000;
    /// TCP: a permit key follows the header.
    pub const KEYCHECK: u32 = 0x1000_0000;
    /// UDP: 64-bit sequence numbers (the high word at datagram offset 12 counts).
    pub const SEQNO64B: u32 = 0x0800_0000;
    /// New-style test: REVERSE/FULLDUPLEX are honoured and VERSION1 is not a
    /// legacy dual test.
    pub const VERSION2: u32 = 0x0400_0000;
    /// TCP: the client waits for the header ack (`-X`).
    pub const PEERDETECT: u32 = 0x0200_0000;
    /// TCP: a bounceback test, whose header has another layout.
    pub const BOUNCEBACK: u32 = 0x0080_0000;
    /// UDP: the small trip-times header (the 16-bit value 2 at payload offset 16).
    pub const SMALLTT: u32 = 0x0002_0000;
    /// Bits 1..8 hold the header length.
    pub const LENBIT: u32 = 0x0001_0000;
    /// The header length field, in bytes after a right shift by one.
    pub const LEN_MASK: u32 = 0x0000_01FE;
    /// With VERSION1: `-d` (both directions at once) rather than `-r` (one after
    /// the other).
    pub const RUN_NOW: u32 = 0x0000_0001;

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u32) -> bool {
        self.0 & mask == mask
    }

    /// The same word with the bits of `mask` set.
    pub fn with(self, mask: u32) -> Self {
        Self(self.0 | mask)
    }

    /// The same word with the bits of `mask` cleared.
    pub fn without(self, mask: u32) -> Self {
        Self(self.0 & !mask)
    }

    /// The header length the word announces, if LENBIT is set.
    pub fn header_len(self) -> Option<usize> {
        self.has(Self::LENBIT)
            .then_some(((self.0 & Self::LEN_MASK) >> 1) as usize)
    }

    /// The word with LENBIT set and the length field holding `len` (0..=255;
    /// larger values are cut to 8 bits, as the field is).
    pub fn with_header_len(self, len: usize) -> Self {
        let field = ((len as u32) & 0xFF) << 1;
        Self((self.0 & !Self::LEN_MASK) | Self::LENBIT | field)
    }

    /// A legacy dual test (`-d` or `-r`): VERSION1 without VERSION2.
    pub fn is_legacy_dual(self) -> bool {
        self.has(Self::VERSION1) && !self.has(Self::VERSION2)
    }
}

/// The 16-bit upper flags word: TCP offset 32, UDP payload offset 48.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UpperFlags(pub u16);

impl UpperFlags {
    /// `--isochronous`.
    pub const ISOCH: u16 = 0x0001;
    /// Layer-2 checks over IPv6.
    pub const L2_IPV6: u16 = 0x0002;
    /// Layer-2 length check (`--l2checks`).
    pub const L2_LEN_CHECK: u16 = 0x0004;
    /// UDP: no FIN handshake at the end (`--no-udp-fin`; full duplex implies it).
    pub const NOUDPFIN: u16 = 0x0008;
    /// `--trip-times`: the start time block is valid.
    pub const TRIPTIME: u16 = 0x0010;
    /// UDP: the isochronous settings block is valid.
    pub const ISOCH_SETTINGS: u16 = 0x0040;
    /// The rate counts packets per second (defined; no client sends it).
    pub const UNITS_PPS: u16 = 0x0080;
    /// A rate was set (defined; no client sends it).
    pub const BWSET: u16 = 0x0100;
    /// `--fq-rate`: the fq rate words are valid.
    pub const FQRATESET: u16 = 0x0200;
    /// `-R`: the server sends.
    pub const REVERSE: u16 = 0x0400;
    /// `--full-duplex`: both send on the one connection.
    pub const FULLDUPLEX: u16 = 0x0800;
    /// `--txstart-time`: the start block holds the epoch to start at.
    pub const EPOCH_START: u16 = 0x1000;
    /// TCP: `--burst-period`.
    pub const PERIODICBURST: u16 = 0x2000;
    /// UDP (2.2.1): L4S. Shares its bit with [`Self::PERIODICBURST`].
    pub const UDPL4S: u16 = 0x2000;
    /// `--tcp-write-prefetch`: the write prefetch word is valid.
    pub const WRITEPREFETCH: u16 = 0x4000;
    /// TCP quick ack.
    pub const TCPQUICKACK: u16 = 0x8000;

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u16) -> bool {
        self.0 & mask == mask
    }

    /// The same word with the bits of `mask` set.
    pub fn with(self, mask: u16) -> Self {
        Self(self.0 | mask)
    }
}

/// The 16-bit lower flags word (2.2.1 only; 2.1.8 sends 0 and ignores it): TCP
/// offset 34, UDP payload offset 50.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LowerFlags(pub u16);

impl LowerFlags {
    /// A congestion-control name follows the header's fixed part (TCP offset 112).
    pub const CCA: u16 = 0x8000;
    /// The barrier wait word (TCP offset 60) is valid.
    pub const BARRIER_TIME: u16 = 0x4000;
    /// Defined as UDP L4S; clients put L4S in the upper word instead.
    pub const UDPL4S: u16 = 0x2000;

    /// Whether every bit of `mask` is set.
    pub fn has(self, mask: u16) -> bool {
        self.0 & mask == mask
    }

    /// The same word with the bits of `mask` set.
    pub fn with(self, mask: u16) -> Self {
        Self(self.0 | mask)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// §3.1's observed first words, bit by bit.
    #[test]
    fn observed_tcp_first_words() {
        let plain_218 = BaseFlags(0x4001_0078);
        assert!(plain_218.has(BaseFlags::EXTEND | BaseFlags::LENBIT));
        assert_eq!(plain_218.header_len(), Some(60));
        assert_eq!(BaseFlags(0x4001_0080).header_len(), Some(64));
        assert_eq!(BaseFlags(0x4001_00A0).header_len(), Some(80));
        let reverse = BaseFlags(0x4401_0080);
        assert!(reverse.has(BaseFlags::VERSION2) && !reverse.is_legacy_dual());
        let dual = BaseFlags(0xC001_0081);
        assert!(dual.is_legacy_dual() && dual.has(BaseFlags::RUN_NOW));
        assert_eq!(dual.header_len(), Some(64));
        let tradeoff = BaseFlags(0xC001_0078);
        assert!(tradeoff.is_legacy_dual() && !tradeoff.has(BaseFlags::RUN_NOW));
        let x = BaseFlags(0x4601_0080);
        assert!(x.has(BaseFlags::PEERDETECT | BaseFlags::VERSION2));
        let key = BaseFlags(0x5001_0084);
        assert!(key.has(BaseFlags::KEYCHECK));
        assert_eq!(key.header_len(), Some(66));
        assert_eq!(BaseFlags(0x4000_0000).header_len(), None);
    }

    /// §7.2's observed UDP words.
    #[test]
    fn observed_udp_words() {
        assert_eq!(BaseFlags(0x4801_00A0).header_len(), Some(80));
        assert_eq!(BaseFlags(0x6801_00E0).header_len(), Some(112));
        assert_eq!(BaseFlags(0x4801_0098).header_len(), Some(76));
        assert_eq!(BaseFlags(0x6801_00D8).header_len(), Some(108));
        assert!(BaseFlags(0x6801_00E0).has(BaseFlags::UDPTESTS | BaseFlags::SEQNO64B));
        assert!(BaseFlags(0xC801_00A1).is_legacy_dual());
        let fd = UpperFlags(0x0808);
        assert!(fd.has(UpperFlags::FULLDUPLEX) && fd.has(UpperFlags::NOUDPFIN));
        assert!(!fd.has(UpperFlags::REVERSE));
        assert!(BaseFlags(0x0002_0000).has(BaseFlags::SMALLTT));
    }

    #[test]
    fn builders_set_and_clear() {
        let f = BaseFlags::default()
            .with(BaseFlags::EXTEND)
            .with_header_len(64);
        assert_eq!(f, BaseFlags(0x4001_0080));
        assert_eq!(f.without(BaseFlags::EXTEND), BaseFlags(0x0001_0080));
        assert_eq!(UpperFlags::default().with(UpperFlags::REVERSE).0, 0x0400);
        assert!(LowerFlags(0xC000).has(LowerFlags::CCA | LowerFlags::BARRIER_TIME));
        assert!(!LowerFlags::default()
            .with(LowerFlags::CCA)
            .has(LowerFlags::UDPL4S));
    }

    proptest! {
        /// Any length writes into bits 1..8 only and reads back.
        #[test]
        fn header_len_round_trips(word in any::<u32>(), len in 0usize..=255) {
            let f = BaseFlags(word).with_header_len(len);
            prop_assert_eq!(f.header_len(), Some(len));
            prop_assert_eq!(f.0 & !(BaseFlags::LEN_MASK | BaseFlags::LENBIT), word & !(BaseFlags::LEN_MASK | BaseFlags::LENBIT));
        }
    }
}
