//! iperf 2's legacy UDP dual tests through the binary (rperf3 run as
//! `iperf`) against the stock iperf 2.1.8 and 2.2.1, each role: `-d` (the
//! server sends back at once) and `-r` (after the forward test), to the
//! client's `-L` port. Each direction's receiver total is checked against
//! the "Sent" count its sender printed, and the Server Report each sender
//! printed against the receiver's own row: on every pairing one of the two
//! sides is the stock program, so no figure is ours alone.

use std::path::Path;

use crate::common::free_port;
use crate::common::iperf2::{sent_datagrams, server_report, total, Pairing2, Server2};

/// Runs `mode` (`-d` or `-r`) for one second at 1 Mbit/s and checks both
/// directions' counts.
fn dual(peer: &Path, p: Pairing2, mode: &str) {
    let (client, server) = p.programs(peer);
    let srv = Server2::start(&server, &["-u"]);
    let lport = free_port().to_string();
    let out = srv.client(&client, &["-u", "-t", "1", mode, "-L", &lport]);
    let s = srv.stop();
    let (c, s) = (out.stdout, s.stdout);
    let ctx = format!("{p:?} {mode}\n--- client:\n{c}\n--- server:\n{s}");
    assert_eq!(out.status.code(), Some(0), "{ctx}");
    // Forward: the server counted every datagram the client sent (the
    // "Sent" count includes the FIN, the server's total does not).
    let sent = sent_datagrams(&c, "1").unwrap_or_else(|| panic!("no Sent [1]\n{ctx}"));
    let got = total(&s, "1").unwrap_or_else(|| panic!("no server row [1]\n{ctx}"));
    assert!(sent > 50, "{ctx}");
    assert_eq!((got.lost, got.total), (Some(0), Some(sent - 1)), "{ctx}");
    let rep = server_report(&c).unwrap_or_else(|| panic!("no report at the client\n{ctx}"));
    assert_eq!((rep.lost, rep.total), (got.lost, got.total), "{ctx}");
    // Back: the client (on -L) counted every datagram the server sent, and
    // the server printed the client's report of it.
    let sent = sent_datagrams(&s, "2").unwrap_or_else(|| panic!("no Sent [2]\n{ctx}"));
    let got = total(&c, "2").unwrap_or_else(|| panic!("no client row [2]\n{ctx}"));
    assert!(sent > 50, "{ctx}");
    assert_eq!((got.lost, got.total), (Some(0), Some(sent - 1)), "{ctx}");
    let rep = server_report(&s).unwrap_or_else(|| panic!("no report at the server\n{ctx}"));
    assert_eq!(rep.tag, "*2", "{ctx}");
    assert_eq!((rep.lost, rep.total), (got.lost, got.total), "{ctx}");
    // -r runs the directions one after the other, -d side by side: the
    // back connection line comes after the forward Server Report only for -r.
    let back_at = c.find("[  2] local").expect("back connection line");
    let report_at = c.find("Server Report:").expect("report");
    assert_eq!(back_at > report_at, mode == "-r", "{ctx}");
}

both_ways2!(iperf2_udp_dual_d, |peer: &Path, p| dual(peer, p, "-d"));
both_ways2!(iperf2_udp_dual_r, |peer: &Path, p| dual(peer, p, "-r"));
