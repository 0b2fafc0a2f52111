//! iperf 2's number readers. They are lenient as iperf 2 is: a size is a C
//! floating-point number (`1.5`, `0x10`, `1e3`) read as far as it goes, then
//! one suffix letter (`k m g` powers of 1000, `K M G` powers of 1024) and
//! anything after it ignored, so `-l 12abc` is 12 and `-b abc` is 0.

pub(crate) use crate::cnum::strtod_prefix;

/// iperf 2's `byte_atoi`/`byte_atof`: a number and an optional suffix letter;
/// no number reads as 0.
pub(crate) fn size_f64(s: &str) -> f64 {
    let Some((v, end)) = strtod_prefix(s) else {
        return 0.0;
    };
    let mult = match s[end..].chars().next() {
        Some('k') => 1e3,
        Some('m') => 1e6,
        Some('g') => 1e9,
        Some('K') => 1024.0,
        Some('M') => 1024.0 * 1024.0,
        Some('G') => 1024.0 * 1024.0 * 1024.0,
        _ => 1.0,
    };
    v * mult
}

/// [`size_f64`] as an integer, truncated toward zero (C's conversion),
/// saturating at the ends.
pub(crate) fn size(s: &str) -> i64 {
    let v = size_f64(s);
    if v.is_nan() {
        0
    } else {
        v as i64
    }
}

/// `-b`: a rate in bits/s, or packets/s when a `p` (or `P`) follows the
/// number (`2000pps`, `1kpps`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RateArg {
    Bits(i64),
    Packets(i64),
}

/// Reads `-b`.
pub(crate) fn rate(s: &str) -> RateArg {
    for p in ['p', 'P'] {
        if let Some(at) = s.find(p) {
            // As iperf 2's tokenizer: leading p's are skipped, the number is
            // what comes before the next one.
            let tail = s[..at].is_empty();
            let num = if tail {
                let t = s.trim_start_matches(p);
                t.split(p).next().unwrap_or("")
            } else {
                &s[..at]
            };
            return RateArg::Packets(size(num));
        }
    }
    RateArg::Bits(size(s))
}

/// `--isochronous[=fps:mean,stdev]`: frames per second before the colon,
/// then the mean rate and its deviation with iperf 2's suffixes; what is
/// left out keeps its default (60 frames of 20 Mbit/s, no deviation).
pub(crate) fn isochronous(s: &str) -> rperf3_app::iperf2::config::IsochSpec {
    let mut spec = rperf3_app::iperf2::config::IsochSpec::default();
    let (fps, rates) = match s.split_once(':') {
        Some((f, r)) => (Some(f), r),
        None if s.is_empty() => (None, ""),
        None => (Some(s), ""),
    };
    if let Some(f) = fps.and_then(strtod_whole) {
        spec.fps = f;
    }
    let mut r = rates.splitn(2, ',');
    if let Some(m) = r.next().filter(|m| !m.is_empty()) {
        spec.mean_bps = size_f64(m);
    }
    if let Some(d) = r.next().filter(|d| !d.is_empty()) {
        spec.stdev_bps = size_f64(d);
    }
    spec
}

/// `--histograms[=width,bins]`: a whole width in microseconds (`u`, or no
/// suffix, as 2.2.1's client reads it) or milliseconds (`m`), then the bins.
/// What is left out, or is no whole positive number, keeps its default
/// (100 µs, 100,000 bins); 2.2.1 takes some of those to zero-width bins.
pub(crate) fn histograms(s: &str) -> rperf3_app::iperf2::config::HistBins2 {
    let mut b = rperf3_app::iperf2::config::HistBins2::default();
    let (w, n) = s.split_once(',').unwrap_or((s, ""));
    let (num, scale) = match w.strip_suffix('m') {
        Some(n) => (n, 1_000_000),
        None => (w.strip_suffix('u').unwrap_or(w), 1_000),
    };
    if let Ok(v) = num.parse::<u64>() {
        if v > 0 {
            b.bin_ns = v.saturating_mul(scale);
        }
    }
    if let Ok(v) = n.parse::<u32>() {
        if v > 0 {
            b.bins = v;
        }
    }
    b
}

/// C's `atoi`, as wide as iperf 2's callers need (they clamp it).
pub(crate) fn atoi(s: &str) -> i64 {
    crate::cnum::atol(s)
}

/// A whole-string C `strtod` (for `-t` and `-i`): `None` when anything but
/// the number is there. An empty string reads as 0, as `strtod` leaves it.
pub(crate) fn strtod_whole(s: &str) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    match strtod_prefix(s) {
        Some((v, end)) if end == s.len() => Some(v),
        _ => None,
    }
}

/// The names iperf 2 adds to the shared DSCP table for `-S`, as TOS bytes.
const TOS_EXTRA: [(&str, u8); 7] = [
    // These three are what iperf 2.2.1 asks the kernel for, measured.
    ("le", 0x01),
    ("nqb", 0x05),
    ("nqb2", 0x2d),
    ("ac_be", 0x00),
    ("ac_bk", 0x20),
    ("ac_vi", 0xa0),
    ("ac_vo", 0xc0),
];

/// Every name `-S` accepts, in iperf 2.2.1's order, with its TOS byte.
pub(crate) fn tos_names() -> impl Iterator<Item = (&'static str, u8)> {
    let dscp = crate::qos::CODEPOINTS.iter().map(|&(n, v)| (n, v << 2));
    dscp.chain(TOS_EXTRA).chain(crate::qos::TOS_NAMES)
}

/// `-S`: a name (any case) or a C `strtol` base-0 number (`0x` hex, `0`
/// octal) from 0 to 255, the whole string; `None` if it is neither.
pub(crate) fn tos(s: &str) -> Option<u8> {
    if let Some((_, v)) = tos_names().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
        return Some(v);
    }
    match crate::cnum::strtol0(s)? {
        (v, true) => u8::try_from(v).ok(),
        _ => None,
    }
}

/// `-B host[:port][%dev]`, as iperf 2 splits it: the device after `%`; with
/// IPv6 (`-V`) a port only after a bracketed address (`[::1]:5001`), else
/// after the first `:`.
pub(crate) fn split_bind(s: &str, v6: bool) -> (String, Option<String>, Option<String>) {
    let (addr, dev) = match s.split_once('%') {
        Some((a, d)) if !d.is_empty() => (a, Some(d.split('%').next().unwrap_or(d).to_string())),
        Some((a, _)) => (a, None),
        None => (s, None),
    };
    if let Some(inner) = addr.strip_prefix('[') {
        let (host, after) = inner.split_once(']').unwrap_or((inner, ""));
        let port = after
            .trim_start_matches(':')
            .split(':')
            .next()
            .filter(|p| !p.is_empty());
        return (host.to_string(), port.map(str::to_string), dev);
    }
    // A bare IPv6 address has no port (iperf 2 would cut it at the first `:`).
    if v6 || addr.matches(':').count() > 1 {
        return (addr.to_string(), None, dev);
    }
    let mut parts = addr.split(':').filter(|p| !p.is_empty());
    let host = parts.next().unwrap_or("").to_string();
    (host, parts.next().map(str::to_string), dev)
}
