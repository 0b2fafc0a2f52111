//! The binary against itself over 127.0.0.1: TCP test modes, end conditions,
//! interval and omit timing, checked through the client's (and where it
//! matters the server's) `-J` documents.

use crate::common;

use common::interop::{in_flight_per_stream, send_buffer_max};
use common::json::{arr, assert_no_error, at, close, num};
use common::Server;
use serde_json::Value;

/// Runs a JSON client against a fresh text-mode server and checks the basics
/// every successful test shares.
fn json_test(extra: &[&str]) -> Value {
    let srv = Server::start(&[]);
    let mut args = vec!["-J"];
    args.extend_from_slice(extra);
    let out = srv.client(&args);
    out.assert_ok();
    let doc = out.json();
    assert_no_error(&doc);
    assert!(num(&doc, "end.sum_sent.bytes") > 0.0, "{doc:#}");
    doc
}

/// The receiving side got what was sent, less what was in flight when the
/// test ended, and never more. In flight is at most one stream's socket
/// buffers (the kernel's tcp_wmem + tcp_rmem maxima: 36 MiB here, 3% of a
/// loaded 1 s loopback test), or 1% where that is less.
fn assert_delivered(sent: f64, received: f64) {
    let slack = in_flight_per_stream().max(0.01 * sent);
    assert!(
        received <= sent && received >= sent - slack,
        "sent {sent} received {received} (slack {slack})"
    );
}

/// A counted (`-n`/`-k`) test's receiver got all of `sent` but what the
/// sender's socket may still have held at TEST_END, and never more.
fn assert_unread_at_most_a_send_buffer(sent: f64, received: f64) {
    let unread = send_buffer_max();
    assert!(
        received <= sent && received >= sent - unread,
        "received {received} of {sent} (at most {unread} unread)"
    );
}

/// Test duration in the summary: the requested time, allowing for a loaded machine.
fn assert_duration(doc: &Value, path: &str, want: f64) {
    let got = num(doc, path);
    assert!(
        got >= want - 0.05 && got <= want + 0.75,
        "{path} = {got}, wanted about {want}"
    );
}

#[test]
fn tcp_normal_json_totals_agree() {
    let doc = json_test(&["-t", "1"]);
    assert_eq!(num(&doc, "start.test_start.duration"), 1.0);
    assert_eq!(num(&doc, "start.test_start.num_streams"), 1.0);
    assert_eq!(string_at(&doc, "start.test_start.protocol"), "TCP");
    assert_eq!(arr(&doc, "start.connected").len(), 1);
    assert_eq!(arr(&doc, "end.streams").len(), 1);
    assert!(!arr(&doc, "intervals").is_empty());
    assert_delivered(
        num(&doc, "end.sum_sent.bytes"),
        num(&doc, "end.sum_received.bytes"),
    );
    assert_eq!(at(&doc, "end.sum_sent.sender"), &Value::Bool(true));
    assert_duration(&doc, "end.sum_sent.seconds", 1.0);
    // Interval bytes add up to what the summary says was sent.
    let iv_total: f64 = arr(&doc, "intervals")
        .iter()
        .map(|i| num(i, "sum.bytes"))
        .sum();
    assert!(
        close(iv_total, num(&doc, "end.sum_sent.bytes"), 0.01),
        "intervals {iv_total} vs end {}",
        num(&doc, "end.sum_sent.bytes")
    );
}

fn string_at<'a>(doc: &'a Value, path: &str) -> &'a str {
    common::json::string(doc, path)
}

#[test]
fn tcp_reverse_client_receives() {
    let doc = json_test(&["-t", "1", "-R"]);
    assert_eq!(num(&doc, "start.test_start.reverse"), 1.0);
    for iv in arr(&doc, "intervals") {
        assert_eq!(iv["sum"]["sender"], Value::Bool(false), "{iv}");
        assert!(iv["streams"][0].get("retransmits").is_none(), "{iv}");
    }
    assert_delivered(
        num(&doc, "end.sum_sent.bytes"),
        num(&doc, "end.sum_received.bytes"),
    );
    assert_eq!(
        at(&doc, "end.streams[0].sender.sender"),
        &Value::Bool(false)
    );
    assert_duration(&doc, "end.sum_received.seconds", 1.0);
}

#[test]
fn tcp_bidir_both_directions_carry_data() {
    let doc = json_test(&["-t", "1", "--bidir"]);
    assert_eq!(num(&doc, "start.test_start.bidir"), 1.0);
    assert_eq!(arr(&doc, "start.connected").len(), 2);
    assert_eq!(arr(&doc, "end.streams").len(), 2);
    assert_delivered(
        num(&doc, "end.sum_sent.bytes"),
        num(&doc, "end.sum_received.bytes"),
    );
    assert!(num(&doc, "end.sum_sent_bidir_reverse.bytes") > 0.0);
    assert_delivered(
        num(&doc, "end.sum_sent_bidir_reverse.bytes"),
        num(&doc, "end.sum_received_bidir_reverse.bytes"),
    );
    for iv in arr(&doc, "intervals") {
        assert_eq!(iv["sum"]["sender"], Value::Bool(true));
        assert_eq!(iv["sum_bidir_reverse"]["sender"], Value::Bool(false));
    }
}

#[test]
fn tcp_parallel_4_streams_sum_up() {
    let doc = json_test(&["-t", "1", "-P", "4"]);
    assert_eq!(num(&doc, "start.test_start.num_streams"), 4.0);
    assert_eq!(arr(&doc, "start.connected").len(), 4);
    let streams = arr(&doc, "end.streams");
    assert_eq!(streams.len(), 4);
    let mut total = 0.0;
    for s in streams {
        let b = num(s, "sender.bytes");
        assert!(b > 0.0, "idle stream: {s}");
        total += b;
    }
    assert_eq!(total, num(&doc, "end.sum_sent.bytes"));
    for iv in arr(&doc, "intervals") {
        assert_eq!(arr(iv, "streams").len(), 4);
        let parts: f64 = arr(iv, "streams").iter().map(|s| num(s, "bytes")).sum();
        assert_eq!(parts, num(iv, "sum.bytes"));
    }
    assert_delivered(
        num(&doc, "end.sum_sent.bytes"),
        num(&doc, "end.sum_received.bytes"),
    );
}

/// `-n`: the sender's count is exact. TEST_END can overtake data still in the
/// sender's socket (iperf3's own pair often reports much less); the receiver
/// reads what its socket holds before its final count, so it misses at most
/// the sender's send buffer, and the two documents agree on its figure.
#[test]
fn tcp_bytes_10m_exact_sender_consistent_receiver() {
    const TEN_M: f64 = 10.0 * 1024.0 * 1024.0;
    let srv = Server::start(&["-J", "-1"]);
    let out = srv.client(&["-J", "-n", "10M"]);
    out.assert_ok();
    let doc = out.json();
    assert_no_error(&doc);
    assert_eq!(num(&doc, "start.test_start.bytes"), TEN_M);
    assert_eq!(num(&doc, "start.test_start.duration"), 0.0);
    assert_eq!(num(&doc, "end.sum_sent.bytes"), TEN_M, "client sent");
    let received = num(&doc, "end.sum_received.bytes");
    assert_unread_at_most_a_send_buffer(TEN_M, received);
    let srv_out = srv.wait_exit(common::CLIENT_TIMEOUT);
    let sdoc = srv_out.json();
    assert_no_error(&sdoc);
    assert_eq!(
        num(&sdoc, "end.sum_received.bytes"),
        received,
        "server's own count vs what it reported to the client"
    );
}

/// Bytes are counted as sent once written; a receiver can never have read more.
/// (iperf3 reads the sender's counters after its sender threads stopped.)
#[test]
fn tcp_receiver_never_exceeds_sender() {
    let srv = Server::start(&[]);
    for n in 1..=3 {
        assert!(srv.wait_banners(n, std::time::Duration::from_secs(5)));
        let out = srv.client(&["-J", "-t", "1", "-P", "2"]);
        out.assert_ok();
        let doc = out.json();
        for (i, s) in arr(&doc, "end.streams").iter().enumerate() {
            let (sent, rcvd) = (num(s, "sender.bytes"), num(s, "receiver.bytes"));
            assert!(
                rcvd <= sent,
                "run {n} stream {i}: sent {sent} < received {rcvd}"
            );
        }
    }
}

#[test]
fn tcp_blockcount_100_blocks() {
    let doc = json_test(&["-k", "100"]);
    assert_eq!(num(&doc, "start.test_start.blocks"), 100.0);
    assert_eq!(num(&doc, "end.sum_sent.bytes"), 100.0 * 131072.0);
    // TEST_END may overtake what the sender still held (see the -n test).
    assert_unread_at_most_a_send_buffer(100.0 * 131072.0, num(&doc, "end.sum_received.bytes"));
}

#[test]
fn tcp_omit_first_interval_left_out_of_end() {
    let doc = json_test(&["-t", "2", "-O", "1"]);
    assert_eq!(num(&doc, "start.test_start.omit"), 1.0);
    let ivs = arr(&doc, "intervals");
    assert!(
        ivs.len() >= 3,
        "one omitted + two counted intervals: {ivs:#?}"
    );
    assert_eq!(ivs[0]["sum"]["omitted"], Value::Bool(true));
    assert_eq!(ivs[0]["streams"][0]["omitted"], Value::Bool(true));
    for iv in &ivs[1..] {
        assert_eq!(iv["sum"]["omitted"], Value::Bool(false), "{iv}");
    }
    // After the omit period the clock restarts near zero.
    assert!(num(&ivs[1], "sum.start") < 0.05, "{}", ivs[1]);
    // The end covers the two counted seconds only.
    assert_duration(&doc, "end.sum_sent.seconds", 2.0);
    let counted: f64 = ivs[1..].iter().map(|i| num(i, "sum.bytes")).sum();
    assert!(
        close(counted, num(&doc, "end.sum_sent.bytes"), 0.01),
        "non-omitted intervals {counted} vs end {}",
        num(&doc, "end.sum_sent.bytes")
    );
}

#[test]
fn tcp_interval_half_second() {
    let doc = json_test(&["-t", "1", "-i", "0.5"]);
    assert_eq!(num(&doc, "start.test_start.interval"), 0.5);
    let ivs = arr(&doc, "intervals");
    assert!(ivs.len() >= 2, "{ivs:#?}");
    for iv in &ivs[..2] {
        let s = num(iv, "sum.seconds");
        assert!((0.45..0.75).contains(&s), "interval of {s} s");
    }
}

#[test]
fn tcp_interval_zero_one_report() {
    let doc = json_test(&["-t", "1", "-i", "0"]);
    let ivs = arr(&doc, "intervals");
    assert_eq!(ivs.len(), 1, "-i 0: exactly one interval covering the test");
    assert_duration(&ivs[0], "sum.seconds", 1.0);
    // Text mode, as iperf3: one interval line for the whole test, then the summary.
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "-i", "0"]);
    out.assert_ok();
    let periodic = out
        .stdout
        .lines()
        .filter(|l| l.contains(" sec ") && !l.ends_with("sender") && !l.ends_with("receiver"))
        .count();
    assert_eq!(periodic, 1, "{}", out.stdout);
}

/// iperf3's client reports exactly `-t / -i` intervals: its test-end timer and
/// its interval timer start together, so no short tail interval is printed.
#[test]
fn tcp_client_interval_count_matches_duration() {
    let srv = Server::start(&[]);
    for n in 1..=3 {
        assert!(srv.wait_banners(n, std::time::Duration::from_secs(5)));
        let out = srv.client(&["-J", "-t", "2"]);
        out.assert_ok();
        let doc = out.json();
        let ends: Vec<f64> = arr(&doc, "intervals")
            .iter()
            .map(|i| num(i, "sum.end"))
            .collect();
        assert_eq!(ends.len(), 2, "interval ends {ends:?}");
    }
}

/// `-n` with `-O`: the limit counts only what is sent after the omit period
/// (plus at most the one block a sender had in hand when the period ended).
#[test]
fn tcp_bytes_limit_counts_after_omit() {
    let doc = json_test(&["-n", "20M", "-O", "1"]);
    let intervals = arr(&doc, "intervals");
    assert_eq!(
        at(&intervals[0], "sum.omitted"),
        &Value::Bool(true),
        "{doc:#}"
    );
    let sent = num(&doc, "end.sum_sent.bytes");
    let n = 20.0 * 1024.0 * 1024.0;
    assert!((n..=n + 131_072.0).contains(&sent), "sent {sent}\n{doc:#}");
}
