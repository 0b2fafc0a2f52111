//! iperf 2's TOS options on the wire, against stock 2.2.1 in both roles: a
//! client's `--dscp` (a decimal code point, as 2.2.1 reads it) marks what it
//! sends, and a server marks what it sends back with the byte the client's
//! header asked for. A capture of loopback holds each payload's TOS byte.

use std::path::Path;

use crate::common::capture::{Capture, Packet};
use crate::common::iperf2::{iperf2_221, ours, Server2};
use crate::common::require_tool;

/// The share of the payload bytes from (`from_server`) or to the server's
/// `port` that carry `tos`, and those bytes.
fn share(segs: &[Packet], port: u16, from_server: bool, tos: u8) -> (f64, u64) {
    let ours = |p: &&Packet| {
        p.len > 0
            && if from_server {
                p.src == port
            } else {
                p.dst == port
            }
    };
    let data: Vec<&Packet> = segs.iter().filter(ours).collect();
    let all: u64 = data.iter().map(|p| p.len).sum();
    let with: u64 = data.iter().filter(|p| p.tos == tos).map(|p| p.len).sum();
    (with as f64 / all.max(1) as f64, all)
}

/// Runs `client` against a `server` of `server_args`, capturing the test's
/// port; returns the server's port, the packets and both outputs' text.
fn run(
    server: &Path,
    server_args: &[&str],
    client: &Path,
    args: &[&str],
) -> (u16, Vec<Packet>, String) {
    let srv = Server2::start(server, server_args);
    let proto = if args.contains(&"-u") { "udp" } else { "tcp" };
    let cap = Capture::start(&format!("{proto} port {}", srv.port));
    let out = srv.client(client, args);
    let segs = cap.stop();
    let port = srv.port;
    let s = srv.stop();
    let ctx = format!(
        "--- client:\n{}{}\n--- server:\n{}{}",
        out.stdout, out.stderr, s.stdout, s.stderr
    );
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    (port, segs, ctx)
}

#[test]
fn iperf2_dscp_marks_our_clients_data_at_a_stock_server() {
    let (Some(stock), true) = (iperf2_221(), require_tool("dumpcap")) else {
        return;
    };
    for extra in [&["-b", "200M"][..], &["-u", "-b", "10m"][..]] {
        let mut args = vec!["-t", "1", "--dscp", "46"];
        args.extend_from_slice(extra);
        let server_args: &[&str] = if extra.contains(&"-u") { &["-u"] } else { &[] };
        let (port, segs, ctx) = run(&stock, server_args, &ours(), &args);
        let (share, bytes) = share(&segs, port, false, 0xb8);
        assert!(bytes > 100_000, "{args:?}: {bytes} bytes captured\n{ctx}");
        assert!(
            share > 0.99,
            "{args:?}: {share} of the bytes had TOS 0xb8\n{ctx}"
        );
        assert!(
            ctx.contains("(tos tx=0xb8,dscp=46,ecn=0)"),
            "{args:?}\n{ctx}"
        );
    }
}

#[test]
fn iperf2_our_server_sends_back_with_a_stock_clients_dscp() {
    let (Some(stock), true) = (iperf2_221(), require_tool("dumpcap")) else {
        return;
    };
    for extra in [&["-b", "200M"][..], &["-u", "-b", "10m"][..]] {
        let mut args = vec!["-t", "1", "-R", "--dscp", "10"];
        args.extend_from_slice(extra);
        let server_args: &[&str] = if extra.contains(&"-u") { &["-u"] } else { &[] };
        let (port, segs, ctx) = run(&ours(), server_args, &stock, &args);
        let (share, bytes) = share(&segs, port, true, 0x28);
        assert!(bytes > 100_000, "{args:?}: {bytes} bytes captured\n{ctx}");
        assert!(
            share > 0.99,
            "{args:?}: {share} of the bytes had TOS 0x28\n{ctx}"
        );
        // The stock client says rx, our server tx (as 2.2.1's server does).
        assert!(
            ctx.contains("(reverse) (tos rx=0x28,dscp=10,ecn=0)"),
            "{args:?}\n{ctx}"
        );
        assert!(
            ctx.contains("(tos tx=0x28,dscp=10,ecn=0)"),
            "{args:?}\n{ctx}"
        );
    }
}
