//! `--bounceback` in the iperf3-style outputs: a `[ BB]` line per interval (one
//! for the whole test, summed over its `-P` streams, after the stream and `[SUM]`
//! rows), an end table, and the `bounceback` objects of `-J` and `--json-stream`.
//!
//! Every figure comes from the latency core's `Summary` and the counts the run
//! took; this module only lays them out. A test without `--bounceback` never
//! reaches it.
//!
//! JSON key order, in `intervals[].bounceback` and `end.bounceback`: on the
//! client `count, tps, min_ms, mean_ms, p50_ms, p90_ms, p99_ms, max_ms`, then
//! `load_up_bps, load_down_bps` with `--bounceback-load`; on the server, which
//! times nothing, `answered, tps`.

use rperf3_latency::Summary;
use serde_json::{json, Map, Value};

use crate::cjson::num;
use crate::input::BouncebackFigures;
use crate::units::ms;

fn rtt_text(s: &Summary) -> String {
    if s.count == 0 {
        return "no round trips".to_string();
    }
    format!(
        "rtt min/p50/p90/p99/max {}/{}/{}/{}/{} ms",
        ms(s.min_ms),
        ms(s.p50_ms),
        ms(s.p90_ms),
        ms(s.p99_ms),
        ms(s.max_ms)
    )
}

fn load_text(b: &BouncebackFigures, fmt: char) -> String {
    match b.load_bps {
        Some((up, down)) => format!(
            ", load up {} down {}",
            crate::units::rate(up / 8.0, fmt),
            crate::units::rate(down / 8.0, fmt)
        ),
        None => String::new(),
    }
}

/// The `[ BB]` line of one interval; `lead` holds the tag and times laid out as
/// the rows above it, `omitted` iperf3's mark of a `-O` interval or nothing.
pub(crate) fn interval_line(lead: &str, b: &BouncebackFigures, fmt: char, omitted: &str) -> String {
    let tail = if omitted.is_empty() {
        String::new()
    } else {
        format!("  {omitted}")
    };
    match &b.rtt {
        Some(s) => format!(
            "{lead}  {} trans  {:.0} trans/sec  {}{}{tail}\n",
            b.count,
            b.tps,
            rtt_text(s),
            load_text(b, fmt)
        ),
        None => format!(
            "{lead}  {} requests answered  {:.0}/sec{tail}\n",
            b.count, b.tps
        ),
    }
}

/// The column header of the end table.
const TABLE_HEADER: &str =
    "Bounceback (ms)     count       min      mean       p50       p90       p99       max\n";

/// The end block: the table and the sentence a person reads first.
pub(crate) fn end_lines(b: &BouncebackFigures, fmt: char) -> Vec<String> {
    let Some(s) = &b.rtt else {
        return vec![format!(
            "Bounceback: {} requests answered, {:.0}/sec\n",
            b.count, b.tps
        )];
    };
    let mut out = vec![TABLE_HEADER.to_string()];
    if s.count == 0 {
        out.push("Bounceback: no transactions completed\n".to_string());
        return out;
    }
    out.push(format!(
        "  {:<16}{:>7}{:>10}{:>10}{:>10}{:>10}{:>10}{:>10}\n",
        "round trips",
        s.count,
        ms(s.min_ms),
        ms(s.mean_ms),
        ms(s.p50_ms),
        ms(s.p90_ms),
        ms(s.p99_ms),
        ms(s.max_ms)
    ));
    out.push(format!(
        "{:.0} transactions/sec, mean {} ms{}\n",
        b.tps,
        ms(s.mean_ms),
        load_text(b, fmt)
    ));
    out
}

/// `intervals[].bounceback` and `end.bounceback`.
pub(crate) fn to_json(b: &BouncebackFigures) -> Value {
    let mut m = Map::new();
    let Some(s) = &b.rtt else {
        m.insert("answered".into(), json!(b.count));
        m.insert("tps".into(), num(b.tps));
        return Value::Object(m);
    };
    m.insert("count".into(), json!(b.count));
    m.insert("tps".into(), num(b.tps));
    m.insert("min_ms".into(), num(s.min_ms));
    m.insert("mean_ms".into(), num(s.mean_ms));
    m.insert("p50_ms".into(), num(s.p50_ms));
    m.insert("p90_ms".into(), num(s.p90_ms));
    m.insert("p99_ms".into(), num(s.p99_ms));
    m.insert("max_ms".into(), num(s.max_ms));
    if let Some((up, down)) = b.load_bps {
        m.insert("load_up_bps".into(), num(up));
        m.insert("load_down_bps".into(), num(down));
    }
    Value::Object(m)
}
