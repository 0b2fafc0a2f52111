//! A server that hosts several tests: `--max-tests` runs them side by side
//! (stock iperf3 clients among them), `--queue` holds later clients until a
//! slot frees, and the output of concurrent tests stays apart.

use crate::common;

use std::time::{Duration, Instant};

use serde_json::Value;

use common::interop::{Mode, Run};
use common::json::{assert_no_error, num, string};
use common::{iperf3_321, require_tool, run_program, scratch_file, Proc, Server, Signal};

/// Every whole JSON document in `text`, in order (a trailing partial one is
/// left out).
fn docs(text: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(text)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect()
}

/// The server document of the test with this client document's cookie.
fn server_doc<'a>(server: &'a [Value], client: &Value) -> &'a Value {
    let cookie = string(client, "start.cookie");
    server
        .iter()
        .find(|d| d["start"]["cookie"] == cookie)
        .unwrap_or_else(|| panic!("no server document for cookie {cookie}"))
}

/// Waits until the server has printed `n` whole documents and returns them.
fn server_docs(srv: &Server, n: usize) -> Vec<Value> {
    assert!(
        srv.proc()
            .wait_stdout_until(Duration::from_secs(10), |s| docs(s).len() >= n),
        "{}",
        srv.stdout()
    );
    docs(&srv.stdout())
}

fn run_pair(client: Value, server: Value, transcript: String) -> Run {
    Run {
        client,
        server,
        problems: Vec::new(),
        transcript,
        pairing: None,
        iperf3_threads: false,
        kernel: None,
    }
}

/// A client process and what it is.
struct Started {
    what: &'static str,
    mode: Mode,
    udp: bool,
    proc: Proc,
}

#[test]
fn four_tests_at_once_with_stock_and_own_clients() {
    if !require_tool("iperf3") {
        return;
    }
    let srv = Server::start(&["--max-tests", "4", "-J"]);
    let newest = iperf3_321();
    let stock_reverse = newest.as_deref().unwrap_or(std::path::Path::new("iperf3"));
    let secs = "3";
    let with = |extra: &[&str]| {
        let mut a = srv.args(&["-J", "-t", secs]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // The TCP tests are paced so the UDP ones keep a share of the two cores:
    // loss here must come from the host mixing tests up, not from starving.
    let t0 = Instant::now();
    let mut clients = [
        Started {
            what: "rperf3 TCP",
            mode: Mode::Normal,
            udp: false,
            proc: Proc::spawn(common::rperf3(), &with(&["-b", "2G"])),
        },
        Started {
            what: "iperf3 3.12 UDP",
            mode: Mode::Normal,
            udp: true,
            proc: Proc::spawn("iperf3", &with(&["-u", "-b", "100M"])),
        },
        Started {
            what: "stock iperf3 TCP -R",
            mode: Mode::Reverse,
            udp: false,
            proc: Proc::spawn(stock_reverse, &with(&["-R", "-b", "2G"])),
        },
        Started {
            what: "rperf3 UDP -R",
            mode: Mode::Reverse,
            udp: true,
            proc: Proc::spawn(common::rperf3(), &with(&["-u", "-R", "-b", "100M"])),
        },
    ]
    .map(Some);
    let outs: Vec<_> = clients
        .iter_mut()
        .map(|c| {
            let c = c.take().unwrap();
            (
                c.what,
                c.mode,
                c.udp,
                c.proc.finish(Duration::from_secs(30)),
            )
        })
        .collect();
    let wall = t0.elapsed();
    for (what, _, _, out) in &outs {
        assert_eq!(out.code(), Some(0), "{what}:\n{out}");
        assert_no_error(&out.json());
    }
    // Four 3 s tests one after another would take 12 s at least.
    assert!(
        wall < Duration::from_secs(8),
        "took {wall:?}: not side by side"
    );

    let server = server_docs(&srv, 4);
    for (what, mode, udp, out) in outs {
        let client = out.json();
        let s = server_doc(&server, &client).clone();
        assert_no_error(&s);
        let mut r = run_pair(client.clone(), s, format!("{out}"));
        if udp {
            r.check_udp_accounting(mode);
            let loss = num(&r.client, "end.sum.lost_percent");
            let loss = loss.max(num(&r.server, "end.sum.lost_percent"));
            assert!(loss < 1.0, "{what}: {loss}% lost");
        } else {
            r.check_tcp_delivery(mode, 1);
        }
        assert!(
            r.problems.is_empty(),
            "{what}: {:?}\n{}",
            r.problems,
            r.transcript
        );
    }
}

#[test]
fn each_test_reports_its_own_cpu() {
    if !require_tool("iperf3") {
        return;
    }
    let srv = Server::start(&["--max-tests", "2"]);
    let busy = srv.spawn_client(&["-t", "3", "-J"]);
    let quiet = run_program(
        "iperf3",
        &srv.args(&["-u", "-b", "1M", "-t", "3", "-J"]),
        Duration::from_secs(30),
    );
    let busy = busy.finish(Duration::from_secs(30));
    let (busy, quiet) = (busy.assert_ok().json(), quiet.assert_ok().json());
    // While an unlimited TCP test keeps the server's process busy, the 1 Mbit/s
    // UDP test's own threads use next to nothing.
    let q = num(&quiet, "end.cpu_utilization_percent.remote_total");
    let b = num(&busy, "end.cpu_utilization_percent.remote_total");
    eprintln!("server CPU: quiet UDP test {q}%, busy TCP test {b}%");
    // Process-wide figures would give both tests the same share; a loaded
    // machine can starve the busy one, so the check is the ratio.
    assert!(q < 5.0, "quiet test: server CPU {q}% (busy test {b}%)");
    assert!(
        b > 1.0 && b > 10.0 * q,
        "busy test: server CPU {b}% (quiet test {q}%)"
    );
}

#[test]
fn queued_stock_clients_run_one_after_another() {
    if !require_tool("iperf3") {
        return;
    }
    let srv = Server::start(&["--queue", "2"]);
    let t0 = Instant::now();
    let procs: Vec<Proc> = (0..3)
        .map(|_| Proc::spawn("iperf3", &srv.args(&["-t", "2", "-J"])))
        .collect();
    let mut starts: Vec<f64> = procs
        .into_iter()
        .map(|p| {
            let out = p.finish(Duration::from_secs(30));
            assert_eq!(out.code(), Some(0), "{out}");
            let doc = out.json();
            assert_no_error(&doc);
            num(&doc, "start.timestamp.timesecs")
        })
        .collect();
    assert!(t0.elapsed() >= Duration::from_secs(6), "{:?}", t0.elapsed());
    starts.sort_by(f64::total_cmp);
    // Whole seconds: 2 s tests one after another start at least 1 s apart.
    assert!(
        starts.windows(2).all(|w| w[1] - w[0] >= 1.0),
        "not one after another: {starts:?}"
    );
    let out = srv.stop();
    assert_eq!(out.stdout.matches("Accepted connection from").count(), 3);
}

#[test]
fn a_queued_rperf3_client_waits_for_its_turn() {
    let srv = Server::start(&["--queue", "1"]);
    let first = srv.spawn_client(&["-t", "2"]);
    assert!(srv
        .proc()
        .wait_stdout("Accepted connection", Duration::from_secs(5)));
    let second = srv.spawn_client(&["-t", "1"]);
    let first = first.finish(Duration::from_secs(30));
    let t = Instant::now();
    let second = second.finish(Duration::from_secs(30));
    first.assert_ok();
    second.assert_ok();
    // The second ran after the first: about its own 1 s after the first ended.
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    assert!(second.stdout.contains("receiver"), "{second}");
}

#[test]
fn a_queued_client_with_a_timeout_says_why_it_gave_up() {
    let srv = Server::start(&["--queue", "1"]);
    let first = srv.spawn_client(&["-t", "3"]);
    assert!(srv
        .proc()
        .wait_stdout("Accepted connection", Duration::from_secs(5)));
    let t = Instant::now();
    let out = srv.client(&["-t", "1", "--connect-timeout", "500"]);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr.contains(
            "timed out after 0.5 s waiting for the server to start the test \
             (it may be busy or queueing)"
        ),
        "{out}"
    );
    first.finish(Duration::from_secs(30)).assert_ok();
    // The client that left the queue does not hold a place: the next one runs.
    srv.client(&["-n", "1M"]).assert_ok();
}

#[test]
fn a_queued_client_can_be_interrupted() {
    let srv = Server::start(&["--queue", "1"]);
    let _first = srv.spawn_client(&["-t", "10"]);
    assert!(srv
        .proc()
        .wait_stdout("Accepted connection", Duration::from_secs(5)));
    let waiting = srv.spawn_client(&["-t", "1"]);
    // Queued: connected, but no test has started for it. The first test
    // holds two connections (control and data); the queued client's control
    // is the third (a signal before it would find no handler yet).
    assert!(srv
        .proc()
        .wait_stdout_until(Duration::from_secs(5), |_| established_to(srv.port) >= 3));
    waiting.signal(Signal::SIGINT);
    let t = Instant::now();
    let out = waiting.finish(Duration::from_secs(10));
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // iperf3 3.19 and later exit with 0 on SIGINT, as rperf3 does.
    assert_eq!(out.code(), Some(0), "{out}");
    assert!(
        out.stderr
            .contains("rperf3: interrupt - the client has terminated"),
        "{out}"
    );
}

/// Connections in ESTABLISHED state towards `port` on loopback.
fn established_to(port: u16) -> usize {
    let out = std::process::Command::new("ss")
        .args([
            "-Htn",
            "state",
            "established",
            "dport",
            "=",
            &format!(":{port}"),
        ])
        .output()
        .expect("ss");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn text_lines_of_concurrent_tests_say_which_test_they_belong_to() {
    let srv = Server::start(&["--max-tests", "2"]);
    let a = srv.spawn_client(&["-t", "2"]);
    let b = srv.spawn_client(&["-t", "2"]);
    a.finish(Duration::from_secs(30)).assert_ok();
    b.finish(Duration::from_secs(30)).assert_ok();
    assert!(srv.wait_banners(3, Duration::from_secs(10)));
    let out = srv.stop().stdout;
    let mut per_test = [String::new(), String::new()];
    for line in out.lines() {
        if line.starts_with("Server listening on") || line.starts_with("-----") {
            continue;
        }
        let (n, rest) = line
            .strip_prefix("[test ")
            .and_then(|l| l.split_once("] "))
            .unwrap_or_else(|| panic!("line without its test: {line:?}\n{out}"));
        let n: usize = n.parse().unwrap();
        per_test[n - 1].push_str(rest);
        per_test[n - 1].push('\n');
    }
    // Each test's lines, read alone, are a whole server report.
    for report in per_test {
        assert_eq!(
            report.matches("Accepted connection from").count(),
            1,
            "{report}"
        );
        assert!(report.contains("[ ID] Interval"), "{report}");
        assert!(report.lines().any(|l| l.ends_with("receiver")), "{report}");
        // The second interval (its ends may be x.01 s on a loaded machine).
        assert!(
            report
                .lines()
                .any(|l| l.contains("  1.0") && l.contains("-2.") && l.contains(" sec ")),
            "{report}"
        );
    }
}

#[test]
fn json_documents_of_concurrent_tests_stay_whole_on_stdout_and_in_the_log() {
    let log = scratch_file("multi.log");
    let log_arg = log.to_str().unwrap();
    let srv = Server::start(&["--max-tests", "3", "-J"]);
    let logged = Server::start(&["--max-tests", "3", "-J", "--logfile", log_arg]);
    let clients: Vec<Proc> = [&srv, &logged]
        .iter()
        .flat_map(|s| {
            [
                s.spawn_client(&["-t", "2", "-J"]),
                s.spawn_client(&["-t", "2", "-J", "-u", "-b", "10M"]),
                s.spawn_client(&["-t", "2", "-J", "-R", "-P", "2"]),
            ]
        })
        .collect();
    let cookies: Vec<String> = clients
        .into_iter()
        .map(|p| {
            let doc = p.finish(Duration::from_secs(30)).assert_ok().json();
            string(&doc, "start.cookie").to_string()
        })
        .collect();
    let on_stdout = server_docs(&srv, 3);
    only_documents(&srv.stop().stdout);
    // The log file has no event to wait on: look until the third document is
    // whole, with a deadline.
    let deadline = Instant::now() + Duration::from_secs(10);
    let in_log = loop {
        let d = docs(&std::fs::read_to_string(&log).unwrap_or_default());
        if d.len() >= 3 || Instant::now() > deadline {
            only_documents(&std::fs::read_to_string(&log).unwrap_or_default());
            break d;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    for (docs, cookies) in [(on_stdout, &cookies[..3]), (in_log, &cookies[3..])] {
        assert_eq!(docs.len(), 3);
        for c in cookies {
            assert!(
                docs.iter().any(|d| d["start"]["cookie"] == c.as_str()),
                "no document for {c}"
            );
        }
        for d in &docs {
            assert_no_error(d);
            // Two seconds of intervals and an end for each test.
            assert!(d["intervals"].as_array().unwrap().len() >= 2, "{d}");
            assert!(!d["end"]["streams"].as_array().unwrap().is_empty(), "{d}");
        }
    }
}

/// `text` is JSON documents back to back and nothing else: no line of one
/// test inside another's document.
fn only_documents(text: &str) {
    for d in serde_json::Deserializer::from_str(text).into_iter::<Value>() {
        if let Err(e) = d {
            panic!("not whole documents ({e}):\n{text}");
        }
    }
}

/// The first of `socks` to receive a byte within `within`, and that byte.
fn first_reply(socks: &mut [&mut std::net::TcpStream], within: Duration) -> Option<(usize, u8)> {
    use std::io::Read;
    let deadline = Instant::now() + within;
    for s in socks.iter_mut() {
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    }
    while Instant::now() < deadline {
        for (i, s) in socks.iter_mut().enumerate() {
            let mut b = [0u8; 1];
            match s.read(&mut b) {
                Ok(1) => return Some((i, b[0])),
                Ok(_) => return Some((i, 0)), // closed without a byte
                Err(_) => {}
            }
        }
    }
    None
}

#[test]
fn one_address_cannot_keep_others_out_of_the_queue() {
    use common::raw::*;
    use std::io::Write;
    // Two addresses on one machine: 127.0.0.1 and ::1.
    let srv = Server::start(&["--max-tests", "2", "--queue", "2"]);
    let a1 = handshake_with(&srv, &cookie(1));
    let _a2 = handshake_with(&srv, &cookie(2));
    let mut a3 = connect(&srv);
    a3.write_all(&cookie(3)).unwrap();
    let mut a4 = connect(&srv);
    a4.write_all(&cookie(4)).unwrap();
    // Both slots and the whole queue belong to 127.0.0.1. A newcomer from
    // another address still gets a place: 127.0.0.1's newest waiter gives it
    // up (refused as busy, as iperf3 refuses).
    let mut b = std::net::TcpStream::connect(("::1", srv.port)).expect("connect over ::1");
    b.write_all(&cookie(5)).unwrap();
    let (i, byte) = first_reply(&mut [&mut a3, &mut a4, &mut b], REPLY).expect("a refusal");
    assert_eq!(
        (byte, i != 2),
        (ACCESS_DENIED, true),
        "socket {i} got {byte:#04x}"
    );
    let mut still_waiting = if i == 0 { a4 } else { a3 };
    // When a slot frees, it goes to the address running nothing, ahead of
    // 127.0.0.1's earlier waiter.
    drop(a1);
    let (i, byte) =
        first_reply(&mut [&mut still_waiting, &mut b], REPLY).expect("a start for someone");
    assert_eq!((i, byte), (1, PARAM_EXCHANGE), "socket {i} got {byte:#04x}");
}
