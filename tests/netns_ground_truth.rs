//! Ground truth for rperf3's figures: traffic crosses a veth pair between two
//! private network namespaces, where the kernel enforces a known rate (a tbf
//! shaper) or drops a counted set of datagrams (an iptables rule), and rperf3's
//! JSON reports must agree with what the kernel did.
//!
//! Needs root, `ip`, `tc` (tbf), `iptables` (statistic, u32, length), `nstat`
//! and tshark's `dumpcap`; see `netns/mod.rs` for what happens when they are
//! missing. `netns_udp.rs` holds UDP's loss against
//! iptables' drop counters, its rate and loss through tbf, and pacing and
//! offloaded trains counted by the kernel. `netns_jitter.rs` checks jitter against a capture, `netns_tcp.rs`
//! retransmits against the kernel's count and `-P 4` / `--bidir` through tbf.
//! `netns_iperf2.rs` holds the same checks for the iperf 2 personality, and
//! `netns_mcast2*.rs` its multicast (a bridge of namespaces, stock peers on it;
//! `netns_mcast2_binary.rs` runs the program itself, as users type it).
//! `netns_queue*.rs` hold latency under load to a tbf's FIFO kept full (its
//! backlog over the rate, and `ping` beside the load); `netns_latency_cost.rs`
//! holds `--latency`'s throughput to a run without it, and
//! `netns_queue_bounceback.rs` `--bounceback`'s round trips to the queue.

#[path = "common/mesh_records.rs"]
mod mesh_records;
mod netns;
mod netns_idle;
mod netns_iperf2;
mod netns_jitter;
mod netns_jitter2;
mod netns_latency_cost;
mod netns_mcast2;
mod netns_mcast2_binary;
mod netns_mcast2_peers;
mod netns_mesh;
mod netns_metrics_delays;
mod netns_queue;
mod netns_queue_bidir;
mod netns_queue_bounceback;
mod netns_queue_iperf2;
mod netns_queue_iperf2_tcp;
mod netns_queue_rpm;
mod netns_queue_tcp;
mod netns_rpm_http;
mod netns_tcp;
mod netns_udp;
#[path = "common/peer_log.rs"]
mod peer_log;

use std::time::Duration;

use netns::{json_doc, num, with_retries, Attempt, Pair, Side, DEV, ETH_HEADER};

const SHAPER_RATE: f64 = 100e6;
const RUN_TIMEOUT: Duration = Duration::from_secs(25);

/// (sender, receiver) of the test data.
fn roles(reverse: bool) -> (Side, Side) {
    if reverse {
        (Side::Server, Side::Client)
    } else {
        (Side::Client, Side::Server)
    }
}

/// Signed relative difference of `measured` from `expected`.
fn rel(measured: f64, expected: f64) -> f64 {
    (measured - expected) / expected
}

/// Runs the client with `args` against a fresh one-test server; returns
/// (client document, server document).
fn run_test(pair: &Pair, args: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let server = pair.start_server();
    let client = pair.spawn_client(args).finish(RUN_TIMEOUT);
    let server = server.finish(Duration::from_secs(5));
    (json_doc(&client), json_doc(&server))
}

/// Checks a rate against what a shaper allows: above the tolerance is
/// impossible (the kernel never delivers more), so it fails at once; below it
/// a starved shaper can explain, so it is a disturbed attempt.
fn rate_check(what: &str, measured: f64, expected: f64, tolerance: f64, ctx: &str) -> Attempt {
    let off = rel(measured, expected);
    assert!(
        off <= tolerance,
        "{what} = {:.3} Mbit/s is {:.2}% above the {:.3} Mbit/s the shaper allows (limit \
         {:.0}%)\n{ctx}",
        measured / 1e6,
        100.0 * off,
        expected / 1e6,
        100.0 * tolerance
    );
    if off < -tolerance {
        return Attempt::Disturbed(format!(
            "{what} = {:.3} Mbit/s is {:.2}% below the expected {:.3} Mbit/s (limit {:.0}%)\n{ctx}",
            measured / 1e6,
            -100.0 * off,
            expected / 1e6,
            100.0 * tolerance
        ));
    }
    Attempt::Pass
}

// ---------------------------------------------------------------- TCP + tbf

/// TCP through a 100 Mbit/s tbf on the sender's egress: the receiver's goodput
/// is the shaper rate times payload per frame (MSS over MTU + Ethernet header),
/// with the MSS and MTU read from the kernel's own connection state.
fn tcp_goodput_through_tbf(reverse: bool) -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let (sender, _) = roles(reverse);
    // Loss-based congestion control keeps the shaper's queue from running
    // empty (bbr paces at its own estimate). Reno is one a namespace may pick.
    for side in [Side::Server, Side::Client] {
        pair.on(
            side,
            &["sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"],
        );
    }
    // 50 ms of queue: after a loss halves the window the queue still holds
    // enough to keep the link busy. A 64 KB bucket lets the shaper catch up
    // after its dequeue ran up to 5 ms late; its initial burst falls in the
    // omitted first second.
    pair.on(
        sender,
        &[
            "tc", "qdisc", "add", "dev", DEV, "root", "tbf", "rate", "100mbit", "burst", "64kb",
            "latency", "50ms",
        ],
    );
    let server = pair.start_server();
    let mut args = vec!["-O", "1", "-t", "4"];
    if reverse {
        args.push("-R");
    }
    let client = pair.spawn_client(&args);
    let (mss, pmtu) = pair.tcp_mss_pmtu(sender, Duration::from_secs(3));
    let client = client.finish(RUN_TIMEOUT);
    let server = server.finish(Duration::from_secs(5));
    let (cdoc, sdoc) = (json_doc(&client), json_doc(&server));
    let rdoc = if reverse { &cdoc } else { &sdoc };

    let expected = SHAPER_RATE * f64::from(mss) / f64::from(pmtu + ETH_HEADER);
    let measured = num(rdoc, "end.sum_received.bits_per_second");
    let client_view = num(&cdoc, "end.sum_received.bits_per_second");
    let sent = num(&cdoc, "end.sum_sent.bits_per_second");
    let ctx = format!(
        "TCP tbf 100M reverse={reverse}: receiver {:.3} Mbit/s (client's view {:.3}, sender \
         {:.3}) vs expected {:.3} = 100 Mbit/s x mss {mss} / (pmtu {pmtu} + {ETH_HEADER})\n\
         shaper: {}",
        measured / 1e6,
        client_view / 1e6,
        sent / 1e6,
        expected / 1e6,
        pair.qdisc_stats(sender)
    );
    eprintln!("{ctx}");
    match rate_check(
        "receiver's end.sum_received",
        measured,
        expected,
        0.01,
        &ctx,
    ) {
        Attempt::Pass => rate_check(
            "client's end.sum_received",
            client_view,
            expected,
            0.01,
            &ctx,
        ),
        other => other,
    }
}

#[test]
fn tcp_goodput_matches_tbf_rate() {
    let _one_at_a_time = netns::serial();
    with_retries("TCP through tbf", || tcp_goodput_through_tbf(false));
}

#[test]
fn tcp_reverse_goodput_matches_tbf_rate() {
    let _one_at_a_time = netns::serial();
    with_retries("TCP -R through tbf", || tcp_goodput_through_tbf(true));
}
