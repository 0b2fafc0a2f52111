//! The command list iperf3's maintainers run before each release
//! (`test_commands.sh`), with shorter durations, run three ways: iperf3 3.21
//! against itself (the reference), rperf3 as the client of a 3.21 server, and
//! rperf3 as the server of a 3.21 client. Each run must end as the reference
//! did, and print what it printed: the same error text when it fails, and when
//! it passes the same summary (its lines with every figure masked: streams,
//! roles, columns, the `-V` test line) and, for `-J`, the same keys in `end`.
//! What a counted command must send (`-n 5M`: 5.00 MBytes) is checked unmasked
//! where rperf3 sends.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{iperf3_321, rperf3, run_program, Server};

/// The release checklist's client arguments, host left out; `-t 5` is `-t 1`
/// and `-O 2` is `-O 1` to keep the run short.
const COMMANDS: &[&[&str]] = &[
    &["-V", "-t", "1", "-T", "test1"],
    &["-u", "-V", "-t", "1"],
    &["-i", ".3", "-O", "1", "-t", "2"],
    &["-i", "1", "-J", "-t", "1"],
    &["-4", "-t", "1"],
    &["-4", "-u", "-t", "1"],
    &["-6", "-t", "1"],
    &["-6", "-u", "-t", "1"],
    &["-V", "-t", "1", "--fq-rate", "5m"],
    &["-u", "-V", "-t", "1", "--fq-rate", "5m"],
    &["--sctp", "-V", "-t", "1"],
    &["-P", "3", "-t", "1"],
    &["-u", "-P", "3", "-t", "1"],
    &["-P", "2", "-t", "1", "-R"],
    &["-u", "-P", "2", "-t", "1", "-R"],
    &["-P", "2", "-t", "1", "--bidir"],
    &["-u", "-P", "2", "-t", "1", "--bidir"],
    &["-Z", "-t", "1"],
    &["-Z", "-t", "1", "-R"],
    &["-t", "1", "-w", "8M"],
    &["-n", "5M"],
    &["-n", "5M", "-u", "-b1G"],
    &["-n", "5M", "-t", "1"],
    &["-k", "1K"],
    &["-k", "1K", "-u", "-b1G"],
    &["-A", "2/2"],
    &["-A", "2/2", "-u", "-b1G"],
    &["-u", "-b1G/100", "-t", "1"],
    &["-M", "1000", "-V", "-t", "1"],
    &["-C", "reno", "-V", "-t", "1"],
];

/// How one client run ended and what it printed.
struct Outcome {
    passed: bool,
    /// What matters of its output, to compare with the reference's.
    shape: Vec<String>,
    transcript: String,
}

/// Runs `args` from `client` against `srv`.
fn run(client: &Path, srv: &Server, args: &[&str]) -> Outcome {
    // -6 needs the server's IPv6 address.
    let host = if args.contains(&"-6") {
        "::1"
    } else {
        "127.0.0.1"
    };
    let port = srv.port.to_string();
    let mut a = vec!["-c", host, "-p", &port];
    a.extend_from_slice(args);
    let out = run_program(client, &a, Duration::from_secs(60));
    let passed = out.code() == Some(0);
    Outcome {
        passed,
        shape: shape(passed, &out.stdout, &out.stderr),
        transcript: out.to_string(),
    }
}

/// What a run printed that must not depend on which program printed it: the
/// error line of a failure (without the program's name), or the summary of a
/// text run (from the `- - -` rule on) and its `-V` test line with figures
/// masked, or the key paths of a `-J` document's `end`.
fn shape(passed: bool, stdout: &str, stderr: &str) -> Vec<String> {
    if !passed {
        return format!("{stdout}\n{stderr}")
            .lines()
            .filter_map(|l| l.split_once(": error - ").map(|(_, e)| e.to_string()))
            .collect();
    }
    if stdout.trim_start().starts_with('{') {
        let doc: serde_json::Value = serde_json::from_str(stdout).unwrap_or_default();
        let mut paths = Vec::new();
        key_paths("end", &doc["end"], &mut paths);
        return paths;
    }
    let starting = stdout
        .lines()
        .filter(|l| l.starts_with("Starting Test:"))
        .map(str::to_string);
    let summary = stdout
        .lines()
        .skip_while(|l| !l.starts_with("- - - -"))
        .map(mask);
    starting.chain(summary).collect()
}

/// `end`'s key paths, arrays as their first element.
fn key_paths(at: &str, v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let p = format!("{at}.{k}");
                out.push(p.clone());
                key_paths(&p, v, out);
            }
        }
        serde_json::Value::Array(a) => {
            if let Some(v) = a.first() {
                key_paths(&format!("{at}[]"), v, out);
            }
        }
        _ => {}
    }
}

/// A summary line with its figures masked: every number becomes `#`, unit
/// prefixes go (a short run may print MBytes where another prints GBytes), and
/// runs of spaces become one.
fn mask(line: &str) -> String {
    let words = line.split_whitespace().map(|w| {
        let w = if w.ends_with("Bytes") || w.ends_with("bits/sec") {
            w.trim_start_matches(['K', 'M', 'G', 'T'])
        } else {
            w
        };
        let mut out = String::new();
        let mut in_num = false;
        for c in w.chars() {
            let digit = c.is_ascii_digit() || (in_num && c == '.');
            if !digit {
                out.push(c);
            } else if !in_num {
                out.push('#');
            }
            in_num = digit;
        }
        out
    });
    words.collect::<Vec<_>>().join(" ")
}

/// Whether the reference run failed on an option its build lacks (3.21 built
/// without SCTP rejects `--sctp` before it connects; rperf3 knows the option and
/// fails where the kernel has no SCTP): then there is no error text to compare.
fn unknown_to_reference(reference: &Outcome) -> bool {
    !reference.passed && reference.transcript.contains("unrecognized option")
}

/// The sender's Transfer column of a summary: "5.00 MBytes".
fn sent_total(transcript: &str) -> Option<String> {
    transcript
        .lines()
        .skip_while(|l| !l.starts_with("- - - -"))
        .find(|l| l.trim_end().ends_with("sender"))
        .and_then(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let at = w.iter().position(|w| *w == "sec")?;
            Some(format!("{} {}", w.get(at + 1)?, w.get(at + 2)?))
        })
}

/// What a counted command (`-n`/`-k`) must send: `-n 5M` is 5 MiB (in UDP,
/// 160 datagrams of 32768 bytes), `-k 1K` is 1024 blocks of 128 KiB (TCP) or
/// 32 KiB (UDP datagrams on loopback). iperf3 3.21 itself sends about 120
/// MBytes for the UDP ones at -b1G here, so the figure comes from the command,
/// not from the reference run.
fn counted_total(args: &[&str]) -> Option<&'static str> {
    if args.contains(&"-n") {
        Some("5.00 MBytes")
    } else if args.contains(&"-k") {
        Some(if args.contains(&"-u") {
            "32.0 MBytes"
        } else {
            "128 MBytes"
        })
    } else {
        None
    }
}

/// Runs every `WORKERS`th command from `first` against servers of its own:
/// the problems found.
fn check_commands(newest: &Path, first: usize) -> Vec<String> {
    // --forceflush: its "Server listening" banner tells when it is ready again.
    let reference = Server::start_program(newest, &["--forceflush"]);
    let ours = Server::start(&[]);
    let mut problems = Vec::new();
    // A 3.21 server closes its listener after each test and opens a new one; a
    // client that connects in between is reset. Wait until its output ends
    // with the "Server listening" banner again (a client that never connected
    // leaves it there).
    let idle = |reference: &Server| {
        let ready = reference.wait_stdout_until(Duration::from_secs(30), |out| {
            let mut tail = out.trim_end().lines().rev();
            let (dashes, banner) = (tail.next(), tail.next());
            dashes.is_some_and(|l| l.starts_with("-----"))
                && banner.is_some_and(|l| l.starts_with("Server listening on"))
        });
        assert!(
            ready,
            "the 3.21 server is not listening again:\n{}",
            reference.stdout()
        );
    };
    for args in COMMANDS.iter().skip(first).step_by(WORKERS) {
        let want = run(newest, &reference, args);
        idle(&reference);
        for (who, client, srv, rperf3_sends) in [
            ("rperf3 -> iperf3 3.21", rperf3(), &reference, true),
            ("iperf3 3.21 -> rperf3", newest.to_path_buf(), &ours, false),
        ] {
            let got = run(&client, srv, args);
            if std::ptr::eq(srv, &reference) {
                idle(&reference);
            }
            let verdict = |o: &Outcome| if o.passed { "passes" } else { "fails" };
            if got.passed != want.passed {
                problems.push(format!(
                    "{who} {args:?}: {} where iperf3 3.21 {}\n{}",
                    verdict(&got),
                    verdict(&want),
                    got.transcript
                ));
            } else if got.shape != want.shape && !unknown_to_reference(&want) {
                problems.push(format!(
                    "{who} {args:?}: printed\n  {}\nwhere iperf3 3.21 printed\n  {}\n{}\n{}",
                    got.shape.join("\n  "),
                    want.shape.join("\n  "),
                    got.transcript,
                    want.transcript
                ));
            } else if let (Some(want), true) = (counted_total(args), rperf3_sends && got.passed) {
                let sent = sent_total(&got.transcript);
                if sent.as_deref() != Some(want) {
                    problems.push(format!(
                        "{who} {args:?}: sent {sent:?}, wanted {want}\n{}",
                        got.transcript
                    ));
                }
            }
        }
    }
    problems
}

/// The checklist runs on this many pairs of servers at once: its runs are
/// time-bound (a second each) and compared by shape, not rate.
const WORKERS: usize = 2;

#[test]
fn the_release_checklist_passes_where_iperf3_passes() {
    let Some(newest) = iperf3_321() else {
        return;
    };
    let problems: Vec<String> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..WORKERS)
            .map(|first| {
                let newest = &newest;
                s.spawn(move || check_commands(newest, first))
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a checklist worker panicked"))
            .collect()
    });
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
