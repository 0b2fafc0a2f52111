//! iperf3's number syntax on the command line.
//!
//! Sizes (`-n -k -l -w`, and `--connect-timeout`, which iperf3 reads the same way)
//! take an optional k/m/g/t suffix, either case, as powers of 1024; rates (`-b`,
//! `--fq-rate`, `--server-bitrate-limit`) take the same suffixes as powers of 1000.
//! The mantissa may be a decimal fraction (`1.5M`). Anything else is iperf3 3.21's
//! error 38. Plain integers (`-p -t -P -O`, the `/burst` of `-b`) follow C's
//! `atoi`, which reads a leading number and ignores the rest, as iperf3 does.

use rperf3_proto::{IperfError, IE_UNIT_VAL};

/// The text of an invalid size or rate; Display is iperf3's error 38 text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnitError(pub(crate) String);

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        IperfError::with_detail(IE_UNIT_VAL, self.0.as_str()).fmt(f)
    }
}

/// Splits a leading decimal number (as C's `strtod` reads it, without hex,
/// infinities and NaN) from the rest. `None` when there is no number.
fn leading_float(s: &str) -> Option<(f64, &str)> {
    crate::cnum::decimal_prefix(s).map(|(v, end)| (v, &s[end..]))
}

fn with_suffix(s: &str, base: f64) -> Result<f64, UnitError> {
    let bad = || UnitError(s.to_string());
    let (n, rest) = leading_float(s).ok_or_else(bad)?;
    let scale = match rest {
        "" => 1.0,
        "k" | "K" => base,
        "m" | "M" => base * base,
        "g" | "G" => base * base * base,
        "t" | "T" => base * base * base * base,
        _ => return Err(bad()),
    };
    let v = n * scale;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(bad())
    }
}

/// A size with an optional binary suffix (`128K` = 131072). May be negative or
/// fractional; callers range-check.
pub(crate) fn parse_size(s: &str) -> Result<f64, UnitError> {
    with_suffix(s, 1024.0)
}

/// A rate in bits/s with an optional decimal suffix (`1.5M` = 1500000).
pub(crate) fn parse_rate(s: &str) -> Result<f64, UnitError> {
    with_suffix(s, 1000.0)
}

/// A non-negative size or rate as a whole number, truncated as iperf3's casts do.
pub(crate) fn to_count(v: f64, typed: &str) -> Result<u64, UnitError> {
    if v < 0.0 || v >= u64::MAX as f64 {
        Err(UnitError(typed.to_string()))
    } else {
        Ok(v as u64)
    }
}

/// C's `atoi` as glibc implements it: `strtol`'s value cut to `int`.
pub(crate) fn atoi(s: &str) -> i32 {
    // Truncation to the low 32 bits is what the C cast does.
    crate::cnum::atol(s) as i32
}

/// C's `atof`: the leading number, 0 when there is none. NaN and infinities are
/// not read (they would only make a nonsense interval).
pub(crate) fn atof(s: &str) -> f64 {
    leading_float(s).map_or(0.0, |(n, _)| n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn binary_sizes() {
        assert_eq!(parse_size("128K"), Ok(131072.0));
        assert_eq!(parse_size("128k"), Ok(131072.0));
        assert_eq!(parse_size("1m"), Ok(1048576.0));
        assert_eq!(parse_size("2G"), Ok(2.0 * 1073741824.0));
        assert_eq!(parse_size("1t"), Ok(1099511627776.0));
        assert_eq!(parse_size("1.5K"), Ok(1536.0));
        assert_eq!(parse_size("100"), Ok(100.0));
        assert_eq!(parse_size(" 7"), Ok(7.0));
        assert_eq!(parse_size(".5k"), Ok(512.0));
        assert_eq!(parse_size("1e3"), Ok(1000.0));
    }

    #[test]
    fn decimal_rates() {
        assert_eq!(parse_rate("1M"), Ok(1e6));
        assert_eq!(parse_rate("1.5m"), Ok(1.5e6));
        assert_eq!(parse_rate("10G"), Ok(1e10));
        assert_eq!(parse_rate("2k"), Ok(2000.0));
        assert_eq!(parse_rate("0"), Ok(0.0));
    }

    #[test]
    fn bad_suffix_or_no_number_is_error_38() {
        for s in [
            "1X", "10MB", "", "M", "abc", "1 M", "1e", "--5", "1.2.3", "0x10", "inf",
        ] {
            let e = parse_size(s).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("invalid unit value or suffix: '{s}'")
            );
        }
        assert!(
            parse_rate("1e400").is_err(),
            "overflow to infinity is refused"
        );
    }

    #[test]
    fn counts() {
        assert_eq!(to_count(1536.7, "x"), Ok(1536));
        assert!(to_count(-1.0, "-1").is_err());
        assert!(to_count(1e30, "1e30").is_err());
    }

    #[test]
    fn atoi_is_c_atoi() {
        assert_eq!(atoi("5201"), 5201);
        assert_eq!(atoi("  42abc"), 42);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atoi("-7"), -7);
        assert_eq!(atoi("+7"), 7);
        assert_eq!(atoi("5.9"), 5);
        assert_eq!(atoi(""), 0);
        // strtol saturates at LONG_MAX, whose low 32 bits are all ones.
        assert_eq!(atoi("99999999999999999999"), -1);
        assert_eq!(atoi("4294967297"), 1);
    }

    #[test]
    fn atof_reads_a_prefix() {
        assert_eq!(atof("0.5"), 0.5);
        assert_eq!(atof("2s"), 2.0);
        assert_eq!(atof("abc"), 0.0);
        assert_eq!(atof("nan"), 0.0);
        assert_eq!(atof("-1"), -1.0);
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = parse_size(&s);
            let _ = parse_rate(&s);
            let _ = atoi(&s);
            let _ = atof(&s);
        }

        #[test]
        fn integer_with_suffix_round_trips(n in 0u32..1_000_000, i in 0usize..5, upper: bool) {
            let suffixes = ["", "k", "m", "g", "t"];
            let mut suffix = suffixes[i].to_string();
            if upper {
                suffix = suffix.to_uppercase();
            }
            let text = format!("{n}{suffix}");
            let expect_size = f64::from(n) * 1024f64.powi(i as i32);
            let expect_rate = f64::from(n) * 1000f64.powi(i as i32);
            prop_assert_eq!(parse_size(&text), Ok(expect_size));
            prop_assert_eq!(parse_rate(&text), Ok(expect_rate));
        }

        #[test]
        fn fractions_scale(whole in 0u32..10_000, tenths in 0u32..10) {
            let text = format!("{whole}.{tenths}K");
            let v = parse_size(&text).unwrap();
            let expect = (f64::from(whole) + f64::from(tenths) / 10.0) * 1024.0;
            prop_assert!((v - expect).abs() < 1e-6);
        }

        #[test]
        fn atoi_round_trips(n: i32) {
            prop_assert_eq!(atoi(&n.to_string()), n);
        }

        #[test]
        fn other_suffix_letters_are_refused(n in 0u32..1000, c in "[a-zA-Z]") {
            prop_assume!(!"kKmMgGtTeE".contains(c.as_str()));
            let text = format!("{n}{c}");
            prop_assert!(parse_size(&text).is_err());
            prop_assert!(parse_rate(&text).is_err());
        }
    }
}
