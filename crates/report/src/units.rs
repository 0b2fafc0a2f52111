//! iperf3's unit formatting for the text report: "1.72 GBytes", "14.8 Gbits".
//!
//! Lower-case formats count bits in powers of 1000, upper-case ones count bytes
//! in powers of 1024; `a`/`A` pick the largest unit that keeps the value below
//! the base. The number always fits four columns (`%4.2f`, `%4.1f` or `%4.0f`).
//! The report lines append `s` (transfer) or `s/sec` (rate) themselves.

const BIT_LABELS: [&str; 5] = ["bit", "Kbit", "Mbit", "Gbit", "Tbit"];
const BYTE_LABELS: [&str; 5] = ["Byte", "KByte", "MByte", "GByte", "TByte"];
const BIT_SCALE: [f64; 5] = [
    1.0,
    1.0 / 1000.0,
    1.0 / 1_000_000.0,
    1.0 / 1_000_000_000.0,
    1.0 / 1_000_000_000_000.0,
];
const BYTE_SCALE: [f64; 5] = [
    1.0,
    1.0 / 1024.0,
    1.0 / (1024.0 * 1024.0),
    1.0 / (1024.0 * 1024.0 * 1024.0),
    1.0 / (1024.0 * 1024.0 * 1024.0 * 1024.0),
];

/// The `-f` letters iperf3 accepts, plus the adaptive defaults `a` and `A`.
pub fn is_valid_format(c: char) -> bool {
    matches!(
        c,
        'a' | 'A' | 'k' | 'K' | 'm' | 'M' | 'g' | 'G' | 't' | 'T' | 'b' | 'B'
    )
}

/// Formats `bytes` the way iperf3's `unit_snprintf` does for the format letter
/// `format`: `a`/`k`/`m`/`g`/`t` (bits, base 1000), `A`/`K`/`M`/`G`/`T` (bytes,
/// base 1024). Any other letter behaves like the adaptive one of its case.
pub fn format_units(bytes: f64, format: char) -> String {
    let bits = !format.is_ascii_uppercase();
    let mut n = if bits { bytes * 8.0 } else { bytes };
    let conv = match format.to_ascii_uppercase() {
        'B' => 0,
        'K' => 1,
        'M' => 2,
        'G' => 3,
        'T' => 4,
        _ => {
            let base = if bits { 1000.0 } else { 1024.0 };
            let mut tmp = n;
            let mut conv = 0;
            while tmp >= base && conv < 4 {
                tmp /= base;
                conv += 1;
            }
            conv
        }
    };
    let (scale, label) = if bits {
        (BIT_SCALE[conv], BIT_LABELS[conv])
    } else {
        (BYTE_SCALE[conv], BYTE_LABELS[conv])
    };
    n *= scale;
    if !n.is_finite() {
        // glibc spells these "nan", "-nan", "inf" in the same four columns.
        let word = match (n.is_nan(), n.is_sign_negative()) {
            (true, true) => "-nan",
            (true, false) => "nan",
            (false, true) => "-inf",
            (false, false) => "inf",
        };
        return format!("{word:>4} {label}");
    }
    let digits = if n < 9.995 {
        2
    } else if n < 99.95 {
        1
    } else {
        0
    };
    format!("{n:4.digits$} {label}")
}

/// A transfer amount: always adaptive bytes ("1.72 GBytes").
pub fn transfer(bytes: f64) -> String {
    format!("{}s", format_units(bytes, 'A'))
}

/// A rate given in bytes per second, in the `-f` format ("14.8 Gbits/sec").
pub fn rate(bytes_per_sec: f64, format: char) -> String {
    format!("{}s/sec", format_units(bytes_per_sec, format))
}

/// Milliseconds as the text prints them: three decimals (microseconds), which reads
/// a loopback round trip (0.031) and a bloated queue (151.234) alike.
pub(crate) fn ms(x: f64) -> String {
    format!("{x:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fixture_values() {
        assert_eq!(transfer(1.72 * 1024.0 * 1024.0 * 1024.0), "1.72 GBytes");
        assert_eq!(rate(14.8e9 / 8.0, 'a'), "14.8 Gbits/sec");
        assert_eq!(transfer(1023.0 * 1024.0), "1023 KBytes");
        assert_eq!(transfer(1000.0), "1000 Bytes");
        assert_eq!(transfer(896.0 * 1024.0), " 896 KBytes");
        assert_eq!(rate(0.0, 'a'), "0.00 bits/sec");
        assert_eq!(transfer(0.0), "0.00 Bytes");
        assert_eq!(rate(996_000.0 / 8.0, 'a'), " 996 Kbits/sec");
    }

    #[test]
    fn non_finite_rates_print_like_glibc() {
        assert_eq!(format_units(f64::INFINITY, 'a'), " inf Tbit");
        assert_eq!(format_units(f64::NAN, 'a'), " nan bit");
    }

    #[test]
    fn forced_formats_do_not_adapt() {
        assert_eq!(format_units(125_000.0, 'k'), "1000 Kbit");
        assert_eq!(format_units(125_000.0, 'm'), "1.00 Mbit");
        assert_eq!(format_units(1024.0 * 1024.0, 'K'), "1024 KByte");
        assert_eq!(format_units(1024.0 * 1024.0, 'G'), "0.00 GByte");
        assert_eq!(format_units(5e12, 't'), "40.0 Tbit");
    }

    #[test]
    fn rounding_boundaries_keep_four_columns() {
        // 9.995 would print as "10.00": it switches to one decimal instead.
        assert_eq!(format_units(9.995, 'B'), "10.0 Byte");
        assert_eq!(format_units(99.95, 'B'), " 100 Byte");
        assert_eq!(format_units(9.99, 'B'), "9.99 Byte");
    }

    proptest! {
        #[test]
        fn adaptive_number_fits_four_columns(bytes in 0.0f64..1e14) {
            for f in ['a', 'A'] {
                let s = format_units(bytes, f);
                let (num, label) = s.split_at(4);
                prop_assert!(label.starts_with(' ') && label.len() > 1, "{}", s);
                let v: f64 = num.trim().parse().unwrap();
                // Adaptive values stay below the base (1024 prints as 1024 at most).
                prop_assert!(v < 1024.5, "{}", s);
            }
        }

        #[test]
        fn adaptive_bits_pick_the_right_unit(bytes in 1.0f64..1e14) {
            let bits = bytes * 8.0;
            let s = format_units(bytes, 'a');
            let expect = if bits < 1e3 { "bit" } else if bits < 1e6 { "Kbit" }
                else if bits < 1e9 { "Mbit" } else if bits < 1e12 { "Gbit" } else { "Tbit" };
            prop_assert!(s.ends_with(&format!(" {expect}")), "{}", s);
        }
    }
}
