//! The encodings of single header fields: the amount (time or bytes), the 64-bit
//! rate split over two words, peer versions, wall-clock stamps and the
//! (integer, millionths) pairs that carry statistics.
//!
//! Every field is big-endian. Each type here owns its wire form, so the header
//! codecs only place words at offsets.

use std::fmt;
use std::time::Duration;

/// Reads the big-endian word at `off`; the caller has checked the length.
pub(crate) fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}

/// Reads the big-endian 16-bit field at `off`; the caller has checked the length.
pub(crate) fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}

/// Writes `v` big-endian at `off`; the caller has checked the length.
pub(crate) fn put32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// Writes `v` big-endian at `off`; the caller has checked the length.
pub(crate) fn put16(b: &mut [u8], off: usize, v: u16) {
    b[off..off + 2].copy_from_slice(&v.to_be_bytes());
}

/// How much a test runs for: the signed word at TCP offset 20 / UDP 36.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Amount {
    /// `-t`: a count of 10 ms ticks (1..=2^31), sent negated.
    Ticks(u32),
    /// `-n`: a byte count below 2^31 (the wire keeps 31 bits).
    Bytes(u32),
}

impl Amount {
    /// Largest tick count the negated word can carry.
    pub const MAX_TICKS: u32 = 0x8000_0000;

    /// A duration in whole 10 ms ticks (cut down), at least 1 so that the word stays
    /// in time mode, at most [`Self::MAX_TICKS`].
    pub fn time(d: Duration) -> Self {
        let ticks = (d.as_millis() / 10).clamp(1, u128::from(Self::MAX_TICKS));
        Self::Ticks(ticks as u32)
    }

    /// A byte count cut to 31 bits, as clients do (`-n 3G` travels as 1 GiB).
    pub fn bytes(n: u64) -> Self {
        Self::Bytes((n & 0x7FFF_FFFF) as u32)
    }

    /// Reads the word: high bit set means time.
    pub fn from_word(w: u32) -> Self {
        if w & 0x8000_0000 != 0 {
            Self::Ticks(w.wrapping_neg())
        } else {
            Self::Bytes(w)
        }
    }

    /// The word on the wire.
    pub fn to_word(self) -> u32 {
        match self {
            Self::Ticks(t) => t.clamp(1, Self::MAX_TICKS).wrapping_neg(),
            Self::Bytes(n) => n & 0x7FFF_FFFF,
        }
    }

    /// The duration of a time-mode amount.
    pub fn duration(self) -> Option<Duration> {
        match self {
            Self::Ticks(t) => Some(Duration::from_millis(u64::from(t) * 10)),
            Self::Bytes(_) => None,
        }
    }
}

/// Largest rate the two words can carry: the high word travels shifted left by 8.
pub const MAX_RATE: u64 = (1 << 56) - 1;

/// Splits a rate into (lRate, uRate); rates above [`MAX_RATE`] are clamped.
pub fn rate_to_words(rate: u64) -> (u32, u32) {
    let r = rate.min(MAX_RATE);
    (r as u32, ((r >> 32) as u32) << 8)
}

/// Joins (lRate, uRate) into a rate; the low 8 bits of uRate are not part of it.
pub fn rate_from_words(low: u32, high: u32) -> u64 {
    u64::from(low) | (u64::from(high >> 8) << 32)
}

/// A peer's version as carried in two words: `major<<16 | minor` and
/// `patch<<16 | kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Version {
    /// Major number.
    pub major: u16,
    /// Minor number.
    pub minor: u16,
    /// Patch number.
    pub patch: u16,
    /// Build kind; its low nibble names it (see [`Version::kind_suffix`]).
    pub kind: u16,
}

/// What 2.1.8 sends: 2.1.8, a release.
pub const VERSION_2_1_8: Version = Version {
    major: 2,
    minor: 1,
    patch: 8,
    kind: 3,
};

/// What 2.2.1 sends: 2.2.1 with kind 1, which peers print as "2.2.1-rc".
pub const VERSION_2_2_1: Version = Version {
    major: 2,
    minor: 2,
    patch: 1,
    kind: 1,
};

impl Version {
    /// Reads the two words.
    pub fn from_words(u: u32, l: u32) -> Self {
        Self {
            major: (u >> 16) as u16,
            minor: u as u16,
            patch: (l >> 16) as u16,
            kind: l as u16,
        }
    }

    /// The two words.
    pub fn to_words(self) -> (u32, u32) {
        (
            u32::from(self.major) << 16 | u32::from(self.minor),
            u32::from(self.patch) << 16 | u32::from(self.kind),
        )
    }

    /// The suffix printed after the numbers, from the kind's low nibble: release
    /// has none and 1 is "-rc" (both seen from real peers); the other values are
    /// named as the kinds are defined.
    pub fn kind_suffix(self) -> &'static str {
        match self.kind & 0xF {
            0 => "-dev",
            1 => "-rc",
            2 => "-rc2",
            3 => "",
            4 => "-private",
            5 => "-master",
            _ => "-unknown",
        }
    }

    /// Whether nothing was sent (both words zero).
    pub fn is_zero(self) -> bool {
        self == Self::default()
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{}.{}{}",
            self.major,
            self.minor,
            self.patch,
            self.kind_suffix()
        )
    }
}

/// A wall-clock stamp as two words: seconds and microseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Timeval {
    /// Seconds.
    pub sec: u32,
    /// Microseconds; a peer may send any value.
    pub usec: u32,
}

impl Timeval {
    /// The stamp for a time since the epoch (seconds wrap at 2^32).
    pub fn from_since_epoch(d: Duration) -> Self {
        Self {
            sec: d.as_secs() as u32,
            usec: d.subsec_micros(),
        }
    }

    /// The stamp as microseconds since the epoch (no overflow: 2^32 s · 10^6 fits).
    pub fn as_micros(self) -> i64 {
        i64::from(self.sec) * 1_000_000 + i64::from(self.usec)
    }

    /// Reads the stamp at `off`.
    pub(crate) fn read(b: &[u8], off: usize) -> Self {
        Self {
            sec: be32(b, off),
            usec: be32(b, off + 4),
        }
    }

    /// Writes the stamp at `off`.
    pub(crate) fn write(self, b: &mut [u8], off: usize) {
        put32(b, off, self.sec);
        put32(b, off + 4, self.usec);
    }

    /// Whether the stamp lies within `limit_s` seconds of `now`, either side.
    pub fn within(self, now: Self, limit_s: i64) -> bool {
        (self.as_micros() - now.as_micros()).abs() <= limit_s * 1_000_000
    }
}

/// A statistic as an (integer part, millionths) pair of signed words, as in the
/// server report and the isochronous settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatPair {
    /// Integer part, truncated toward zero.
    pub int: i32,
    /// Millionths of the fractional part, same sign as the value.
    pub frac: i32,
}

impl StatPair {
    /// The pair for a value (truncated to whole millionths; out-of-range and NaN
    /// values saturate as Rust's float casts do).
    pub fn from_f64(x: f64) -> Self {
        let int = x.trunc();
        Self {
            int: int as i32,
            frac: ((x - int) * 1e6) as i32,
        }
    }

    /// The value, reading both words as signed (a negative transit decodes as
    /// negative, not as a huge number).
    pub fn to_f64(self) -> f64 {
        f64::from(self.int) + f64::from(self.frac) / 1e6
    }

    /// Reads the pair at `off`.
    pub(crate) fn read(b: &[u8], off: usize) -> Self {
        Self {
            int: be32(b, off) as i32,
            frac: be32(b, off + 4) as i32,
        }
    }

    /// Writes the pair at `off`.
    pub(crate) fn write(self, b: &mut [u8], off: usize) {
        put32(b, off, self.int as u32);
        put32(b, off + 4, self.frac as u32);
    }
}

/// The isochronous settings block (32 bytes): frames per second, mean and
/// variance of the frame size, and the gap between bursts, each a [`StatPair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IsochSettings {
    /// Frames per second.
    pub fps: StatPair,
    /// Mean frame size (with `--burst-period`: the burst size in `int`).
    pub mean: StatPair,
    /// Frame size variance.
    pub variance: StatPair,
    /// Gap between bursts.
    pub burst_ipg: StatPair,
}

impl IsochSettings {
    /// Size of the block.
    pub const LEN: usize = 32;

    pub(crate) fn read(b: &[u8], off: usize) -> Self {
        Self {
            fps: StatPair::read(b, off),
            mean: StatPair::read(b, off + 8),
            variance: StatPair::read(b, off + 16),
            burst_ipg: StatPair::read(b, off + 24),
        }
    }

    pub(crate) fn write(self, b: &mut [u8], off: usize) {
        self.fps.write(b, off);
        self.mean.write(b, off + 8);
        self.variance.write(b, off + 16);
        self.burst_ipg.write(b, off + 24);
    }

    /// Whether every word is zero (what a header holds when the block is unused).
    pub fn is_zero(self) -> bool {
        self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// §2.3: `-t 1` and `-t 0.5`, `-n 1M`, `-n 3G`.
    #[test]
    fn amounts_as_observed() {
        assert_eq!(Amount::time(Duration::from_secs(1)).to_word(), 0xFFFF_FF9C);
        assert_eq!(
            Amount::time(Duration::from_millis(500)).to_word(),
            0xFFFF_FFCE
        );
        assert_eq!(Amount::bytes(1 << 20).to_word(), 0x0010_0000);
        assert_eq!(Amount::bytes(3 << 30).to_word(), 0x4000_0000);
        assert_eq!(
            Amount::from_word(0xFFFF_FF9C).duration(),
            Some(Duration::from_secs(1))
        );
        assert_eq!(Amount::from_word(0x0010_0000), Amount::Bytes(1 << 20));
        assert_eq!(Amount::from_word(0x8000_0000), Amount::Ticks(1 << 31));
        // Below one tick still means time, not a zero byte count.
        assert_eq!(Amount::time(Duration::from_millis(3)), Amount::Ticks(1));
        assert_eq!(Amount::time(Duration::MAX), Amount::Ticks(1 << 31));
    }

    /// §2.3: `-b 10G` and 100pps·1470 bytes.
    #[test]
    fn rates_as_observed() {
        assert_eq!(rate_to_words(10 << 30), (0x8000_0000, 0x0000_0200));
        assert_eq!(rate_from_words(0x8000_0000, 0x0000_0200), 10 << 30);
        assert_eq!(rate_to_words(100 * 8 * 1470), (0x0011_F1C0, 0));
        assert_eq!(rate_from_words(1_048_576, 0), 1 << 20);
        assert_eq!(rate_to_words(u64::MAX), rate_to_words(MAX_RATE));
        // The low byte of uRate is outside the rate.
        assert_eq!(rate_from_words(5, 0xFF), 5);
    }

    #[test]
    fn versions_as_observed() {
        assert_eq!(VERSION_2_1_8.to_words(), (0x0002_0001, 0x0008_0003));
        assert_eq!(VERSION_2_2_1.to_words(), (0x0002_0002, 0x0001_0001));
        assert_eq!(VERSION_2_1_8.to_string(), "2.1.8");
        assert_eq!(VERSION_2_2_1.to_string(), "2.2.1-rc");
        assert_eq!(Version::from_words(0x0002_0001, 0x0008_0003), VERSION_2_1_8);
        assert!(Version::from_words(0, 0).is_zero());
        assert_eq!(Version::from_words(0, 0xF).kind_suffix(), "-unknown");
    }

    /// §2.3 and §11: a negative vd (0xFFFFFFF6) and a mean of 5 µs.
    #[test]
    fn stat_pairs_are_signed() {
        let vd = StatPair { int: 0, frac: -10 };
        let mut b = [0u8; 8];
        vd.write(&mut b, 0);
        assert_eq!(b, [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xF6]);
        assert_eq!(StatPair::read(&b, 0).to_f64(), -0.00001);
        assert_eq!(StatPair::from_f64(0.000005), StatPair { int: 0, frac: 5 });
        assert_eq!(
            StatPair::from_f64(-1.25),
            StatPair {
                int: -1,
                frac: -250000
            }
        );
        assert_eq!(StatPair::from_f64(f64::NAN), StatPair::default());
    }

    #[test]
    fn timeval_window() {
        let now = Timeval {
            sec: 1_000_000,
            usec: 0,
        };
        assert!(Timeval {
            sec: 1_000_600,
            usec: 0
        }
        .within(now, 600));
        assert!(!Timeval {
            sec: 1_000_600,
            usec: 1
        }
        .within(now, 600));
        assert!(!Timeval {
            sec: 0x3031_3233,
            usec: 0
        }
        .within(now, 3600));
        let t = Timeval::from_since_epoch(Duration::from_micros(1_700_000_000_123_456));
        assert_eq!((t.sec, t.usec), (1_700_000_000, 123_456));
    }

    proptest! {
        #[test]
        fn amount_words_round_trip(w in any::<u32>()) {
            let a = Amount::from_word(w);
            prop_assert_eq!(a.to_word(), w);
            prop_assert_eq!(Amount::from_word(a.to_word()), a);
        }

        #[test]
        fn rates_round_trip(r in 0..=MAX_RATE) {
            let (l, u) = rate_to_words(r);
            prop_assert_eq!(rate_from_words(l, u), r);
            prop_assert_eq!(u & 0xFF, 0);
        }

        #[test]
        fn version_words_round_trip(u in any::<u32>(), l in any::<u32>()) {
            prop_assert_eq!(Version::from_words(u, l).to_words(), (u, l));
        }

        #[test]
        fn stat_pairs_round_trip(int in any::<i32>(), frac in -999_999i32..=999_999) {
            let frac = if int < 0 { -frac.abs() } else if int > 0 { frac.abs() } else { frac };
            // Within one millionth: a double cannot always hold int + frac/10^6.
            let p = StatPair { int, frac };
            let q = StatPair::from_f64(p.to_f64());
            prop_assert_eq!(q.int, p.int);
            prop_assert!((q.frac - p.frac).abs() <= 1, "{:?} -> {:?}", p, q);
        }
    }
}
