//! `-d`: timestamped log lines on stderr or in `--logfile`, never on stdout,
//! with each test's start, end and reason on the server.

use crate::common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;

/// The Unix seconds of a log line's RFC 3339 UTC stamp (`2026-11-23T15:10:13.296Z`).
fn stamp_secs(line: &str) -> Option<u64> {
    let t = line.split(' ').next()?;
    let out = std::process::Command::new("date")
        .args(["-u", "-d", t, "+%s"])
        .output()
        .ok()?;
    String::from_utf8(out.stdout).ok()?.trim().parse().ok()
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn issue10_debug_server_logs_each_test_to_stderr_with_timestamps() {
    let t0 = now_secs();
    let srv = Server::start(&["-d"]);
    srv.client(&["-t", "1", "-u", "-b", "1M"]).assert_ok();
    // A refused client: a test arrives while another holds the slot.
    let long = srv.spawn_client(&["-t", "3"]);
    assert!(srv
        .proc()
        .wait_stderr("starts: TCP", Duration::from_secs(10)));
    let busy = srv.client(&["-t", "1"]);
    assert_eq!(busy.code(), Some(1));
    long.finish(CLIENT_TIMEOUT).assert_ok();
    // The third banner follows test 2's release, which follows its end line.
    assert!(srv.wait_banners(3, Duration::from_secs(10)));
    let out = srv.stop();
    let err = out.stderr;
    let info: Vec<&str> = err.lines().filter(|l| l.contains(" info: ")).collect();
    let want = [
        "info: test 1 from 127.0.0.1:",
        "info: test 1 from 127.0.0.1:",
        "info: test 2 from 127.0.0.1:",
        "info: refused a test from 127.0.0.1:",
        "info: test 2 from 127.0.0.1:",
    ];
    assert_eq!(info.len(), want.len(), "{err}");
    for (l, w) in info.iter().zip(want) {
        assert!(l.contains(w), "{l:?} lacks {w:?}\n{err}");
        let t = stamp_secs(l).unwrap_or_else(|| panic!("no timestamp date(1) reads: {l}"));
        assert!(t >= t0 && t <= now_secs(), "{l}");
    }
    assert!(
        info[0].contains("starts: UDP, 1 stream(s), server receives, 1 s"),
        "{err}"
    );
    assert!(info[1].contains("ended (ok): done;"), "{err}");
    assert!(info[2].contains("starts: TCP"), "{err}");
    assert!(info[3].ends_with("server busy"), "{err}");
    assert!(info[4].contains("ended (ok)"), "{err}");
    // Debug lines too, and nothing of the log on stdout.
    assert!(
        err.contains(" debug: test 1: control connection from 127.0.0.1:"),
        "{err}"
    );
    assert!(!out.stdout.contains(" info: ") && !out.stdout.contains(" debug: "));
}

/// The server names an SCTP test's transport as SCTP (it said TCP).
#[test]
fn issue16_an_sctp_test_is_logged_as_sctp() {
    let srv = Server::start(&["-d"]);
    // The start is logged before the streams are opened, so the line is there
    // whether or not this kernel has SCTP (without it, the test then fails).
    let _ = srv.client(&["--sctp", "-t", "1", "-P", "2"]);
    let want = "starts: SCTP, 2 stream(s), server receives, 1 s";
    let found = srv.proc().wait_stderr(want, Duration::from_secs(10));
    let err = srv.stop().stderr;
    assert!(found, "{err}");
    assert!(!err.contains("starts: TCP"), "{err}");
}

#[test]
fn issue10_debug_logs_go_to_the_logfile_with_the_report() {
    let log = scratch_file("server.log");
    let path = log.to_str().unwrap();
    let srv = Server::start(&["--debug=3", "--logfile", path]);
    let c = srv.client(&["-t", "1", "-J", "-d"]);
    c.assert_ok();
    // The client's -J document on stdout stays one JSON document; its log is on stderr.
    c.json();
    assert!(c.stderr.contains(" debug: TEST_START"), "{}", c.stderr);
    // The log file's growth has no event to wait on: poll it, with a deadline.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        if t.contains("ended (ok)") || std::time::Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = srv.stop();
    assert!(text.contains("Server listening on"), "{text}");
    assert!(text.contains(" info: test 1 from 127.0.0.1:"), "{text}");
    assert!(text.contains("ended (ok): done;"), "{text}");
    // Level 3: information, no debug lines.
    assert!(!text.contains(" debug: "), "{text}");
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn an_unopenable_log_file_is_iperf3s_error_17() {
    let path = scratch_file("missing-dir").join("server.log");
    let path = path.to_string_lossy().into_owned();
    let ours = run_client(&["-c", "127.0.0.1", "--logfile", &path], CLIENT_TIMEOUT);
    assert_eq!(ours.code(), Some(1), "{ours}");
    assert_eq!(
        ours.stderr,
        "rperf3: error - unable to open log file: No such file or directory\n"
    );
    if require_tool("iperf3") {
        let stock = run_program(
            "iperf3",
            &["-c", "127.0.0.1", "--logfile", &path],
            CLIENT_TIMEOUT,
        );
        assert_eq!(stock.code(), Some(1), "{stock}");
        assert_eq!(
            stock.stderr.strip_prefix("iperf3"),
            ours.stderr.strip_prefix("rperf3"),
            "{stock}"
        );
    }
}
