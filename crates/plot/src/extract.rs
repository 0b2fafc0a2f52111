//! iperf3 JSON in, [`Run`]s out: no files, no drawing, so every rule is unit-tested.
//!
//! Reads `-J` documents (one, or several concatenated as a server's log file
//! holds them) and `--json-stream` files (one event per line), from either side
//! of a test. A host measures only its own end of each stream: TCP figures
//! (retransmits, cwnd, RTT) exist on the sender, UDP loss and jitter on the
//! receiver. When a client document carries the server's own
//! (`--get-server-output`), the figures this side lacks are taken from there,
//! matching streams by direction and order.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::model::{DataOneWay, Latency, Percentiles, Points, Protocol, Run, Series};
use crate::PlotError;

/// Reads every run in `text`. `label` names the runs (a file name); a file with
/// several documents numbers them (`log.json #2`).
pub fn parse_runs(label: &str, text: &str) -> Result<Vec<Run>, PlotError> {
    let docs = if is_json_stream(text) {
        match full_output(text) {
            // --json-stream-full-output: the whole document follows the events.
            Some(doc) => documents(doc)?,
            None => vec![doc_from_stream(text)?],
        }
    } else {
        documents(text)?
    };
    let many = docs.len() > 1;
    docs.iter()
        .enumerate()
        .map(|(i, d)| {
            let name = if many {
                format!("{label} #{}", i + 1)
            } else {
                label.to_string()
            };
            run_from_doc(&name, d)
        })
        .collect()
}

/// A `--json-stream` file starts with an event line such as `{"event":"start",…}`;
/// a `-J` document starts with a lone `{` (iperf3 pretty-prints it).
fn is_json_stream(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .is_some_and(|v| v.get("event").is_some())
}

/// The pretty-printed document after a stream's events, if there is one: it
/// starts at a line holding only `{`, which no event line is.
fn full_output(text: &str) -> Option<&str> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim() == "{" {
            return Some(&text[offset..]);
        }
        offset += line.len();
    }
    None
}

pub(crate) fn json_error(e: &serde_json::Error, line: Option<usize>) -> PlotError {
    let line_no = line.unwrap_or(e.line());
    if e.is_eof() {
        PlotError::Truncated {
            line: line_no,
            column: e.column(),
        }
    } else {
        let msg = e.to_string();
        // serde_json appends its own position; ours replaces it.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        PlotError::Malformed {
            line: line_no,
            column: e.column(),
            msg,
        }
    }
}

/// Every JSON value in the text, in order.
fn documents(text: &str) -> Result<Vec<Value>, PlotError> {
    let docs = serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| json_error(&e, None))?;
    if docs.is_empty() {
        return Err(PlotError::Empty);
    }
    Ok(docs)
}

/// Rebuilds the `-J` document from a stream's events.
fn doc_from_stream(text: &str) -> Result<Value, PlotError> {
    let mut doc = Map::new();
    let mut intervals = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let ev: Value = serde_json::from_str(line).map_err(|e| json_error(&e, Some(i + 1)))?;
        let data = ev.get("data").cloned().unwrap_or(Value::Null);
        match ev.get("event").and_then(Value::as_str) {
            Some("interval") => intervals.push(data),
            Some(key @ ("start" | "end" | "error" | "server_output_json")) => {
                doc.insert(key.to_string(), data);
            }
            // Text lines of --get-server-output and future events.
            _ => {}
        }
    }
    doc.insert("intervals".to_string(), Value::Array(intervals));
    Ok(Value::Object(doc))
}

fn num(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

fn flag(v: &Value, key: &str) -> bool {
    match v.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(n) => n.as_i64().unwrap_or(0) != 0,
        None => false,
    }
}

/// Appends the figures one interval entry (a stream or a sum) has.
fn push_figures(s: &mut Series, entry: &Value) -> Option<f64> {
    let (start, end) = (num(entry, "start")?, num(entry, "end")?);
    let t = (start + end) / 2.0;
    let put = |points: &mut Points, key: &str, scale: f64| {
        if let Some(x) = num(entry, key) {
            points.push((t, x * scale));
        }
    };
    put(&mut s.throughput, "bits_per_second", 1.0);
    put(&mut s.retransmits, "retransmits", 1.0);
    put(&mut s.cwnd, "snd_cwnd", 1.0);
    put(&mut s.rtt_ms, "rtt", 1e-3);
    put(&mut s.lost_percent, "lost_percent", 1.0);
    put(&mut s.jitter_ms, "jitter_ms", 1.0);
    Some(end)
}

/// Streams and sums of a document's intervals, omitted (`-O`) ones left out.
fn series_of(doc: &Value, bidir: bool) -> (Vec<Series>, Vec<Series>, f64) {
    let mut streams: Vec<Series> = Vec::new();
    let mut by_socket: HashMap<i64, usize> = HashMap::new();
    let mut sums: Vec<Series> = Vec::new();
    let mut end_secs: f64 = 0.0;
    let intervals = doc.get("intervals").and_then(Value::as_array);
    for iv in intervals.into_iter().flatten() {
        for entry in iv
            .get("streams")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if flag(entry, "omitted") {
                continue;
            }
            let socket = entry.get("socket").and_then(Value::as_i64).unwrap_or(-1);
            let next = streams.len();
            let idx = *by_socket.entry(socket).or_insert(next);
            if idx == next {
                streams.push(Series {
                    sends: flag(entry, "sender"),
                    ..Series::default()
                });
            }
            if let Some(end) = push_figures(&mut streams[idx], entry) {
                end_secs = end_secs.max(end);
            }
        }
        for key in ["sum", "sum_bidir_reverse"] {
            let Some(entry) = iv.get(key) else { continue };
            if flag(entry, "omitted") {
                continue;
            }
            let sends = flag(entry, "sender");
            let idx = match sums.iter().position(|s| s.sends == sends) {
                Some(i) => i,
                None => {
                    sums.push(Series {
                        sends,
                        ..Series::default()
                    });
                    sums.len() - 1
                }
            };
            push_figures(&mut sums[idx], entry);
        }
    }
    let direction = |sends: bool| if sends { " (send)" } else { " (receive)" };
    for (i, s) in streams.iter_mut().enumerate() {
        s.name = format!("stream {}", i + 1);
        if bidir {
            s.name.push_str(direction(s.sends));
        }
    }
    for s in &mut sums {
        s.name = "sum".to_string();
        if bidir {
            s.name.push_str(direction(s.sends));
        }
    }
    (streams, sums, end_secs)
}

/// Fills the figures `local` lacks from the peer's view of the same stream (the
/// peer sends where this side receives).
fn fill_from_peer(local: &mut [Series], peer: &[Series]) {
    for sends in [true, false] {
        let mine = local.iter_mut().filter(|s| s.sends == sends);
        let theirs = peer.iter().filter(|s| s.sends != sends);
        for (m, t) in mine.zip(theirs) {
            for (dst, src) in [
                (&mut m.retransmits, &t.retransmits),
                (&mut m.cwnd, &t.cwnd),
                (&mut m.rtt_ms, &t.rtt_ms),
                (&mut m.lost_percent, &t.lost_percent),
                (&mut m.jitter_ms, &t.jitter_ms),
            ] {
                if dst.is_empty() {
                    dst.clone_from(src);
                }
            }
        }
    }
}

fn description(doc: &Value, protocol: Protocol, streams: usize) -> String {
    let start = doc.get("start").unwrap_or(&Value::Null);
    let ts = start.get("test_start").unwrap_or(&Value::Null);
    let mut parts = vec![protocol.name().to_string()];
    let n = ts
        .get("num_streams")
        .and_then(Value::as_u64)
        .unwrap_or(streams as u64);
    parts.push(format!("{n} stream{}", if n == 1 { "" } else { "s" }));
    if flag(ts, "bidir") {
        parts.push("bidirectional".to_string());
    } else if flag(ts, "reverse") {
        parts.push("reverse".to_string());
    }
    let peer = |v: &Value, host: &str, port: &str| {
        let h = v.get(host).and_then(Value::as_str).unwrap_or("?");
        match v.get(port).and_then(Value::as_u64) {
            Some(p) => format!("{h} port {p}"),
            None => h.to_string(),
        }
    };
    if let Some(c) = start.get("connecting_to") {
        parts.push(format!("client to {}", peer(c, "host", "port")));
    } else if let Some(a) = start.get("accepted_connection") {
        parts.push(format!("server, client {}", peer(a, "host", "port")));
    }
    if let Some(t) = start
        .get("timestamp")
        .and_then(|t| t.get("time"))
        .and_then(Value::as_str)
    {
        parts.push(t.to_string());
    }
    parts.join(", ")
}

/// One document to one run.
pub fn run_from_doc(label: &str, doc: &Value) -> Result<Run, PlotError> {
    if !doc.is_object() || (doc.get("intervals").is_none() && doc.get("error").is_none()) {
        return Err(PlotError::NotAReport);
    }
    let error = doc.get("error").map(|e| match e.as_str() {
        Some(s) => s.to_string(),
        None => e.to_string(),
    });
    let ts = doc
        .get("start")
        .and_then(|s| s.get("test_start"))
        .unwrap_or(&Value::Null);
    let bidir = flag(ts, "bidir");
    let (mut streams, mut sums, end_secs) = series_of(doc, bidir);
    if sums.iter().all(|s| s.throughput.is_empty()) {
        return Err(match error {
            Some(e) => PlotError::RunFailed(e),
            None => PlotError::NoIntervals,
        });
    }
    let named = ts
        .get("protocol")
        .and_then(Value::as_str)
        .and_then(Protocol::from_name);
    let udp = named == Some(Protocol::Udp)
        || sums.iter().any(|s| !s.jitter_ms.is_empty())
        || doc
            .pointer("/intervals/0/sum/packets")
            .is_some_and(Value::is_number);
    let protocol = if udp {
        Protocol::Udp
    } else {
        named.unwrap_or(Protocol::Tcp)
    };
    if let Some(peer) = doc.get("server_output_json") {
        let (p_streams, p_sums, _) = series_of(peer, bidir);
        fill_from_peer(&mut streams, &p_streams);
        fill_from_peer(&mut sums, &p_sums);
    }
    Ok(Run {
        label: label.to_string(),
        protocol,
        description: description(doc, protocol, streams.len()),
        streams,
        sums,
        error,
        end_secs,
        latency: latency_of(doc),
        data_one_way: data_one_way_of(doc),
        bounceback: bounceback_of(doc),
    })
}

/// `--latency` figures: each interval's loaded p50 and p99 at the middle of the
/// interval (omitted and probe-less intervals left out), and the idle median of
/// `end`. `None` when no interval has a `latency` object (iperf3, or a run
/// without `--latency`).
fn latency_of(doc: &Value) -> Option<Latency> {
    let intervals = doc.get("intervals").and_then(Value::as_array)?;
    let mut out = Latency::default();
    let mut any = false;
    for iv in intervals {
        let Some(lat) = iv.get("latency") else {
            continue;
        };
        any = true;
        let Some(sum) = iv.get("sum") else { continue };
        let loaded = &lat["loaded"];
        if flag(sum, "omitted") || num(loaded, "count").unwrap_or(0.0) == 0.0 {
            continue;
        }
        let (Some(start), Some(end)) = (num(sum, "start"), num(sum, "end")) else {
            continue;
        };
        let t = (start + end) / 2.0;
        if let (Some(p50), Some(p99)) = (num(loaded, "p50_ms"), num(loaded, "p99_ms")) {
            out.p50_ms.push((t, p50));
            out.p99_ms.push((t, p99));
        }
    }
    let idle = doc.pointer("/end/latency/idle").unwrap_or(&Value::Null);
    if num(idle, "count").unwrap_or(0.0) > 0.0 {
        out.idle_p50_ms = num(idle, "p50_ms");
    }
    any.then_some(out)
}

/// The middle of an interval that counts (not omitted), in seconds.
fn counted_mid(iv: &Value) -> Option<f64> {
    let sum = iv.get("sum")?;
    if flag(sum, "omitted") {
        return None;
    }
    Some((num(sum, "start")? + num(sum, "end")?) / 2.0)
}

/// Adds a summary object's p50 and p99 at `t`, when it has samples.
fn add_percentiles(p: &mut Percentiles, t: f64, s: &Value) {
    if num(s, "count").unwrap_or(0.0) == 0.0 {
        return;
    }
    if let (Some(p50), Some(p99)) = (num(s, "p50_ms"), num(s, "p99_ms")) {
        p.p50_ms.push((t, p50));
        p.p99_ms.push((t, p99));
    }
}

/// `intervals[].latency.data_one_way`: each direction's p50 and p99 where it
/// has delays. `None` when no interval has the object.
fn data_one_way_of(doc: &Value) -> Option<DataOneWay> {
    let mut out = DataOneWay::default();
    let mut any = false;
    for iv in doc.get("intervals").and_then(Value::as_array)? {
        let Some(d) = iv.pointer("/latency/data_one_way") else {
            continue;
        };
        any = true;
        if let Some(t) = counted_mid(iv) {
            add_percentiles(&mut out.up, t, &d["up"]);
            add_percentiles(&mut out.down, t, &d["down"]);
        }
    }
    any.then_some(out)
}

/// `intervals[].bounceback` round trips (a client's: a server's has only
/// `answered`). `None` when no interval times any.
fn bounceback_of(doc: &Value) -> Option<Percentiles> {
    let mut out = Percentiles::default();
    let mut any = false;
    for iv in doc.get("intervals").and_then(Value::as_array)? {
        let Some(b) = iv.get("bounceback").filter(|b| b.get("p50_ms").is_some()) else {
            continue;
        };
        any = true;
        if let Some(t) = counted_mid(iv) {
            add_percentiles(&mut out, t, b);
        }
    }
    any.then_some(out)
}
