//! Reading and writing JSON numbers the way cJSON (iperf3's JSON library) does.
//!
//! cJSON keeps every number as a double, writes whole numbers without a fraction,
//! and exposes a saturated `int` view. Peers send either form, and 3.12/3.13 write
//! −1 as 18446744073709551615, so every numeric read goes through here.

use serde_json::{Number, Value};

/// A double as cJSON writes it: whole numbers as JSON integers, others as floats.
/// NaN and infinities become `null`, as in cJSON.
pub(crate) fn num_f64(v: f64) -> Value {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9_007_199_254_740_992.0 {
        Value::from(v as i64)
    } else {
        Number::from_f64(v).map_or(Value::Null, Value::Number)
    }
}

/// cJSON's `valueint`: the number truncated toward zero and saturated to `int`.
/// `None` if the value is not a number.
pub(crate) fn as_c_int(v: &Value) -> Option<i32> {
    let n = v.as_number()?;
    Some(if let Some(i) = n.as_i64() {
        i.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
    } else if let Some(u) = n.as_u64() {
        u.min(i32::MAX as u64) as i32
    } else {
        // `as` saturates and maps NaN to 0, like cJSON's clamping.
        n.as_f64().unwrap_or(0.0) as i32
    })
}

/// A non-negative 64-bit count. Negative values read as 0, huge ones saturate.
pub(crate) fn as_u64_sat(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    Some(if let Some(u) = n.as_u64() {
        u
    } else if n.as_i64().is_some() {
        0
    } else {
        n.as_f64().unwrap_or(0.0) as u64
    })
}

/// A signed 64-bit value where anything at or above 2^63 is the unsigned spelling
/// of a negative number (3.12 writes −1 as 18446744073709551615).
pub(crate) fn as_i64_wrapping(v: &Value) -> Option<i64> {
    let n = v.as_number()?;
    Some(if let Some(i) = n.as_i64() {
        i
    } else if let Some(u) = n.as_u64() {
        u as i64
    } else {
        let f = n.as_f64().unwrap_or(0.0);
        if f >= 9_223_372_036_854_775_808.0 {
            (f as u64) as i64
        } else {
            f as i64
        }
    })
}

/// Any number as a double.
pub(crate) fn as_f64(v: &Value) -> Option<f64> {
    v.as_number()?.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_doubles_are_written_as_integers() {
        assert_eq!(num_f64(0.0).to_string(), "0");
        assert_eq!(num_f64(131072.0).to_string(), "131072");
        assert_eq!(num_f64(-1.0).to_string(), "-1");
        assert_eq!(num_f64(2.5).to_string(), "2.5");
        assert_eq!(num_f64(f64::NAN), Value::Null);
    }

    #[test]
    fn c_int_saturates_and_truncates() {
        assert_eq!(as_c_int(&json!(5)), Some(5));
        assert_eq!(as_c_int(&json!(5.9)), Some(5));
        assert_eq!(as_c_int(&json!(-5.9)), Some(-5));
        assert_eq!(as_c_int(&json!(1e12)), Some(i32::MAX));
        assert_eq!(as_c_int(&json!(-1e12)), Some(i32::MIN));
        assert_eq!(as_c_int(&json!(u64::MAX)), Some(i32::MAX));
        assert_eq!(as_c_int(&json!("5")), None);
        assert_eq!(as_c_int(&json!(true)), None);
    }

    #[test]
    fn minus_one_in_both_spellings() {
        assert_eq!(as_i64_wrapping(&json!(-1)), Some(-1));
        assert_eq!(as_i64_wrapping(&json!(18446744073709551615u64)), Some(-1));
        let big: Value = serde_json::from_str("1.8446744073709552e19").unwrap();
        assert_eq!(as_i64_wrapping(&big), Some(-1));
        let big: Value = serde_json::from_str("18446744073709551616").unwrap();
        assert_eq!(as_i64_wrapping(&big), Some(-1));
        assert_eq!(as_i64_wrapping(&json!(14.0)), Some(14));
    }

    #[test]
    fn u64_saturates() {
        assert_eq!(as_u64_sat(&json!(3686924288u64)), Some(3686924288));
        assert_eq!(as_u64_sat(&json!(-3)), Some(0));
        assert_eq!(as_u64_sat(&json!(1e30)), Some(u64::MAX));
        assert_eq!(as_u64_sat(&json!(2.0)), Some(2));
        assert_eq!(as_u64_sat(&json!(null)), None);
    }
}
