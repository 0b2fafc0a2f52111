//! Command-line errors compared with the iperf3 peers' own: the installed
//! iperf3 (3.12, from the PATH) and iperf3 3.21. Under `CI=true` a missing peer
//! fails the test; elsewhere its part is skipped with a note.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};
use std::time::{Duration, Instant};

use super::table;
use super::tests::{argv, err};
use super::tests_errors::VALUE_ERRORS;
use super::*;

/// Whether a missing peer must fail the test rather than skip it.
fn in_ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// The installed iperf3, from the PATH: required under `CI=true`.
fn installed_iperf3() -> Option<PathBuf> {
    let runs = Process::new("iperf3")
        .arg("-v")
        .output()
        .is_ok_and(|o| o.status.success());
    if runs {
        return Some(PathBuf::from("iperf3"));
    }
    assert!(!in_ci(), "iperf3 is required in CI: not found on the PATH");
    eprintln!("note: iperf3 not found on the PATH, skipping its part");
    None
}

/// iperf3 3.21: `IPERF3_321`, else `../shared/peers/iperf3-3.21` beside the
/// checkout. Required under `CI=true` when the variable is set or
/// `../shared/peers` exists.
fn iperf3_321() -> Option<PathBuf> {
    let peers = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/peers");
    let (path, expected) = match std::env::var_os("IPERF3_321") {
        Some(p) => (PathBuf::from(p), true),
        None => (peers.join("iperf3-3.21"), peers.is_dir()),
    };
    if path.is_file() {
        return Some(path);
    }
    assert!(
        !(expected && in_ci()),
        "iperf3 3.21 is required in CI: {} not found",
        path.display()
    );
    eprintln!("note: {} not found, skipping its part", path.display());
    None
}

/// What `peer`, run as `prog` (its argv[0]), prints for `args`: its exit
/// status and output. It is killed after 10 s (a line it accepts would start
/// a test).
fn run_peer(peer: &Path, prog: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = Process::new(peer)
        .arg0(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", peer.display()));
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    (out.status.code(), text(out.stdout), text(out.stderr))
}

/// The getopt-level complaints must read as both iperf3 versions' (glibc's):
/// the first line names argv[0], which is set to ours. Only cases where iperf3
/// exits before doing anything.
#[test]
fn getopt_errors_match_both_iperf3s() {
    let cases: &[&[&str]] = &[
        &["--foo"],
        &["--foo=bar"],
        &["-Q"],
        &["-c"],
        &["--client"],
        &["--cl"],
        &["--b"],
        &["--b=3"],
        &["--vers"],
        &["-s", "--on=3"],
        &["--server=x"],
        &["-c", "h", "--version4=1"],
        &["-c", "h", "-d2"],
        &["-p"],
        &["-p", "1", "--bi"],
    ];
    let peers = [installed_iperf3(), iperf3_321()];
    for peer in peers.iter().flatten() {
        for args in cases {
            let (code, _, theirs) = run_peer(peer, "rperf3", args);
            assert_eq!(code, Some(1), "{} {args:?}", peer.display());
            let first = theirs.lines().next().unwrap_or_default();
            assert_eq!(err(args), first, "{} {args:?}", peer.display());
        }
    }
}

/// Every parameter error, whole (text and usage hint), as iperf3 3.21 prints
/// it; 3.12 worded some differently and printed the whole help after them.
#[test]
fn parameter_errors_match_iperf3_321() {
    let Some(peer) = iperf3_321() else {
        return;
    };
    let roles: &[&[&str]] = &[&["-s", "-c", "h"], &[], &["-c", "h", "-1"], &["-s", "-u"]];
    let lines = VALUE_ERRORS
        .iter()
        .map(|(a, _)| *a)
        .chain(roles.iter().copied());
    for args in lines {
        let (code, _, theirs) = run_peer(&peer, "iperf3", args);
        let ours = parse("iperf3", &argv(args)).unwrap_err();
        assert_eq!((code, theirs), (Some(1), ours.message), "{args:?}");
    }
}

/// The help says every iperf3 3.21 option works: each one 3.21's help lists
/// is in the table.
#[test]
fn every_option_iperf3_321_lists_is_in_the_table() {
    let Some(peer) = iperf3_321() else {
        return;
    };
    let (code, help, _) = run_peer(&peer, "iperf3", &["--help"]);
    assert_eq!(code, Some(0));
    let listed: Vec<&str> = help
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter_map(|w| w.strip_prefix("--"))
        .filter(|w| !w.is_empty())
        .collect();
    assert!(listed.len() > 60, "{help}");
    for long in listed {
        assert!(
            table::long_names().any(|(n, _)| n == long),
            "--{long} is missing"
        );
    }
}
