//! iperf 2's number readers. They are lenient as iperf 2 is: a size is a C
//! floating-point number (`1.5`, `0x10`, `1e3`) read as far as it goes, then
//! one suffix letter (`k m g` powers of 1000, `K M G` powers of 1024) and
//! anything after it ignored, so `-l 12abc` is 12 and `-b abc` is 0.

/// The longest C-`strtod` number at the start of `s` (after white space):
/// its value and the byte offset where it ends; `None` if there is none.
pub(crate) fn strtod_prefix(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    let start = i;
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let lower = rest.to_ascii_lowercase();
    if lower.starts_with("0x") && rest[2..].starts_with(|c: char| c.is_ascii_hexdigit()) {
        let digits: String = rest[2..]
            .chars()
            .take_while(|c| c.is_ascii_hexdigit())
            .collect();
        let v = u128::from_str_radix(&digits, 16).map_or(f64::INFINITY, |v| v as f64);
        return Some((sign * v, i + 2 + digits.len()));
    }
    for (word, v) in [
        ("infinity", f64::INFINITY),
        ("inf", f64::INFINITY),
        ("nan", f64::NAN),
    ] {
        if lower.starts_with(word) {
            return Some((sign * v, i + word.len()));
        }
    }
    let mut j = i;
    let mut digits = 0;
    while j < b.len() && b[j].is_ascii_digit() {
        j += 1;
        digits += 1;
    }
    if j < b.len() && b[j] == b'.' {
        j += 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    // An exponent counts only with at least one digit.
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        let mut k = j + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        if k < b.len() && b[k].is_ascii_digit() {
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            j = k;
        }
    }
    let v: f64 = s[start..j].trim_start_matches('+').parse().ok()?;
    Some((v, j))
}

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

/// C's `atoi`: leading white space, a sign, digits; anything else ends it.
pub(crate) fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    let v = digits
        .parse::<i64>()
        .unwrap_or(if digits.is_empty() { 0 } else { i64::MAX });
    if neg {
        -v
    } else {
        v
    }
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

/// The TOS names iperf 2 accepts for `-S`, and their byte values.
pub(crate) static TOS_NAMES: &[(&str, u8)] = &[
    ("af11", 0x28),
    ("af12", 0x30),
    ("af13", 0x38),
    ("af21", 0x48),
    ("af22", 0x50),
    ("af23", 0x58),
    ("af31", 0x68),
    ("af32", 0x70),
    ("af33", 0x78),
    ("af41", 0x88),
    ("af42", 0x90),
    ("af43", 0x98),
    ("cs0", 0x00),
    ("cs1", 0x20),
    ("cs2", 0x40),
    ("cs3", 0x60),
    ("cs4", 0x80),
    ("cs5", 0xa0),
    ("cs6", 0xc0),
    ("cs7", 0xe0),
    ("ef", 0xb8),
    // These three are what iperf 2.2.1 asks the kernel for, measured.
    ("le", 0x01),
    ("nqb", 0x05),
    ("nqb2", 0x2d),
    ("ac_be", 0x00),
    ("ac_bk", 0x20),
    ("ac_vi", 0xa0),
    ("ac_vo", 0xc0),
    ("lowdelay", 0x10),
    ("throughput", 0x08),
    ("reliability", 0x04),
];

/// `-S`: a name (any case) or a C `strtol` base-0 number (`0x` hex, `0`
/// octal) from 0 to 255, the whole string; `None` if it is neither.
pub(crate) fn tos(s: &str) -> Option<u8> {
    if let Some((_, v)) = TOS_NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
        return Some(*v);
    }
    let t = s.trim_start();
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let v = i64::from_str_radix(digits, radix).ok()?;
    let v = if neg { -v } else { v };
    u8::try_from(v).ok()
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
