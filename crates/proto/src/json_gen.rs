//! Generators of JSON-ish text for the decoders' property tests.
//!
//! The parameters and results documents come from the peer, which may be any
//! program. These strategies produce what such a peer might send: valid
//! documents with every field swapped for a wrong type, numbers too large for
//! any integer or double, NaN-like words, long strings, nesting far past any
//! parser's limit, and text cut anywhere.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};

/// Number spellings serde_json reads: every integer width, doubles from the
/// smallest to the largest, integers and fractions with hundreds of digits.
pub(crate) fn number_text() -> impl Strategy<Value = String> {
    const EDGE: &[&str] = &[
        "-0",
        "-0.0",
        "1e-400",
        "18446744073709551615",
        "18446744073709551616",
        "1.8446744073709552e19",
        "-9223372036854775809",
        "2147483648",
        "-2147483649",
        "4294967296",
        "1.7976931348623157e308",
    ];
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i32>().prop_map(|n| n.to_string()),
        proptest::num::f64::NORMAL.prop_map(|f| format!("{f:e}")),
        proptest::num::f64::NORMAL.prop_map(|f| format!("{f}")),
        select(EDGE).prop_map(str::to_owned),
        (1usize..300).prop_map(|n| "9".repeat(n)),
        (1usize..300).prop_map(|n| format!("-{}", "9".repeat(n))),
        (1usize..400).prop_map(|n| format!("0.{}1", "0".repeat(n))),
    ]
}

/// Strings serde_json reads: short, any Unicode, very long.
pub(crate) fn string_text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[ -~]{0,24}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        2 => any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        1 => (0usize..20_000).prop_map(|n| format!("\"{}\"", "x".repeat(n))),
    ]
}

/// Scalars that are not JSON, or that JSON allows and serde_json refuses
/// (doubles out of range): NaN-like words, C spellings, broken strings.
pub(crate) fn bad_scalar_text() -> impl Strategy<Value = String> {
    const ODD: &[&str] = &[
        "NaN",
        "-nan",
        "nan",
        "Infinity",
        "-Infinity",
        "inf",
        "1e400",
        "-1e400",
        "00",
        "1.",
        ".5",
        "+1",
        "0x10",
        "1e",
        "--1",
        "",
        "tru",
        "nul",
        r#""\ud800""#,
        r#""\q""#,
        "\"unterminated",
        "\"tab\tinside\"",
        "\"nul\u{0}inside\"",
    ];
    prop_oneof![
        3 => select(ODD).prop_map(str::to_owned),
        1 => (310usize..1000).prop_map(|n| "9".repeat(n)),
    ]
}

/// Any scalar, as text, now and then not valid JSON.
pub(crate) fn scalar_text() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => number_text(),
        4 => string_text(),
        2 => select(&["true", "false", "null"][..]).prop_map(str::to_owned),
        1 => bad_scalar_text(),
    ]
}

/// Arrays and objects a few levels deep around scalars.
pub(crate) fn value_text() -> impl Strategy<Value = String> {
    scalar_text().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(|v| format!("[{}]", v.join(","))),
            vec(("[a-z_]{0,8}", inner), 0..6).prop_map(|kv| {
                let body: Vec<String> = kv.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", body.join(","))
            }),
        ]
    })
}

/// Arrays or objects nested around a scalar, on both sides of serde_json's
/// recursion limit (128) and up to thousands deep.
pub(crate) fn deep_text() -> impl Strategy<Value = String> {
    let depth = prop_oneof![100usize..160, 0usize..4000];
    (depth, any::<bool>(), scalar_text()).prop_map(|(d, obj, leaf)| {
        if obj {
            format!("{}{leaf}{}", "{\"a\":".repeat(d), "}".repeat(d))
        } else {
            format!("{}{leaf}{}", "[".repeat(d), "]".repeat(d))
        }
    })
}

/// What a field may hold: a valid value from `valid`, or once in `odds + 2`
/// draws nothing (the key is left out) or anything at all. With odds of 25,
/// two thirds of the 38-field parameters documents stay valid JSON.
pub(crate) fn field(odds: u32, valid: BoxedStrategy<String>) -> BoxedStrategy<Option<String>> {
    prop_oneof![
        odds => valid.prop_map(Some),
        1 => Just(None),
        1 => value_text().prop_map(Some),
    ]
    .boxed()
}

/// An object with the given fields (those generated as `None` left out), in
/// order, then a few unknown keys.
pub(crate) fn object(
    fields: Vec<(&'static str, BoxedStrategy<Option<String>>)>,
) -> BoxedStrategy<String> {
    let (keys, values): (Vec<_>, Vec<_>) = fields.into_iter().unzip();
    (values, vec(("[a-zA-Z_]{1,12}", value_text()), 0..2))
        .prop_map(move |(values, extra)| {
            let mut body: Vec<String> = keys
                .iter()
                .zip(values)
                .filter_map(|(k, v)| v.map(|v| format!("\"{k}\":{v}")))
                .collect();
            body.extend(extra.iter().map(|(k, v)| format!("\"{k}\":{v}")));
            format!("{{{}}}", body.join(","))
        })
        .boxed()
}

/// Turns generated text into bytes, sometimes cut short or with a stray byte
/// flipped, sometimes replaced by plain noise.
pub(crate) fn damaged(text: BoxedStrategy<String>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        8 => text.clone().prop_map(String::into_bytes),
        2 => (text.clone(), any::<Index>()).prop_map(|(t, i)| {
            let b = t.into_bytes();
            let cut = i.index(b.len() + 1);
            b[..cut].to_vec()
        }),
        1 => (text, any::<Index>(), any::<u8>()).prop_map(|(t, i, x)| {
            let mut b = t.into_bytes();
            if !b.is_empty() {
                let at = i.index(b.len());
                b[at] = x;
            }
            b
        }),
        1 => vec(any::<u8>(), 0..256),
    ]
}

/// A JSON document as it goes on the control connection: length, then body.
pub(crate) fn frame(s: &str) -> Vec<u8> {
    let mut v = (s.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(s.as_bytes());
    v
}

/// A peer's control bytes after a valid start: `state` bytes, framed
/// documents (some long, some cut short, one real `results`), hostile length
/// prefixes and noise.
pub(crate) fn control_tail(
    state: impl Strategy<Value = Vec<u8>>,
    results: &'static str,
) -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        2 => state,
        2 => "[{}\\[\\]\":,a-z0-9 ]{0,60}".prop_map(|d| frame(&d)),
        1 => Just(frame(results)),
        1 => (1u32..300_000, 0usize..2000).prop_map(|(len, have)| {
            let mut v = len.to_be_bytes().to_vec();
            v.resize(4 + have.min(len as usize), b' ');
            v
        }),
        1 => any::<u32>().prop_map(|n| n.to_be_bytes().to_vec()),
        1 => vec(any::<u8>(), 0..64),
    ];
    vec(piece, 0..12).prop_map(|p| p.concat())
}
