//! `--connect-only[=n]`: the client times TCP handshakes and moves no data.
//! Against stock iperf 2.2.1: its server sees each connection (and no test),
//! each printed connect time is no shorter than the handshake a capture of
//! loopback saw (the SYN to the SYN-ACK, by the kernel's stamps), and the
//! closing `[ CT]` line summarises the printed times. A stock connect-only
//! client leaves our server serving the next test.

use std::collections::HashMap;

use crate::common::capture::{Capture, Packet};
use crate::common::iperf2::{iperf2_221, ours, Server2};
use crate::common::{free_port, require_tool, run_program, CLIENT_TIMEOUT};

/// (local port, connect time in ms) of each connection line.
fn connects(text: &str) -> Vec<(u16, f64)> {
    text.lines()
        .filter_map(|l| {
            let port = l.split(" port ").nth(1)?.split(' ').next()?.parse().ok()?;
            let ct = l.split("(ct=").nth(1)?.split(' ').next()?.parse().ok()?;
            Some((port, ct))
        })
        .collect()
}

/// The `[ CT]` line's (min, avg, max, tot, err).
fn ct_line(text: &str) -> Option<(f64, f64, f64, u64, u64)> {
    let l = text
        .lines()
        .find(|l| l.starts_with("[ CT] final connect times"))?;
    let figs: Vec<f64> = l
        .split(" = ")
        .nth(1)?
        .split(' ')
        .next()?
        .split('/')
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    let counts: Vec<u64> = l
        .rsplit(" = ")
        .next()?
        .split('/')
        .map(|v| v.trim().parse().ok())
        .collect::<Option<_>>()?;
    Some((figs[0], figs[1], figs[2], counts[0], counts[1]))
}

/// The SYN to SYN-ACK time of each client port's handshake, ms.
fn handshakes(segs: &[Packet], server: u16) -> HashMap<u16, f64> {
    let mut syn = HashMap::new();
    let mut out = HashMap::new();
    for p in segs.iter().filter(|p| p.syn) {
        if p.dst == server {
            syn.entry(p.src).or_insert(p.at_us);
        } else if let Some(t) = syn.get(&p.dst) {
            out.entry(p.dst).or_insert((p.at_us - t) as f64 / 1e3);
        }
    }
    out
}

#[test]
fn iperf2_connect_only_times_each_handshake_at_a_stock_server() {
    let (Some(stock), true) = (iperf2_221(), require_tool("dumpcap")) else {
        return;
    };
    let srv = Server2::start(&stock, &[]);
    let cap = Capture::start(&format!("tcp port {}", srv.port));
    let out = srv.client(&ours(), &["--connect-only=5", "-i", "0.05", "-P", "2"]);
    let segs = cap.stop();
    let port = srv.port;
    let s = srv.stop();
    let ctx = format!("--- client:\n{out}\n--- server:\n{s}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(
        out.stdout.contains("TCP three-way-handshake (3WHS) only"),
        "{ctx}"
    );
    let lines = connects(&out.stdout);
    assert_eq!(lines.len(), 10, "5 rounds of 2 streams\n{ctx}");
    // The stock server saw each one, and no test.
    let seen = format!("{}{}", s.stdout, s.stderr);
    assert_eq!(seen.matches(" connected with ").count(), 10, "{ctx}");
    assert!(!seen.contains("sec "), "a test ran\n{ctx}");
    let hs = handshakes(&segs, port);
    for (p, ct) in &lines {
        let h = hs
            .get(p)
            .unwrap_or_else(|| panic!("no handshake of port {p}\n{ctx}"));
        // Printed to 0.01 ms; the capture's stamps are microseconds.
        assert!(
            *ct + 0.006 >= *h,
            "port {p}: ct {ct} ms < handshake {h} ms\n{ctx}"
        );
    }
    let (min, avg, max, tot, err) =
        ct_line(&out.stdout).unwrap_or_else(|| panic!("no [ CT] line on stdout\n{ctx}"));
    assert_eq!((tot, err), (10, 0), "{ctx}");
    let cts: Vec<f64> = lines.iter().map(|l| l.1).collect();
    let lo = cts.iter().cloned().fold(f64::MAX, f64::min);
    let hi = cts.iter().cloned().fold(0.0, f64::max);
    let mean = cts.iter().sum::<f64>() / cts.len() as f64;
    for (a, b) in [(min, lo), (max, hi), (avg, mean)] {
        assert!((a - b).abs() <= 0.006, "[ CT] {a} vs the lines' {b}\n{ctx}");
    }
}

#[test]
fn iperf2_connect_only_to_a_closed_port_reports_each_failure() {
    let port = free_port().to_string();
    let out = run_program(
        ours(),
        &["-c", "127.0.0.1", "-p", &port, "--connect-only=3"],
        CLIENT_TIMEOUT,
    );
    assert_eq!(out.code(), Some(0), "{out}");
    assert_eq!(
        out.stderr
            .matches(&format!(
                "tcp connect to 127.0.0.1 port {port} failed (Connection refused)"
            ))
            .count(),
        3,
        "{out}"
    );
    assert!(!out.stdout.contains("[ CT]"), "{out}");
}

#[test]
fn iperf2_a_stock_connect_only_client_leaves_our_server_serving() {
    let Some(stock) = iperf2_221() else { return };
    let srv = Server2::start(&ours(), &[]);
    let c = srv.client(&stock, &["--connect-only", "-i", "0.1", "-t", "0.35"]);
    let (_, _, _, tot, err) =
        ct_line(&c.stdout).unwrap_or_else(|| panic!("no [ CT] line from 2.2.1\n{c}"));
    let next = srv.client(&ours(), &["-t", "0.3"]);
    let s = srv.stop();
    let ctx = format!("--- stock:\n{c}\n--- next:\n{next}\n--- server:\n{s}");
    assert_eq!((c.code(), next.code()), (Some(0), Some(0)), "{ctx}");
    assert_eq!(err, 0, "{ctx}");
    assert_eq!(
        s.stderr.matches("closed before any test header").count() as u64,
        tot,
        "{ctx}"
    );
    // The report's end is the test's real length: 0.30 s, or a little more
    // on a busy host (0.31 was seen).
    assert!(
        s.stdout
            .lines()
            .any(|l| l.contains(" 0.00-0.3") && l.ends_with("bits/sec")),
        "the next test was not served\n{ctx}"
    );
}
