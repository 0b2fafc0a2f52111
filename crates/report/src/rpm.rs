//! Output of the responsiveness test (`--rpm`): a text summary a person reads at a
//! glance, one line per stage ("Responsiveness: 940 RPM, Medium") with its round
//! trips below it, and a `-J` document with `downlink`, `uplink` and
//! `bidirectional` and the method's parameters in effect.
//!
//! JSON key order (fixed): `start` (`version`, `system_info`, `timestamp`,
//! `connecting_to`, and over HTTP/2 `url` and `protocol`), `parameters` (`mad`, `id_s`, `tmp`, `sdt`, `inp`, `inc`, `mnp`,
//! `mps`, `ptc`, `stage_budget_s`), then one object per stage that ran, in the
//! order it ran: `throughput_bps`, (`downlink_bps`, `uplink_bps` for both at once),
//! `rpm`, `band`, `confidence`, `throughput_confidence`, `foreign_rpm`,
//! `loaded_rpm`, `connections`, `intervals`, `idle`, `loaded` (with `foreign` and
//! `self`); `error` last when the test failed.
//!
//! Every figure comes from the latency core's [`RpmRun`]; this only prints it, in the
//! units and with the round-trip fields of `--latency`'s output.

use crate::cjson;
use crate::latency::round_trips;
use crate::start::rfc1123;
use crate::units;
use crate::units::ms;
use rperf3_latency::rpm::KEEP;
use rperf3_latency::{Band, Params, RpmRun, StageResult, Summary};
use serde_json::{json, Map, Value};

/// Who the test ran against and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpmStart {
    /// The server as typed.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// `"rperf3 ..."`-style version.
    pub version: String,
    /// uname line.
    pub system_info: String,
    /// When the test started, ms since the epoch.
    pub timestamp_millis: u64,
    /// `--rpm-url`'s config URL: the test ran over HTTP/2, not iperf3's protocol.
    pub url: Option<String>,
}

fn pct(f: f64) -> String {
    cjson::number(f * 100.0)
}

/// The parameters in the order the draft lists them, for the header line.
fn params_line(p: &Params, budget_s: f64) -> String {
    format!(
        "ID {} s, MAD {}, TMP {}%, SDT {}%, INP {}, INC {}, MNP {}, MPS {}, PTC {}%, \
         up to {} s per stage",
        cjson::number(p.id.as_secs_f64()),
        p.mad,
        pct(KEEP),
        pct(p.sdt),
        p.inp,
        p.inc,
        p.mnp,
        p.mps,
        pct(p.ptc),
        cjson::number(budget_s),
    )
}

fn row(name: &str, s: &Summary) -> String {
    if s.is_empty() {
        return format!("    {name:<8} {:>7}", 0);
    }
    format!(
        "    {name:<8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        s.count,
        ms(s.min_ms),
        ms(s.p50_ms),
        ms(s.p90_ms),
        ms(s.p99_ms),
        ms(s.max_ms)
    )
}

/// The lines of one stage: the verdict, then its round trips.
pub fn stage_lines(r: &StageResult, format: char) -> Vec<String> {
    let f = &r.figures;
    let rpm = f.responsiveness.rpm;
    let verdict = if rpm > 0.0 {
        format!("{rpm:.0} RPM, {}", Band::of(rpm).name())
    } else {
        "no round trips".to_string()
    };
    let idle = if f.idle.is_empty() {
        String::new()
    } else {
        format!(", idle latency {} ms", ms(f.idle.p50_ms))
    };
    let name = format!("{}:", r.stage.name());
    let mut out = vec![format!(
        "{name:<15}Responsiveness: {verdict} (confidence {}); {} with {} connections \
         (confidence {}){idle}",
        r.confidence.name(),
        units::rate(r.throughput_bps / 8.0, format).trim_start(),
        r.connections,
        r.throughput_confidence.name(),
    )];
    out.push(format!(
        "    {:<8} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "ms", "count", "min", "p50", "p90", "p99", "max"
    ));
    out.push(row("idle", &f.idle));
    out.push(row("loaded", &f.loaded));
    out.push(row("foreign", &f.foreign));
    out.push(row("self", &f.self_loaded));
    out
}

/// The whole text report: a header with the parameters, then each stage.
pub fn text(start: &RpmStart, run: &RpmRun, format: char) -> Vec<String> {
    let with = match &start.url {
        Some(url) => format!("{url} over HTTP/2"),
        None => format!("{} port {}", start.host, start.port),
    };
    let mut out = vec![format!(
        "Responsiveness test with {with}: {}",
        params_line(&run.params, run.budget.as_secs_f64())
    )];
    for r in &run.stages {
        out.extend(stage_lines(r, format));
    }
    out
}

/// One stage's object.
pub fn stage_json(r: &StageResult) -> Value {
    let f = &r.figures;
    let mut m = Map::new();
    m.insert("throughput_bps".into(), json!(r.throughput_bps));
    if r.stage.loads().len() > 1 {
        m.insert("downlink_bps".into(), json!(r.downlink_bps));
        m.insert("uplink_bps".into(), json!(r.uplink_bps));
    }
    m.insert("rpm".into(), json!(f.responsiveness.rpm));
    m.insert("band".into(), json!(f.responsiveness.band().name()));
    m.insert("confidence".into(), json!(r.confidence.name()));
    m.insert(
        "throughput_confidence".into(),
        json!(r.throughput_confidence.name()),
    );
    m.insert("foreign_rpm".into(), json!(f.responsiveness.foreign_rpm));
    m.insert("loaded_rpm".into(), json!(f.responsiveness.loaded_rpm));
    m.insert("connections".into(), json!(r.connections));
    m.insert("intervals".into(), json!(r.intervals));
    m.insert("idle".into(), Value::Object(round_trips(&f.idle)));
    let mut loaded = round_trips(&f.loaded);
    loaded.insert("foreign".into(), Value::Object(round_trips(&f.foreign)));
    loaded.insert("self".into(), Value::Object(round_trips(&f.self_loaded)));
    m.insert("loaded".into(), Value::Object(loaded));
    Value::Object(m)
}

/// The parameters in effect, as `-J` prints them.
pub fn params_json(p: &Params, budget_s: f64) -> Value {
    json!({
        "mad": p.mad,
        "id_s": p.id.as_secs_f64(),
        "tmp": KEEP,
        "sdt": p.sdt,
        "inp": p.inp,
        "inc": p.inc,
        "mnp": p.mnp,
        "mps": p.mps,
        "ptc": p.ptc,
        "stage_budget_s": budget_s,
    })
}

/// The `-J` document; `error` is the message a failed test ends with.
pub fn json(start: &RpmStart, run: &RpmRun, error: Option<&str>) -> Value {
    let millis = start.timestamp_millis;
    let mut m = Map::new();
    let mut st = json!({
        "version": start.version,
        "system_info": start.system_info,
        "timestamp": {
            "time": rfc1123(millis / 1000),
            "timesecs": millis / 1000,
            "timemillisecs": millis,
        },
        "connecting_to": {"host": start.host, "port": start.port},
    });
    if let (Some(url), Some(o)) = (&start.url, st.as_object_mut()) {
        o.insert("url".into(), json!(url));
        o.insert("protocol".into(), json!("h2"));
    }
    m.insert("start".into(), st);
    m.insert(
        "parameters".into(),
        params_json(&run.params, run.budget.as_secs_f64()),
    );
    for r in &run.stages {
        m.insert(r.stage.name().into(), stage_json(r));
    }
    if let Some(e) = error {
        m.insert("error".into(), json!(e));
    }
    Value::Object(m)
}

#[cfg(test)]
#[path = "golden_rpm.rs"]
mod golden;
