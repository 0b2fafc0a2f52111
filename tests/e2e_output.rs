//! The binary against itself: output options (-f, -T, --logfile, --timestamps,
//! --json-stream, --get-server-output, -V) as a user sees them.

use crate::common;

use std::time::Duration;

use common::json::{arr, assert_no_error, at, events, num, string};
use common::{scratch_file, Server};
use serde_json::Value;

/// The lines of a text report that carry an interval (`... sec ...`).
fn report_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| l.contains(" sec ")).collect()
}

#[test]
fn format_m_uses_mbits() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "-f", "m"]);
    out.assert_ok();
    let lines = report_lines(&out.stdout);
    assert!(lines.len() >= 3, "{}", out.stdout);
    for l in lines {
        assert!(l.contains(" Mbits/sec"), "not in Mbits: {l}");
    }
    assert!(out.stdout.ends_with("iperf Done.\n"), "{}", out.stdout);
}

#[test]
fn title_prefixes_every_line_and_json_key() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "-T", "mytitle"]);
    out.assert_ok();
    for l in out.stdout.lines() {
        assert!(l.starts_with("mytitle:  "), "line without the title: {l:?}");
    }
    assert!(srv.wait_banners(2, Duration::from_secs(5)));
    let doc = srv.client(&["-t", "1", "-T", "mytitle", "-J"]).json();
    assert_eq!(string(&doc, "title"), "mytitle");
}

#[test]
fn logfile_receives_output_and_appends() {
    let srv = Server::start(&[]);
    let log = scratch_file("client.log");
    std::fs::write(&log, "earlier line\n").unwrap();
    let logs = log.to_str().unwrap();
    for n in 1..=2 {
        assert!(srv.wait_banners(n, Duration::from_secs(5)));
        let out = srv.client(&["-t", "1", "--logfile", logs]);
        out.assert_ok();
        assert_eq!(out.stdout, "", "stdout must stay empty with --logfile");
    }
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.starts_with("earlier line\n"),
        "file truncated:\n{text}"
    );
    assert_eq!(text.matches("iperf Done.").count(), 2, "{text}");
    assert_eq!(text.matches("Connecting to host").count(), 2, "{text}");
}

#[test]
fn server_logfile_gets_server_output() {
    let log = scratch_file("server.log");
    let srv = Server::start(&["--logfile", log.to_str().unwrap()]);
    srv.client(&["-t", "1"]).assert_ok();
    // The server writes its summary as the test ends on its side, which can
    // be after the client has exited: the file is watched for it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let text = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("receiver") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let srv_out = srv.stop();
    assert_eq!(srv_out.stdout, "", "server stdout with --logfile");
    assert!(text.contains("Server listening on"), "{text}");
    assert!(text.contains("receiver"), "{text}");
}

#[test]
fn timestamps_prefix_lines() {
    let srv = Server::start(&[]);
    // Default format "%c ": "Sat Nov 21 04:53:47 2026 ".
    let out = srv.client(&["-t", "1", "--timestamps"]);
    out.assert_ok();
    const DAYS: [&str; 7] = ["Mon ", "Tue ", "Wed ", "Thu ", "Fri ", "Sat ", "Sun "];
    for l in out.stdout.lines() {
        assert!(DAYS.iter().any(|d| l.starts_with(d)), "no %c stamp: {l:?}");
        assert!(l.contains(" 20"), "no year in the stamp: {l:?}");
    }
    assert!(srv.wait_banners(2, Duration::from_secs(5)));
    // A custom strftime format.
    let out = srv.client(&["-t", "1", "--timestamps=<%Y> "]);
    out.assert_ok();
    for l in out.stdout.lines() {
        let b = l.as_bytes();
        assert!(
            l.len() >= 7 && b[0] == b'<' && b[5] == b'>' && b[1..5].iter().all(u8::is_ascii_digit),
            "no <%Y> stamp: {l:?}"
        );
    }
}

#[test]
fn json_stream_events_in_order() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "--json-stream"]);
    out.assert_ok();
    let evs = events(&out.stdout);
    let names: Vec<&str> = evs.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names.first(), Some(&"start"), "{names:?}");
    assert_eq!(names.last(), Some(&"end"), "{names:?}");
    assert!(names[1..names.len() - 1].iter().all(|n| *n == "interval"));
    assert!(names.len() >= 3, "no interval event: {names:?}");
    let (_, start) = &evs[0];
    assert_eq!(string(start, "test_start.protocol"), "TCP");
    let (_, end) = evs.last().unwrap();
    assert!(num(end, "sum_sent.bytes") > 0.0);
    for (_, iv) in &evs[1..evs.len() - 1] {
        assert!(num(iv, "sum.bytes") > 0.0, "{iv}");
    }
}

#[test]
fn get_server_output_from_text_server() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "-J", "--get-server-output"]);
    out.assert_ok();
    let doc = out.json();
    assert_no_error(&doc);
    let text = string(&doc, "server_output_text");
    assert!(
        text.starts_with("Accepted connection from 127.0.0.1"),
        "{text}"
    );
    assert!(text.contains("receiver"), "{text}");
    assert!(text.ends_with('\n'), "{text:?}");
    // In text mode the client prints it after its own report.
    assert!(srv.wait_banners(2, Duration::from_secs(5)));
    let out = srv.client(&["-t", "1", "--get-server-output"]);
    out.assert_ok();
    let at_srv = out
        .stdout
        .find("\nServer output:\n")
        .expect("Server output block");
    assert!(out.stdout[at_srv..].contains("Accepted connection from"));
    assert!(out.stdout.ends_with("iperf Done.\n"));
}

#[test]
fn get_server_output_from_json_server() {
    let srv = Server::start(&["-J"]);
    let out = srv.client(&["-t", "1", "-J", "--get-server-output"]);
    out.assert_ok();
    let doc = out.json();
    assert_no_error(&doc);
    let so = at(&doc, "server_output_json");
    assert!(so.is_object(), "{so}");
    assert_eq!(string(so, "start.test_start.protocol"), "TCP");
    assert!(!arr(so, "intervals").is_empty());
    let srv_received = num(so, "end.sum_received.bytes");
    assert!(srv_received > 0.0);
    // The server's own count equals what the client reports as received.
    assert_eq!(srv_received, num(&doc, "end.sum_received.bytes"));
    // Built before the exchange: no remote CPU yet.
    assert_eq!(num(so, "end.cpu_utilization_percent.remote_total"), 0.0);
    assert!(so.get("error").is_none());
    // The text-mode client prints it as "Server JSON output:". (A new server:
    // a JSON server prints no banner to tell when it is ready again.)
    drop(srv);
    let srv = Server::start(&["-J"]);
    let out = srv.client(&["-t", "1", "--get-server-output"]);
    out.assert_ok();
    let i = out
        .stdout
        .find("\nServer JSON output:\n")
        .expect("Server JSON output block");
    let rest = &out.stdout[i + "\nServer JSON output:\n".len()..];
    let json_end = rest.rfind('}').expect("a JSON object");
    let v: Value = serde_json::from_str(&rest[..=json_end]).expect("pretty JSON parses");
    assert!(v.get("end").is_some());
}

#[test]
fn verbose_adds_iperf3_lines() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "-V"]);
    out.assert_ok();
    let s = &out.stdout;
    for want in [
        "Control connection MSS ",
        "Time: ",
        "      Cookie: ",
        "      TCP MSS: ",
        "Starting Test: protocol: TCP, 1 streams, 131072 byte blocks, omitting 0 seconds, 1 second test, tos 0",
        "Test Complete. Summary Results:",
        "CPU Utilization: local/sender ",
        "snd_tcp_congestion ",
        "rcv_tcp_congestion ",
    ] {
        assert!(
            s.lines().any(|l| l.starts_with(want)),
            "missing -V line {want:?}:\n{s}"
        );
    }
    let first = s.lines().next().unwrap_or("");
    assert!(
        first.starts_with("iperf 3"),
        "version line first: {first:?}"
    );
    let second = s.lines().nth(1).unwrap_or("");
    assert!(
        second.starts_with("Linux "),
        "uname line second: {second:?}"
    );
}
