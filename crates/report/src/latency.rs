//! `--latency` in the iperf3-style outputs: the interval line and the end table of the
//! text, and the `latency` objects of `-J` and `--json-stream`.
//!
//! Every figure comes from the latency core's [`Figures`]; this module only chooses
//! what to print and how. A test without `--latency` never reaches it, so iperf3's
//! own output is untouched.
//!
//! JSON key order (fixed; consumers may rely on it), in `intervals[].latency` and
//! `end.latency`:
//! `idle`, `loaded`, `rpm`, then `one_way` only when a one-way delay was measured or
//! the clocks disagreed, then `data_one_way` only when the test's own datagrams were
//! timed or their clocks disagreed, then (in `end` only) `data_one_way_unavailable`
//! (why the data's delays are missing or short) when it is so, and `with_server`.
//! `idle` and `loaded` hold
//! `count, min_ms, p50_ms, p90_ms, p99_ms, max_ms`; `loaded` then `foreign` and `self`
//! with the same fields. `one_way` holds `up` and `down`, each
//! `count, min_ms, mean_ms, p99_ms, max_ms`, then `clock_warning` when set.
//! `data_one_way` has the same shape, with `p50_ms` after `mean_ms`. An empty
//! set of samples has `count` 0 and every other field 0.

use rperf3_latency::{Figures, Summary};
use serde_json::{json, Map, Value};

use crate::cjson::num;
use crate::input::LatencyFinal;
use crate::units::ms;

/// The text lines of one interval, after its stream and `[SUM]` rows. `lead` is the
/// `[LAT]` tag and the interval's times, already laid out as the rows above it;
/// `omitted` is iperf3's `(omitted)` mark of a `-O` interval, or empty.
pub(crate) fn interval_lines(lead: &str, f: &Figures, omitted: &str) -> Vec<String> {
    let tail = if omitted.is_empty() {
        String::new()
    } else {
        format!("  {omitted}")
    };
    let mut out = Vec::new();
    let l = &f.loaded;
    if l.is_empty() {
        out.push(format!("{lead}  rtt: no round trips{tail}\n"));
    } else {
        out.push(format!(
            "{lead}  rtt min/p50/p90/p99/max {}/{}/{}/{}/{} ms, {} probes, {:.0} RPM{tail}\n",
            ms(l.min_ms),
            ms(l.p50_ms),
            ms(l.p90_ms),
            ms(l.p99_ms),
            ms(l.max_ms),
            l.count,
            f.responsiveness.rpm
        ));
    }
    for (name, s, what) in [
        ("one-way up", &f.up, "samples"),
        ("one-way down", &f.down, "samples"),
        ("data one-way up", &f.data_up, "datagrams"),
        ("data one-way down", &f.data_down, "datagrams"),
    ] {
        if !s.is_empty() {
            out.push(format!(
                "{lead}  {name} min/mean/p99/max {}/{}/{}/{} ms, {} {what}{tail}\n",
                ms(s.min_ms),
                ms(s.mean_ms),
                ms(s.p99_ms),
                ms(s.max_ms),
                s.count
            ));
        }
    }
    out
}

/// The column header of the end table.
const TABLE_HEADER: &str =
    "Latency (ms)        count       min       p50       p90       p99       max\n";

fn table_row(name: &str, s: &Summary) -> String {
    if s.is_empty() {
        return format!(
            "  {name:<16}{:>7}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
            0, "-", "-", "-", "-", "-"
        );
    }
    format!(
        "  {name:<16}{:>7}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
        s.count,
        ms(s.min_ms),
        ms(s.p50_ms),
        ms(s.p90_ms),
        ms(s.p99_ms),
        ms(s.max_ms)
    )
}

/// Said when the server is a stock iperf3: no probe connections, no one-way delays.
pub(crate) const STOCK_SERVER_NOTE: &str =
    "Server is not rperf3: round trips of this client's own TCP streams only\n";

/// The end block: a table of idle, loaded (foreign, self) and one-way figures, the
/// verdict, the stock-server note and the clock warning.
pub(crate) fn end_lines(l: &LatencyFinal) -> Vec<String> {
    let f = &l.figures;
    let mut out = vec![TABLE_HEADER.to_string()];
    out.push(table_row("idle", &f.idle));
    out.push(table_row("loaded", &f.loaded));
    for (name, s) in [
        ("  foreign", &f.foreign),
        ("  self", &f.self_loaded),
        ("one-way up", &f.up),
        ("one-way down", &f.down),
        ("data up", &f.data_up),
        ("data down", &f.data_down),
    ] {
        if !s.is_empty() {
            out.push(table_row(name, s));
        }
    }
    let r = &f.responsiveness;
    out.push(if r.rpm > 0.0 {
        format!("Responsiveness: {:.0} RPM, {}\n", r.rpm, r.band().name())
    } else {
        "Responsiveness: not measured (no loaded round trips)\n".to_string()
    });
    if !l.with_server {
        out.push(STOCK_SERVER_NOTE.to_string());
    }
    if let Some(n) = &l.data_note {
        out.push(format!("Data one-way delays: {n}\n"));
    }
    for w in [&f.clock_warning, &f.data_clock_warning]
        .into_iter()
        .flatten()
    {
        out.push(format!("{w}\n"));
    }
    out
}

pub(crate) fn round_trips(s: &Summary) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("count".into(), json!(s.count));
    m.insert("min_ms".into(), num(s.min_ms));
    m.insert("p50_ms".into(), num(s.p50_ms));
    m.insert("p90_ms".into(), num(s.p90_ms));
    m.insert("p99_ms".into(), num(s.p99_ms));
    m.insert("max_ms".into(), num(s.max_ms));
    m
}

fn one_way(s: &Summary) -> Value {
    one_way_with(s, false)
}

/// A one-way object; `p50` adds the median after the mean (the data's delays).
fn one_way_with(s: &Summary, p50: bool) -> Value {
    let mut m = Map::new();
    m.insert("count".into(), json!(s.count));
    m.insert("min_ms".into(), num(s.min_ms));
    m.insert("mean_ms".into(), num(s.mean_ms));
    if p50 {
        m.insert("p50_ms".into(), num(s.p50_ms));
    }
    m.insert("p99_ms".into(), num(s.p99_ms));
    m.insert("max_ms".into(), num(s.max_ms));
    Value::Object(m)
}

fn figures_map(f: &Figures) -> Map<String, Value> {
    let mut loaded = round_trips(&f.loaded);
    loaded.insert("foreign".into(), Value::Object(round_trips(&f.foreign)));
    loaded.insert("self".into(), Value::Object(round_trips(&f.self_loaded)));
    let mut m = Map::new();
    m.insert("idle".into(), Value::Object(round_trips(&f.idle)));
    m.insert("loaded".into(), Value::Object(loaded));
    m.insert("rpm".into(), num(f.responsiveness.rpm));
    if !f.up.is_empty() || !f.down.is_empty() || f.clock_warning.is_some() {
        let mut ow = Map::new();
        ow.insert("up".into(), one_way(&f.up));
        ow.insert("down".into(), one_way(&f.down));
        if let Some(w) = &f.clock_warning {
            ow.insert("clock_warning".into(), json!(w));
        }
        m.insert("one_way".into(), Value::Object(ow));
    }
    if !f.data_up.is_empty() || !f.data_down.is_empty() || f.data_clock_warning.is_some() {
        let mut ow = Map::new();
        ow.insert("up".into(), one_way_with(&f.data_up, true));
        ow.insert("down".into(), one_way_with(&f.data_down, true));
        if let Some(w) = &f.data_clock_warning {
            ow.insert("clock_warning".into(), json!(w));
        }
        m.insert("data_one_way".into(), Value::Object(ow));
    }
    m
}

/// `intervals[].latency`.
pub(crate) fn interval_json(f: &Figures) -> Value {
    Value::Object(figures_map(f))
}

/// `end.latency`.
pub(crate) fn end_json(l: &LatencyFinal) -> Value {
    let mut m = figures_map(&l.figures);
    if let Some(n) = &l.data_note {
        m.insert("data_one_way_unavailable".into(), json!(n));
    }
    m.insert("with_server".into(), json!(l.with_server));
    Value::Object(m)
}
