//! `--bounceback --bounceback-period 0` on loopback is paced by system calls
//! and wake-ups, so each side must make one write and one read per request
//! and nothing else: strace counts every call of our side while a stock
//! iperf 2.2.1 plays the other, and its count of writes is the count of
//! requests.

use std::path::Path;

use crate::common::iperf2::{iperf2_221, ours};
use crate::common::{require_tool, run_program, scratch_file, strace, Server, CLIENT_TIMEOUT};

/// Calls a 1 s run may make besides its requests' writes and reads: start-up,
/// threads, the report, the close, the client's look at its interrupt pipe
/// every 10 ms (about 290 seen for either side).
const FIXED: u64 = 400;

/// (writes, all calls) of an strace log (a `-c` summary or a streamed
/// trace): `sendto` carries each request or reply, `total` is every call of
/// every thread.
fn calls(log: &Path) -> (u64, u64) {
    let count = |name: &str| {
        strace::calls(log, name).unwrap_or_else(|| {
            panic!(
                "no {name} calls in the strace log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            )
        })
    };
    (count("sendto"), count("total"))
}

fn assert_two_per_request(log: &Path, side: &str, peer_out: &str) {
    let (writes, total) = calls(log);
    let summary = std::fs::read_to_string(log).unwrap_or_default();
    // Even traced, a 1 s run makes thousands of round trips; at 1000 a third
    // call per request is beyond the slack below.
    assert!(
        writes >= 1000,
        "{side}: only {writes} writes\n{summary}\n{peer_out}"
    );
    // 2.1 a request: a read may now and then return part of one.
    assert!(
        total * 10 <= 21 * writes + 10 * FIXED,
        "{side}: {total} calls for {writes} requests (want 2 each, 2.1 at most, + {FIXED})\n{summary}\n{peer_out}"
    );
}

#[test]
fn iperf2_bounceback_client_makes_two_calls_per_request() {
    let Some(peer) = iperf2_221() else { return };
    if !require_tool("strace") {
        return;
    }
    let srv = Server::start_program(&peer, &[]);
    let log = scratch_file("bb-client.strace");
    let ours = ours();
    let mut args = vec![
        "-f",
        "-c",
        "-o",
        log.to_str().unwrap(),
        ours.to_str().unwrap(),
    ];
    let client = srv.args(&["-t", "1", "--bounceback", "--bounceback-period", "0"]);
    args.extend(client.iter().map(String::as_str));
    let out = run_program("strace", &args, CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    assert_two_per_request(&log, "client", &out.stdout);
}

#[test]
fn iperf2_bounceback_server_makes_two_calls_per_request() {
    let Some(peer) = iperf2_221() else { return };
    if !require_tool("strace") {
        return;
    }
    let log = scratch_file("bb-server.strace");
    let (tracer, port) = strace::traced_server(&ours(), &[], &log);
    let p = port.to_string();
    let a = [
        "-c",
        "127.0.0.1",
        "-p",
        &p,
        "-t",
        "1",
        "--bounceback",
        "--bounceback-period",
        "0",
    ];
    let out = run_program(&peer, &a, CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let done = strace::stop_traced(tracer);
    assert_eq!(done.code(), Some(0), "{}\n{}", done.stdout, done.stderr);
    assert_two_per_request(&log, "server", &out.stdout);
}
