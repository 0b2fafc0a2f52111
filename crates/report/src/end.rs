//! Builds the final summary of the result model and the JSON `end` object.
//!
//! iperf3 combines each stream's local totals with the peer's results: the
//! sending side's bytes and the receiving side's bytes, with three durations
//! taken from the first stream of the test (local, sender, receiver). A server
//! builds its summary before the results exchange, so everything the peer would
//! have told it is zero and the peer's times fall back to its own.

use crate::cjson::num;
use crate::input::{FinalInput, PeerStream, Protocol, StreamFinal, StreamInfo};
use crate::model::{
    usec, DiskFileEnd, EndGroup, EndReport, EndStream, Flow, Layout, RetransEnd, UdpEnd, UdpSums,
};
use serde_json::{json, Map, Value};

/// `bytes * 8 / secs`, or 0 when no time passed.
fn rate(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 / secs * 8.0
    } else {
        0.0
    }
}

/// One stream's figures in iperf3's terms, after merging in the peer's results.
struct Merged {
    bytes_sent: u64,
    bytes_received: u64,
    jitter: f64,
    cnt_error: i64,
    omitted_cnt_error: i64,
    omitted_packet_count: i64,
    sender_packets: i64,
    sender_omitted: i64,
    receiver_packets: i64,
    receiver_omitted: i64,
    retrans: i64,
    out_of_order: i64,
}

fn merge(info: &StreamInfo, local: &StreamFinal, peer: Option<&PeerStream>) -> Merged {
    let udp = local.udp.unwrap_or_default();
    let packets = udp.packets as i64;
    let omitted_packets = udp.omitted_packets as i64;
    let out_of_order = udp.out_of_order as i64 - udp.omitted_out_of_order as i64;
    if info.sender {
        let cnt_error = peer.map_or(0, |p| p.errors);
        let (peer_omitted, omitted_cnt_error) = match peer {
            Some(PeerStream {
                omitted_packets: Some(op),
                omitted_errors: Some(oe),
                ..
            }) => (*op as i64, *oe),
            // An old peer: assume its omitted count equals ours; the loss during
            // the omit period is then unknown (-1) if there was any loss at all.
            // Without an omit period nothing was omitted (iperf3 would take the
            // whole loss as omitted and report 0 lost).
            Some(_) if omitted_packets > 0 => (omitted_packets, if cnt_error > 0 { -1 } else { 0 }),
            _ => (0, 0),
        };
        Merged {
            bytes_sent: local.bytes,
            bytes_received: peer.map_or(0, |p| p.bytes),
            jitter: peer.map_or(0.0, |p| p.jitter),
            cnt_error,
            omitted_cnt_error,
            omitted_packet_count: omitted_packets,
            sender_packets: packets,
            sender_omitted: omitted_packets,
            receiver_packets: peer.map_or(0, |p| p.packets as i64),
            receiver_omitted: peer_omitted,
            retrans: local.tcp.map_or(0, |t| t.retransmits as i64),
            out_of_order,
        }
    } else {
        Merged {
            bytes_sent: peer.map_or(0, |p| p.bytes),
            bytes_received: local.bytes,
            jitter: udp.jitter,
            cnt_error: udp.lost,
            omitted_cnt_error: udp.omitted_lost,
            omitted_packet_count: omitted_packets,
            sender_packets: peer.map_or(0, |p| p.packets as i64),
            // An old peer sends no omitted count: assume it equals ours (iperf3
            // takes the whole count, which makes its sender total read 0).
            sender_omitted: peer.map_or(0, |p| {
                p.omitted_packets.map_or(omitted_packets, |o| o as i64)
            }),
            receiver_packets: packets,
            receiver_omitted: omitted_packets,
            retrans: match peer {
                Some(p) => p.retransmits,
                None => local.tcp.map_or(0, |t| t.retransmits as i64),
            },
            out_of_order,
        }
    }
}

/// Combines the local totals and the peer's results into the summary model.
pub fn build(layout: &Layout, streams: &[StreamInfo], fin: &FinalInput) -> EndReport {
    let peer_of = |info: &StreamInfo| {
        fin.peer
            .as_ref()
            .and_then(|p| p.streams.iter().find(|s| s.id == info.id))
    };
    // The three durations come from the first stream of the test.
    let (mut sender_time, mut receiver_time, mut local_time) = (0.0, 0.0, 0.0);
    if let (Some(info), Some(local)) = (streams.first(), fin.streams.first()) {
        local_time = usec(local.duration);
        let peer_time = peer_of(info).and_then(|p| p.duration).map_or(0.0, usec);
        let other = if peer_time == 0.0 {
            local_time
        } else {
            peer_time
        };
        if info.sender {
            (sender_time, receiver_time) = (local_time, other);
        } else {
            (sender_time, receiver_time) = (other, local_time);
        }
    }
    let peer_has = fin
        .peer
        .as_ref()
        .is_some_and(|p| p.sender_has_retransmits != 0);
    let has_retrans = |group_sender: bool| {
        layout.protocol == Protocol::Tcp
            && if layout.bidir {
                if group_sender {
                    fin.has_retransmits
                } else {
                    peer_has
                }
            } else if layout.local_sender {
                fin.has_retransmits
            } else {
                peer_has
            }
    };
    let udp_test = layout.protocol == Protocol::Udp;
    let groups: Vec<EndGroup> = layout
        .groups()
        .into_iter()
        .map(|sender| {
            let hr = has_retrans(sender);
            let mut out = Vec::new();
            let (mut total_sent, mut total_received, mut total_retrans) = (0u64, 0u64, 0i64);
            let (mut total_packets, mut sender_total, mut receiver_total) = (0i64, 0i64, 0i64);
            let (mut lost_total, mut jitter_total) = (0i64, 0.0f64);
            for (info, local) in streams.iter().zip(&fin.streams) {
                if info.sender != sender {
                    continue;
                }
                let m = merge(info, local, peer_of(info));
                total_sent += m.bytes_sent;
                total_received += m.bytes_received;
                if hr {
                    total_retrans += m.retrans;
                }
                let preferred = if m.sender_packets != 0 {
                    m.sender_packets
                } else {
                    m.receiver_packets
                };
                total_packets += preferred - m.omitted_packet_count;
                sender_total += m.sender_packets - m.sender_omitted;
                receiver_total += m.receiver_packets - m.receiver_omitted;
                lost_total += m.cnt_error - m.omitted_cnt_error.max(0);
                jitter_total += m.jitter;
                let lost = m.cnt_error - m.omitted_cnt_error;
                let sent_packets = m.sender_packets - m.sender_omitted;
                let receiver_packets = m.receiver_packets - m.receiver_omitted;
                let known = m.omitted_cnt_error > -1;
                let udp = udp_test.then(|| UdpEnd {
                    jitter_ms: m.jitter * 1000.0,
                    lost_packets: lost,
                    packets: preferred - m.omitted_packet_count,
                    lost_percent: if sent_packets > 0 {
                        100.0 * lost as f64 / sent_packets as f64
                    } else {
                        0.0
                    },
                    out_of_order: m.out_of_order,
                    sender_packets: sent_packets,
                    receiver_packets,
                    receiver_lost: known.then_some(lost),
                    receiver_lost_percent: if receiver_packets > 0 && known {
                        100.0 * lost as f64 / receiver_packets as f64
                    } else {
                        0.0
                    },
                });
                let retrans = hr.then(|| {
                    let t = local.tcp.unwrap_or_default();
                    RetransEnd {
                        retransmits: m.retrans,
                        reorder: local.tcp.map_or(0, |t| t.reorder),
                        max_snd_cwnd: t.max_snd_cwnd,
                        max_snd_wnd: t.max_snd_wnd,
                        max_rtt: t.max_rtt,
                        min_rtt: t.min_rtt,
                        mean_rtt: t.mean_rtt,
                    }
                });
                out.push(EndStream {
                    socket: info.socket,
                    local_sender: info.sender,
                    sent: Flow {
                        end: sender_time,
                        seconds: sender_time,
                        bytes: m.bytes_sent,
                        bits_per_second: rate(m.bytes_sent, sender_time),
                    },
                    // iperf3 writes the local duration as the receiver's `seconds`.
                    received: Flow {
                        end: receiver_time,
                        seconds: local_time,
                        bytes: m.bytes_received,
                        bits_per_second: rate(m.bytes_received, receiver_time),
                    },
                    retrans,
                    udp,
                    diskfile: fin.diskfile.as_ref().map(|f| DiskFileEnd {
                        sent: m.bytes_sent,
                        received: m.bytes_received,
                        size: f.size,
                        percent_sent: percent_of(m.bytes_sent, f.size),
                        percent_received: percent_of(m.bytes_received, f.size),
                        filename: f.name.clone(),
                    }),
                });
            }
            let mut sum_sent = Flow {
                end: sender_time,
                seconds: sender_time,
                bytes: total_sent,
                bits_per_second: rate(total_sent, sender_time),
            };
            let mut sum_received = Flow {
                end: receiver_time,
                seconds: receiver_time,
                bytes: total_received,
                bits_per_second: rate(total_received, receiver_time),
            };
            let udp = udp_test.then(|| {
                let jitter = jitter_total / f64::from(layout.num_streams.max(1));
                let lost_percent = if total_packets > 0 {
                    100.0 * lost_total as f64 / total_packets as f64
                } else {
                    0.0
                };
                let sums = UdpSums {
                    sum: Flow {
                        end: receiver_time,
                        seconds: receiver_time,
                        bytes: total_sent,
                        bits_per_second: sum_sent.bits_per_second,
                    },
                    jitter_ms: jitter * 1000.0,
                    lost_packets: lost_total,
                    packets: total_packets,
                    lost_percent,
                    sender_packets: sender_total,
                    receiver_packets: receiver_total,
                    text_received_bits_per_second: if local_time > 0.0 {
                        total_received as f64 / receiver_time * 8.0
                    } else {
                        0.0
                    },
                };
                // UDP's sum_sent / sum_received divide without a zero check.
                sum_sent.bits_per_second = total_sent as f64 * 8.0 / sender_time;
                sum_received.bits_per_second = total_received as f64 * 8.0 / receiver_time;
                sums
            });
            EndGroup {
                sender,
                bidir_reverse: layout.is_bidir_reverse(sender),
                role: layout.role(sender),
                has_retransmits: hr,
                streams: out,
                sum_sent,
                sum_retransmits: hr.then_some(total_retrans),
                sum_received,
                udp,
            }
        })
        .collect();
    let retransmits_header = groups.iter().any(|g| g.has_retransmits);
    EndReport {
        layout: layout.clone(),
        groups,
        host_cpu: fin.cpu,
        remote_cpu: fin.peer.as_ref().map(|p| p.cpu).unwrap_or_default(),
        local_congestion: fin.congestion.clone(),
        remote_congestion: fin.peer.as_ref().and_then(|p| p.congestion.clone()),
        retransmits_header,
        latency: fin.latency.clone(),
        bounceback: fin.bounceback.clone(),
    }
}

fn flow_json(m: &mut Map<String, Value>, f: &Flow) {
    m.insert("start".into(), json!(0));
    m.insert("end".into(), num(f.end));
    m.insert("seconds".into(), num(f.seconds));
    m.insert("bytes".into(), json!(f.bytes));
    m.insert("bits_per_second".into(), num(f.bits_per_second));
}

/// A whole percentage, truncated as iperf3's integer conversion does.
fn percent_of(part: u64, whole: u64) -> u64 {
    if whole == 0 {
        0
    } else {
        (part as f64 / whole as f64 * 100.0) as u64
    }
}

fn tcp_stream_json(s: &EndStream, group_sender: bool) -> Value {
    let mut sender = Map::new();
    sender.insert("socket".into(), json!(s.socket));
    flow_json(&mut sender, &s.sent);
    if let Some(r) = &s.retrans {
        sender.insert("retransmits".into(), json!(r.retransmits));
        sender.insert("reorder".into(), json!(r.reorder));
        sender.insert("max_snd_cwnd".into(), json!(r.max_snd_cwnd));
        sender.insert("max_snd_wnd".into(), json!(r.max_snd_wnd));
        sender.insert("max_rtt".into(), json!(r.max_rtt));
        sender.insert("min_rtt".into(), json!(r.min_rtt));
        sender.insert("mean_rtt".into(), json!(r.mean_rtt));
    }
    sender.insert("sender".into(), json!(group_sender));
    let mut receiver = Map::new();
    receiver.insert("socket".into(), json!(s.socket));
    flow_json(&mut receiver, &s.received);
    receiver.insert("sender".into(), json!(group_sender));
    let mut m = Map::new();
    m.insert("sender".into(), Value::Object(sender));
    // iperf3 puts the file's object between the two directions.
    if let Some(d) = &s.diskfile {
        m.insert(
            "diskfile".into(),
            json!({
                "sent": d.sent,
                "received": d.received,
                "size": d.size,
                "percent_sent": d.percent_sent,
                "percent_received": d.percent_received,
                "filename": d.filename,
            }),
        );
    }
    m.insert("receiver".into(), Value::Object(receiver));
    Value::Object(m)
}

fn udp_fields(m: &mut Map<String, Value>, jitter_ms: f64, lost: i64, packets: i64, pct: f64) {
    m.insert("jitter_ms".into(), num(jitter_ms));
    m.insert("lost_packets".into(), json!(lost));
    m.insert("packets".into(), json!(packets));
    m.insert("lost_percent".into(), num(pct));
}

fn udp_stream_json(s: &EndStream, group_sender: bool) -> Value {
    let u = s.udp.unwrap_or_default();
    let mut m = Map::new();
    m.insert("socket".into(), json!(s.socket));
    flow_json(&mut m, &s.sent);
    udp_fields(
        &mut m,
        u.jitter_ms,
        u.lost_packets,
        u.packets,
        u.lost_percent,
    );
    m.insert("out_of_order".into(), json!(u.out_of_order));
    m.insert("sender".into(), json!(group_sender));
    json!({ "udp": Value::Object(m) })
}

/// The JSON `end` object.
pub fn to_json(r: &EndReport) -> Value {
    let udp = r.layout.protocol == Protocol::Udp;
    let streams: Vec<Value> = r
        .groups
        .iter()
        .flat_map(|g| {
            g.streams.iter().map(move |s| {
                if udp {
                    udp_stream_json(s, g.sender)
                } else {
                    tcp_stream_json(s, g.sender)
                }
            })
        })
        .collect();
    let mut end = Map::new();
    end.insert("streams".into(), Value::Array(streams));
    for g in &r.groups {
        let sfx = if g.bidir_reverse {
            "_bidir_reverse"
        } else {
            ""
        };
        let mut sent = Map::new();
        flow_json(&mut sent, &g.sum_sent);
        let mut received = Map::new();
        flow_json(&mut received, &g.sum_received);
        if let Some(u) = &g.udp {
            let mut sum = Map::new();
            flow_json(&mut sum, &u.sum);
            udp_fields(
                &mut sum,
                u.jitter_ms,
                u.lost_packets,
                u.packets,
                u.lost_percent,
            );
            sum.insert("sender".into(), json!(g.sender));
            end.insert(format!("sum{sfx}"), Value::Object(sum));
            udp_fields(&mut sent, 0.0, 0, u.sender_packets, 0.0);
            sent.insert("sender".into(), json!(true));
            udp_fields(
                &mut received,
                u.jitter_ms,
                u.lost_packets,
                u.receiver_packets,
                u.lost_percent,
            );
            received.insert("sender".into(), json!(false));
        } else {
            if let Some(n) = g.sum_retransmits {
                sent.insert("retransmits".into(), json!(n));
            }
            sent.insert("sender".into(), json!(g.sender));
            received.insert("sender".into(), json!(g.sender));
        }
        end.insert(format!("sum_sent{sfx}"), Value::Object(sent));
        end.insert(format!("sum_received{sfx}"), Value::Object(received));
    }
    end.insert(
        "cpu_utilization_percent".into(),
        json!({
            "host_total": num(r.host_cpu.total),
            "host_user": num(r.host_cpu.user),
            "host_system": num(r.host_cpu.system),
            "remote_total": num(r.remote_cpu.total),
            "remote_user": num(r.remote_cpu.user),
            "remote_system": num(r.remote_cpu.system),
        }),
    );
    if !udp {
        if let Some(last) = r.groups.last() {
            let (snd, rcv) = r.congestion_for(last.sender);
            if let Some(c) = snd {
                end.insert("sender_tcp_congestion".into(), json!(c));
            }
            if let Some(c) = rcv {
                end.insert("receiver_tcp_congestion".into(), json!(c));
            }
        }
    }
    if let Some(l) = &r.latency {
        end.insert("latency".into(), crate::latency::end_json(l));
    }
    if let Some(b) = &r.bounceback {
        end.insert("bounceback".into(), crate::bounceback::to_json(b));
    }
    Value::Object(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Cpu, PeerSummary, Side, UdpTotals};
    use crate::testutil::{stream, test_info};

    fn udp_receiver_with_old_peer(omitted_local: u64) -> EndReport {
        let mut t = test_info(Side::Client, Protocol::Udp);
        t.reverse = true;
        let layout = Layout::new(Side::Client, &t);
        let streams = [stream(5, 1, false, "127.0.0.1:1", "127.0.0.1:2")];
        let udp = UdpTotals {
            packets: 8,
            omitted_packets: omitted_local,
            lost: 1,
            ..Default::default()
        };
        let fin = FinalInput {
            latency: None,
            bounceback: None,
            streams: vec![StreamFinal {
                bytes: 1000,
                duration: 2.0,
                tcp: None,
                udp: Some(udp),
            }],
            cpu: Cpu::default(),
            congestion: None,
            has_retransmits: false,
            peer: Some(PeerSummary {
                streams: vec![PeerStream {
                    id: 1,
                    bytes: 1100,
                    packets: 8,
                    duration: Some(2.0),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            diskfile: None,
        };
        build(&layout, &streams, &fin)
    }

    #[test]
    fn old_peer_without_omitted_counts_still_shows_sent_packets() {
        let r = udp_receiver_with_old_peer(0);
        let u = r.groups[0].streams[0].udp.unwrap();
        assert_eq!(u.sender_packets, 8);
        assert_eq!(u.receiver_lost, Some(1));
        assert_eq!(r.groups[0].udp.unwrap().sender_packets, 8);
    }

    #[test]
    fn reverse_client_takes_bytes_and_sender_time_from_the_peer() {
        let r = udp_receiver_with_old_peer(0);
        let s = &r.groups[0].streams[0];
        assert_eq!(s.sent.bytes, 1100);
        assert_eq!(s.received.bytes, 1000);
        assert!(!r.groups[0].sender);
    }

    #[test]
    fn server_without_peer_falls_back_to_local_times_and_zero_peer_bytes() {
        let t = test_info(Side::Server, Protocol::Tcp);
        let layout = Layout::new(Side::Server, &t);
        let streams = [stream(5, 1, false, "127.0.0.1:1", "127.0.0.1:2")];
        let fin = FinalInput {
            latency: None,
            bounceback: None,
            streams: vec![StreamFinal {
                bytes: 5000,
                duration: 3.002293,
                tcp: None,
                udp: None,
            }],
            cpu: Cpu {
                total: 43.36,
                user: 1.67,
                system: 41.7,
            },
            congestion: Some("bbr".into()),
            has_retransmits: false,
            peer: None,
            diskfile: None,
        };
        let r = build(&layout, &streams, &fin);
        let v = to_json(&r);
        assert_eq!(v["streams"][0]["sender"]["bytes"], 0);
        assert_eq!(v["streams"][0]["sender"]["end"], 3.002293);
        assert_eq!(v["sum_received"]["bytes"], 5000);
        assert_eq!(v["cpu_utilization_percent"]["remote_total"], 0.0);
        assert!(v.get("sender_tcp_congestion").is_none());
        assert_eq!(v["receiver_tcp_congestion"], "bbr");
    }
}
