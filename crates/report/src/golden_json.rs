//! Golden tests of the JSON output against every 3.21 `.json`/`.jsonl` fixture.
//!
//! Each fixture is read back into the report's inputs (streams, interval
//! samples, local totals, the peer's results as the client would have received
//! them), replayed through a [`Reporter`], and the result must have the same
//! keys, in the same order, with the same JSON types (any number matching any
//! number) at every path. Numbers must also agree closely, which checks the
//! arithmetic the reporter does (durations, rates, sums, percentages) against
//! real iperf3. Figures it only carries (RTT, cwnd, retransmits, jitter, loss
//! counts, CPU) come from the fixture itself, so here they check only their
//! place and their JSON number format; their text formatting is checked
//! against iperf3's own text of the same run in `golden_summary.rs`.

use crate::golden_replay::{replay, Replay};
use crate::input::Side;
use crate::testutil::{fixture, json_lines, Shared};
use crate::{cjson, Reporter, ServerOutput};
use serde_json::Value;

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Compares keys, key order, types and (closely) values; returns the differences.
fn diff(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    if kind(ours) != kind(theirs) {
        out.push(format!("{path}: type {} vs {}", kind(ours), kind(theirs)));
        return;
    }
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            let ka: Vec<_> = a.keys().collect();
            let kb: Vec<_> = b.keys().collect();
            if ka != kb {
                out.push(format!("{path}: keys {ka:?} vs {kb:?}"));
            }
            for (k, v) in a {
                if let Some(w) = b.get(k) {
                    diff(&format!("{path}.{k}"), v, w, out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!("{path}: {} items vs {}", a.len(), b.len()));
            }
            for (n, (v, w)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{n}]"), v, w, out);
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            if (x - y).abs() > 1e-9 * x.abs().max(y.abs()).max(1.0) {
                out.push(format!("{path}: {x} vs {y}"));
            }
        }
        (a, b) if a != b => out.push(format!("{path}: {a} vs {b}")),
        _ => {}
    }
}

fn check(name: &str, ours: &Value, theirs: &Value) {
    let mut d = Vec::new();
    diff("$", ours, theirs, &mut d);
    assert!(d.is_empty(), "{name}:\n{}", d.join("\n"));
}

#[test]
fn every_json_fixture_replays_with_the_same_structure_and_values() {
    for name in JSON_FIXTURES {
        let r = replay(name);
        let printed = r.run(false, false);
        let ours: Value = serde_json::from_str(&printed).unwrap();
        check(name, &ours, &r.doc);
    }
}

const JSON_FIXTURES: [&str; 24] = [
    "error_connection_refused.client.json",
    "error_server_bitrate_limit.client.json",
    "error_server_busy.client.json",
    "tcp.client.json",
    "tcp.server.json",
    "tcp_P2.client.json",
    "tcp_P2.server.json",
    "tcp_bidir.client.json",
    "tcp_bidir.server.json",
    "tcp_get_server_output_json.client.json",
    "tcp_get_server_output_json.server.json",
    "tcp_get_server_output_text.client.json",
    "tcp_omit.client.json",
    "tcp_omit.server.json",
    "tcp_reverse.client.json",
    "tcp_reverse.server.json",
    "tcp_title_extra_bytes.client.json",
    "tcp_title_extra_bytes.server.json",
    "udp.client.json",
    "udp.server.json",
    "udp_bidir_P2.client.json",
    "udp_bidir_P2.server.json",
    "udp_reverse.client.json",
    "udp_reverse.server.json",
];

#[test]
fn json_stream_fixtures_replay_event_by_event() {
    for name in [
        "error_server_busy.client.jsonl",
        "tcp_json_stream.client.jsonl",
        "tcp_json_stream.server.jsonl",
        "udp_json_stream.client.jsonl",
        "tcp_json_stream_get_server_output.client.jsonl",
    ] {
        let r = replay(name);
        let printed = r.run(true, false);
        let theirs = json_lines(&fixture(name));
        let ours = json_lines(&printed);
        assert_eq!(ours.len(), theirs.len(), "{name}: {printed}");
        for (a, b) in ours.iter().zip(&theirs) {
            check(name, a, b);
        }
        // Every line is compact cJSON.
        for l in printed.lines() {
            assert_eq!(cjson::to_compact(&serde_json::from_str(l).unwrap()), l);
        }
    }
}

#[test]
fn json_stream_full_output_prints_events_then_the_document() {
    let text = fixture("tcp_json_stream_full_output.client.txt");
    let (events, doc) = text.split_at(text.find("\n{\n").unwrap() + 1);
    let theirs_doc: Value = serde_json::from_str(doc).unwrap();
    let r = Replay {
        side: Side::Client,
        doc: theirs_doc.clone(),
    };
    let printed = r.run(true, true);
    let (our_events, our_doc) = printed.split_at(printed.find("\n{\n").unwrap() + 1);
    assert_eq!(our_events.lines().count(), events.lines().count());
    let ours: Value = serde_json::from_str(our_doc).unwrap();
    check("full output", &ours, &theirs_doc);
    assert!(our_doc.ends_with("}\n"));
}

#[test]
fn server_copy_for_the_client_has_no_title_or_error() {
    let r = replay("tcp_title_extra_bytes.server.json");
    let out = Shared::default();
    let mut rep = Reporter::new(
        r.opts(false, false),
        Box::new(out.clone()),
        Box::new(std::io::sink()),
    );
    rep.set_peer_labels(Some("mytitle".into()), Some("mydata".into()));
    rep.error("the client has terminated");
    let Some(ServerOutput::Json(v)) = rep.server_output_for_peer() else {
        panic!("no JSON copy")
    };
    let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
    assert_eq!(keys, ["start", "intervals", "end"]);
    let full = rep.document();
    let keys: Vec<_> = full.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        ["start", "intervals", "end", "error", "title", "extra_data"]
    );
}

/// Drops the copy of a key iperf3 writes twice that we write once: the later
/// `target_bitrate` of a server's `start`, the first (`SERVER ERROR - `) `error`.
fn without_duplicate_keys(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    let at = |lines: &Vec<&str>, prefix: &str| -> Vec<usize> {
        (0..lines.len())
            .filter(|&n| lines[n].starts_with(prefix))
            .collect()
    };
    let rates = at(&lines, "\t\t\"target_bitrate\":");
    if rates.len() > 1 {
        lines.remove(rates[1]);
    }
    let errors = at(&lines, "\t\"error\":");
    if errors.len() > 1 {
        lines.remove(errors[0]);
    }
    lines.join("\n") + "\n"
}

/// Two lines that differ at most in the last bit of a number (UDP jitter is
/// replayed from milliseconds, which cannot give back iperf3's exact seconds).
fn same_line(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let num = |l: &str| -> Option<(String, f64)> {
        let (k, v) = l.rsplit_once('\t')?;
        Some((k.to_string(), v.trim_end_matches(',').parse().ok()?))
    };
    match (num(a), num(b)) {
        (Some((ka, x)), Some((kb, y))) => ka == kb && (x - y).abs() <= 4.0 * f64::EPSILON * x.abs(),
        _ => false,
    }
}

/// Replayed figures are the fixture's own, so the printed document is the
/// fixture byte for byte (apart from the keys iperf3 duplicates): the layout
/// and cJSON's number format, not the figures.
#[test]
fn replayed_documents_print_byte_for_byte() {
    for name in JSON_FIXTURES {
        let printed = replay(name).run(false, false);
        let expect = without_duplicate_keys(&fixture(name));
        assert!(printed.ends_with("}\n"), "{name}");
        assert_eq!(printed.lines().count(), expect.lines().count(), "{name}");
        for (n, (a, b)) in printed.lines().zip(expect.lines()).enumerate() {
            assert!(same_line(a, b), "{name} line {}: {a:?} vs {b:?}", n + 1);
        }
    }
}
