//! Which stock peers a test ran: each test that starts a stock iperf3 or
//! iperf 2 appends "VERSION TEST" to the file `RPERF3_PEER_LOG` names, and
//! `.ci/run` counts the tests that passed against each version.
//!
//! Self-contained (std only): both test binaries include it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Records that the running test starts a stock iperf3 (`program`, or an
/// argument of a wrapper such as strace, env or faketime): one line
/// "VERSION TEST" appended to the file named by `RPERF3_PEER_LOG`, which
/// `.ci/run` counts per version. One `write` on an `O_APPEND` file, so lines
/// from parallel tests never interleave.
pub(crate) fn log_peer(program: &Path, args: &[&str]) {
    use std::io::Write;
    let Some(log) = std::env::var_os("RPERF3_PEER_LOG") else {
        return;
    };
    // iperf3, iperf (2.1.8), iperf-2.2.1; rperf3 itself run under the name
    // `iperf` is not a peer.
    let ours = std::fs::canonicalize(env!("CARGO_BIN_EXE_rperf3")).ok();
    let named_peer = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("iperf"))
            && (ours.is_none() || std::fs::canonicalize(p).ok() != ours)
    };
    let peers = std::iter::once(program)
        .chain(args.iter().map(Path::new))
        .filter(|p| named_peer(p));
    for peer in peers {
        let Some(version) = peer_version(peer) else {
            continue;
        };
        // libtest runs each test on a thread named after it.
        let test = std::thread::current()
            .name()
            .unwrap_or("(unnamed thread)")
            .to_string();
        let line = format!("{version} {test}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            panic!(
                "cannot append to RPERF3_PEER_LOG {}: {e}",
                Path::new(&log).display()
            );
        }
    }
}

/// `3.12`, `3.21`, ... from `peer --version` ("iperf 3.21+ (cJSON ...)"), or
/// `2.1.8`, `2.2.1` from iperf 2's ("iperf version 2.2.1 (4 Nov 2024) pthreads",
/// on stderr in 2.1.8), asked once per path.
pub(crate) fn peer_version(peer: &Path) -> Option<String> {
    static SEEN: Mutex<Vec<(PathBuf, Option<String>)>> = Mutex::new(Vec::new());
    let mut seen = SEEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, v)) = seen.iter().find(|(p, _)| p == peer) {
        return v.clone();
    }
    let v = Command::new(peer)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()
        .and_then(|o| {
            let text = String::from_utf8_lossy(&o.stdout).into_owned()
                + &String::from_utf8_lossy(&o.stderr);
            if let Some(rest) = text.strip_prefix("iperf version ") {
                return rest.split_whitespace().next().map(str::to_string);
            }
            let word = text.split_whitespace().nth(1)?.to_string();
            let mut parts = word.split('.');
            let major = parts.next()?;
            let minor: String = parts
                .next()?
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            (text.starts_with("iperf ") && !minor.is_empty()).then(|| format!("{major}.{minor}"))
        });
    seen.push((peer.to_path_buf(), v.clone()));
    v
}
