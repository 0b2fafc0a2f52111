//! Prints a JSON value exactly like iperf3's bundled cJSON does.
//!
//! Tools diff iperf3 output, so the layout is reproduced byte for byte: tab
//! indentation, `"key":<TAB>value`, arrays on one line with `", "` between
//! elements (so an object in an array opens as `[{`), an empty object as
//! `{\n<tabs>}`, and cJSON's number rules: a double that equals its `int`
//! conversion prints as an integer, otherwise `%1.15g`, or `%1.17g` when 15 digits
//! do not give the value back; NaN and infinities print as `null`.
//! The compact form (`--json-stream` lines, the wire) has no whitespace at all.

use crate::cfmt;
use serde_json::Value;

/// The pretty form of `cJSON_Print` (no trailing newline).
pub fn to_pretty(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, 0, true);
    out
}

/// The compact form of `cJSON_PrintUnformatted`.
pub fn to_compact(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v, 0, false);
    out
}

/// cJSON's rendering of one number.
pub fn number(d: f64) -> String {
    if !d.is_finite() {
        return "null".to_string();
    }
    // cJSON keeps an `int` copy saturated to the int range; a double equal to it
    // prints as an integer.
    let as_int = if d >= i32::MAX as f64 {
        i32::MAX
    } else if d <= i32::MIN as f64 {
        i32::MIN
    } else {
        d as i32
    };
    if d == as_int as f64 {
        return as_int.to_string();
    }
    let s = cfmt::general(d, 15);
    match s.parse::<f64>() {
        Ok(back) if close(back, d) => s,
        _ => cfmt::general(d, 17),
    }
}

/// cJSON's `compare_double`: equal within one epsilon of the larger magnitude.
fn close(a: f64, b: f64) -> bool {
    let max = a.abs().max(b.abs());
    (a - b).abs() <= max * f64::EPSILON
}

fn write_value(out: &mut String, v: &Value, depth: usize, pretty: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(if pretty { ", " } else { "," });
                }
                write_value(out, item, depth + 1, pretty);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let inner = depth + 1;
            out.push('{');
            if pretty {
                out.push('\n');
            }
            let n = map.len();
            for (i, (k, item)) in map.iter().enumerate() {
                if pretty {
                    push_tabs(out, inner);
                }
                write_string(out, k);
                out.push(':');
                if pretty {
                    out.push('\t');
                }
                write_value(out, item, inner, pretty);
                if i + 1 < n {
                    out.push(',');
                }
                if pretty {
                    out.push('\n');
                }
            }
            if pretty {
                push_tabs(out, depth);
            }
            out.push('}');
        }
    }
}

fn push_tabs(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n('\t', n));
}

fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A JSON number; NaN and infinities become `null` as in cJSON.
pub(crate) fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::PathBuf;

    fn fixtures() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/iperf-3.21")
    }

    #[test]
    fn numbers_follow_cjson() {
        assert_eq!(number(0.0), "0");
        assert_eq!(number(-0.0), "0");
        assert_eq!(number(131072.0), "131072");
        assert_eq!(number(1.000005), "1.000005");
        assert_eq!(number(f64::from(1.000005f32)), "1.0000050067901611");
        assert_eq!(number(6701711360.0), "6701711360");
        assert_eq!(number(1795236827254.0), "1795236827254");
        assert_eq!(number(f64::NAN), "null");
        assert_eq!(number(f64::INFINITY), "null");
        assert_eq!(number(2.8e-05), "2.8e-05");
        assert_eq!(number(18446744073709551615.0), "1.8446744073709552e+19");
        assert_eq!(number(-1.0), "-1");
    }

    proptest::proptest! {
        #[test]
        fn numbers_read_back_as_cjson_promises(d in proptest::num::f64::NORMAL | proptest::num::f64::ZERO) {
            let s = number(d);
            let back: f64 = s.parse().unwrap();
            proptest::prop_assert!(close(back, d) || back == d, "{} -> {}", d, s);
            if d.fract() == 0.0 && d.abs() < 2e9 {
                proptest::prop_assert!(!s.contains(['.', 'e']), "{}", s);
            }
        }
    }

    #[test]
    fn pretty_layout() {
        let v = json!({"a": [], "b": {}, "c": [{"x": 1}, {"y": "s"}], "d": true});
        assert_eq!(
            to_pretty(&v),
            "{\n\t\"a\":\t[],\n\t\"b\":\t{\n\t},\n\t\"c\":\t[{\n\t\t\t\"x\":\t1\n\t\t}, {\n\t\t\t\"y\":\t\"s\"\n\t\t}],\n\t\"d\":\ttrue\n}"
        );
        assert_eq!(
            to_compact(&v),
            r#"{"a":[],"b":{},"c":[{"x":1},{"y":"s"}],"d":true}"#
        );
    }

    #[test]
    fn strings_are_escaped_like_cjson() {
        let v = json!("a\"b\\c\nd\te/\u{1}é");
        assert_eq!(to_compact(&v), "\"a\\\"b\\\\c\\nd\\te/\\u0001é\"");
    }

    /// Reparsing every pretty fixture and printing it again gives the same bytes.
    /// Fixtures with a duplicate key cannot round-trip (the parser keeps one).
    #[test]
    fn fixtures_reprint_byte_for_byte() {
        let mut checked = 0;
        for entry in std::fs::read_dir(fixtures()).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            let printed = to_pretty(&v) + "\n";
            let count = |prefix: &str| text.lines().filter(|l| l.starts_with(prefix)).count();
            let has_duplicate_key =
                count("\t\"error\":") > 1 || count("\t\t\"target_bitrate\":") > 1;
            if has_duplicate_key {
                continue;
            }
            assert_eq!(printed, text, "{}", path.display());
            checked += 1;
        }
        assert!(checked >= 20, "only {checked} fixtures checked");
    }

    #[test]
    fn json_stream_lines_reprint_byte_for_byte() {
        for name in [
            "tcp_json_stream.client.jsonl",
            "tcp_json_stream.server.jsonl",
            "udp_json_stream.client.jsonl",
            "tcp_json_stream_get_server_output.client.jsonl",
            "error_server_busy.client.jsonl",
        ] {
            let text = std::fs::read_to_string(fixtures().join(name)).unwrap();
            for line in text.lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                assert_eq!(to_compact(&v), line, "{name}");
            }
        }
    }
}
