//! The end summaries iperf3 3.21 printed as a `-V` server, as its client got
//! them (`server_output_text` in the client's `-J` document), against the text
//! formatter fed the figures of the same run: the server's own totals, which
//! the client's document holds from the results exchange. Transfer, rate,
//! retransmits, jitter, loss and CPU are formatted here from real values and
//! must read exactly as iperf3 printed them.

use crate::input::*;
use crate::testutil::*;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_f64().unwrap() as u64
}

/// The summary part of a text report: from "Test Complete." on, without the
/// blank line iperf3's server text ends with.
fn summary(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.starts_with("Test Complete."))
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The server's side of the run in the client's document `name`, through a
/// `-V` server's text reporter; the summary it printed.
fn server_summary(name: &str) -> Vec<String> {
    let doc: Value = serde_json::from_str(&fixture(name)).unwrap();
    let ts = &doc["start"]["test_start"];
    let udp = ts["protocol"] == "UDP";
    let sends = u(&ts["reverse"]) == 1;
    let t = TestInfo {
        protocol: if udp { Protocol::Udp } else { Protocol::Tcp },
        blksize: u(&ts["blksize"]) as u32,
        duration: u(&ts["duration"]) as u32,
        reverse: sends,
        target_bitrate: u(&ts["target_bitrate"]),
        ..test_info(Side::Server, Protocol::Tcp)
    };
    let (mut r, out, _) = reporter(|o| o.verbose = true, Side::Server);
    let si = start_info(Side::Server, !udp);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, sends, "127.0.0.1:27911", "127.0.0.1:47032"));
    r.start(&si, &t);
    let e = &doc["end"];
    let s = &e["streams"][0];
    let stream = if udp {
        // The server received: its datagrams, loss and jitter as it reported them.
        let rx = &e["sum_received"];
        StreamFinal {
            bytes: u(&rx["bytes"]),
            duration: f(&rx["end"]),
            tcp: None,
            udp: Some(UdpTotals {
                packets: u(&rx["packets"]),
                lost: u(&rx["lost_packets"]) as i64,
                jitter: f(&rx["jitter_ms"]) / 1000.0,
                ..Default::default()
            }),
        }
    } else if sends {
        let tx = &s["sender"];
        StreamFinal {
            bytes: u(&tx["bytes"]),
            duration: f(&tx["end"]),
            tcp: Some(TcpTotals {
                retransmits: u(&tx["retransmits"]),
                ..Default::default()
            }),
            udp: None,
        }
    } else {
        let rx = &s["receiver"];
        StreamFinal {
            bytes: u(&rx["bytes"]),
            duration: f(&rx["end"]),
            tcp: None,
            udp: None,
        }
    };
    let cpu = &e["cpu_utilization_percent"];
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![stream],
        cpu: Cpu {
            total: f(&cpu["remote_total"]),
            user: f(&cpu["remote_user"]),
            system: f(&cpu["remote_system"]),
        },
        congestion: Some("bbr".into()),
        has_retransmits: sends && !udp,
        peer: None,
        diskfile: None,
    });
    summary(&done(r, &out))
}

/// What the captured server printed: the summary header, its lines, and at
/// least one figure line.
fn captured_summary(name: &str) -> Vec<String> {
    let doc: Value = serde_json::from_str(&fixture(name)).unwrap();
    let lines = summary(doc["server_output_text"].as_str().unwrap());
    assert!(
        lines.iter().any(|l| l.contains(" sec ")),
        "{name}: no summary in {lines:?}"
    );
    lines
}

#[test]
fn tcp_receiver_summary_reads_as_iperf3_printed_it() {
    let name = "tcp_server_verbose_output.client.json";
    assert_eq!(server_summary(name), captured_summary(name), "{name}");
}

#[test]
fn tcp_sender_summary_with_retransmits_and_cpu_reads_as_iperf3_printed_it() {
    let name = "tcp_reverse_server_verbose_output.client.json";
    assert_eq!(server_summary(name), captured_summary(name), "{name}");
}

#[test]
fn udp_receiver_summary_with_jitter_and_loss_reads_as_iperf3_printed_it() {
    let name = "udp_server_verbose_output.client.json";
    assert_eq!(server_summary(name), captured_summary(name), "{name}");
}
