//! Reading values out of iperf3-style JSON documents by dotted path, so that
//! assertions name the key they check (`end.sum_sent.bytes`).

use serde_json::Value;

/// The value at `path` (`a.b[2].c`), or None.
pub(crate) fn get<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (name, idx) = match part.find('[') {
            Some(i) => (&part[..i], Some(&part[i..])),
            None => (part, None),
        };
        if !name.is_empty() {
            cur = cur.get(name)?;
        }
        if let Some(mut rest) = idx {
            while let Some(stripped) = rest.strip_prefix('[') {
                let end = stripped.find(']')?;
                let n: usize = stripped[..end].parse().ok()?;
                cur = cur.get(n)?;
                rest = &stripped[end + 1..];
            }
        }
    }
    Some(cur)
}

/// The value at `path`; panics naming the path when it is missing.
pub(crate) fn at<'a>(v: &'a Value, path: &str) -> &'a Value {
    get(v, path).unwrap_or_else(|| panic!("missing key {path} in\n{v:#}"))
}

/// The number at `path`; panics when missing or not a number.
pub(crate) fn num(v: &Value, path: &str) -> f64 {
    at(v, path)
        .as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number: {}", at(v, path)))
}

/// The array at `path`; panics when missing or not an array.
pub(crate) fn arr<'a>(v: &'a Value, path: &str) -> &'a Vec<Value> {
    at(v, path)
        .as_array()
        .unwrap_or_else(|| panic!("{path} is not an array: {}", at(v, path)))
}

/// The string at `path`; panics when missing or not a string.
pub(crate) fn string<'a>(v: &'a Value, path: &str) -> &'a str {
    at(v, path)
        .as_str()
        .unwrap_or_else(|| panic!("{path} is not a string: {}", at(v, path)))
}

/// Panics if the document carries an `error` key.
pub(crate) fn assert_no_error(v: &Value) {
    assert!(v.get("error").is_none(), "unexpected error: {}", v["error"]);
}

/// `a` and `b` within `rel` of each other (relative to the larger).
pub(crate) fn close(a: f64, b: f64, rel: f64) -> bool {
    let m = a.abs().max(b.abs());
    m == 0.0 || (a - b).abs() <= rel * m
}

/// Every line of a `--json-stream` output as `(event, data)`.
pub(crate) fn events(text: &str) -> Vec<(String, Value)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("json-stream line does not parse ({e}): {l}"));
            let ev = v["event"]
                .as_str()
                .unwrap_or_else(|| panic!("no event name: {l}"))
                .to_string();
            (ev, v["data"].clone())
        })
        .collect()
}
