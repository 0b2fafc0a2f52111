//! The results document each side sends after TEST_END (spec §8.2).
//!
//! Both directions use the same schema. We write the 3.14+ form (signed −1,
//! `omitted_*` present) which every 3.x peer reads; we read 3.12's unsigned −1 and
//! its missing `omitted_*`, and require exactly the keys 3.21 requires.

use serde_json::{Map, Value};

use crate::error::IperfError;
use crate::error_codes::IE_RECV_RESULTS;
use crate::framing::{decode_json, encode_json, ControlDecoder, Expect, Unit};
use crate::json_num::{as_c_int, as_f64, as_i64_wrapping, as_u64_sat, num_f64};

/// Counters of one stream, matched with the peer's by `id`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamResult {
    /// Stream id (1, 3, 4, 5, …).
    pub id: i32,
    /// Bytes sent (sending stream) or received (receiving stream) after the omit period.
    pub bytes: u64,
    /// Retransmits of a sending TCP stream with retransmit info, else −1.
    pub retransmits: i64,
    /// UDP jitter in seconds.
    pub jitter: f64,
    /// UDP lost packets (receiver's view), including the omit period.
    pub errors: i64,
    /// Lost packets counted during the omit period (≥3.14; paired with
    /// `omitted_packets`).
    pub omitted_errors: Option<i64>,
    /// UDP packets: sent (sender) or highest sequence seen (receiver). TCP: 0.
    pub packets: u64,
    /// Packet count at the end of the omit period (≥3.14; paired with
    /// `omitted_errors`).
    pub omitted_packets: Option<u64>,
    /// Always 0 in iperf3.
    pub start_time: f64,
    /// Seconds from the stream's start to its last sample.
    pub end_time: f64,
}

/// One side's results.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TestResults {
    /// CPU use of the whole process, % of one core.
    pub cpu_util_total: f64,
    /// User CPU %.
    pub cpu_util_user: f64,
    /// System CPU %.
    pub cpu_util_system: f64,
    /// −1 for a pure receiver, 1 for a TCP sender with retransmit counters, else 0.
    pub sender_has_retransmits: i64,
    /// Congestion control used on this side's data sockets, if known.
    pub congestion_used: Option<String>,
    /// Server only, `get_server_output` in JSON mode: its whole JSON output.
    pub server_output_json: Option<Value>,
    /// Server only, `get_server_output` in text mode: its text output.
    pub server_output_text: Option<String>,
    /// One entry per stream, in creation order.
    pub streams: Vec<StreamResult>,
    /// rperf3's client of a `--bounceback` test (only an rperf3 server agrees to
    /// one): its round trips for the server's metrics, as `rperf3_bounceback`
    /// after `streams`. Opaque here (the latency core's encoding, in hex).
    pub rperf3_bounceback: Option<String>,
}

impl TestResults {
    /// The document in 3.14+ form, key order as iperf3 writes it.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("cpu_util_total".into(), num_f64(self.cpu_util_total));
        m.insert("cpu_util_user".into(), num_f64(self.cpu_util_user));
        m.insert("cpu_util_system".into(), num_f64(self.cpu_util_system));
        m.insert(
            "sender_has_retransmits".into(),
            self.sender_has_retransmits.into(),
        );
        if let Some(c) = &self.congestion_used {
            m.insert("congestion_used".into(), Value::String(c.clone()));
        }
        if let Some(j) = &self.server_output_json {
            m.insert("server_output_json".into(), j.clone());
        }
        if let Some(t) = &self.server_output_text {
            m.insert("server_output_text".into(), Value::String(t.clone()));
        }
        let streams = self.streams.iter().map(StreamResult::to_json).collect();
        m.insert("streams".into(), Value::Array(streams));
        if let Some(b) = &self.rperf3_bounceback {
            m.insert("rperf3_bounceback".into(), Value::String(b.clone()));
        }
        Value::Object(m)
    }

    /// The document framed for the wire.
    pub fn encode(&self) -> Vec<u8> {
        encode_json(&self.to_json())
    }

    /// Reads a peer's results. Error 117 (IERECVRESULTS) if the text is not a JSON
    /// object or lacks a key 3.21 requires (or has it with a non-number type), or if
    /// a stream has only one of `omitted_errors` / `omitted_packets`.
    pub fn from_json(body: &[u8]) -> Result<Self, IperfError> {
        let v = decode_json(body).map_err(|_| bad())?;
        Self::from_value(&v)
    }

    /// [`Self::from_json`] on an already parsed value.
    pub fn from_value(v: &Value) -> Result<Self, IperfError> {
        let m = v.as_object().ok_or_else(bad)?;
        let f = |k: &str| m.get(k).and_then(as_f64).ok_or_else(bad);
        let streams = m.get("streams").and_then(Value::as_array).ok_or_else(bad)?;
        Ok(Self {
            cpu_util_total: f("cpu_util_total")?,
            cpu_util_user: f("cpu_util_user")?,
            cpu_util_system: f("cpu_util_system")?,
            sender_has_retransmits: m
                .get("sender_has_retransmits")
                .and_then(as_i64_wrapping)
                .ok_or_else(bad)?,
            congestion_used: m
                .get("congestion_used")
                .and_then(Value::as_str)
                .map(str::to_owned),
            server_output_json: m
                .get("server_output_json")
                .filter(|j| j.is_object())
                .cloned(),
            server_output_text: m
                .get("server_output_text")
                .and_then(Value::as_str)
                .map(str::to_owned),
            streams: streams
                .iter()
                .map(StreamResult::from_value)
                .collect::<Result<_, _>>()?,
            rperf3_bounceback: m
                .get("rperf3_bounceback")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

impl StreamResult {
    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("id".into(), self.id.into());
        m.insert("bytes".into(), self.bytes.into());
        m.insert("retransmits".into(), self.retransmits.into());
        m.insert("jitter".into(), num_f64(self.jitter));
        m.insert("errors".into(), self.errors.into());
        // Both or neither: a lone one makes ≥3.14 readers fail.
        let omitted = match (self.omitted_errors, self.omitted_packets) {
            (Some(e), Some(p)) => Some((e, p)),
            _ => None,
        };
        if let Some((e, _)) = omitted {
            m.insert("omitted_errors".into(), e.into());
        }
        m.insert("packets".into(), self.packets.into());
        if let Some((_, p)) = omitted {
            m.insert("omitted_packets".into(), p.into());
        }
        m.insert("start_time".into(), num_f64(self.start_time));
        m.insert("end_time".into(), num_f64(self.end_time));
        Value::Object(m)
    }

    fn from_value(v: &Value) -> Result<Self, IperfError> {
        let m = v.as_object().ok_or_else(bad)?;
        let get = |k: &str| m.get(k).filter(|x| x.is_number()).ok_or_else(bad);
        let opt_f = |k: &str| m.get(k).and_then(as_f64).unwrap_or(0.0);
        let omitted_errors = m.get("omitted_errors").and_then(as_i64_wrapping);
        let omitted_packets = m.get("omitted_packets").and_then(as_u64_sat);
        if omitted_errors.is_some() != omitted_packets.is_some() {
            return Err(bad());
        }
        Ok(Self {
            id: as_c_int(get("id")?).unwrap_or(0),
            bytes: as_u64_sat(get("bytes")?).unwrap_or(0),
            retransmits: as_i64_wrapping(get("retransmits")?).unwrap_or(0),
            jitter: as_f64(get("jitter")?).unwrap_or(0.0),
            errors: as_i64_wrapping(get("errors")?).unwrap_or(0),
            omitted_errors,
            packets: as_u64_sat(get("packets")?).unwrap_or(0),
            omitted_packets,
            start_time: opt_f("start_time"),
            end_time: opt_f("end_time"),
        })
    }
}

fn bad() -> IperfError {
    IperfError::new(IE_RECV_RESULTS)
}

/// What arrives where a results document is due.
#[derive(Debug)]
pub(crate) enum ResultsOrState {
    /// The peer's results.
    Results(TestResults),
    /// A state byte instead: a peer that failed or was killed sends one where
    /// the length prefix would be (no accepted prefix starts that high).
    State(u8),
}

/// Reads the results document due next, or the state byte a failing peer sends
/// in its place. `Ok(None)`: not all bytes have arrived yet.
pub(crate) fn read_results_or_state(
    decoder: &mut ControlDecoder,
    max_len: u32,
) -> Result<Option<ResultsOrState>, IperfError> {
    let Some(first) = decoder.peek() else {
        return Ok(None);
    };
    if u32::from(first) > max_len >> 24 {
        decoder.next_unit(Expect::State).ok();
        return Ok(Some(ResultsOrState::State(first)));
    }
    match decoder.next_unit(Expect::Json { max_len }) {
        Ok(Some(Unit::Json(body))) => Ok(Some(ResultsOrState::Results(TestResults::from_json(
            &body,
        )?))),
        Ok(_) => Ok(None),
        Err(_) => Err(IperfError::new(IE_RECV_RESULTS)),
    }
}

#[cfg(test)]
#[path = "results_tests.rs"]
mod tests;
