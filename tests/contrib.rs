//! The shipped systemd unit: systemd itself accepts it and rates its
//! hardening, and its command line starts a server.

use crate::common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;

fn unit_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/rperf3.service")
}

/// `key=value` lines of the unit, in order (sections and comments skipped).
fn keys(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('['))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("not key=value: {l}"));
            (k.to_string(), v.to_string())
        })
        .collect()
}

fn value<'a>(keys: &'a [(String, String)], key: &str) -> &'a str {
    keys.iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {key}="))
}

#[test]
fn issue10_unit_is_hardened_and_its_command_line_serves() {
    let text = std::fs::read_to_string(unit_path()).unwrap();
    let keys = keys(&text);
    for (k, v) in [
        ("DynamicUser", "yes"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("CapabilityBoundingSet", ""),
        ("SystemCallFilter", "@system-service"),
    ] {
        assert_eq!(value(&keys, k), v, "{k}");
    }
    let exec: Vec<&str> = value(&keys, "ExecStart").split_whitespace().collect();
    assert_eq!(
        exec[0], "/usr/local/bin/rperf3",
        "where `cargo install` puts it"
    );
    // The unit's own options, then a free port for this test: the server
    // starts, serves metrics, and a signal ends it with status 0.
    let mport = free_port();
    let maddr = format!("127.0.0.1:{mport}");
    let mut args = exec[1..].to_vec();
    args.extend(["--metrics", &maddr]);
    let srv = Server::start(&args);
    srv.client(&["-t", "1"]).assert_ok();
    // The next banner follows the test's release, after it is counted.
    assert!(srv.wait_banners(2, Duration::from_secs(10)));
    let mut m = std::net::TcpStream::connect(("127.0.0.1", mport)).unwrap();
    m.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    m.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut body = String::new();
    m.read_to_string(&mut body).unwrap();
    assert!(
        body.contains("rperf3_tests_total{outcome=\"ok\"} 1"),
        "{body}"
    );
    srv.signal(Signal::SIGTERM);
    let out = srv.wait_exit(Duration::from_secs(10));
    assert_eq!(out.code(), Some(0), "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("receiver"), "{}", out.stdout);
}

#[test]
fn issue10_systemd_accepts_the_unit() {
    if !require_tool("systemd-analyze") {
        return;
    }
    // verify checks that ExecStart's program exists: point it at this build.
    let text = std::fs::read_to_string(unit_path()).unwrap();
    let text = text.replace("/usr/local/bin/rperf3", rperf3().to_str().unwrap());
    let copy = scratch_file("rperf3.service");
    std::fs::write(&copy, text).unwrap();
    let copy = copy.to_str().unwrap();
    let out = run_program(
        "systemd-analyze",
        &["verify", copy],
        Duration::from_secs(30),
    );
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    // Unknown or misspelt keys are only warnings: there must be none.
    assert!(out.stderr.trim().is_empty(), "{}", out.stderr);
    // systemd's exposure score (0 best, 10 worst): 2.0 or below is "OK".
    let sec = run_program(
        "systemd-analyze",
        &["security", "--offline=yes", "--threshold=20", copy],
        Duration::from_secs(30),
    );
    assert_eq!(sec.code(), Some(0), "{}", sec.stdout);
    assert!(
        sec.stdout.contains("Overall exposure level"),
        "{}",
        sec.stdout
    );
    let _ = std::fs::remove_file(copy);
}
