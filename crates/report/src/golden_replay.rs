//! Reads an iperf3 JSON document back into the report's inputs, for the golden
//! tests: streams, interval samples, local totals and the peer's results as the
//! client would have received them.

use crate::input::*;
use crate::testutil::{fixture, Shared};
use crate::{ReportOptions, Reporter, ServerOutput};
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
pub(crate) struct Replay {
    pub(crate) side: Side,
    pub(crate) doc: Value,
}

impl Replay {
    fn test(&self) -> Option<TestInfo> {
        let t = self.doc["start"].get("test_start")?;
        Some(TestInfo {
            side: self.side,
            protocol: if t["protocol"] == "UDP" {
                Protocol::Udp
            } else {
                Protocol::Tcp
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
                Protocol::Tcp
            } else {
                Protocol::Udp
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
        IntervalInput {
            latency: None,
            bounceback: None,
            streams: samples,
        }
    }

    fn end(&self, t: &TestInfo, streams: &[StreamInfo]) -> Option<FinalInput> {
        let e = &self.doc["end"];
        let rows = e.get("streams")?.as_array()?;
        let udp = t.protocol == Protocol::Udp;
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
            latency: None,
            bounceback: None,
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
            diskfile: None,
        })
    }

    pub(crate) fn opts(&self, json_stream: bool, full: bool) -> ReportOptions {
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
    pub(crate) fn run(&self, json_stream: bool, full: bool) -> String {
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

/// The fixture `name` (`.json`, or `.jsonl` events folded into one document).
pub(crate) fn replay(name: &str) -> Replay {
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
