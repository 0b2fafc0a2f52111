//! Per-stream agreement of a TCP test's two `-J` documents.
//!
//! Streams are matched by the client's port of their connection:
//! `start.connected` and `end.streams` list them in the same order, while the
//! socket numbers differ between the sides.

use std::collections::HashMap;

use serde_json::Value;

use super::interop::{Pairing, Run};
use super::json::{arr, get, num};

/// One block of the test (`start.test_start.blksize`): what a sender may
/// write and not count.
///
/// A multi-threaded sender (rperf3, iperf3 3.16+) takes its final count once
/// its threads have had a moment to finish their block; a thread still
/// blocked in a write then is left out (iperf3 cancels it), yet what the
/// socket had taken of that block is delivered, and a receiver that reads it
/// before TEST_END counts it. iperf3 3.21 also writes its JSON after its
/// results went out, up to a block later. 3.12 writes from one thread and
/// counts every byte.
pub(crate) fn block(doc: &Value) -> f64 {
    get(doc, "start.test_start.blksize")
        .and_then(Value::as_f64)
        .unwrap_or(128.0 * 1024.0)
}

/// (sent, received) bytes of each stream by the client's port.
fn per_stream(doc: &Value, client_port: &str) -> HashMap<u64, (f64, f64)> {
    let ports = arr(doc, "start.connected")
        .iter()
        .map(|c| num(c, client_port) as u64);
    ports
        .zip(arr(doc, "end.streams"))
        .map(|(port, s)| (port, (num(s, "sender.bytes"), num(s, "receiver.bytes"))))
        .collect()
}

/// Every one of `want` streams: the figure the server measured itself (what
/// it received, or sent with `-R`) reached the client's document within
/// `exchange_slack` bytes, and each stream's receiver got no more than its
/// sender reported plus `delivery_slack`. (A stream may have received nothing:
/// with 128 streams on two cores a stock client's receiving thread can go a
/// whole second without the CPU.) Problems go to `r.problems`.
pub(crate) fn check_tcp_streams(
    r: &mut Run,
    want: usize,
    client_sends: bool,
    exchange_slack: f64,
    delivery_slack: f64,
) {
    if r.client.is_null() || r.server.is_null() {
        return;
    }
    let c = per_stream(&r.client, "local_port");
    let s = per_stream(&r.server, "remote_port");
    if c.len() != want || s.len() != want {
        r.problems.push(format!(
            "{} streams in the client's document, {} in the server's, wanted {want}",
            c.len(),
            s.len()
        ));
    }
    let mut ports: Vec<_> = c.keys().copied().collect();
    ports.sort_unstable();
    for port in ports {
        let (sent, received) = c[&port];
        let Some(&(s_sent, s_received)) = s.get(&port) else {
            r.problems.push(format!(
                "stream from port {port}: not in the server's document"
            ));
            continue;
        };
        // A server's document shows nothing for the client's half (iperf3's
        // show 0), so only the server's own figure is compared.
        let (server_says, client_says) = if client_sends {
            (s_received, received)
        } else {
            (s_sent, sent)
        };
        if (server_says - client_says).abs() > exchange_slack {
            r.problems.push(format!(
                "stream from port {port}: the server measured {server_says}, the client's \
                 document says {client_says} (slack {exchange_slack})"
            ));
        }
        if received > sent + delivery_slack {
            r.problems.push(format!(
                "stream from port {port}: received {received} of {sent} (slack \
                 {delivery_slack})"
            ));
        }
    }
}

/// [`check_tcp_streams`] for a test between rperf3 and stock iperf3 `version`
/// ("3.12" or "3.21"), with the slack [`block`] explains for whichever side
/// sends, and the client must have received something.
pub(crate) fn check_against_stock(
    r: &mut Run,
    want: usize,
    version: &str,
    pairing: Pairing,
    client_sends: bool,
) {
    let stock_sends = matches!(pairing, Pairing::Iperf3ToOurs) == client_sends;
    let blk = block(&r.client);
    let exchange = if stock_sends && version == "3.21" {
        blk
    } else {
        0.0
    };
    let delivery = if stock_sends && version == "3.12" {
        0.0
    } else {
        blk
    };
    check_tcp_streams(r, want, client_sends, exchange, delivery);
    let got = num(&r.client, "end.sum_received.bytes");
    if got <= 0.0 {
        r.problems.push(format!("end.sum_received.bytes = {got}"));
    }
}
