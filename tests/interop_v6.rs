//! IPv6 end to end against stock iperf3 3.12 and 3.21 in both roles: TCP and
//! UDP, forward and `-R`, over `::1`. Each side's `-J` document must show its
//! streams on `::1` and tell the same story as the other side's.

use crate::common;

use std::path::{Path, PathBuf};

use common::interop::{threaded, Mode, Pairing, Run};
use common::json::{arr, num, string};
use common::tcp_streams::check_against_stock;
use common::*;
use serde_json::Value;

/// The stock peers here: 3.12 on PATH, 3.21 when this checkout has it.
fn stock_peers() -> Vec<(&'static str, PathBuf)> {
    let mut v = Vec::new();
    if require_tool("iperf3") {
        v.push(("3.12", PathBuf::from("iperf3")));
    }
    if let Some(p) = iperf3_321() {
        v.push(("3.21", p));
    }
    v
}

/// One `-J` test between `client` and a one-off `-J` server of `server`,
/// the client aimed at `::1`.
fn run_v6(client: &Path, server: &Path, pairing: Pairing, extra: &[&str]) -> Run {
    let iperf3_threads = threaded(match pairing {
        Pairing::OursToIperf3 => server,
        Pairing::Iperf3ToOurs => client,
    });
    let srv = Server::start_program(server, &["-1", "-J"]);
    let port = srv.port.to_string();
    let mut args = vec!["-c", "::1", "-p", &port, "-J"];
    args.extend_from_slice(extra);
    let c = run_program(client, &args, CLIENT_TIMEOUT);
    let s = srv.wait_exit(CLIENT_TIMEOUT);
    let mut problems = Vec::new();
    let parse = |who: &str, out: &Output, problems: &mut Vec<String>| {
        if out.code() != Some(0) {
            problems.push(format!("{who} exit status {}", out.status));
        }
        serde_json::from_str::<Value>(&out.stdout).unwrap_or_else(|e| {
            problems.push(format!("{who}: not one JSON document: {e}"));
            Value::Null
        })
    };
    let client = parse("client", &c, &mut problems);
    let server = parse("server", &s, &mut problems);
    Run {
        client,
        server,
        problems,
        transcript: format!("{c}\n{s}"),
        pairing: Some(pairing),
        iperf3_threads,
        kernel: None,
    }
}

/// Every stream of both documents runs between `::1` and `::1`.
fn check_on_v6(r: &mut Run) {
    for (who, doc) in [("client", &r.client), ("server", &r.server)] {
        if doc.is_null() {
            continue;
        }
        for c in arr(doc, "start.connected") {
            for k in ["local_host", "remote_host"] {
                let host = string(c, k);
                if host != "::1" {
                    r.problems
                        .push(format!("{who} start.connected {k} = {host:?}, wanted ::1"));
                }
            }
        }
        if who == "client" {
            let to = string(doc, "start.connecting_to.host");
            if to != "::1" {
                r.problems
                    .push(format!("client connecting_to.host = {to:?}"));
            }
        }
    }
}

/// The larger loss percentage of the two documents.
fn max_loss(r: &Run) -> f64 {
    let rp = "end.sum_received.lost_percent";
    num(&r.client, rp).max(num(&r.server, rp))
}

/// UDP: packets and loss reconcile between the documents, on `::1`.
fn check_udp(r: &mut Run, mode: Mode) {
    check_on_v6(r);
    r.check_udp_accounting(mode);
}

/// TCP and UDP, forward and reverse, between rperf3 and `stock` in `pairing`.
fn v6_matrix(pairing: Pairing) {
    for (version, stock) in stock_peers() {
        let (client, server) = match pairing {
            Pairing::OursToIperf3 => (rperf3(), stock.clone()),
            Pairing::Iperf3ToOurs => (stock.clone(), rperf3()),
        };
        for udp in [false, true] {
            for mode in [Mode::Normal, Mode::Reverse] {
                let mut args = vec!["-t", "1"];
                if udp {
                    args.extend(["-u", "-b", "10M", "-l", "1400"]);
                }
                if mode == Mode::Reverse {
                    args.push("-R");
                }
                let what = format!("{pairing:?} iperf3 {version} {args:?}");
                let mut r = run_v6(&client, &server, pairing, &args);
                // Loss on loopback only comes from a receiver starved of the
                // CPU (its socket buffer holds ~100 ms at 10 Mbit/s): retried
                // twice, while every other check must hold on every run.
                for _ in 0..2 {
                    if !udp || !r.problems.is_empty() || max_loss(&r) <= 1.0 {
                        break;
                    }
                    eprintln!("{what}: {}% lost, running again", max_loss(&r));
                    check_udp(&mut r, mode);
                    assert!(r.problems.is_empty(), "{what}: {:?}", r.problems);
                    r = run_v6(&client, &server, pairing, &args);
                }
                if r.problems.is_empty() {
                    check_on_v6(&mut r);
                    r.check_stream_counts(1);
                    let client_sends = mode == Mode::Normal;
                    if udp {
                        check_udp(&mut r, mode);
                        let lost = max_loss(&r);
                        if lost > 1.0 {
                            r.problems.push(format!("lost {lost}% in three runs"));
                        }
                    } else {
                        check_against_stock(&mut r, 1, version, pairing, client_sends);
                    }
                }
                assert!(
                    r.problems.is_empty(),
                    "{what}: {:?}\n{}",
                    r.problems,
                    r.transcript
                );
            }
        }
    }
}

#[test]
fn issue16_ipv6_stock_clients_against_rperf3_server() {
    v6_matrix(Pairing::Iperf3ToOurs);
}

#[test]
fn issue16_ipv6_rperf3_client_against_stock_servers() {
    v6_matrix(Pairing::OursToIperf3);
}
