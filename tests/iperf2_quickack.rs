//! `--tcp-quickack`: the side that reads sets TCP_QUICKACK before each read
//! (the kernel clears it by itself), so its ACKs go at once. strace counts
//! the calls of the reading side while stock iperf 2.2.1 plays the other: a
//! client that sends asks its server in the test header (a stock server then
//! sets it before its reads and prints `(qack)`), a `-R` client sets it
//! before its own reads, and our server does for a stock client that asks.

use std::path::Path;

use crate::common::iperf2::{iperf2_221, ours};
use crate::common::{require_tool, run_program, scratch_file, strace, Proc, CLIENT_TIMEOUT};

/// Small paced writes: the reader makes hundreds of reads in a second.
const LOAD: [&str; 6] = ["-t", "1", "-l", "1400", "-b", "20M"];

/// (setsockopt calls, recvfrom calls) of an `strace -f -c` summary.
fn counts(log: &Path) -> (u64, u64) {
    let n = |name| strace::calls(log, name).unwrap_or(0);
    (n("setsockopt"), n("recvfrom"))
}

/// Every read had its TCP_QUICKACK: as many setsockopt calls as reads, but
/// for the few a test makes on the control path.
fn assert_quickack_per_read(log: &Path, what: &str, ctx: &str) {
    let (sets, reads) = counts(log);
    let summary = std::fs::read_to_string(log).unwrap_or_default();
    assert!(reads >= 200, "{what}: only {reads} reads\n{summary}\n{ctx}");
    assert!(
        sets + 20 >= reads,
        "{what}: {sets} setsockopt calls for {reads} reads\n{summary}\n{ctx}"
    );
}

/// `program -s -p PORT -l 1400` (1400-byte reads: one for each of the
/// client's writes) under `strace -f -c -o log`, listening.
fn traced_server(program: &Path, log: &Path) -> (Proc, u16) {
    strace::traced_server(program, &["-l", "1400"], log)
}

fn client_args(port: u16, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = ["-c", "127.0.0.1", "-p", &port.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    v.extend(LOAD.iter().chain(extra).map(|s| s.to_string()));
    v
}

#[test]
fn iperf2_quickack_our_client_asks_a_stock_server() {
    let (Some(stock), true) = (iperf2_221(), require_tool("strace")) else {
        return;
    };
    let log = scratch_file("qack-stock-server.strace");
    let (tracer, port) = traced_server(&stock, &log);
    let out = run_program(
        ours(),
        &client_args(port, &["--tcp-quickack", "-e"]),
        CLIENT_TIMEOUT,
    );
    let srv = strace::stop_traced_after_report(tracer);
    let ctx = format!("--- client:\n{out}\n--- server:\n{srv}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(out.stdout.contains(" (qack) (icwnd"), "{ctx}");
    assert!(
        srv.stdout.contains("(qack)"),
        "the stock server was not asked\n{ctx}"
    );
    assert_quickack_per_read(&log, "stock server", &ctx);
}

#[test]
fn iperf2_quickack_our_reverse_client_sets_it_on_its_reads() {
    let (Some(stock), true) = (iperf2_221(), require_tool("strace")) else {
        return;
    };
    let srv = crate::common::Server::start_program(&stock, &[]);
    let log = scratch_file("qack-reverse-client.strace");
    let ours = ours();
    let mut args = vec![
        "-f".to_string(),
        "-c".to_string(),
        "-o".to_string(),
        log.to_str().unwrap().to_string(),
        ours.to_str().unwrap().to_string(),
    ];
    args.extend(client_args(srv.port, &["--tcp-quickack", "-R"]));
    let out = run_program("strace", &args, CLIENT_TIMEOUT);
    let ctx = format!("--- client:\n{out}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(out.stdout.contains("(reverse) (qack)"), "{ctx}");
    assert_quickack_per_read(&log, "our -R client", &ctx);
}

#[test]
fn iperf2_quickack_our_server_sets_it_for_a_stock_client() {
    let (Some(stock), true) = (iperf2_221(), require_tool("strace")) else {
        return;
    };
    let log = scratch_file("qack-our-server.strace");
    let (tracer, port) = traced_server(&ours(), &log);
    let out = run_program(
        &stock,
        &client_args(port, &["--tcp-quickack"]),
        CLIENT_TIMEOUT,
    );
    let srv = strace::stop_traced_after_report(tracer);
    let ctx = format!("--- client:\n{out}\n--- server:\n{srv}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(
        srv.stdout
            .lines()
            .any(|l| l.contains(" connected with ") && l.ends_with(" (qack)")),
        "{ctx}"
    );
    assert_quickack_per_read(&log, "our server", &ctx);
}

#[test]
fn iperf2_without_quickack_our_server_reads_without_it() {
    let (Some(stock), true) = (iperf2_221(), require_tool("strace")) else {
        return;
    };
    let log = scratch_file("no-qack-our-server.strace");
    let (tracer, port) = traced_server(&ours(), &log);
    let out = run_program(&stock, &client_args(port, &[]), CLIENT_TIMEOUT);
    let srv = strace::stop_traced_after_report(tracer);
    let ctx = format!("--- client:\n{out}\n--- server:\n{srv}");
    assert_eq!(out.code(), Some(0), "{ctx}");
    assert!(!srv.stdout.contains("(qack)"), "{ctx}");
    // A lone receiver without `-e` reads on a mark: every 10 ms at this rate.
    let (sets, reads) = counts(&log);
    assert!(
        reads >= 50 && sets < 20,
        "{sets} setsockopt calls for {reads} reads\n{ctx}"
    );
}
