//! The few C `printf` conversions iperf3's output depends on, reproduced exactly.
//!
//! iperf3 prints with glibc `printf`: `%g` chooses between fixed and exponent
//! notation and strips trailing zeros, exponents have at least two digits, and
//! ties round half to even on the exact binary value. Rust's own float formatting
//! rounds the same way, so only the `%g` shape needs building here.

/// `%.{prec}f`.
pub(crate) fn fixed(x: f64, prec: usize) -> String {
    format!("{x:.prec$}")
}

fn c_exp(mant: &str, e: i32) -> String {
    let sign = if e < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", e.abs())
}

/// Removes trailing zeros of a fraction and then a bare trailing dot.
fn strip_fraction_zeros(s: &str) -> &str {
    if !s.contains('.') {
        return s;
    }
    let s = s.trim_end_matches('0');
    s.strip_suffix('.').unwrap_or(s)
}

/// `%.{prec}g` (also `%1.{prec}g`: the width 1 never pads).
pub(crate) fn general(x: f64, prec: usize) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    let p = prec.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // The exponent is the one of the value rounded to `p` significant digits.
    let e_form = format!("{x:.prec$e}", prec = p - 1);
    let (mant, e) = e_form.split_once('e').unwrap_or((&e_form, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    if e < -4 || e >= p as i32 {
        c_exp(strip_fraction_zeros(mant), e)
    } else {
        let decimals = (p as i32 - 1 - e).max(0) as usize;
        strip_fraction_zeros(&fixed(x, decimals)).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_matches_c_for_typical_values() {
        assert_eq!(general(0.0, 2), "0");
        assert_eq!(general(100.0, 2), "1e+02");
        assert_eq!(general(0.5555, 2), "0.56");
        assert_eq!(general(12.3, 2), "12");
        assert_eq!(general(0.0001234, 2), "0.00012");
        assert_eq!(general(0.00001234, 2), "1.2e-05");
        assert_eq!(general(1.0010759830474854, 15), "1.00107598304749");
        assert_eq!(general(6701711360.0, 15), "6701711360");
        assert_eq!(general(1e15, 15), "1e+15");
        assert_eq!(general(2.8e-05, 15), "2.8e-05");
        assert_eq!(general(17019998194.474514, 17), "17019998194.474514");
        assert_eq!(general(9.5, 1), "1e+01");
    }

    #[test]
    fn fixed_rounds_ties_to_even_like_glibc() {
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(0.375, 2), "0.38");
        assert_eq!(fixed(2.5, 0), "2");
    }
}
