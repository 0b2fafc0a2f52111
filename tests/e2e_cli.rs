//! The binary against itself: exit statuses, error messages, a busy server,
//! signals in the middle of a test, and the server's one-off mode.

use crate::common;

use std::time::Duration;

use common::json::{arr, num, string};
use common::{free_port, rperf3, run_client, Server, Signal, CLIENT_TIMEOUT};

/// Up to this long for a first interval line or a new server banner.
const EVENT: Duration = Duration::from_secs(10);

/// The text client has printed its first interval report.
fn first_interval_printed(s: &str) -> bool {
    s.contains("0.00-1.")
}

const REFUSED: &str = "error - unable to connect to server - server may have stopped running or use a different port, firewall issue, etc.: Connection refused";
const BUSY: &str = "the server is busy running a test. try again later";

#[test]
fn success_exits_zero() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1"]);
    assert_eq!(out.code(), Some(0), "{out}");
    assert!(out.stdout.ends_with("\niperf Done.\n"), "{out}");
    assert_eq!(out.stderr, "", "{out}");
}

#[test]
fn connection_refused_text() {
    let port = free_port().to_string();
    let out = run_client(&["-c", "127.0.0.1", "-p", &port, "-t", "1"], CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(out.stderr.contains(REFUSED), "{out}");
}

#[test]
fn connection_refused_json() {
    let port = free_port().to_string();
    let out = run_client(&["-c", "127.0.0.1", "-p", &port, "-J"], CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    let doc = out.json();
    assert!(
        string(&doc, "error").starts_with("unable to connect to server"),
        "{doc:#}"
    );
    assert!(string(&doc, "error").ends_with("Connection refused"));
    assert!(arr(&doc, "start.connected").is_empty());
    assert!(arr(&doc, "intervals").is_empty());
}

#[test]
fn too_many_streams_is_a_parameter_error() {
    let out = run_client(&["-c", "127.0.0.1", "-P", "200"], CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr
            .contains("parameter error - invalid number of parallel streams (min = 1, max = 128)"),
        "{out}"
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn second_client_is_told_server_is_busy() {
    let srv = Server::start(&[]);
    let first = srv.spawn_client(&["-t", "3"]);
    assert!(
        first.wait_stdout_until(EVENT, first_interval_printed),
        "first client never reported:\n{}",
        first.stdout()
    );
    let text = srv.client(&["-t", "1"]);
    assert_eq!(text.code(), Some(1), "{text}");
    assert!(text.stderr.contains(BUSY), "{text}");
    let json = srv.client(&["-t", "1", "-J"]);
    assert_eq!(json.code(), Some(1), "{json}");
    assert_eq!(string(&json.json(), "error"), BUSY);
    // The running test is not disturbed.
    first.finish(CLIENT_TIMEOUT).assert_ok();
}

#[test]
fn sigint_to_client_prints_partial_results_and_server_goes_on() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let client = srv.spawn_client(&["-t", "10"]);
    assert!(client.wait_stdout_until(EVENT, first_interval_printed));
    client.signal(Signal::SIGINT);
    let out = client.finish(CLIENT_TIMEOUT);
    // Partial summary: the separator and a sender line, then the reason.
    assert!(out.stdout.contains("- - - - - - - - - - - - -"), "{out}");
    assert!(
        out.stdout.lines().any(|l| l.ends_with("sender")),
        "no summary:\n{out}"
    );
    assert!(
        out.stderr.contains("interrupt - the client has terminated"),
        "{out}"
    );
    // The server logs the end of that test and serves the next client.
    assert!(
        srv.wait_banners(2, EVENT),
        "server did not return to listening"
    );
    // stderr is read by its own thread: wait for it rather than peek.
    assert!(
        srv.proc().wait_stderr("the client has terminated", EVENT),
        "{}",
        srv.stderr()
    );
    srv.client(&["-t", "1"]).assert_ok();
}

#[test]
fn sigint_to_json_client_reports_error_key() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let client = srv.spawn_client(&["-t", "10", "-J"]);
    // No incremental output in -J: wait for the server's first report instead.
    assert!(srv.proc().wait_stdout("0.00-1.", EVENT));
    client.signal(Signal::SIGINT);
    let out = client.finish(CLIENT_TIMEOUT);
    let doc = out.json();
    assert_eq!(
        string(&doc, "error"),
        "interrupt - the client has terminated"
    );
    assert!(
        num(&doc, "end.sum_sent.bytes") > 0.0,
        "partial results kept"
    );
}

#[test]
fn sigterm_to_server_ends_client_with_error() {
    let srv = Server::start(&[]);
    let client = srv.spawn_client(&["-t", "10"]);
    assert!(client.wait_stdout_until(EVENT, first_interval_printed));
    srv.signal(Signal::SIGTERM);
    let out = client.finish(CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(out.stderr.contains("the server has terminated"), "{out}");
    // The client still prints a summary from its own counters.
    assert!(out.stdout.lines().any(|l| l.ends_with("sender")), "{out}");
    let srv_out = srv.wait_exit(CLIENT_TIMEOUT);
    assert!(
        srv_out.stderr.contains("the server has terminated"),
        "{srv_out}"
    );
}

#[test]
fn one_off_server_exits_after_one_test() {
    let srv = Server::start(&["-1"]);
    srv.client(&["-t", "1"]).assert_ok();
    let out = srv.wait_exit(Duration::from_secs(10));
    assert_eq!(out.code(), Some(0), "{out}");
    assert!(out.stdout.contains("receiver"), "{out}");
}

/// iperf3 accepts a new client as soon as the previous test is over; a script
/// running tests back to back must never see "busy".
#[test]
fn back_to_back_clients_are_all_served() {
    let srv = Server::start(&[]);
    for i in 0..4 {
        let out = srv.client(&["-n", "1M"]);
        assert!(out.status.success(), "run {i}:\n{out}");
    }
}

/// iperf3 prints nothing but the error when refused: "Connecting to host" (and
/// the JSON start keys) come only once the server asks for the parameters.
#[test]
fn busy_refusal_prints_only_the_error() {
    let srv = Server::start(&[]);
    let first = srv.spawn_client(&["-t", "3", "--forceflush"]);
    assert!(first.wait_stdout_until(EVENT, first_interval_printed));
    let out = srv.client(&["-t", "1"]);
    assert_eq!(out.code(), Some(1), "{out}");
    assert_eq!(out.stdout, "", "{out}");
    first.finish(CLIENT_TIMEOUT).assert_ok();
}

/// The README's one-command measurement: the script starts a one-off server,
/// waits for it without connecting (a probe would be the server's one test),
/// and runs a client against it.
#[test]
fn loopback_script_runs_a_measurement() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/loopback.sh");
    let port = free_port().to_string();
    let out = std::process::Command::new("bash")
        .args([script, "-t", "1"])
        .env("RPERF3_BIN", rperf3())
        .env("PORT", &port)
        .output()
        .expect("run scripts/loopback.sh");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("receiver") && stdout.contains("iperf Done."),
        "{stdout}"
    );
}

#[test]
fn a_server_with_a_bad_test_count_does_not_start() {
    let out = run_client(&["-s", "--max-tests", "0"], CLIENT_TIMEOUT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr.starts_with(
            "rperf3: parameter error - --max-tests must be a whole number, at least 1\n"
        ),
        "{out}"
    );
    assert_eq!(out.stdout, "");
}
