//! One-way delays as bytes, so that the end that received the data can hand its
//! delays to the end that prints them (the server's to the client). The whole
//! histogram travels, not a summary: summaries of pieces cannot be merged into a
//! test's percentiles, histograms can.
//!
//! Layout (big endian): negative count u64, most negative delay i64 (ns), exact
//! min u64, max u64, sum u128, sum of squares u128, bucket count u32, then per
//! bucket its highest value (ns, as the difference from the previous bucket's)
//! and its count, each an unsigned LEB128 varint: a 150 ms queue's few hundred
//! buckets take a few bytes each, which keeps what the probe connection carries
//! far below 1% of a path. At most [`MAX_WIRE_BUCKETS`] buckets: a wider spread
//! is sent in coarser buckets (neighbours added together at the higher value),
//! which bounds a frame.

use crate::histogram::{Histogram, Parts};
use crate::oneway::OneWay;

/// Buckets one encoding carries at most (60 KB at worst: two 10-byte varints each).
pub const MAX_WIRE_BUCKETS: usize = 3000;
/// Bytes before the buckets.
pub const WIRE_HEADER_LEN: usize = 8 * 4 + 16 * 2 + 4;

/// The bytes of `o`.
pub fn encode(o: &OneWay) -> Vec<u8> {
    let mut p = o.histogram().parts();
    if p.buckets.len() > MAX_WIRE_BUCKETS {
        let k = p.buckets.len().div_ceil(MAX_WIRE_BUCKETS);
        p.buckets = p
            .buckets
            .chunks(k)
            .map(|c| (c[c.len() - 1].0, c.iter().map(|b| b.1).sum()))
            .collect();
    }
    let mut b = Vec::with_capacity(WIRE_HEADER_LEN + 4 * p.buckets.len());
    b.extend_from_slice(&o.negative().to_be_bytes());
    b.extend_from_slice(&o.most_negative_ns().to_be_bytes());
    b.extend_from_slice(&p.min.to_be_bytes());
    b.extend_from_slice(&p.max.to_be_bytes());
    b.extend_from_slice(&p.sum.to_be_bytes());
    b.extend_from_slice(&p.sum_sq.to_be_bytes());
    b.extend_from_slice(&(p.buckets.len() as u32).to_be_bytes());
    let mut prev = 0u64;
    for &(v, n) in &p.buckets {
        put_varint(&mut b, v.wrapping_sub(prev));
        put_varint(&mut b, n);
        prev = v;
    }
    b
}

fn put_varint(b: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        b.push((x as u8) | 0x80);
        x >>= 7;
    }
    b.push(x as u8);
}

fn varint(b: &mut &[u8]) -> Option<u64> {
    let mut x = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first()?;
        *b = rest;
        x |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Some(x);
        }
    }
    None
}

fn take<const N: usize>(b: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = b.split_first_chunk::<N>()?;
    *b = rest;
    Some(*head)
}

/// The delays in `bytes`; `None` when they are not an encoding (short, or a
/// bucket count that disagrees with the length).
pub fn decode(mut bytes: &[u8]) -> Option<OneWay> {
    let b = &mut bytes;
    let negative = u64::from_be_bytes(take(b)?);
    let most_negative = i64::from_be_bytes(take(b)?);
    let min = u64::from_be_bytes(take(b)?);
    let max = u64::from_be_bytes(take(b)?);
    let sum = u128::from_be_bytes(take(b)?);
    let sum_sq = u128::from_be_bytes(take(b)?);
    let n = u32::from_be_bytes(take(b)?) as usize;
    if n > MAX_WIRE_BUCKETS {
        return None;
    }
    let mut buckets = Vec::with_capacity(n);
    let mut prev = 0u64;
    for _ in 0..n {
        prev = prev.wrapping_add(varint(b)?);
        buckets.push((prev, varint(b)?));
    }
    if !b.is_empty() {
        return None;
    }
    let hist = Histogram::from_parts(&Parts {
        buckets,
        min,
        max,
        sum,
        sum_sq,
    });
    Some(OneWay::from_raw(hist, negative, most_negative.min(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_and_negatives_cross_unchanged() {
        let mut o = OneWay::new();
        for (s, r) in [(0, 151_200_000), (10, 9_000_010), (5_000, 4_000)] {
            o.record(s, r);
        }
        let back = decode(&encode(&o)).unwrap();
        assert_eq!(back, o);
        assert_eq!(back.negative(), 1);
        assert_eq!(back.summary().max_ms, 151.2);
        assert_eq!(decode(&encode(&OneWay::new())).unwrap(), OneWay::new());
    }

    #[test]
    fn a_wide_spread_is_sent_coarser_and_keeps_count_and_extremes() {
        let mut o = OneWay::new();
        for i in 0..20_000i64 {
            o.record(0, 1_000 + i * 997);
        }
        let bytes = encode(&o);
        assert!(bytes.len() <= WIRE_HEADER_LEN + 20 * MAX_WIRE_BUCKETS);
        let back = decode(&bytes).unwrap();
        let (a, b) = (o.summary(), back.summary());
        assert_eq!(
            (a.count, a.min_ms, a.max_ms, a.mean_ms),
            (b.count, b.min_ms, b.max_ms, b.mean_ms)
        );
        assert!((a.p50_ms - b.p50_ms).abs() / a.p50_ms < 0.01, "{a:?} {b:?}");
    }

    /// A second of 16 streams through a 150 ms FIFO (delays spread 140-250 ms)
    /// in a few bytes per bucket: 100 ms of it is about a kilobyte.
    #[test]
    fn a_full_queue_s_delays_are_small_on_the_wire() {
        let mut o = OneWay::new();
        for i in 0..900i64 {
            o.record(0, 140_000_000 + (i * 7_919_000) % 110_000_000);
        }
        let n = o.histogram().parts().buckets.len();
        let bytes = encode(&o);
        assert!(
            bytes.len() < WIRE_HEADER_LEN + 5 * n,
            "{} for {n}",
            bytes.len()
        );
        assert_eq!(decode(&bytes).unwrap(), o);
    }

    #[test]
    fn bytes_that_are_no_encoding_are_refused() {
        let good = encode(&OneWay::new());
        assert!(decode(&good[..good.len() - 1]).is_none());
        let mut long = good.clone();
        long.push(0);
        assert!(decode(&long).is_none());
        let mut lying = encode(&OneWay::new());
        let at = WIRE_HEADER_LEN - 4;
        lying[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(decode(&lying).is_none());
    }
}
