//! `-Z` and `--skip-rx-copy`, seen in the system calls (strace) of the side
//! that honours them, with stock iperf3 peers on the other side.

use crate::common;

use std::time::Duration;

use common::interop::{Mode, Pairing, Run};
use common::{
    congestion_available, iperf3_321, require_tool, rperf3, run_program, scratch_file, Proc, Server,
};

/// `prog args...` under strace, following threads, logging `calls` to a file.
fn traced(prog: &std::path::Path, args: &[String], calls: &str) -> (Proc, std::path::PathBuf) {
    let log = scratch_file("strace.txt");
    let mut a = vec![
        "-f".to_string(),
        "-qq".to_string(),
        "-e".to_string(),
        format!("trace={calls}"),
        "-o".to_string(),
        log.to_str().unwrap().to_string(),
        prog.to_str().unwrap().to_string(),
    ];
    a.extend(args.iter().cloned());
    (Proc::spawn("strace", &a), log)
}

/// Lines of the strace log that call `call`.
fn calls_of(log: &std::path::Path, call: &str) -> Vec<String> {
    calls_with(log, call, "")
}

/// Lines of the strace log that call `call` and contain `text`.
fn calls_with(log: &std::path::Path, call: &str, text: &str) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!("{call}(")) && l.contains(text))
        .map(str::to_string)
        .collect()
}

/// The TCP bytes of a test between rperf3 and the stock `iperf3` (as `pairing`
/// says) reconcile between the two documents.
fn reconciles(
    client: serde_json::Value,
    server: serde_json::Value,
    mode: Mode,
    pairing: Pairing,
    iperf3: &std::path::Path,
) {
    let mut r = Run {
        client,
        server,
        problems: Vec::new(),
        transcript: String::new(),
        pairing: Some(pairing),
        iperf3_threads: common::interop::threaded(iperf3),
        kernel: None,
    };
    r.check_tcp_delivery(mode, 1);
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

#[test]
fn the_server_discards_in_the_kernel_when_a_stock_client_asks() {
    if !require_tool("strace") {
        return;
    }
    let Some(newest) = iperf3_321() else {
        return;
    };
    let port = common::free_port();
    let server_args: Vec<String> = ["-s", "-1", "-J", "-p", &port.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (mut srv, log) = traced(&rperf3(), &server_args, "recvfrom");
    common::await_listening(&mut srv, port);
    let p = port.to_string();
    let out = run_program(
        &newest,
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &p,
            "-t",
            "1",
            "--skip-rx-copy",
            "-J",
        ],
        Duration::from_secs(30),
    );
    let server = srv.finish(Duration::from_secs(30));
    let truncated = calls_with(&log, "recvfrom", "MSG_TRUNC").len();
    assert!(truncated > 100, "{truncated} MSG_TRUNC reads");
    reconciles(
        out.assert_ok().json(),
        server.json(),
        Mode::Normal,
        Pairing::Iperf3ToOurs,
        &newest,
    );
}

#[test]
fn the_client_discards_in_the_kernel_and_counts_right() {
    if !require_tool("strace") || !require_tool("iperf3") {
        return;
    }
    let srv = Server::start_iperf3(&["-1", "-J"]);
    let (client, log) = traced(
        &rperf3(),
        &srv.args(&["-t", "1", "-R", "--skip-rx-copy", "-J"]),
        "recvfrom",
    );
    let out = client.finish(Duration::from_secs(30));
    let truncated = calls_with(&log, "recvfrom", "MSG_TRUNC").len();
    assert!(truncated > 100, "{truncated} MSG_TRUNC reads");
    // What the stock server's own document says it sent, against what was
    // counted here: all of it, less at most what the socket buffers held in
    // flight at the end (and its figure crossed unchanged).
    let server = srv.wait_exit(Duration::from_secs(30));
    reconciles(
        out.assert_ok().json(),
        server.assert_ok().json(),
        Mode::Reverse,
        Pairing::OursToIperf3,
        std::path::Path::new("iperf3"),
    );
}

#[test]
fn zero_copy_sends_use_sendfile_both_ways() {
    if !require_tool("strace") {
        return;
    }
    let Some(newest) = iperf3_321() else {
        return;
    };
    // rperf3 client -Z against iperf3 3.21: sendfile on the client.
    let srv = Server::start_program(&newest, &[]);
    let (client, log) = traced(&rperf3(), &srv.args(&["-t", "1", "-Z"]), "sendfile");
    client.finish(Duration::from_secs(30)).assert_ok();
    assert!(calls_of(&log, "sendfile").len() > 100, "no sendfile");
    // iperf3 3.21 -Z -R against rperf3: sendfile on the server.
    let port = common::free_port();
    let server_args: Vec<String> = ["-s", "-1", "-p", &port.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (mut ours, log) = traced(&rperf3(), &server_args, "sendfile");
    common::await_listening(&mut ours, port);
    let p = port.to_string();
    run_program(
        &newest,
        &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-Z", "-R"],
        Duration::from_secs(30),
    )
    .assert_ok();
    ours.finish(Duration::from_secs(30)).assert_ok();
    assert!(calls_of(&log, "sendfile").len() > 100, "no sendfile");
}

/// The strace log of `calls` made by a successful 1 s rperf3 client test
/// with `args` against `srv`.
fn traced_client(srv: &Server, args: &[&str], calls: &str) -> std::path::PathBuf {
    let mut a = vec!["-t", "1"];
    a.extend_from_slice(args);
    let (client, log) = traced(&rperf3(), &srv.args(&a), calls);
    client.finish(Duration::from_secs(30)).assert_ok();
    log
}

/// (sendfile calls, 128 KiB sends from user space) of an rperf3 client run
/// with `args`. (The payload's one write into its file is not a send.)
fn send_calls(srv: &Server, args: &[&str]) -> (usize, usize) {
    let log = traced_client(srv, args, "sendfile,sendto");
    let sendfile = calls_of(&log, "sendfile").len();
    let writes = calls_with(&log, "sendto", ", 131072,").len();
    (sendfile, writes)
}

/// Several senders under a pacing congestion control (BBR) write their blocks;
/// one sender, a non-pacing algorithm, or `-Z` send them with sendfile.
#[test]
fn senders_choose_sendfile_or_writes_by_streams_and_congestion_control() {
    if !require_tool("strace") || !congestion_available("bbr") || !congestion_available("cubic") {
        return;
    }
    let srv = Server::start(&[]);
    let (sf, wr) = send_calls(&srv, &["-P", "2", "-C", "bbr"]);
    assert!(sf == 0 && wr > 100, "-P 2 BBR: {sf} sendfile, {wr} writes");
    let (sf, wr) = send_calls(&srv, &["-P", "7", "-C", "bbr"]);
    assert!(sf == 0 && wr > 100, "-P 7 BBR: {sf} sendfile, {wr} writes");
    for args in [
        &["-P", "2", "-C", "bbr", "-Z"][..],
        &["-P", "8", "-C", "bbr"],
        &["-P", "2", "-C", "cubic"],
        &["-C", "bbr"],
    ] {
        let (sf, wr) = send_calls(&srv, args);
        assert!(sf > 100 && wr == 0, "{args:?}: {sf} sendfile, {wr} writes");
    }
}

/// (SO_RCVLOWAT settings, non-blocking reads) of an rperf3 client run with
/// `args`.
fn receive_calls(srv: &Server, args: &[&str]) -> (Vec<String>, Vec<String>) {
    let log = traced_client(srv, args, "setsockopt,recvfrom");
    let marks = calls_with(&log, "setsockopt", "SO_RCVLOWAT");
    let reads = calls_with(&log, "recvfrom", "MSG_DONTWAIT");
    (marks, reads)
}

/// A side that receives on one or two TCP streams reads on a mark of 512 KiB
/// (a block of 128 KiB is smaller), 512 KiB at a time, and lowers the mark
/// at the stop; with three streams it reads plainly. With
/// `--skip-rx-copy` it discards on the mark.
#[test]
fn one_or_two_receivers_read_on_a_mark_of_512_kib() {
    if !require_tool("strace") {
        return;
    }
    let srv = Server::start(&[]);
    // Set once, lowered to a byte at the stop (and for the drain).
    let lowered = |m: &[String]| m.len() >= 2 && m[1..].iter().all(|m| m.contains("[1]"));
    let (marks, reads) = receive_calls(&srv, &["-R"]);
    assert!(
        marks.first().is_some_and(|m| m.contains("[524288]")) && lowered(&marks),
        "{marks:?}"
    );
    // The final drain reads what is left, in smaller reads.
    let other: Vec<_> = reads
        .iter()
        .filter(|r| !r.contains(", 524288, MSG_DONTWAIT"))
        .collect();
    assert!(
        reads.len() > 100 && other.len() <= 2,
        "{} reads, not of 512 KiB: {other:?}",
        reads.len()
    );
    let (marks, reads) = receive_calls(&srv, &["-R", "-P", "2"]);
    let marked = marks.iter().filter(|m| m.contains("[524288]")).count();
    assert!(
        marked == 2 && reads.len() > 100,
        "-P 2: {marks:?}, {} reads",
        reads.len()
    );
    let (marks, reads) = receive_calls(&srv, &["-R", "-P", "3"]);
    assert!(
        marks.is_empty() && reads.is_empty(),
        "-P 3: {marks:?}, {} reads",
        reads.len()
    );
    let (marks, reads) = receive_calls(&srv, &["-R", "--skip-rx-copy"]);
    let discards = reads.iter().filter(|r| r.contains("MSG_TRUNC")).count();
    assert!(
        marks.first().is_some_and(|m| m.contains("[524288]")) && lowered(&marks) && discards > 100,
        "--skip-rx-copy: {marks:?}, {discards} discards on the mark"
    );
}

/// Pauses of the receiving I/O workers (`mux::GATHER_PAUSE`, 200 us) in an
/// rperf3 client run with `args`.
fn gathering_pauses(srv: &Server, args: &[&str]) -> usize {
    let log = traced_client(srv, args, "nanosleep,clock_nanosleep");
    calls_with(&log, "nanosleep", "tv_nsec=200000}").len()
}

/// A side that only receives, on I/O workers (64 streams), pauses to gather
/// bytes when few streams woke a worker; a `--bidir` side, which also sends,
/// never does (not even at full rate, where pauses would be many), and
/// neither do threads per stream.
#[test]
fn receiving_workers_pause_to_gather_only_where_the_side_does_not_send() {
    if !require_tool("strace") {
        return;
    }
    let srv = Server::start(&[]);
    // Paced small blocks (16 a second per stream, a stream or two per
    // wake): the workers pause however busy the host is, where a full-rate
    // test on a loaded host may wake them for many streams at a time.
    let paced = ["-R", "-P", "64", "-l", "8K", "-b", "1M"];
    let pauses = gathering_pauses(&srv, &paced);
    assert!(pauses > 10, "-R -P 64 -b 1M: {pauses} pauses");
    let pauses = gathering_pauses(&srv, &["--bidir", "-P", "64"]);
    assert_eq!(pauses, 0, "--bidir -P 64");
    let pauses = gathering_pauses(&srv, &["-R", "-P", "8"]);
    assert_eq!(pauses, 0, "-R -P 8 (a thread per stream)");
}
