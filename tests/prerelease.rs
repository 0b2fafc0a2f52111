//! The command list iperf3's maintainers run before each release
//! (`test_commands.sh`), with shorter durations: every command that iperf3
//! 3.21 passes against itself on this machine must pass with rperf3 as the
//! client of a 3.21 server and as the server of a 3.21 client, and every one
//! it fails (no SCTP here, conflicting flags, a CPU this machine lacks) must
//! fail there too.

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

/// Runs `args` from `client` against `srv`; true when it exits 0.
fn passes(client: &Path, srv: &Server, args: &[&str]) -> (bool, String) {
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
    (out.code() == Some(0), out.to_string())
}

#[test]
fn the_release_checklist_passes_where_iperf3_passes() {
    let Some(newest) = iperf3_321() else {
        return;
    };
    // --forceflush: its "Server listening" banner tells when it is ready again.
    let reference = Server::start_program(&newest, &["--forceflush"]);
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
    for args in COMMANDS {
        let (want, _) = passes(&newest, &reference, args);
        idle(&reference);
        for (who, client, srv) in [
            ("rperf3 -> iperf3 3.21", rperf3(), &reference),
            ("iperf3 3.21 -> rperf3", newest.clone(), &ours),
        ] {
            let (got, transcript) = passes(&client, srv, args);
            if std::ptr::eq(srv, &reference) {
                idle(&reference);
            }
            if got != want {
                problems.push(format!(
                    "{who} {args:?}: {} where iperf3 3.21 {}\n{transcript}",
                    if got { "passes" } else { "fails" },
                    if want { "passes" } else { "fails" },
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}
