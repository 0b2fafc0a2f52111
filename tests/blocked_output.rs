//! Output nobody reads never holds a test. A server whose stdout is a full
//! pipe (a paused pager, a supervisor that stopped reading) serves its clients
//! on time; what did not fit its output queue is dropped in whole units, and
//! once the pipe is read a notice in their place says how many lines went.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::Value;

use common::json::{arr, assert_no_error, num, string};
use common::{run_client, Output, Proc, Server, Signal};
use rperf3_report::queue::dropped_notice;

/// How long a busy client may take: its 2 s test and the set-up of 256
/// streams (threads and connections, 1-3 s here; two such tests at once on
/// 2 cores took 5.2 s). A server held by its output would stall it for as
/// long as the output stayed blocked (a client gives up only after 30 s).
const ON_TIME: Duration = Duration::from_secs(8);

/// 256 paced streams: output for 256, but little CPU, so the clients' timing
/// shows the output's effect rather than two loaded cores'.
const BUSY: &[&str] = &[
    "-P", "128", "--bidir", "-t", "2", "-b", "1M", "-l", "16K", "-J",
];
/// What each stream sends in 2 s at 1 Mbit/s, and its block.
const STREAM_BYTES: f64 = 250_000.0;
const BLOCK: f64 = 16_384.0;

/// The server prints ten intervals a second, so a busy test's text is about
/// 480 kB and its `-J` document 1.7 MB.
const SERVER: &[&str] = &["-i", "0.1"];

/// The dropped-line counts of the notices in `text` (the notice's own
/// wording, so a changed text cannot pass unseen).
fn notices(text: &str) -> Vec<u64> {
    text.lines()
        .filter_map(|l| {
            let n: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
            (dropped_notice(n) == format!("{l}\n")).then_some(n)
        })
        .collect()
}

/// A busy client finished in time with its test whole: 2 s of data each way,
/// the client's own count within what the pacing allows, and the server's
/// count matching it.
fn assert_busy_client_ok(out: &Output, elapsed: Duration) -> Value {
    out.assert_ok();
    assert!(elapsed < ON_TIME, "took {elapsed:?}");
    let doc = out.json();
    assert_no_error(&doc);
    assert_eq!(arr(&doc, "end.streams").len(), 256);
    let paced = 128.0 * STREAM_BYTES;
    // A sender may be a block ahead of its pace or a block behind at the
    // end, and a receiver's count stops at the client's end of the test.
    let pacing = paced - 128.0 * 2.0 * BLOCK..=paced + 128.0 * BLOCK;
    for dir in ["", "_bidir_reverse"] {
        let secs = num(&doc, &format!("end.sum_sent{dir}.seconds"));
        assert!((2.0..2.75).contains(&secs), "sum_sent{dir} lasted {secs} s");
    }
    // Client to server: what the server got of what the client sent, less
    // at most the block each stream had in flight.
    let sent = num(&doc, "end.sum_sent.bytes");
    let received = num(&doc, "end.sum_received.bytes");
    assert!(pacing.contains(&sent), "client sent {sent}, paced {paced}");
    assert!(
        received <= sent && received >= sent - 128.0 * BLOCK,
        "client sent {sent}, server received {received}"
    );
    // Server to client: the server's senders run on until the client's
    // TEST_END arrives, at most the 0.75 s the duration may run over.
    let sent = num(&doc, "end.sum_sent_bidir_reverse.bytes");
    let received = num(&doc, "end.sum_received_bidir_reverse.bytes");
    assert!(
        pacing.contains(&received),
        "client received {received}, paced {paced}"
    );
    let late = 0.75 / 2.0 * paced + 128.0 * BLOCK;
    assert!(
        sent >= received && sent <= received + late,
        "server sent {sent}, client received {received}"
    );
    doc
}

/// Whether `line` is a whole line of a text server's report: it starts and
/// ends as one of the lines iperf3 prints does.
fn whole_text_line(line: &str) -> bool {
    let l = line.trim_end();
    let ends_with_number = l.ends_with(|c: char| c.is_ascii_digit());
    if l.starts_with('-') {
        return l.chars().all(|c| c == '-' || c == ' ');
    }
    if l.starts_with("Server listening on ") {
        return l.ends_with(')');
    }
    if l.starts_with("Accepted connection from ") {
        return ends_with_number;
    }
    if !l.starts_with('[') {
        return notices(line).len() == 1;
    }
    if l.contains(" connected to ") {
        return ends_with_number;
    }
    if l.starts_with("[ ID]") {
        return ["Bitrate", "Cwnd", "Retr"].iter().any(|e| l.ends_with(e));
    }
    // An interval or summary line: what follows the bitrate is nothing, or
    // the retransmits, then the congestion window or the role.
    let Some((_, after)) = l.split_once("bits/sec") else {
        return false;
    };
    let mut t: Vec<&str> = after.split_whitespace().collect();
    if matches!(t.last(), Some(&"sender" | &"receiver")) {
        t.pop();
    }
    let int = |s: &str| s.parse::<u64>().is_ok();
    match t[..] {
        [] => true,
        [n] => int(n),
        [n, w, unit] => int(n) && w.parse::<f64>().is_ok() && unit.ends_with("Bytes"),
        _ => false,
    }
}

#[test]
fn a_text_server_with_unread_stdout_serves_128_bidir_streams_on_time() {
    let _gate = common::load::heavy();
    let mut srv = Server::start_unread_stdout(SERVER);
    // Three tests: more than the pipe and the output queue hold together.
    for _ in 0..3 {
        let t0 = Instant::now();
        let out = run_client(&srv.args(BUSY), ON_TIME);
        assert_busy_client_ok(&out, t0.elapsed());
    }
    srv.read_stdout();
    // Once the pipe is read, output flows again: a later test's lines appear
    // after the notices.
    let t0 = Instant::now();
    let out = run_client(&srv.args(&["-t", "1", "-b", "1M"]), ON_TIME);
    out.assert_ok();
    assert!(t0.elapsed() < ON_TIME);
    let fifth = format!("Server listening on {} (test #5)", srv.port);
    assert!(
        srv.wait_stdout_until(Duration::from_secs(10), |s| s.contains(&fifth)),
        "the output did not recover:\n{}",
        srv.stdout()
    );
    let text = srv.stdout();
    assert!(
        notices(&text).iter().all(|&n| n > 0),
        "{:?}",
        notices(&text)
    );
    for line in text.lines() {
        assert!(whole_text_line(line), "a line cut short: {line:?}");
    }
}

/// The parts of a `-J` server's output: whole documents and notices, or
/// what stands where neither starts or a document is cut short.
fn documents_and_notices(text: &str) -> Result<(Vec<Value>, Vec<u64>), String> {
    let mut docs = Vec::new();
    let mut counts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(&n) = notices(rest.lines().next().unwrap_or("")).first() {
            counts.push(n);
            rest = &rest[dropped_notice(n).len()..];
            continue;
        }
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(doc)) => docs.push(doc),
            Some(Err(e)) => return Err(format!("not a whole document ({e}) at:\n{rest}")),
            None => return Err(format!("nothing whole at:\n{rest}")),
        }
        rest = rest[stream.byte_offset()..].trim_start_matches('\n');
    }
    Ok((docs, counts))
}

#[test]
fn a_json_server_with_unread_stdout_runs_two_tests_at_once_and_frees_its_slots() {
    let _gate = common::load::heavy();
    let mut srv = Server::start_unread_stdout(&["-J", "--max-tests", "2", "-i", "0.1"]);
    let t0 = Instant::now();
    let a = srv.spawn_client(BUSY);
    let b = srv.spawn_client(BUSY);
    let (a, b) = (a.finish(ON_TIME), b.finish(ON_TIME));
    let elapsed = t0.elapsed();
    let mut cookies = Vec::new();
    for out in [a, b] {
        let doc = assert_busy_client_ok(&out, elapsed);
        cookies.push(string(&doc, "start.cookie").to_string());
    }
    // A server's document comes after the results exchange; a session stuck
    // writing it would hold its slot, and this client would be refused.
    let t0 = Instant::now();
    let c = run_client(&srv.args(BUSY), ON_TIME);
    let doc = assert_busy_client_ok(&c, t0.elapsed());
    cookies.push(string(&doc, "start.cookie").to_string());
    srv.read_stdout();
    let drained = |s: &str| documents_and_notices(s).is_ok_and(|(_, n)| !n.is_empty());
    let waited = srv.wait_stdout_until(Duration::from_secs(10), drained);
    let (docs, counts) = documents_and_notices(&srv.stdout()).unwrap_or_else(|e| panic!("{e}"));
    assert!(waited, "no notice of dropped lines:\n{}", srv.stdout());
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
    // Each document is 1.7 MB, more than the queue holds: the first one is
    // taken and written whole; while the pipe blocks the others are dropped.
    assert!(
        !docs.is_empty() && docs.len() < 3,
        "{} documents",
        docs.len()
    );
    for d in &docs {
        assert!(cookies.contains(&string(d, "start.cookie").to_string()));
        assert_eq!(arr(d, "end.streams").len(), 256);
    }
}

#[test]
fn a_client_with_unread_stdout_ends_its_test_on_time_and_prints_it_all_at_exit() {
    let _gate = common::load::heavy();
    let srv = Server::start(&["-J"]);
    let mut args = srv.args(&BUSY[..BUSY.len() - 1]);
    args.extend(["-i", "0.1"].map(String::from));
    let t0 = Instant::now();
    let mut client = Proc::spawn_unread_stdout(common::rperf3(), &args);
    // The server prints its document once the client has ended the test.
    assert!(
        srv.wait_stdout_until(ON_TIME, |s| serde_json::from_str::<Value>(s).is_ok()),
        "no server document after {:?}:\n{}",
        t0.elapsed(),
        srv.stdout()
    );
    let doc: Value = serde_json::from_str(&srv.stdout()).expect("checked above");
    assert_no_error(&doc);
    assert_eq!(arr(&doc, "end.streams").len(), 256);
    let secs = num(&doc, "end.sum_received.seconds");
    assert!((2.0..2.75).contains(&secs), "the test lasted {secs} s");
    // The client waits at exit until its output is read, then has lost none.
    client.read_stdout();
    let out = client.finish(ON_TIME);
    out.assert_ok();
    assert!(notices(&out.stdout).is_empty(), "{out}");
    assert!(out.stdout.ends_with("\niperf Done.\n"), "{out}");
    // No interval went missing: each sum starts where the one before ended.
    let mut at = "0.00".to_string();
    for l in out.stdout.lines().filter(|l| l.starts_with("[SUM][TX-C]")) {
        let span = l["[SUM][TX-C]".len()..].split_whitespace().next().unwrap();
        let (from, to) = span.split_once('-').unwrap();
        if to.parse::<f64>().unwrap() >= 2.0 && from == "0.00" {
            continue; // the final summary
        }
        assert_eq!(from, at, "a gap before {l:?}");
        at = to.to_string();
    }
    assert!(at.parse::<f64>().unwrap() >= 2.0, "the sums end at {at}");
}

/// A closed stdout (the reader gone: `| head`, a supervisor that exited) is
/// no failure: the client ends as usual, the server goes on serving.
#[test]
fn a_closed_stdout_ends_nothing() {
    let mut srv = Server::start_unread_stdout(&[]);
    srv.close_stdout();
    let mut client = Proc::spawn_unread_stdout(common::rperf3(), &srv.args(&["-t", "1"]));
    client.close_stdout();
    let out = client.finish(ON_TIME);
    out.assert_ok();
    assert_eq!(out.stderr, "", "{out}");
    let doc = srv.client(&["-t", "1", "-J"]).assert_ok().json();
    assert_no_error(&doc);
    assert!(common::is_listening(srv.port), "the server is gone");
}

/// At its end a server writes out what is queued, however long the reader
/// takes: after its one test (`-1`) and after a signal.
#[test]
fn a_server_writes_out_its_queue_before_it_exits() {
    let _gate = common::load::heavy();
    for signal in [false, true] {
        let mut args = SERVER.to_vec();
        if !signal {
            args.push("-1");
        }
        let mut srv = Server::start_unread_stdout(&args);
        let t0 = Instant::now();
        let out = run_client(&srv.args(BUSY), ON_TIME);
        assert_busy_client_ok(&out, t0.elapsed());
        if signal {
            srv.signal(Signal::SIGTERM);
        }
        // Less than the queue holds: nothing is dropped, the summary comes last.
        srv.read_stdout();
        let out = srv.wait_exit(ON_TIME);
        assert!(notices(&out.stdout).is_empty(), "{out}");
        let summary = out
            .stdout
            .lines()
            .find(|l| l.starts_with("[SUM][TX-S]") && l.ends_with("sender"));
        assert!(
            summary.is_some(),
            "no final summary (signal: {signal}):\n{out}"
        );
        if signal {
            assert!(out.stderr.contains("interrupt - the server has terminated"));
        } else {
            assert!(out.status.success(), "{out}");
        }
    }
}

/// A signal while the exiting server waits for its reader ends the wait: a
/// supervisor's stop does not hang on a pipe nobody reads.
#[test]
fn a_further_signal_ends_the_wait_for_the_reader() {
    let _gate = common::load::heavy();
    let mut srv = Server::start_unread_stdout(SERVER);
    let t0 = Instant::now();
    let out = run_client(&srv.args(BUSY), ON_TIME);
    assert_busy_client_ok(&out, t0.elapsed());
    let pid = srv.proc().pid();
    // The first signal ends the server, which then waits to write its
    // output; the wait only listens for signals once it has begun, so one
    // is sent every 100 ms until the server is gone.
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.proc_mut().is_running() {
        assert!(Instant::now() < deadline, "still waiting for its reader");
        let _ = nix::sys::signal::kill(pid, Signal::SIGTERM);
        std::thread::sleep(Duration::from_millis(100));
    }
}
