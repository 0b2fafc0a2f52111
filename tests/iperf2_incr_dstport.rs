//! `--incr-dstport`: stream i of `-P` (from 0) goes to the port plus i, as
//! in 2.2.1. Two stock 2.2.1 servers on consecutive ports each receive one
//! of our client's two streams, and count what that stream sent.

use std::net::{TcpListener, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::iperf2::{iperf2_221, line_buffered, ours, total, udp_bound};
use crate::common::{await_listening, free_port, run_program, Proc, Signal, CLIENT_TIMEOUT};

/// Two consecutive ports free for TCP and UDP.
fn port_pair() -> u16 {
    for _ in 0..50 {
        let p = free_port();
        let free = |q: u16| {
            TcpListener::bind(("127.0.0.1", q)).is_ok() && UdpSocket::bind(("127.0.0.1", q)).is_ok()
        };
        if p < u16::MAX && free(p + 1) {
            return p;
        }
    }
    panic!("no two consecutive free ports");
}

fn start(stock: &std::path::Path, port: u16, udp: bool) -> Proc {
    let p = port.to_string();
    let mut args = vec!["-s", "-p", &p];
    if udp {
        args.push("-u");
    }
    let prog = line_buffered(stock);
    let mut proc = Proc::spawn(&prog, &args);
    if udp {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !udp_bound(port) {
            assert!(
                Instant::now() < deadline,
                "stock server not bound to UDP {port}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    } else {
        await_listening(&mut proc, port);
    }
    proc
}

#[test]
fn iperf2_incr_dstport_sends_each_stream_to_its_own_port() {
    let Some(stock) = iperf2_221() else { return };
    for udp in [false, true] {
        let port = port_pair();
        let servers = [start(&stock, port, udp), start(&stock, port + 1, udp)];
        let p = port.to_string();
        let mut args = vec![
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-P",
            "2",
            "--incr-dstport",
            "-t",
            "1",
        ];
        if udp {
            args.extend(["-u", "-b", "5m"]);
        } else {
            args.extend(["-b", "50m"]);
        }
        let out = run_program(ours(), &args, CLIENT_TIMEOUT);
        let outs: Vec<_> = servers
            .into_iter()
            .map(|s| {
                s.signal(Signal::SIGINT);
                s.finish(Duration::from_secs(10))
            })
            .collect();
        let ctx = format!(
            "udp {udp}\n--- client:\n{out}\n--- servers:\n{}\n{}",
            outs[0], outs[1]
        );
        assert_eq!(out.code(), Some(0), "{ctx}");
        for (i, s) in outs.iter().enumerate() {
            let to = (port + i as u16).to_string();
            assert_eq!(
                s.stdout.matches(" connected with ").count(),
                1,
                "server on {to}\n{ctx}"
            );
            assert!(
                out.stdout
                    .contains(&format!("connected with 127.0.0.1 port {to}")),
                "{ctx}"
            );
            let got = total(&s.stdout, "1").unwrap_or_else(|| panic!("no row on {to}\n{ctx}"));
            // One stream of 50 (5) Mbit/s for a second.
            let want = if udp { 5e6 } else { 50e6 } / 8.0;
            assert!(
                (got.bytes - want).abs() <= want * 0.1,
                "server on {to} got {} bytes\n{ctx}",
                got.bytes
            );
        }
    }
}
