//! Golden tests of the JSON output against every 3.21 `.json`/`.jsonl` fixture.
//!
//! Each fixture is read back into the report's inputs (streams, interval
//! samples, local totals, the peer's results as the client would have received
//! them), replayed through a [`Reporter`], and the result must have the same
//! keys, in the same order, with the same JSON types (any number matching any
//! number) at every path. Numbers must also agree closely, which checks the
//! arithmetic (durations, rates, sums) against real iperf3.

use crate::input::*;
use crate::testutil::{fixture, Shared};
use crate::{cjson, ReportOptions, Reporter, ServerOutput};
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(0.0)
}
fn u(v: &Value) -> u64 {
    v.as_f64().unwrap_or(0.0) as u64
}
fn i(v: &Value) -> i64 {
    v.as_f64().unwrap_or(0.0) as i64
}

/// The report's inputs, recovered from an iperf3 document.
struct Replay {
    side: Side,
    doc: Value,
}

impl Replay {
    fn test(&self) -> Option<TestInfo> {
        let t = self.doc["start"].get("test_start")?;
        Some(TestInfo {
            side: self.side,
            protocol: if t["protocol"] == "UDP" {
                Proto::Udp
            } else {
                Proto::Tcp
            },
            num_streams: u(&t["num_streams"]) as u32,
            blksize: u(&t["blksize"]) as u32,
            omit: u(&t["omit"]) as u32,
            duration: u(&t["duration"]) as u32,
            bytes: u(&t["bytes"]),
            blocks: u(&t["blocks"]),
            reverse: u(&t["reverse"]) != 0,
            bidir: u(&t["bidir"]) != 0,
            tos: u(&t["tos"]) as u32,
            target_bitrate: u(&t["target_bitrate"]),
            fq_rate: u(&t["fqrate"]),
            interval: f(&t["interval"]),
            gso: u(&t["gso"]) != 0,
            gro: u(&t["gro"]) != 0,
        })
    }

    /// A test that failed before TEST_START still has its connect-time facts.
    fn connect_test(&self) -> TestInfo {
        self.test().unwrap_or(TestInfo {
            side: self.side,
            protocol: if self.doc["start"].get("tcp_mss_default").is_some() {
                Proto::Tcp
            } else {
                Proto::Udp
            },
            num_streams: 1,
            blksize: 0,
            omit: 0,
            duration: 0,
            bytes: 0,
            blocks: 0,
            reverse: false,
            bidir: false,
            tos: 0,
            target_bitrate: u(&self.doc["start"]["target_bitrate"]),
            fq_rate: u(&self.doc["start"]["fq_rate"]),
            interval: 1.0,
            gso: false,
            gro: false,
        })
    }

    fn start_info(&self) -> Option<StartInfo> {
        let s = &self.doc["start"];
        s.get("timestamp")?;
        let addr = |o: &Value| format!("{}:{}", o["host"].as_str().unwrap(), u(&o["port"]));
        Some(StartInfo {
            version: s["version"].as_str().unwrap().into(),
            system_info: s["system_info"].as_str().unwrap().into(),
            timestamp_millis: u(&s["timestamp"]["timemillisecs"]),
            connecting_to: s.get("connecting_to").map(|c| {
                (
                    c["host"].as_str().unwrap().to_string(),
                    u(&c["port"]) as u16,
                )
            }),
            accepted_connection: s
                .get("accepted_connection")
                .map(|a| addr(a).parse().unwrap()),
            cookie: s["cookie"].as_str().unwrap().into(),
            tcp_mss: match (s.get("tcp_mss"), s.get("tcp_mss_default")) {
                (Some(v), _) => Some(MssInfo::Set(u(v) as u32)),
                (None, Some(v)) => Some(MssInfo::Default(u(v) as u32)),
                _ => None,
            },
            sock_bufsize: s.get("sock_bufsize").map_or(0, u),
            sndbuf_actual: s.get("sndbuf_actual").map_or(0, u),
            rcvbuf_actual: s.get("rcvbuf_actual").map_or(0, u),
        })
    }

    fn streams(&self) -> Vec<StreamInfo> {
        let conn = self.doc["start"]["connected"].as_array().unwrap();
        let first = self.doc["intervals"][0]["streams"].as_array();
        conn.iter()
            .enumerate()
            .map(|(k, c)| {
                let socket = i(&c["socket"]) as i32;
                let sender = first
                    .and_then(|a| a.iter().find(|s| i(&s["socket"]) as i32 == socket))
                    .is_some_and(|s| s["sender"] == true);
                let ep = |h: &str, p: &str| {
                    format!("{}:{}", c[h].as_str().unwrap(), u(&c[p]))
                        .parse()
                        .unwrap()
                };
                StreamInfo {
                    socket,
                    id: if k == 0 { 1 } else { k as u32 + 2 },
                    sender,
                    local: ep("local_host", "local_port"),
                    remote: ep("remote_host", "remote_port"),
                }
            })
            .collect()
    }

    fn interval(&self, iv: &Value, streams: &[StreamInfo]) -> IntervalInput {
        let rows = iv["streams"].as_array().unwrap();
        let samples = streams
            .iter()
            .map(|info| {
                let r = rows
                    .iter()
                    .find(|r| i(&r["socket"]) as i32 == info.socket)
                    .unwrap();
                let extra = if r.get("snd_cwnd").is_some() {
                    SampleExtra::TcpSender(TcpSample {
                        retransmits: u(&r["retransmits"]),
                        snd_cwnd: u(&r["snd_cwnd"]),
                        snd_wnd: u(&r["snd_wnd"]),
                        rtt: u(&r["rtt"]),
                        rttvar: u(&r["rttvar"]),
                        pmtu: u(&r["pmtu"]),
                        reorder: i(&r["reorder"]),
                    })
                } else if r.get("jitter_ms").is_some() {
                    SampleExtra::UdpReceiver(UdpRecvSample {
                        jitter: f(&r["jitter_ms"]) / 1000.0,
                        lost: i(&r["lost_packets"]),
                        packets: i(&r["packets"]),
                        out_of_order: 0,
                    })
                } else if r.get("packets").is_some() {
                    SampleExtra::UdpSender {
                        packets: u(&r["packets"]),
                    }
                } else {
                    SampleExtra::None
                };
                // iperf3 prints |start| when the interval began before the omit
                // reset; its `seconds` still spans the whole interval.
                let (start, end) = (f(&r["start"]), f(&r["end"]));
                let start = if end - start - f(&r["seconds"]) < -2e-6 {
                    -start
                } else {
                    start
                };
                StreamSample {
                    start,
                    end: f(&r["end"]),
                    bytes: u(&r["bytes"]),
                    omitted: r["omitted"] == true,
                    extra,
                }
            })
            .collect();
        IntervalInput { streams: samples }
    }

    fn end(&self, t: &TestInfo, streams: &[StreamInfo]) -> Option<FinalInput> {
        let e = &self.doc["end"];
        let rows = e.get("streams")?.as_array()?;
        let udp = t.protocol == Proto::Udp;
        let client = self.side == Side::Client;
        let row = |info: &StreamInfo| {
            rows.iter()
                .find(|r| {
                    let o = if udp { &r["udp"] } else { &r["sender"] };
                    i(&o["socket"]) as i32 == info.socket
                })
                .unwrap()
        };
        let first_sender = streams.first().is_some_and(|s| s.sender);
        let local_time = if udp {
            if first_sender {
                f(&e["sum_sent"]["end"])
            } else {
                f(&e["sum_received"]["end"])
            }
        } else {
            f(&rows[0]["receiver"]["seconds"])
        };
        let mut finals = Vec::new();
        let mut peers = Vec::new();
        // A UDP receiver's own packet count is in the JSON only as a group total:
        // charge the difference to the group's first receiving stream.
        let rx_suffix = if t.bidir && client {
            "_bidir_reverse"
        } else {
            ""
        };
        let sent_total = i(&e[format!("sum_sent{rx_suffix}")]["packets"]);
        let mut deficit = if sent_total > 0 {
            sent_total - i(&e[format!("sum_received{rx_suffix}")]["packets"])
        } else {
            0
        };
        let mut local_retrans = false;
        let mut peer_retrans = false;
        for info in streams {
            let r = row(info);
            let (bytes, tcp, udp_totals, peer) = if udp {
                let o = &r["udp"];
                let mut packets = u(&o["packets"]);
                if !info.sender {
                    packets = (packets as i64 - deficit) as u64;
                    deficit = 0;
                }
                let totals = UdpTotals {
                    packets,
                    lost: if info.sender {
                        0
                    } else {
                        i(&o["lost_packets"])
                    },
                    jitter: if info.sender {
                        0.0
                    } else {
                        f(&o["jitter_ms"]) / 1000.0
                    },
                    out_of_order: u(&o["out_of_order"]),
                    ..Default::default()
                };
                let peer = PeerStream {
                    bytes: u(&o["bytes"]),
                    jitter: f(&o["jitter_ms"]) / 1000.0,
                    errors: i(&o["lost_packets"]),
                    omitted_errors: Some(0),
                    packets: u(&o["packets"]),
                    omitted_packets: Some(0),
                    retransmits: -1,
                    duration: Some(if info.sender {
                        f(&e["sum"]["end"])
                    } else {
                        f(&o["end"])
                    }),
                    id: info.id,
                };
                let bytes = if info.sender {
                    u(&o["bytes"])
                } else {
                    u(&e["sum_received"]["bytes"]) / u64::from(t.num_streams.max(1))
                };
                (bytes, None, Some(totals), peer)
            } else {
                let (s, rc) = (&r["sender"], &r["receiver"]);
                let has = s.get("retransmits").is_some();
                if info.sender {
                    local_retrans |= has;
                } else {
                    peer_retrans |= has;
                }
                let tcp = (info.sender || t.bidir).then(|| TcpTotals {
                    retransmits: u(&s["retransmits"]),
                    reorder: i(&s["reorder"]),
                    max_snd_cwnd: u(&s["max_snd_cwnd"]),
                    max_snd_wnd: u(&s["max_snd_wnd"]),
                    max_rtt: u(&s["max_rtt"]),
                    min_rtt: u(&s["min_rtt"]),
                    mean_rtt: u(&s["mean_rtt"]),
                });
                let (local_bytes, peer_obj) = if info.sender {
                    (u(&s["bytes"]), rc)
                } else {
                    (u(&rc["bytes"]), s)
                };
                let peer = PeerStream {
                    id: info.id,
                    bytes: u(&peer_obj["bytes"]),
                    retransmits: if info.sender || !has {
                        -1
                    } else {
                        i(&s["retransmits"])
                    },
                    duration: Some(f(&peer_obj["end"])),
                    ..Default::default()
                };
                (local_bytes, tcp, None, peer)
            };
            finals.push(StreamFinal {
                bytes,
                duration: local_time,
                tcp,
                udp: udp_totals,
            });
            peers.push(peer);
        }
        let cpu = &e["cpu_utilization_percent"];
        let (snd, rcv) = (
            e.get("sender_tcp_congestion")
                .and_then(Value::as_str)
                .map(String::from),
            e.get("receiver_tcp_congestion")
                .and_then(Value::as_str)
                .map(String::from),
        );
        // The last group printed decides which key names the local algorithm.
        let last_sends = match (t.bidir, self.side) {
            (true, Side::Client) => false,
            (true, Side::Server) => true,
            (false, Side::Client) => !t.reverse,
            (false, Side::Server) => t.reverse,
        };
        let (local_cc, remote_cc) = if last_sends { (snd, rcv) } else { (rcv, snd) };
        let local_sender_mode = t.bidir || (client != t.reverse);
        Some(FinalInput {
            streams: finals,
            cpu: Cpu {
                total: f(&cpu["host_total"]),
                user: f(&cpu["host_user"]),
                system: f(&cpu["host_system"]),
            },
            congestion: local_cc,
            has_retransmits: local_retrans
                || (self.side == Side::Server && !t.bidir && t.reverse && !udp),
            peer: client.then(|| PeerSummary {
                cpu: Cpu {
                    total: f(&cpu["remote_total"]),
                    user: f(&cpu["remote_user"]),
                    system: f(&cpu["remote_system"]),
                },
                sender_has_retransmits: if peer_retrans {
                    1
                } else if local_sender_mode && !t.bidir {
                    -1
                } else {
                    0
                },
                congestion: remote_cc,
                streams: peers,
            }),
        })
    }

    fn opts(&self, json_stream: bool, full: bool) -> ReportOptions {
        let s = &self.doc["start"];
        let mut o = ReportOptions::new(
            self.side,
            s["version"].as_str().unwrap(),
            s["system_info"].as_str().unwrap(),
        );
        o.json = true;
        o.json_stream = json_stream;
        o.json_stream_full_output = full;
        if self.side == Side::Client {
            o.title = self
                .doc
                .get("title")
                .and_then(Value::as_str)
                .map(String::from);
            o.extra_data = self
                .doc
                .get("extra_data")
                .and_then(Value::as_str)
                .map(String::from);
        }
        o
    }

    /// Feeds the recovered events to a reporter; returns what it printed.
    fn run(&self, json_stream: bool, full: bool) -> String {
        let out = Shared::default();
        let mut r = Reporter::new(
            self.opts(json_stream, full),
            Box::new(out.clone()),
            Box::new(std::io::sink()),
        );
        if self.side == Side::Server {
            let labels = |k: &str| self.doc.get(k).and_then(Value::as_str).map(String::from);
            r.set_peer_labels(labels("title"), labels("extra_data"));
        }
        if let Some(si) = self.start_info() {
            let t = self.connect_test();
            r.control_connected(&si, &t);
            let streams = self.streams();
            for s in &streams {
                r.stream_connected(s);
            }
            if let Some(t) = self.test() {
                r.start(&si, &t);
                for iv in self.doc["intervals"].as_array().unwrap() {
                    r.interval(&self.interval(iv, &streams));
                }
                if let Some(fin) = self.end(&t, &streams) {
                    r.end(&fin);
                }
            }
        }
        if let Some(v) = self.doc.get("server_output_json") {
            r.server_output(ServerOutput::Json(v.clone()));
        }
        if let Some(v) = self.doc.get("server_output_text") {
            r.server_output(ServerOutput::Text(v.as_str().unwrap().into()));
        }
        if let Some(e) = self.doc.get("error").and_then(Value::as_str) {
            r.error(e);
        }
        r.finish().unwrap();
        out.text()
    }
}

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

fn replay(name: &str) -> Replay {
    let side = if name.contains(".server.") {
        Side::Server
    } else {
        Side::Client
    };
    let text = fixture(name);
    let first_doc = if name.ends_with(".jsonl") {
        // Rebuild a document from the events.
        let mut doc = serde_json::json!({"start": {"connected": [], "version": "", "system_info": ""}, "intervals": [], "end": {}});
        for line in text.lines() {
            let ev: Value = serde_json::from_str(line).unwrap();
            let data = ev["data"].clone();
            match ev["event"].as_str().unwrap() {
                "start" => doc["start"] = data,
                "interval" => doc["intervals"].as_array_mut().unwrap().push(data),
                "end" => doc["end"] = data,
                "error" => doc["error"] = data,
                other => doc[other] = data,
            }
        }
        doc
    } else {
        serde_json::from_str(&text).unwrap()
    };
    Replay {
        side,
        doc: first_doc,
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
        let theirs: Vec<Value> = fixture(name)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let ours: Vec<Value> = printed
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
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
/// fixture byte for byte (apart from the keys iperf3 duplicates).
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
