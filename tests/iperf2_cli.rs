//! The iperf 2 personality's command line, as a program: `--help` and `-v` in
//! iperf 2.2.1's layout, streams and exit codes; each captured error case
//! (tests/fixtures/iperf2/2.2.1/err-*) word for word; and, side by side with
//! a live iperf 2.2.1, the stderr and exit status of command lines that stop
//! before any network traffic.

use std::path::{Path, PathBuf};

use crate::common::iperf2::{iperf2_221, ours};
use crate::common::{free_port, rperf3, Output, Proc, CLIENT_TIMEOUT};

fn run(program: &Path, args: &[&str]) -> Output {
    Proc::spawn(program, args).finish(CLIENT_TIMEOUT)
}

/// iperf 2 names itself by argv\[0\] as typed; the captures ran as `iperf`.
fn masked(text: &str, program: &str) -> String {
    text.replace(program, "iperf")
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/iperf2")
}

fn fixture(name: &str) -> String {
    let p = fixture_dir().join("2.2.1").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// iperf 2.2.1's client exit status for a captured case.
fn fixture_status(case: &str) -> i32 {
    let tsv =
        std::fs::read_to_string(fixture_dir().join("exit-status.tsv")).expect("exit-status.tsv");
    tsv.lines()
        .map(|l| l.split('\t').collect::<Vec<_>>())
        .find(|f| f.len() == 4 && f[0] == "2.2.1" && f[1] == case)
        .map(|f| f[2].parse().expect("a number"))
        .unwrap_or_else(|| panic!("no 2.2.1 {case} in exit-status.tsv"))
}

fn section_titles(help: &str) -> Vec<&str> {
    help.lines()
        .filter(|l| l.ends_with(':') && !l.starts_with(' '))
        .collect()
}

#[test]
fn iperf2_help_has_iperf221s_layout() {
    let ours = ours();
    let out = run(&ours, &["--help"]);
    let want = fixture("help.txt");
    assert_eq!(out.code(), Some(fixture_status("help")), "{out}");
    assert!(out.stderr.is_empty(), "{out}");
    let head: String = want.lines().take(3).map(|l| format!("{l}\n")).collect();
    assert!(out.stdout.starts_with(&head), "{out}");
    assert_eq!(section_titles(&out.stdout), section_titles(&want));
    // The option column: "  -u, --udp" padded to column 27, as iperf 2's.
    let udp = want
        .lines()
        .find(|l| l.starts_with("  -u, --udp"))
        .expect("-u in the capture");
    let ours_udp = out
        .stdout
        .lines()
        .find(|l| l.starts_with("  -u, --udp"))
        .expect("-u listed");
    assert_eq!(ours_udp.find("UDP"), udp.find("use"), "{ours_udp}");
    // The sub-command form prints the same text.
    let sub = run(&rperf3(), &["iperf2", "--help"]);
    assert_eq!(sub.stdout, out.stdout);
    // And rperf3's own help says how to get here.
    let own = run(&rperf3(), &["--help"]);
    assert!(own.stdout.contains("  iperf2 [iperf 2 options]\n"), "{own}");
}

#[test]
fn iperf2_version_is_one_line_scripts_still_match() {
    for args in [&["-v"][..], &["--version"], &["-c", "h", "-v", "-s"]] {
        let out = run(&ours(), args);
        assert_eq!(out.code(), Some(fixture_status("version")), "{out}");
        assert!(out.stderr.is_empty(), "{out}");
        assert_eq!(out.stdout.lines().count(), 1, "{out}");
        let stock = fixture("version.txt");
        let prefix = &stock[..stock.find('(').expect("a parenthesis")];
        assert!(out.stdout.starts_with(prefix), "{out}");
        assert!(out.stdout.starts_with("iperf version 2."), "{out}");
        assert!(
            out.stdout.contains("(rperf3 ") && out.stdout.ends_with(") pthreads\n"),
            "{out}"
        );
    }
}

#[test]
fn iperf2_err_option_as_captured() {
    let ours = ours();
    let out = run(&ours, &["--no-such-option"]);
    assert_eq!(out.code(), Some(fixture_status("err-option")), "{out}");
    assert!(out.stdout.is_empty(), "{out}");
    assert_eq!(
        masked(&out.stderr, &ours.display().to_string()),
        fixture("err-option.client.txt")
    );
}

#[test]
fn iperf2_err_bitrate_as_captured() {
    let port = free_port().to_string();
    let out = run(
        &ours(),
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "1",
            "-i",
            "1",
            "-b",
            "abc",
        ],
    );
    assert_eq!(out.code(), Some(fixture_status("err-bitrate")), "{out}");
    assert!(out.stdout.is_empty(), "{out}");
    assert_eq!(out.stderr, fixture("err-bitrate.client.txt"));
}

#[test]
fn iperf2_err_option_with_c_is_a_warning_and_the_run_goes_on() {
    let ours = ours();
    let port = free_port().to_string();
    let out = run(
        &ours,
        &[
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "1",
            "-i",
            "1",
            "--no-such-option",
        ],
    );
    let first = fixture("err-option-client.client.txt");
    let first = first.lines().next().expect("a first line");
    let stderr = masked(&out.stderr, &ours.display().to_string());
    assert_eq!(stderr.lines().next(), Some(first), "{out}");
    // No usage lines: the option did not end the run.
    assert!(!stderr.contains("Usage:"), "{out}");
}

#[test]
fn iperf2_a_udp_rate_of_nothing_is_refused_before_any_traffic_issue25() {
    // 2.2.1 reads these as no limit and sends at full speed (57 Gbit/s in a
    // second here); 2.1.8 refused `abc` ("IPG delay target of inf secs").
    // Nothing is sent: a UDP socket bound only to count what arrives.
    let sink = std::net::UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
    sink.set_nonblocking(true).expect("non-blocking");
    let port = sink.local_addr().expect("its address").port().to_string();
    for rate in ["abc", "0", "-5m", "0pps"] {
        let args = [
            "-c",
            "127.0.0.1",
            "-p",
            &port,
            "-u",
            "-t",
            "0.2",
            "-b",
            rate,
            "--no-udp-fin",
        ];
        let out = run(&ours(), &args);
        assert_eq!(out.code(), Some(1), "-b {rate}: {out}");
        assert_eq!(
            out.stderr.trim_end(),
            format!("Invalid value for -b or --bandwidth '{rate}'"),
            "-b {rate}: {out}"
        );
        assert!(out.stdout.is_empty(), "-b {rate}: {out}");
    }
    let mut buf = [0u8; 2048];
    assert!(
        sink.recv(&mut buf).is_err(),
        "a refused client sent a datagram"
    );
}

#[test]
fn iperf2_a_datagram_the_kernel_refuses_is_not_counted_as_sent_issue25() {
    // Over loopback's 65,507-byte limit: every send fails with EMSGSIZE,
    // the FIN too, so nothing went out and nothing may be reported.
    let port = free_port().to_string();
    let args = [
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "-u",
        "-l",
        "70000",
        "-t",
        "0.2",
        "-y",
        "C",
        "--no-udp-fin",
    ];
    let out = run(&ours(), &args);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr.contains("ERROR: write failed: Message too long"),
        "{out}"
    );
    // CSV: ...,interval,bytes,bits per second[,...]
    let rows: Vec<Vec<&str>> = out.stdout.lines().map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty(), "no report rows: {out}");
    for r in &rows {
        assert!(r.len() > 8, "a short CSV row {r:?}: {out}");
        assert_eq!((r[7], r[8]), ("0", "0"), "bytes and rate of {r:?}: {out}");
    }
}

/// Command lines iperf 2.2.1 rejects, warns about or answers before any
/// traffic (port 1 on loopback refuses at once when one gets that far).
const STOPS_EARLY: &[&[&str]] = &[
    &[],
    &["--x"],
    &["-q"],
    &["-t"],
    &["--time"],
    &["--tim"],
    &["--s"],
    &["--b", "1"],
    &["--udp=1"],
    &["--ut=1"],
    &["--x=1"],
    &["-c"],
    &["-ut"],
    &["-W"],
    &["--tcp-w=1"],
    &["-h", "-q"],
    &["--trip-times"],
    &["-T", "300"],
    &["-c", "127.0.0.1", "-p", "1", "-b", "abc"],
    &["-c", "127.0.0.1", "-p", "1", "-b", "1pps"],
    &["-c", "127.0.0.1", "-p", "1", "-b", "10m", "-l", "2M"],
    &["-c", "127.0.0.1", "-p", "1", "-u", "-b", "100"],
    &["-c", "127.0.0.1", "-p", "1", "-n", "0"],
    &["-c", "127.0.0.1", "-p", "1", "-i", "abc"],
    &["-c", "127.0.0.1", "-p", "1", "-i", "5000"],
    &["-c", "127.0.0.1", "-p", "1", "-t", "abc"],
    &["-c", "127.0.0.1", "-p", "1", "-T", "300"],
    &["-c", "127.0.0.1", "-p", "1", "-C", "-d"],
    &["-c", "127.0.0.1", "-p", "1", "-C", "-e"],
    &["-c", "127.0.0.1", "-p", "1", "--permit-key", "-u"],
    &["-c", "127.0.0.1", "-p", "1", "--permit-key=abc"],
    &["-c", "127.0.0.1", "-p", "1", "-X", "-u"],
    &["-c", "127.0.0.1", "-p", "1", "--no-udp-fin"],
    &["-c", "127.0.0.1", "-p", "1", "-R", "-d"],
    &["-c", "127.0.0.1", "-p", "1", "-R", "--full-duplex"],
    &["-c", "127.0.0.1", "-p", "1", "-u", "-B", "239.1.1.1"],
    &["-c", "127.0.0.1", "-p", "1", "--txstart-time=-5"],
    &["-c", "127.0.0.1", "-p", "1", "--trip-times", "-l", "91"],
    &[
        "-c",
        "127.0.0.1",
        "-p",
        "1",
        "-u",
        "--trip-times",
        "-l",
        "100",
        "-R",
    ],
    &["-c", "127.0.0.1", "-p", "1", "-D"],
    &["-c", "239.1.1.1", "-u", "-d"],
    &["-c", "239.1.1.1", "-u", "--sync-transfer-id"],
    &["-s", "-u", "-B", "239.1.1.1", "-H", "239.2.2.2"],
    &["-c", "127.0.0.1", "-p", "1", "-t", "0", "-T", "300"],
    &[
        "-c",
        "127.0.0.1",
        "-p",
        "1",
        "-t",
        "0",
        "-C",
        "-e",
        "-u",
        "-X",
    ],
    &[
        "-c",
        "127.0.0.1",
        "-p",
        "1",
        "-u",
        "-b",
        "10pps",
        "-l",
        "20",
        "--trip-times",
        "-R",
    ],
    &[
        "-c",
        "127.0.0.1",
        "-p",
        "1",
        "-b",
        "1m,2",
        "-B",
        "1.2.3.4:5%eth0",
        "-t",
        "0",
    ],
];

#[test]
fn iperf2_early_stops_match_live_221() {
    let Some(peer) = iperf2_221() else { return };
    let ours = ours();
    for args in STOPS_EARLY {
        let theirs = run(&peer, args);
        let mine = run(&ours, args);
        let t = masked(&theirs.stderr, &peer.display().to_string());
        let m = masked(&mine.stderr, &ours.display().to_string());
        assert_eq!(m, t, "iperf {args:?}\nours:\n{mine}\n2.2.1:\n{theirs}");
        assert_eq!(
            mine.code(),
            theirs.code(),
            "iperf {args:?}\nours:\n{mine}\n2.2.1:\n{theirs}"
        );
        if mine.code() == Some(1) || theirs.stdout.is_empty() {
            assert_eq!(mine.stdout, theirs.stdout, "iperf {args:?}");
        }
    }
}

#[test]
fn iperf2_subcommand_names_itself_in_getopts_complaints() {
    let Some(peer) = iperf2_221() else { return };
    let prog = format!("{} iperf2", rperf3().display());
    let mine = run(&rperf3(), &["iperf2", "--no-such-option"]);
    let theirs = run(&peer, &["--no-such-option"]);
    assert_eq!(
        masked(&mine.stderr, &prog),
        masked(&theirs.stderr, &peer.display().to_string())
    );
    assert_eq!(mine.code(), theirs.code());
}

#[test]
fn iperf2_output_file_is_appended_and_announced_on_stdout() {
    let file = crate::common::scratch_file("iperf2-o.txt");
    std::fs::write(&file, "previous\n").expect("write the scratch file");
    let f = file.display().to_string();
    let port = free_port().to_string();
    let out = run(
        &ours(),
        &["-c", "127.0.0.1", "-p", &port, "-t", "1", "-o", &f],
    );
    assert_eq!(
        out.stdout,
        format!("Output from stdout (but not from stderr) will be redirected to file {f}\n"),
        "{out}"
    );
    let text = std::fs::read_to_string(&file).expect("read the -o file");
    // Appended, never truncated.
    assert!(text.starts_with("previous\n"), "{text}");
    // A file that cannot be opened: iperf 2's words; rperf3 then stops (exit 1)
    // where 2.2.1 would go on testing with its stdout closed.
    let out = run(
        &ours(),
        &["-c", "127.0.0.1", "-p", &port, "-o", "/nonexistent-dir/x"],
    );
    assert_eq!(
        out.stderr, "freopen stdout\n failed: No such file or directory\n",
        "{out}"
    );
    assert_eq!(out.code(), Some(1), "{out}");
}

#[test]
fn iperf2_personality_by_link_name() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("iperf2-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    for (name, iperf2) in [
        ("iperf2", true),
        ("iperf", true),
        ("iperf3", false),
        ("rperf3-copy", false),
    ] {
        let link = dir.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(rperf3(), &link).expect("link");
        let out = run(&link, &["-v"]);
        assert_eq!(
            out.stdout.starts_with("iperf version 2.2.1 (rperf3 "),
            iperf2,
            "{name}: {out}"
        );
    }
    // `iperf2` is a command only as the first argument.
    let out = run(&rperf3(), &["-v", "iperf2"]);
    assert!(!out.stdout.starts_with("iperf version 2."), "{out}");
}

#[test]
fn iperf2_messages_go_to_stderr_reports_to_stdout() {
    // As iperf 2: a refused connection (or any warning or error line) is on
    // stderr; stdout keeps only what scripts parse.
    let port = free_port().to_string();
    let out = run(&ours(), &["-c", "127.0.0.1", "-p", &port, "-t", "1"]);
    assert!(!out.stderr.is_empty(), "{out}");
    for line in out.stderr.lines() {
        assert!(!out.stdout.contains(line), "{line:?} on stdout too:\n{out}");
    }
}

/// `-f b` (and `-f B`): the listener's window or buffer line is in bytes
/// ("UDP buffer size: 212992 Byte (default)"), as iperf 2.2.1 prints it; both
/// programs read the same kernel default, so the lines are equal.
#[test]
fn byte_format_prints_the_window_in_bytes() {
    let Some(peer) = iperf2_221() else { return };
    for (proto, fmt) in [(None, "b"), (Some("-u"), "B")] {
        let line = |program: &Path| {
            let port = free_port().to_string();
            let mut args = vec!["-s", "-p", &port, "-f", fmt, "-t", "0.3"];
            args.extend(proto);
            let out = run(program, &args);
            out.stdout
                .lines()
                .find(|l| l.contains(" window size: ") || l.contains(" buffer size: "))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("no window line: {out}"))
        };
        let (stock, mine) = (line(&peer), line(&ours()));
        assert!(stock.ends_with(" Byte (default)"), "{stock}");
        assert_eq!(mine, stock, "{proto:?} -f {fmt}");
    }
}
