//! Builds one interval of the result model and its JSON `intervals[]` element.
//!
//! iperf3's rules applied here: a very short interval without bytes is dropped;
//! `seconds` is the 32-bit float iperf3 stores; a group total takes its times
//! from the first stream of the whole test; TCP retransmits are shown only for
//! local senders with tcp_info; UDP receiving totals average the jitter over `-P`.

use crate::cjson::num;
use crate::input::{IntervalInput, Protocol, SampleExtra, StreamInfo, StreamSample, UdpRecvSample};
use crate::model::{
    usec, IntervalExtra, IntervalGroup, IntervalReport, IntervalStream, IntervalSum, Layout,
    SumExtra, UdpLoss,
};
use serde_json::{json, Map, Value};

/// iperf3 skips an interval shorter than 10% of `-i` in which no stream moved
/// a byte (typically the sliver between the last tick and TEST_END).
pub fn should_report(iv: &IntervalInput, interval: f64) -> bool {
    iv.streams
        .iter()
        .any(|s| s.end - s.start >= interval * 0.10 || s.bytes > 0)
}

/// Start, end and the f32 `seconds` of a sample, at microsecond resolution.
/// An interval that began before the omit reset has a negative start: iperf3
/// shows its magnitude but counts the whole interval in `seconds`.
fn times(s: &StreamSample) -> (f64, f64, f64) {
    let start = usec(s.start);
    let end = usec(s.end);
    let seconds = f64::from((end - start) as f32);
    (start.abs(), end, seconds)
}

fn loss(jitter_s: f64, lost: i64, packets: i64) -> UdpLoss {
    UdpLoss {
        jitter_ms: jitter_s * 1000.0,
        lost_packets: lost,
        packets,
        lost_percent: if packets > 0 {
            100.0 * lost as f64 / packets as f64
        } else {
            0.0
        },
    }
}

fn row(layout: &Layout, info: &StreamInfo, s: &StreamSample) -> IntervalStream {
    let (start, end, seconds) = times(s);
    let bits_per_second = if seconds > 0.0 {
        s.bytes as f64 / seconds * 8.0
    } else {
        0.0
    };
    let extra = match (layout.protocol, info.sender, s.extra) {
        (Protocol::Tcp, true, SampleExtra::TcpSender(t)) => IntervalExtra::Tcp(t),
        (Protocol::Tcp | Protocol::Sctp, _, _) => IntervalExtra::None,
        (Protocol::Udp, true, SampleExtra::UdpSender { packets }) => {
            IntervalExtra::UdpSent { packets }
        }
        (Protocol::Udp, true, _) => IntervalExtra::UdpSent { packets: 0 },
        (Protocol::Udp, false, extra) => {
            let r = match extra {
                SampleExtra::UdpReceiver(r) => r,
                _ => UdpRecvSample::default(),
            };
            IntervalExtra::UdpReceived(loss(r.jitter, r.lost, r.packets))
        }
    };
    IntervalStream {
        socket: info.socket,
        start,
        end,
        seconds,
        bytes: s.bytes,
        bits_per_second,
        omitted: s.omitted,
        sender: info.sender,
        extra,
    }
}

/// Combines one interval's samples (in `streams` order) into the model.
pub fn build(layout: &Layout, streams: &[StreamInfo], iv: &IntervalInput) -> IntervalReport {
    let pairs: Vec<(&StreamInfo, &StreamSample)> = streams.iter().zip(&iv.streams).collect();
    // iperf3's test-wide "sender has retransmits" during the run: a local TCP
    // sender with tcp_info.
    let local_retrans = pairs
        .iter()
        .any(|(_, s)| matches!(s.extra, SampleExtra::TcpSender(_)));
    let first = pairs.first().map(|(_, s)| *s);
    let groups = layout
        .groups()
        .into_iter()
        .map(|sender| {
            let members: Vec<_> = pairs.iter().filter(|(i, _)| i.sender == sender).collect();
            let rows: Vec<IntervalStream> =
                members.iter().map(|(i, s)| row(layout, i, s)).collect();
            let sum = first.map(|s0| {
                let (start, end, seconds) = times(s0);
                let bytes: u64 = rows.iter().map(|r| r.bytes).sum();
                let extra = match layout.protocol {
                    Protocol::Tcp if local_retrans && sender => SumExtra::Retransmits(
                        rows.iter()
                            .map(|r| match &r.extra {
                                IntervalExtra::Tcp(t) => t.retransmits as i64,
                                _ => 0,
                            })
                            .sum(),
                    ),
                    Protocol::Tcp | Protocol::Sctp => SumExtra::None,
                    Protocol::Udp if sender => SumExtra::UdpSent {
                        packets: rows
                            .iter()
                            .map(|r| match r.extra {
                                IntervalExtra::UdpSent { packets } => packets as i64,
                                _ => 0,
                            })
                            .sum(),
                    },
                    Protocol::Udp => {
                        let (mut jitter, mut lost, mut packets) = (0.0, 0i64, 0i64);
                        for (_, s) in &members {
                            if let SampleExtra::UdpReceiver(r) = s.extra {
                                jitter += r.jitter;
                                lost += r.lost;
                                packets += r.packets;
                            }
                        }
                        let per_direction = f64::from(layout.num_streams.max(1));
                        SumExtra::UdpReceived(loss(jitter / per_direction, lost, packets))
                    }
                };
                IntervalSum {
                    start,
                    end,
                    seconds,
                    bytes,
                    bits_per_second: bytes as f64 / seconds * 8.0,
                    omitted: s0.omitted,
                    sender,
                    extra,
                }
            });
            IntervalGroup {
                sender,
                bidir_reverse: layout.is_bidir_reverse(sender),
                role: layout.role(sender),
                streams: rows,
                sum,
            }
        })
        .collect();
    IntervalReport {
        groups,
        latency: iv.latency.clone(),
        bounceback: iv.bounceback.clone(),
    }
}

fn loss_json(m: &mut Map<String, Value>, l: &UdpLoss) {
    m.insert("jitter_ms".into(), num(l.jitter_ms));
    m.insert("lost_packets".into(), json!(l.lost_packets));
    m.insert("packets".into(), json!(l.packets));
    m.insert("lost_percent".into(), num(l.lost_percent));
}

fn stream_json(r: &IntervalStream) -> Value {
    let mut m = Map::new();
    m.insert("socket".into(), json!(r.socket));
    m.insert("start".into(), num(r.start));
    m.insert("end".into(), num(r.end));
    m.insert("seconds".into(), num(r.seconds));
    m.insert("bytes".into(), json!(r.bytes));
    m.insert("bits_per_second".into(), num(r.bits_per_second));
    match &r.extra {
        IntervalExtra::None => {}
        IntervalExtra::Tcp(t) => {
            m.insert("retransmits".into(), json!(t.retransmits));
            m.insert("snd_cwnd".into(), json!(t.snd_cwnd));
            m.insert("snd_wnd".into(), json!(t.snd_wnd));
            m.insert("rtt".into(), json!(t.rtt));
            m.insert("rttvar".into(), json!(t.rttvar));
            m.insert("pmtu".into(), json!(t.pmtu));
            m.insert("reorder".into(), json!(t.reorder));
        }
        IntervalExtra::UdpSent { packets } => {
            m.insert("packets".into(), json!(packets));
        }
        IntervalExtra::UdpReceived(l) => loss_json(&mut m, l),
    }
    m.insert("omitted".into(), json!(r.omitted));
    m.insert("sender".into(), json!(r.sender));
    Value::Object(m)
}

fn sum_json(s: &IntervalSum) -> Value {
    let mut m = Map::new();
    m.insert("start".into(), num(s.start));
    m.insert("end".into(), num(s.end));
    m.insert("seconds".into(), num(s.seconds));
    m.insert("bytes".into(), json!(s.bytes));
    m.insert("bits_per_second".into(), num(s.bits_per_second));
    match &s.extra {
        SumExtra::None => {}
        SumExtra::Retransmits(n) => {
            m.insert("retransmits".into(), json!(n));
        }
        SumExtra::UdpSent { packets } => {
            m.insert("packets".into(), json!(packets));
        }
        SumExtra::UdpReceived(l) => loss_json(&mut m, l),
    }
    m.insert("omitted".into(), json!(s.omitted));
    m.insert("sender".into(), json!(s.sender));
    Value::Object(m)
}

/// The `intervals[]` element: `streams`, `sum`, `sum_bidir_reverse` in bidir mode, and
/// `latency` with `--latency`, `bounceback` with `--bounceback`.
pub fn to_json(report: &IntervalReport) -> Value {
    let streams: Vec<Value> = report
        .groups
        .iter()
        .flat_map(|g| g.streams.iter().map(stream_json))
        .collect();
    let mut m = Map::new();
    m.insert("streams".into(), Value::Array(streams));
    for g in &report.groups {
        if let Some(s) = &g.sum {
            let name = if g.bidir_reverse {
                "sum_bidir_reverse"
            } else {
                "sum"
            };
            m.insert(name.into(), sum_json(s));
        }
    }
    if let Some(f) = &report.latency {
        m.insert("latency".into(), crate::latency::interval_json(f));
    }
    if let Some(b) = &report.bounceback {
        m.insert("bounceback".into(), crate::bounceback::to_json(b));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Side, TcpSample, TestInfo};

    pub(crate) fn info(socket: i32, id: u32, sender: bool) -> StreamInfo {
        StreamInfo {
            socket,
            id,
            sender,
            local: "127.0.0.1:41204".parse().unwrap(),
            remote: "127.0.0.1:27911".parse().unwrap(),
        }
    }

    fn test(protocol: Protocol, num_streams: u32, reverse: bool, bidir: bool) -> TestInfo {
        TestInfo {
            num_streams,
            duration: 3,
            reverse,
            bidir,
            ..crate::testutil::test_info(Side::Client, protocol)
        }
    }

    #[test]
    fn tcp_sender_row_matches_fixture_numbers() {
        let layout = Layout::new(Side::Client, &test(Protocol::Tcp, 1, false, false));
        let sample = StreamSample {
            start: 0.0,
            end: 1.001076,
            bytes: 2129788928,
            omitted: false,
            extra: SampleExtra::TcpSender(TcpSample {
                retransmits: 6,
                snd_cwnd: 1047728,
                snd_wnd: 2367488,
                rtt: 82,
                rttvar: 29,
                pmtu: 65535,
                reorder: 1,
            }),
        };
        let iv = IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![sample],
        };
        let r = build(&layout, &[info(4, 1, true)], &iv);
        let text = crate::cjson::to_compact(&to_json(&r));
        assert_eq!(
            text,
            r#"{"streams":[{"socket":4,"start":0,"end":1.001076,"seconds":1.0010759830474854,"bytes":2129788928,"bits_per_second":17019998194.474514,"retransmits":6,"snd_cwnd":1047728,"snd_wnd":2367488,"rtt":82,"rttvar":29,"pmtu":65535,"reorder":1,"omitted":false,"sender":true}],"sum":{"start":0,"end":1.001076,"seconds":1.0010759830474854,"bytes":2129788928,"bits_per_second":17019998194.474514,"retransmits":6,"omitted":false,"sender":true}}"#
        );
    }

    #[test]
    fn udp_receiver_row_matches_fixture_numbers() {
        let layout = Layout::new(Side::Client, &test(Protocol::Udp, 1, true, false));
        let sample = StreamSample {
            start: 0.0,
            end: 1.001103,
            bytes: 126000,
            omitted: false,
            extra: SampleExtra::UdpReceiver(UdpRecvSample {
                jitter: 0.016461366954232445 / 1000.0,
                lost: 0,
                packets: 90,
                out_of_order: 0,
            }),
        };
        let iv = IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![sample],
        };
        let r = build(&layout, &[info(5, 1, false)], &iv);
        let v = to_json(&r);
        let s = &v["streams"][0];
        assert_eq!(
            crate::cjson::number(s["seconds"].as_f64().unwrap()),
            "1.0011030435562134"
        );
        assert_eq!(
            crate::cjson::number(s["bits_per_second"].as_f64().unwrap()),
            "1006889.3571827398"
        );
        assert_eq!(s["lost_percent"], 0.0);
        assert_eq!(v["sum"]["packets"], 90);
    }

    #[test]
    fn short_empty_tail_is_dropped_but_short_tail_with_data_kept() {
        let s = |start: f64, end: f64, bytes: u64| StreamSample {
            start,
            end,
            bytes,
            omitted: false,
            extra: SampleExtra::None,
        };
        let empty = IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![s(3.0, 3.0001, 0), s(3.0, 3.0001, 0)],
        };
        assert!(!should_report(&empty, 1.0));
        let some = IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![s(3.0, 3.0001, 0), s(3.0, 3.0001, 5)],
        };
        assert!(should_report(&some, 1.0));
        let long = IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![s(3.0, 3.2, 0)],
        };
        assert!(should_report(&long, 1.0));
    }

    #[test]
    fn bidir_groups_split_streams_and_use_first_stream_times() {
        let layout = Layout::new(Side::Client, &test(Protocol::Tcp, 1, false, true));
        let tx = StreamSample {
            start: 0.0,
            end: 1.0,
            bytes: 100,
            omitted: false,
            extra: SampleExtra::TcpSender(TcpSample {
                retransmits: 4,
                ..Default::default()
            }),
        };
        let rx = StreamSample {
            start: 0.0,
            end: 1.5,
            bytes: 50,
            omitted: false,
            extra: SampleExtra::None,
        };
        let iv = IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![tx, rx],
        };
        let r = build(&layout, &[info(4, 1, true), info(6, 3, false)], &iv);
        let v = to_json(&r);
        let keys: Vec<_> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["streams", "sum", "sum_bidir_reverse"]);
        assert_eq!(v["sum"]["retransmits"], 4);
        assert_eq!(v["sum_bidir_reverse"]["bytes"], 50);
        assert_eq!(v["sum_bidir_reverse"]["end"], 1.0);
        assert!(v["sum_bidir_reverse"].get("retransmits").is_none());
        assert_eq!(v["sum_bidir_reverse"]["sender"], false);
    }
}
