//! One test of the mesh, as its JSON line says it.
//!
//! The source's agent runs each test as an ordinary rperf3 client with
//! `--latency` and `-J`; its document is the single source of the figures
//! (read here, never recomputed), so a mesh line and a `rperf3 -c ... -J` run
//! of the same test agree. A test that did not run or failed still gets a
//! line: its outcome says why, its figures are null.

use serde_json::{json, Map, Value};

/// How a test ended, as the `outcome` key and label say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// It ran; the figures are the test's.
    Ok,
    /// The destination's server was running another test (two agents
    /// disagreed on the plan, or a test ran late).
    Busy,
    /// No connection to the destination (down, refused, no route, timed out).
    Unreachable,
    /// The destination answers iperf3 but is not an rperf3 agent: the
    /// figures are those a stock server allows (no server-side latency).
    NotRperf3,
    /// The test started and failed.
    Error,
    /// It did not end by its slot's deadline and was stopped.
    Timeout,
    /// Skipped: this agent had spent its byte or time budget for the cycle.
    Budget,
    /// Skipped: this agent's own server was serving a test for as long as
    /// the slot allowed a start.
    SelfBusy,
    /// Skipped: this agent's previous test ran past the time this one could
    /// still start in its slot.
    Late,
}

impl Outcome {
    /// Every outcome, in label order.
    pub const ALL: [Self; 9] = [
        Self::Ok,
        Self::Busy,
        Self::Unreachable,
        Self::NotRperf3,
        Self::Error,
        Self::Timeout,
        Self::Budget,
        Self::SelfBusy,
        Self::Late,
    ];

    /// The label and JSON value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Busy => "busy",
            Self::Unreachable => "unreachable",
            Self::NotRperf3 => "not_rperf3",
            Self::Error => "error",
            Self::Timeout => "timeout",
            Self::Budget => "budget",
            Self::SelfBusy => "self_busy",
            Self::Late => "late",
        }
    }

    /// Whether the test ran (its figures mean something).
    pub fn measured(self) -> bool {
        matches!(self, Self::Ok | Self::NotRperf3)
    }
}

/// A test's figures, read from its client's `-J` document.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// `udp` or `tcp`.
    pub protocol: &'static str,
    /// Bits per second as the receiver counted them.
    pub throughput_bps: f64,
    /// Payload bytes the source sent (what the budget counts).
    pub bytes_sent: u64,
    /// TCP segments the source retransmitted.
    pub retransmits: Option<u64>,
    /// Responsiveness under the test's load.
    pub rpm: f64,
    /// `end.latency.idle` and `end.latency.loaded`, as the document has them.
    pub latency: Value,
    /// Loaded round trip p50 and p99, seconds.
    pub loaded_p50_s: f64,
    /// See `loaded_p50_s`.
    pub loaded_p99_s: f64,
    /// Idle round trip p50, seconds.
    pub idle_p50_s: f64,
    /// UDP: lost datagrams, percent of those sent, as the receiver counted.
    pub lost_percent: Option<f64>,
    /// UDP: the receiver's jitter, ms.
    pub jitter_ms: Option<f64>,
    /// UDP: datagrams lost and sent, as the receiver counted them.
    pub lost_packets: Option<u64>,
    /// See `lost_packets`.
    pub packets: Option<u64>,
}

fn num(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_f64()
}

/// Reads a client's `-J` document: its figures, or why there are none.
pub fn read_document(doc: &Value) -> Result<(Outcome, Figures), (Outcome, String)> {
    if let Some(e) = doc.get("error").and_then(Value::as_str) {
        return Err((classify_error(e), e.to_string()));
    }
    let end = doc
        .get("end")
        .filter(|e| e.get("sum_received").is_some())
        .ok_or((Outcome::Error, "the test ended without results".to_string()))?;
    let udp = doc
        .pointer("/start/test_start/protocol")
        .and_then(Value::as_str)
        == Some("UDP");
    let rx = &end["sum_received"];
    let lat = &end["latency"];
    let ms = |kind: &str, q: &str| num(lat, &[kind, q]).unwrap_or(0.0) / 1000.0;
    let mut latency = Map::new();
    for k in ["idle", "loaded"] {
        if let Some(v) = lat.get(k) {
            latency.insert(k.to_string(), v.clone());
        }
    }
    let figures = Figures {
        protocol: if udp { "udp" } else { "tcp" },
        throughput_bps: num(rx, &["bits_per_second"]).unwrap_or(0.0),
        bytes_sent: num(end, &["sum_sent", "bytes"]).unwrap_or(0.0) as u64,
        retransmits: (!udp)
            .then(|| num(end, &["sum_sent", "retransmits"]).map(|r| r as u64))
            .flatten(),
        rpm: num(lat, &["rpm"]).unwrap_or(0.0),
        latency: Value::Object(latency),
        loaded_p50_s: ms("loaded", "p50_ms"),
        loaded_p99_s: ms("loaded", "p99_ms"),
        idle_p50_s: ms("idle", "p50_ms"),
        lost_percent: udp.then(|| num(rx, &["lost_percent"]).unwrap_or(0.0)),
        jitter_ms: udp.then(|| num(rx, &["jitter_ms"]).unwrap_or(0.0)),
        lost_packets: udp.then(|| num(rx, &["lost_packets"]).unwrap_or(0.0) as u64),
        packets: udp.then(|| num(rx, &["packets"]).unwrap_or(0.0) as u64),
    };
    // A stock iperf3 server answers the test but not the latency offer.
    let outcome = if lat.get("with_server") == Some(&Value::Bool(false)) {
        Outcome::NotRperf3
    } else {
        Outcome::Ok
    };
    Ok((outcome, figures))
}

/// What an iperf3 error text says about the destination.
pub fn classify_error(e: &str) -> Outcome {
    if e.contains("server is busy") {
        Outcome::Busy
    } else if e.starts_with("unable to connect to server") {
        Outcome::Unreachable
    } else {
        Outcome::Error
    }
}

/// One line of `rperf3 mesh -J`.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRecord {
    /// The source's name (the agent that ran the client).
    pub source: String,
    /// The destination's name.
    pub destination: String,
    /// The cycle's number on the time grid.
    pub cycle: u64,
    /// The slot in that cycle.
    pub slot: usize,
    /// Unix time the test started, seconds.
    pub start: f64,
    /// Unix time it ended.
    pub end: f64,
    /// How it ended.
    pub outcome: Outcome,
    /// The error's text, when it failed.
    pub error: Option<String>,
    /// Its figures, when it ran.
    pub figures: Option<Figures>,
}

impl TestRecord {
    /// The JSON line (without the newline).
    pub fn to_json(&self) -> String {
        let f = self.figures.as_ref();
        let mut o = json!({
            "source": self.source,
            "destination": self.destination,
            "start": self.start,
            "end": self.end,
            "outcome": self.outcome.label(),
        });
        let m = o.as_object_mut().expect("an object");
        if let Some(e) = &self.error {
            m.insert("error".into(), json!(e));
        }
        m.insert("cycle".into(), json!(self.cycle));
        m.insert("slot".into(), json!(self.slot));
        m.insert("protocol".into(), json!(f.map(|f| f.protocol)));
        m.insert("throughput_bps".into(), json!(f.map(|f| f.throughput_bps)));
        m.insert("retransmits".into(), json!(f.and_then(|f| f.retransmits)));
        m.insert("rpm".into(), json!(f.map(|f| f.rpm)));
        m.insert(
            "latency".into(),
            f.map_or(Value::Null, |f| f.latency.clone()),
        );
        if let Some(f) = f.filter(|f| f.protocol == "udp") {
            m.insert("lost_percent".into(), json!(f.lost_percent));
            m.insert("jitter_ms".into(), json!(f.jitter_ms));
            m.insert("lost_packets".into(), json!(f.lost_packets));
            m.insert("packets".into(), json!(f.packets));
        }
        o.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_doc() -> Value {
        json!({
            "start": {"test_start": {"protocol": "TCP"}},
            "intervals": [],
            "end": {
                "sum_sent": {"bytes": 1000, "bits_per_second": 8001.0, "retransmits": 3},
                "sum_received": {"bytes": 1000, "bits_per_second": 8000.5},
                "latency": {
                    "idle": {"count": 10, "min_ms": 0.1, "p50_ms": 0.2, "p90_ms": 0.3, "p99_ms": 0.4, "max_ms": 0.5},
                    "loaded": {"count": 31, "min_ms": 1.0, "p50_ms": 150.0, "p90_ms": 155.0, "p99_ms": 160.0, "max_ms": 170.0,
                               "foreign": {"count": 20}, "self": {"count": 11}},
                    "rpm": 400.5,
                    "with_server": true
                }
            }
        })
    }

    #[test]
    fn a_tcp_document_gives_the_receivers_rate_and_the_latency() {
        let (o, f) = read_document(&tcp_doc()).unwrap();
        assert_eq!(o, Outcome::Ok);
        assert_eq!(f.protocol, "tcp");
        assert_eq!(f.throughput_bps, 8000.5);
        assert_eq!(f.bytes_sent, 1000);
        assert_eq!(f.retransmits, Some(3));
        assert_eq!(f.rpm, 400.5);
        assert_eq!(f.loaded_p50_s, 0.15);
        assert_eq!(f.loaded_p99_s, 0.16);
        assert_eq!(f.idle_p50_s, 0.0002);
        assert_eq!(f.lost_percent, None);
        let keys: Vec<&String> = f.latency.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["idle", "loaded"]);
        let rec = TestRecord {
            source: "a".into(),
            destination: "b".into(),
            cycle: 4,
            slot: 1,
            start: 1.5,
            end: 2.25,
            outcome: o,
            error: None,
            figures: Some(f),
        };
        let line: Value = serde_json::from_str(&rec.to_json()).unwrap();
        let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "source",
                "destination",
                "start",
                "end",
                "outcome",
                "cycle",
                "slot",
                "protocol",
                "throughput_bps",
                "retransmits",
                "rpm",
                "latency"
            ]
        );
        assert_eq!(line["throughput_bps"], 8000.5);
        assert_eq!(line["latency"]["loaded"]["p50_ms"], 150.0);
    }

    #[test]
    fn a_udp_document_adds_loss_and_jitter() {
        let mut d = tcp_doc();
        d["start"]["test_start"]["protocol"] = json!("UDP");
        d["end"]["sum_received"]["lost_percent"] = json!(2.5);
        d["end"]["sum_received"]["jitter_ms"] = json!(0.125);
        d["end"]["sum_received"]["lost_packets"] = json!(5);
        d["end"]["sum_received"]["packets"] = json!(200);
        let (_, f) = read_document(&d).unwrap();
        assert_eq!((f.lost_packets, f.packets), (Some(5), Some(200)));
        assert_eq!(f.retransmits, None);
        assert_eq!(f.lost_percent, Some(2.5));
        assert_eq!(f.jitter_ms, Some(0.125));
        let rec = TestRecord {
            source: "a".into(),
            destination: "b".into(),
            cycle: 0,
            slot: 0,
            start: 0.0,
            end: 1.0,
            outcome: Outcome::Ok,
            error: None,
            figures: Some(f),
        };
        let line: Value = serde_json::from_str(&rec.to_json()).unwrap();
        assert_eq!(line["lost_percent"], 2.5);
        assert_eq!(line["jitter_ms"], 0.125);
        assert_eq!(line["lost_packets"], 5);
        assert_eq!(line["packets"], 200);
        assert_eq!(line["retransmits"], Value::Null);
    }

    #[test]
    fn errors_say_what_the_destination_did() {
        let e = |t: &str| read_document(&json!({"start": {}, "error": t})).unwrap_err();
        assert_eq!(
            e("the server is busy running a test. try again later").0,
            Outcome::Busy
        );
        assert_eq!(
            e("unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused").0,
            Outcome::Unreachable
        );
        assert_eq!(
            e("control socket has closed unexpectedly").0,
            Outcome::Error
        );
        let (o, why) = read_document(&json!({"start": {}})).unwrap_err();
        assert_eq!(
            (o, why.as_str()),
            (Outcome::Error, "the test ended without results")
        );
        let rec = TestRecord {
            source: "a".into(),
            destination: "b".into(),
            cycle: 0,
            slot: 3,
            start: 0.0,
            end: 1.0,
            outcome: Outcome::Unreachable,
            error: Some("unable to connect".into()),
            figures: None,
        };
        let line: Value = serde_json::from_str(&rec.to_json()).unwrap();
        assert_eq!(line["outcome"], "unreachable");
        assert_eq!(line["error"], "unable to connect");
        assert_eq!(line["throughput_bps"], Value::Null);
        assert_eq!(line["latency"], Value::Null);
    }

    #[test]
    fn a_stock_server_is_named() {
        let mut d = tcp_doc();
        d["end"]["latency"]["with_server"] = json!(false);
        assert_eq!(read_document(&d).unwrap().0, Outcome::NotRperf3);
        assert!(Outcome::NotRperf3.measured());
        assert!(!Outcome::Busy.measured());
    }
}
