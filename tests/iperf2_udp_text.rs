//! iperf 2 UDP interop through rperf3's binary under the name `iperf`, as a
//! person runs it: the stock program and rperf3 in each role, each side's
//! printed rows read with the stock program's fields, and the datagram
//! counts printed on both sides compared.

use std::path::Path;

use crate::common::iperf2::{sent_datagrams, total, Server2 as PeerServer};
use crate::iperf2_udp::{peer_reports, Dir};

/// The datagram total of a server's last `[SUM]` row from 0, which has no
/// jitter column (`... 8.04 Mbits/sec   0/692 (0%)`).
fn sum_total(text: &str) -> Option<u64> {
    text.lines()
        .filter(|l| l.starts_with("[SUM] 0.0"))
        .filter_map(|l| {
            let counts = l
                .split_whitespace()
                .find(|w| w.contains('/') && !w.contains("sec"))?;
            counts.split_once('/')?.1.parse().ok()
        })
        .next_back()
}

/// The same tests through rperf3's binary under the name `iperf` (argv and
/// text as a person sees them): each side's printed rows parse with the
/// stock program's fields, and the datagram counts printed on both sides
/// agree. `streams` flows; `dir` for -R / --full-duplex.
/// A local port that two of a client's flows were given, if any.
fn shared_local_port(client: &str) -> Option<String> {
    let mut seen = std::collections::HashSet::new();
    client
        .lines()
        .filter(|l| l.contains(" connected with "))
        .filter_map(|l| l.split(" port ").nth(1)?.split_whitespace().next())
        .find(|p| !seen.insert(p.to_string()))
        .map(str::to_string)
}

fn through_text(
    peer: &Path,
    pairing: crate::common::iperf2::Pairing2,
    args: &[&str],
    streams: u32,
    dir: Option<Dir>,
) {
    let (client_prog, server_prog) = pairing.programs(peer);
    let mut all: Vec<&str> = vec!["-u", "-t", "1", "-i", "1"];
    all.extend_from_slice(args);
    if let Some(d) = dir {
        all.push(d.flag());
    }
    // A 2.2.1 client now and then binds two of its -P flows to one local
    // port (`[  3] local ... port 48308` and `[  4] local ... port 48308`):
    // no server can tell those flows apart, so that run is made again.
    let mut tries = 0;
    let (client, served) = loop {
        let server = PeerServer::start(&server_prog, &["-u", "-i", "1"]);
        let client = server.client(&client_prog, &all);
        client.assert_ok();
        let served = server.stop();
        tries += 1;
        match shared_local_port(&client.stdout) {
            Some(port) if tries < 3 => eprintln!("two flows on local port {port}: again"),
            Some(port) => panic!("two flows on local port {port} in 3 runs\n{client}"),
            None => break (client, served),
        }
    };
    let ctx = format!("{client}\n{served}");
    let (c, s) = (&client.stdout, &served.stdout);
    match dir {
        None => {
            // Sender: "Sent" per stream; the server's totals and the report
            // it sent back, per stream.
            let reports = peer_reports(c);
            // A 2.2.1 server now and then leaves a flow of -P unserved (its
            // own client's too, see `iperf2_udp`); every other server serves
            // all, and every flow served must agree to the datagram.
            let lossy = server_prog.ends_with("iperf-2.2.1") && streams > 1;
            if lossy {
                assert!(!reports.is_empty(), "{ctx}");
            } else {
                assert_eq!(reports.len(), streams as usize, "{ctx}");
            }
            for r in &reports {
                let sent = sent_datagrams(c, &r.tag).expect("Sent");
                assert_eq!(r.total, Some(sent - 1), "[{}] {ctx}", r.tag);
            }
            let mut counted: Vec<(u64, u64)> = (1..=streams)
                .filter_map(|t| total(s, &t.to_string()))
                .map(|r| (r.lost.unwrap(), r.total.unwrap()))
                .collect();
            let mut report_rows: Vec<(u64, u64)> = reports
                .iter()
                .map(|r| (r.lost.unwrap(), r.total.unwrap()))
                .collect();
            counted.sort();
            report_rows.sort();
            assert_eq!(report_rows, counted, "{ctx}");
            // Our server's [SUM] (a stock 2.1.8 server prints none when its
            // flows end inside the first interval).
            if streams > 1 && server_prog == crate::common::iperf2::ours() {
                let all: u64 = counted.iter().map(|(_, t)| t).sum();
                assert_eq!(sum_total(s), Some(all), "{ctx}");
            }
        }
        Some(d) => {
            // The server's "Sent" against the client's [ *1] receiver row.
            let down = sent_datagrams(s, "1").expect("the server's Sent");
            let r = total(c, "*1").expect("the client's [ *1] total");
            assert_eq!((r.lost, r.total), (Some(0), Some(down - 1)), "{ctx}");
            if d == Dir::FullDuplex {
                let up = sent_datagrams(c, "1").expect("the client's Sent");
                let r = total(s, "1").expect("the server's [  1] total");
                assert_eq!((r.lost, r.total), (Some(0), Some(up - 1)), "{ctx}");
            }
        }
    }
}

both_ways2!(text_udp_10m, |p: &Path, w| through_text(
    p,
    w,
    &["-b", "10m"],
    1,
    None
));

both_ways2!(text_udp_2000pps, |p: &Path, w| through_text(
    p,
    w,
    &["-b", "2000pps"],
    1,
    None
));

both_ways2!(text_udp_p4, |p: &Path, w| through_text(
    p,
    w,
    &["-b", "2m", "-P", "4"],
    4,
    None
));

both_ways2!(text_udp_64_bytes, |p: &Path, w| through_text(
    p,
    w,
    &["-b", "2m", "-l", "64"],
    1,
    None
));

both_ways2!(text_udp_reverse, |p: &Path, w| through_text(
    p,
    w,
    &["-b", "200pps"],
    1,
    Some(Dir::Reverse)
));

both_ways2!(text_udp_full_duplex, |p: &Path, w| through_text(
    p,
    w,
    &["-b", "200pps"],
    1,
    Some(Dir::FullDuplex)
));
