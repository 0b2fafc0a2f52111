//! The key structure of our `-J` and `--json-stream` documents against real
//! iperf3 3.21 output (`crates/report/tests/fixtures/iperf-3.21`, kept in the repository): key paths, key
//! order and JSON types (integers and floats are one "number" type). Values
//! are not compared. Intervals are compared element by element where both
//! documents have one, else against the fixture's last (all share one shape).
//!
//! Deliberate difference: iperf3 can write a key twice in one object (the
//! server's `start.target_bitrate`, `error` after SERVER_ERROR); we write it
//! once, so a fixture object is also accepted with its duplicates removed.

use crate::common;

use std::collections::BTreeSet;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use common::{free_port, run_client, Server, CLIENT_TIMEOUT};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value's structure, keeping every key of an object in order, even
/// repeated ones (serde_json's `Value` would keep only one).
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Null,
    Bool,
    Number,
    String,
    Array(Vec<Self>),
    Object(Vec<(String, Self)>),
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Shape;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Shape, E> {
                Ok(Shape::Null)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
                Ok(Shape::Bool)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
                Ok(Shape::Number)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
                Ok(Shape::Number)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
                Ok(Shape::Number)
            }
            fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
                Ok(Shape::String)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Shape, A::Error> {
                let mut v = Vec::new();
                while let Some(x) = a.next_element()? {
                    v.push(x);
                }
                Ok(Shape::Array(v))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Shape, A::Error> {
                let mut v = Vec::new();
                while let Some((k, x)) = a.next_entry::<String, Shape>()? {
                    v.push((k, x));
                }
                Ok(Shape::Object(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Shape {
    fn parse(text: &str, what: &str) -> Self {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} does not parse: {e}\n{text}"))
    }

    fn kind(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool => "bool",
            Self::Number => "number",
            Self::String => "string",
            Self::Array(_) => "array",
            Self::Object(_) => "object",
        }
    }

    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Self::Object(kv) => kv.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Key lists a fixture object may be matched by: as written, and with
/// repeated keys written once (first or last place).
fn accepted_key_orders(keys: &[&str]) -> Vec<Vec<String>> {
    let mut out = vec![keys.iter().map(|k| k.to_string()).collect::<Vec<_>>()];
    let mut first = Vec::new();
    for k in keys {
        if !first.contains(&k.to_string()) {
            first.push(k.to_string());
        }
    }
    let mut last: Vec<String> = Vec::new();
    for k in keys.iter().rev() {
        if !last.contains(&k.to_string()) {
            last.insert(0, k.to_string());
        }
    }
    out.push(first);
    out.push(last);
    out
}

/// Every structural difference between `ours` and `fixture`, with key paths
/// (array indices written `[]` so one difference is reported once).
fn compare(ours: &Shape, fixture: &Shape, path: &str, out: &mut BTreeSet<String>) {
    match (ours, fixture) {
        (Shape::Object(a), Shape::Object(b)) => {
            let ak: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
            let bk: Vec<&str> = b.iter().map(|(k, _)| k.as_str()).collect();
            if !accepted_key_orders(&bk).iter().any(|o| o == &ak) {
                let missing: Vec<&&str> = bk.iter().filter(|k| !ak.contains(k)).collect();
                let extra: Vec<&&str> = ak.iter().filter(|k| !bk.contains(k)).collect();
                if !missing.is_empty() {
                    out.insert(format!("{path}: missing keys {missing:?}"));
                }
                if !extra.is_empty() {
                    out.insert(format!("{path}: extra keys {extra:?}"));
                }
                if missing.is_empty() && extra.is_empty() {
                    out.insert(format!(
                        "{path}: key order differs\n      ours:    {ak:?}\n      fixture: {bk:?}"
                    ));
                }
            }
            for (k, v) in a {
                if let Some(fv) = fixture.get(k) {
                    compare(v, fv, &format!("{path}.{k}"), out);
                }
            }
        }
        (Shape::Array(a), Shape::Array(b)) => {
            if a.is_empty() != b.is_empty() {
                out.insert(format!(
                    "{path}: {} elements, fixture has {}",
                    a.len(),
                    b.len()
                ));
            }
            for (i, x) in a.iter().enumerate() {
                if let Some(y) = b.get(i).or(b.last()) {
                    compare(x, y, &format!("{path}[]"), out);
                }
            }
        }
        (a, b) if a.kind() == b.kind() => {}
        (a, b) => {
            out.insert(format!(
                "{path}: type {} but fixture has {}",
                a.kind(),
                b.kind()
            ));
        }
    }
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/report/tests/fixtures/iperf-3.21")
}

fn read_fixture(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Compares one of our documents with a fixture; returns the differences.
fn diff_doc(ours: &str, dir: &std::path::Path, fixture: &str) -> Vec<String> {
    let mut out = BTreeSet::new();
    let a = Shape::parse(ours, "our output");
    let b = Shape::parse(&read_fixture(dir, fixture), fixture);
    compare(&a, &b, "", &mut out);
    out.into_iter().map(|m| format!("{fixture}: {m}")).collect()
}

/// Compares a `--json-stream` output with a `.jsonl` fixture: the event
/// sequence (runs of `interval` collapsed) and the shape of each event kind.
fn diff_stream(ours: &str, dir: &std::path::Path, fixture: &str) -> Vec<String> {
    let parse = |text: &str, what: &str| -> Vec<(String, Shape)> {
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l)
                    .unwrap_or_else(|e| panic!("{what}: line does not parse ({e}): {l}"));
                let ev = v["event"].as_str().unwrap_or("?").to_string();
                let shape = Shape::parse(l, what);
                (ev, shape)
            })
            .collect()
    };
    let a = parse(ours, "our output");
    let b = parse(&read_fixture(dir, fixture), fixture);
    let seq = |v: &[(String, Shape)]| {
        let mut s: Vec<String> = Vec::new();
        for (e, _) in v {
            if s.last() != Some(e) {
                s.push(e.clone());
            }
        }
        s
    };
    let mut out = BTreeSet::new();
    if seq(&a) != seq(&b) {
        out.insert(format!(
            "event sequence: ours {:?}, fixture {:?}",
            seq(&a),
            seq(&b)
        ));
    }
    for (ev, shape) in &a {
        if let Some((_, fs)) = b.iter().find(|(e, _)| e == ev) {
            compare(shape, fs, &format!("<{ev}>"), &mut out);
        }
    }
    out.into_iter().map(|m| format!("{fixture}: {m}")).collect()
}

fn assert_same_shape(diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "{} structural difference(s) from iperf3 3.21:\n  {}",
        diffs.len(),
        diffs.join("\n  ")
    );
}

/// Runs our client (`-J` + args) against our one-off server (`server_args`)
/// and returns (client stdout, server stdout).
fn pair(server_args: &[&str], client_args: &[&str]) -> (String, String) {
    let mut sargs = vec!["-1"];
    sargs.extend_from_slice(server_args);
    let srv = Server::start(&sargs);
    let c = srv.client(client_args);
    c.assert_ok();
    let s = srv.wait_exit(CLIENT_TIMEOUT);
    assert_eq!(s.code(), Some(0), "{s}");
    (c.stdout, s.stdout)
}

/// A client and server `-J` pair against `NAME.client.json` / `NAME.server.json`.
fn check_pair(name: &str, client_args: &[&str]) {
    let dir = fixture_dir();
    let mut args = vec!["-J"];
    args.extend_from_slice(client_args);
    let (c, s) = pair(&["-J"], &args);
    let mut diffs = diff_doc(&c, &dir, &format!("{name}.client.json"));
    diffs.extend(diff_doc(&s, &dir, &format!("{name}.server.json")));
    assert_same_shape(diffs);
}

#[test]
fn tcp() {
    check_pair("tcp", &["-t", "1"]);
}

#[test]
fn tcp_reverse() {
    check_pair("tcp_reverse", &["-t", "1", "-R"]);
}

#[test]
fn tcp_bidir() {
    check_pair("tcp_bidir", &["-t", "1", "--bidir"]);
}

#[test]
fn tcp_p2() {
    check_pair("tcp_P2", &["-t", "1", "-P", "2"]);
}

#[test]
fn tcp_omit() {
    check_pair("tcp_omit", &["-t", "1", "-O", "1"]);
}

#[test]
fn tcp_get_server_output_json() {
    check_pair(
        "tcp_get_server_output_json",
        &["-t", "1", "--get-server-output"],
    );
}

#[test]
fn tcp_title_extra_bytes() {
    let args = [
        "-n",
        "200M",
        "-T",
        "mytitle",
        "--extra-data",
        "mydata",
        "-i",
        "0.5",
    ];
    check_pair("tcp_title_extra_bytes", &args);
}

#[test]
fn udp() {
    check_pair("udp", &["-u", "-t", "1", "-b", "1M", "-l", "1400"]);
}

#[test]
fn udp_reverse() {
    check_pair(
        "udp_reverse",
        &["-u", "-t", "1", "-b", "1M", "-l", "1400", "-R"],
    );
}

#[test]
fn udp_bidir_p2() {
    let args = [
        "-u", "-t", "1", "-b", "1M", "-l", "1400", "--bidir", "-P", "2",
    ];
    check_pair("udp_bidir_P2", &args);
}

#[test]
fn tcp_get_server_output_text() {
    let dir = fixture_dir();
    let (c, _) = pair(&[], &["-J", "-t", "1", "--get-server-output"]);
    assert_same_shape(diff_doc(&c, &dir, "tcp_get_server_output_text.client.json"));
}

#[test]
fn json_stream_tcp() {
    let dir = fixture_dir();
    let (c, s) = pair(&["--json-stream"], &["--json-stream", "-t", "1"]);
    let mut diffs = diff_stream(&c, &dir, "tcp_json_stream.client.jsonl");
    diffs.extend(diff_stream(&s, &dir, "tcp_json_stream.server.jsonl"));
    assert_same_shape(diffs);
}

#[test]
fn json_stream_get_server_output() {
    let dir = fixture_dir();
    let args = ["--json-stream", "-t", "1", "--get-server-output"];
    let (c, _) = pair(&["--json-stream"], &args);
    assert_same_shape(diff_stream(
        &c,
        &dir,
        "tcp_json_stream_get_server_output.client.jsonl",
    ));
}

#[test]
fn json_stream_udp() {
    let dir = fixture_dir();
    let args = ["--json-stream", "-u", "-t", "1", "-b", "1M", "-l", "1400"];
    let (c, _) = pair(&[], &args);
    assert_same_shape(diff_stream(&c, &dir, "udp_json_stream.client.jsonl"));
}

#[test]
fn error_connection_refused() {
    let dir = fixture_dir();
    let port = free_port().to_string();
    let out = run_client(&["-c", "127.0.0.1", "-p", &port, "-J"], CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert_same_shape(diff_doc(
        &out.stdout,
        &dir,
        "error_connection_refused.client.json",
    ));
}

/// Runs `client_args` against a server busy with another test; returns the
/// refused client's stdout.
fn refused_by_busy_server(client_args: &[&str]) -> String {
    let srv = Server::start(&[]);
    let first = srv.spawn_client(&["-t", "3", "--forceflush"]);
    assert!(first.wait_stdout_until(Duration::from_secs(10), |s| s.contains(" sec ")));
    let out = srv.client(client_args);
    assert_eq!(out.code(), Some(1), "{out}");
    first.finish(CLIENT_TIMEOUT).assert_ok();
    out.stdout
}

#[test]
fn error_server_busy_json() {
    let dir = fixture_dir();
    let out = refused_by_busy_server(&["-J", "-t", "1"]);
    assert_same_shape(diff_doc(&out, &dir, "error_server_busy.client.json"));
}

#[test]
fn error_server_busy_json_stream() {
    let dir = fixture_dir();
    let out = refused_by_busy_server(&["--json-stream", "-t", "1"]);
    assert_same_shape(diff_stream(&out, &dir, "error_server_busy.client.jsonl"));
}

#[test]
fn comparison_catches_differences() {
    // The checker itself: a missing key, a changed type and a swapped order
    // are each reported; number forms and repeated fixture keys are not.
    let fixture = Shape::parse(r#"{"a":1,"b":{"c":"x","d":[1,2]},"a":1}"#, "f");
    let same = Shape::parse(r#"{"b":{"c":"y","d":[1.5]},"a":2.5}"#, "o");
    let mut out = BTreeSet::new();
    compare(&same, &fixture, "", &mut out);
    assert!(out.is_empty(), "{out:?}");
    let bad = Shape::parse(r#"{"a":"1","b":{"d":[1],"c":"y"}}"#, "o");
    compare(&bad, &fixture, "", &mut out);
    let text = format!("{out:?}");
    assert!(
        text.contains(".a: type string but fixture has number"),
        "{text}"
    );
    assert!(text.contains(".b: key order differs"), "{text}");
    let missing = Shape::parse(r#"{"a":1,"b":{"c":"y"}}"#, "o");
    let mut out = BTreeSet::new();
    compare(&missing, &fixture, "", &mut out);
    assert!(out.contains(r#".b: missing keys ["d"]"#), "{out:?}");
}
