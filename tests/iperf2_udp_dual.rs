//! iperf 2's legacy UDP dual tests through the binary (rperf3 run as
//! `iperf`) against the stock iperf 2.1.8 and 2.2.1, each role: `-d` (the
//! server sends back at once) and `-r` (after the forward test), to the
//! client's `-L` port. Each direction's receiver total is checked against
//! the "Sent" count its sender printed, and the Server Report each sender
//! printed against the receiver's own row: on every pairing one of the two
//! sides is the stock program, so no figure is ours alone.

use std::net::UdpSocket;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::iperf2::{ours, sent_datagrams, server_report, total, Pairing2, Server2};
use crate::common::{free_port, run_program, CLIENT_TIMEOUT};

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
    // -r runs the directions one after the other, -d side by side, as
    // rperf3's side prints it (a stock client may print the back connection
    // before the forward Server Report it already holds, from its threads):
    // our client's back connection line comes after the forward Server
    // Report only for -r; our server's back connection after its forward row.
    let (back_at, forward_end_at) = match p {
        Pairing2::OursToPeer => (
            c.find("[  2] local").expect("back connection line"),
            c.find("Server Report:").expect("report"),
        ),
        Pairing2::PeerToOurs => (
            s.find("(reverse)").expect("back connection line"),
            s.find("[  1] 0.00-").expect("forward row"),
        ),
    };
    assert_eq!(back_at > forward_end_at, mode == "-r", "{ctx}");
}

both_ways2!(iperf2_udp_dual_d, |peer: &Path, p| dual(peer, p, "-d"));
both_ways2!(iperf2_udp_dual_r, |peer: &Path, p| dual(peer, p, "-r"));

/// A "server" that takes the datagrams and never answers nor sends back: our
/// client's wait for the direction back has an end (5 s from when it is due:
/// at once for -d, after the forward test and its 2 s of FIN retries for -r),
/// with iperf 2's warning.
fn no_back(mode: &str, due_after: f64) {
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    sink.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let port = sink.local_addr().unwrap().port().to_string();
    // Counts datagrams until the client has ended (or 15 s at most).
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drained = done.clone();
    let drain = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n = 0u32;
        let end = Instant::now() + Duration::from_secs(15);
        while Instant::now() < end && !drained.load(std::sync::atomic::Ordering::Relaxed) {
            if sink.recv(&mut buf).is_ok() {
                n += 1;
            }
        }
        n
    });
    let lport = free_port().to_string();
    let t = Instant::now();
    let args = [
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "-u",
        "-t",
        "1",
        mode,
        "-L",
        &lport,
    ];
    let out = run_program(ours(), &args, CLIENT_TIMEOUT);
    let took = t.elapsed().as_secs_f64();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let ctx = format!("{mode} took {took:.2} s\n{}\n{}", out.stdout, out.stderr);
    assert!(
        // Warnings go to stderr, as iperf 2's do.
        out.stderr
            .lines()
            .any(|l| l == "WARNING: expected reverse connect did not occur"),
        "{ctx}"
    );
    assert!(took >= due_after + 4.5 && took < due_after + 7.5, "{ctx}");
    assert!(drain.join().unwrap() > 50);
}

#[test]
fn iperf2_udp_dual_d_waits_for_the_server_with_a_deadline() {
    no_back("-d", 0.0);
}

#[test]
fn iperf2_udp_dual_r_waits_for_the_server_with_a_deadline() {
    // The forward test (1 s) and its unanswered FINs (2 s) come first.
    no_back("-r", 3.0);
}
