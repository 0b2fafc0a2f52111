//! C's number readers, as both command lines need them: iperf3 and iperf 2
//! read their options with `atoi`, `strtod` and `strtol`, so a number is read
//! as far as it goes and what follows is the caller's to judge.

/// C whitespace, which `strtol` and `strtod` skip.
const C_SPACE: [char; 6] = [' ', '\t', '\n', '\x0b', '\x0c', '\r'];

/// The longest decimal `strtod` number at the start of `s` (after white
/// space; no hex, infinities or NaN): its value and the byte offset in `s`
/// where it ends; `None` if there is none.
pub(crate) fn decimal_prefix(s: &str) -> Option<(f64, usize)> {
    let start = s.len() - s.trim_start_matches(C_SPACE).len();
    let b = s.as_bytes();
    let mut i = start;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
            digits += 1;
        }
        if digits > 0 {
            i = j;
        }
    }
    if digits == 0 {
        return None;
    }
    // An exponent counts only when digits follow it.
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    let v: f64 = s[start..i].parse().ok()?;
    Some((v, i))
}

/// The longest `strtod` number at the start of `s`, hex (`0x10`), `inf`,
/// `infinity` and `nan` included: its value and where it ends.
pub(crate) fn strtod_prefix(s: &str) -> Option<(f64, usize)> {
    let t = s.trim_start_matches(C_SPACE);
    let mut i = s.len() - t.len();
    let (sign, rest) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    i += t.len() - rest.len();
    let lower = rest
        .get(..rest.len().min(8))
        .unwrap_or(rest)
        .to_ascii_lowercase();
    if lower.starts_with("0x") && rest[2..].starts_with(|c: char| c.is_ascii_hexdigit()) {
        let n = rest[2..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .count();
        let v = u128::from_str_radix(&rest[2..2 + n], 16).map_or(f64::INFINITY, |v| v as f64);
        return Some((sign * v, i + 2 + n));
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
    decimal_prefix(s)
}

/// `strtol(s, NULL, 10)`: white space, a sign, digits; 0 when there are none;
/// saturating at the ends as `strtol` does.
pub(crate) fn atol(s: &str) -> i64 {
    let t = s.trim_start_matches(C_SPACE);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for d in digits.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(d - b'0'));
    }
    if neg {
        v.saturating_neg()
    } else {
        v
    }
}

/// `strtol(s, &end, 0)` (`0x` hex, leading `0` octal, else decimal): the value
/// and whether the whole text was used; `None` when no digit was read.
pub(crate) fn strtol0(s: &str) -> Option<(i64, bool)> {
    let t = s.trim_start_matches(C_SPACE);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"));
    let (radix, digits) = match hex {
        Some(h) if h.starts_with(|c: char| c.is_ascii_hexdigit()) => (16, h),
        _ if t.starts_with('0') => (8, t),
        _ => (10, t),
    };
    let n = digits.chars().take_while(|c| c.is_digit(radix)).count();
    if n == 0 {
        return None;
    }
    let mut v: i64 = 0;
    for c in digits[..n].chars() {
        let d = i64::from(c.to_digit(radix).unwrap_or(0));
        v = v.saturating_mul(i64::from(radix)).saturating_add(d);
    }
    Some((if neg { -v } else { v }, n == digits.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decimal_and_full_strtod() {
        assert_eq!(decimal_prefix("1.5e3x"), Some((1500.0, 5)));
        assert_eq!(decimal_prefix("  -2"), Some((-2.0, 4)));
        assert_eq!(decimal_prefix("1e"), Some((1.0, 1)));
        assert_eq!(decimal_prefix("5."), Some((5.0, 2)));
        assert_eq!(decimal_prefix(".5k"), Some((0.5, 2)));
        assert_eq!(decimal_prefix("."), None);
        assert_eq!(decimal_prefix("0x10"), Some((0.0, 1)));
        assert_eq!(strtod_prefix("0x10k"), Some((16.0, 4)));
        assert_eq!(strtod_prefix("-inf"), Some((f64::NEG_INFINITY, 4)));
        assert_eq!(strtod_prefix(" Infinity"), Some((f64::INFINITY, 9)));
        assert!(strtod_prefix("nan").is_some_and(|(v, n)| v.is_nan() && n == 3));
        assert_eq!(strtod_prefix("abc"), None);
    }

    #[test]
    fn strtol_bases_and_ends() {
        assert_eq!(atol("  42abc"), 42);
        assert_eq!(atol("-7"), -7);
        assert_eq!(atol("x"), 0);
        assert_eq!(atol("99999999999999999999"), i64::MAX);
        assert_eq!(strtol0("0x34"), Some((52, true)));
        assert_eq!(strtol0("064"), Some((52, true)));
        assert_eq!(strtol0("08"), Some((0, false)));
        assert_eq!(strtol0("5x"), Some((5, false)));
        assert_eq!(strtol0("0x"), Some((0, false)));
        assert_eq!(strtol0("-1"), Some((-1, true)));
        assert_eq!(strtol0("abc"), None);
    }

    proptest! {
        #[test]
        fn readers_never_panic(s in "\\PC*") {
            let _ = (decimal_prefix(&s), strtod_prefix(&s), atol(&s), strtol0(&s));
        }

        #[test]
        fn decimal_prefix_reads_what_rust_reads(v in -1e12f64..1e12) {
            let t = format!("{v}");
            prop_assert_eq!(decimal_prefix(&t), Some((v, t.len())));
        }
    }
}
