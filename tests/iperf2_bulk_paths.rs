//! The iperf personality's bulk TCP paths are the iperf3 personality's: a lone
//! sender of the pattern sends it from a file with sendfile (strace counts
//! its calls), and a lone receiver whose reads nobody shows (no `-e`) reads on
//! a mark of one block (strace sees SO_RCVLOWAT set); several receivers read
//! plainly. Against stock iperf 2.2.1, whose CSV report counts every byte
//! either way: what one side sent, the other received.

use std::path::Path;
use std::time::Duration;

use crate::common::iperf2::{iperf2_221, ours, Server2};
use crate::common::{
    await_listening, free_port, require_tool, run_program, scratch_file, strace, Proc,
    CLIENT_TIMEOUT,
};

/// The bytes of each CSV row (`-y C`: the eighth field) in `text`.
fn csv_bytes(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| l.split(',').nth(7)?.trim().parse().ok())
        .collect()
}

#[test]
fn iperf2_a_lone_sender_sends_with_sendfile_to_a_stock_server() {
    let (Some(stock), true) = (iperf2_221(), require_tool("strace")) else {
        return;
    };
    let srv = Server2::start(&stock, &["-y", "C"]);
    let log = scratch_file("iperf2-sendfile.strace");
    let mut args = vec![
        "-f".to_string(),
        "-c".to_string(),
        "-o".to_string(),
        log.to_str().unwrap().to_string(),
        ours().to_str().unwrap().to_string(),
    ];
    args.extend(srv.args(&["-t", "1", "-y", "C"]));
    let out = run_program("strace", &args, CLIENT_TIMEOUT);
    let s = srv.stop_when(|o| !csv_bytes(o).is_empty());
    let ctx = format!("--- client:\n{out}\n--- server:\n{s}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    let summary = std::fs::read_to_string(&log).unwrap_or_default();
    let sendfiles = strace::calls(&log, "sendfile").unwrap_or(0);
    assert!(
        sendfiles >= 10,
        "{sendfiles} sendfile calls\n{summary}\n{ctx}"
    );
    let (sent, got) = (csv_bytes(&out.stdout), csv_bytes(&s.stdout));
    assert!(sent.len() == 1 && got.len() == 1, "{ctx}");
    assert_eq!(sent[0], got[0], "sent and received bytes\n{ctx}");
}

/// Our server under `strace -f -e trace=setsockopt`, a stock 2.2.1 client
/// with `extra`; returns the trace and both CSV byte counts (client, server).
fn traced_receiver(stock: &Path, extra: &[&str]) -> (String, Vec<u64>, Vec<u64>, String) {
    let log = scratch_file("iperf2-mark.strace");
    let port = free_port();
    let p = port.to_string();
    let log_s = log.to_str().unwrap();
    let ours = ours();
    let mut srv = Proc::spawn(
        "strace",
        &[
            "-f",
            "-e",
            "trace=setsockopt",
            "-o",
            log_s,
            ours.to_str().unwrap(),
            "-s",
            "-p",
            &p,
            "-y",
            "C",
        ],
    );
    await_listening(&mut srv, port);
    let mut args = vec!["-c", "127.0.0.1", "-p", &p, "-t", "1", "-y", "C"];
    args.extend_from_slice(extra);
    let out = run_program(stock, &args, CLIENT_TIMEOUT);
    let rows = extra.contains(&"-P") as usize + 1;
    srv.wait_stdout_until(Duration::from_secs(10), |o| csv_bytes(o).len() >= rows);
    let s = strace::stop_traced(srv);
    let ctx = format!("--- client:\n{out}\n--- server:\n{s}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    (trace, csv_bytes(&out.stdout), csv_bytes(&s.stdout), ctx)
}

#[test]
fn iperf2_a_lone_receiver_reads_on_a_mark_and_counts_every_byte() {
    let (Some(stock), true) = (iperf2_221(), require_tool("strace")) else {
        return;
    };
    let (trace, sent, got, ctx) = traced_receiver(&stock, &[]);
    assert!(
        trace.contains("SO_RCVLOWAT, [524288]"),
        "no mark of 512 KiB\n{trace}\n{ctx}"
    );
    assert!(sent.len() == 1 && got.len() == 1, "{ctx}");
    assert_eq!(sent[0], got[0], "sent and received bytes\n{ctx}");

    // Two streams: plain reads, as the iperf3 personality's.
    let (trace, sent, got, ctx) = traced_receiver(&stock, &["-P", "2"]);
    assert!(
        !trace.contains("SO_RCVLOWAT"),
        "a mark with -P 2\n{trace}\n{ctx}"
    );
    // Two stream rows and the sum's, on both sides.
    assert_eq!(sent.len(), 3, "{ctx}");
    assert_eq!(sent.iter().max(), got.iter().max(), "the sums\n{ctx}");
}
