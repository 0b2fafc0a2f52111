//! `--latency` in the iperf3 personality, measured end to end on loopback, and
//! the server's probe connections spoken to byte by byte: marker routing,
//! garbage, silence and a finished test's cookie.
//!
//! The figures are read from the client's `-d` lines ("latency interval: ...",
//! "latency total: ..."), which print the collector's figures as they are handed
//! to the report.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::raw::*;
use common::Server;
use serde_json::json;

/// One "latency <span>: ..." line's counts and p50s, by probe kind.
#[derive(Debug, Default)]
struct Line {
    /// (count, p50 ms, max ms) for idle, foreign, self, up, down.
    kinds: [(u64, f64, f64); 5],
}

fn parse_line(l: &str) -> Line {
    let mut out = Line::default();
    let names = ["idle ", "foreign ", "self ", "up ", "down "];
    for (i, name) in names.iter().enumerate() {
        let at = l
            .find(&format!(" {name}n="))
            .unwrap_or_else(|| panic!("{name} in {l}"));
        let rest = &l[at + name.len() + 1..];
        let field = |k: &str| -> f64 {
            let s = &rest[rest.find(k).unwrap() + k.len()..];
            let end = s.find([' ', ';']).unwrap_or(s.len());
            s[..end].parse().unwrap()
        };
        out.kinds[i] = (field("n=") as u64, field("p50="), field("max="));
    }
    out
}

/// The interval lines and the total line of a client's stderr.
fn figures(stderr: &str) -> (Vec<Line>, Line, bool) {
    let intervals = stderr
        .lines()
        .filter(|l| l.contains("latency interval:"))
        .map(parse_line)
        .collect();
    let total = stderr
        .lines()
        .find(|l| l.contains("latency total"))
        .unwrap_or_else(|| panic!("no total in:\n{stderr}"));
    let alone = total.contains("(client alone)");
    (intervals, parse_line(total), alone)
}

const IDLE: usize = 0;
const FOREIGN: usize = 1;
const SELF: usize = 2;
const UP: usize = 3;
const DOWN: usize = 4;

fn run(srv: &Server, extra: &[&str]) -> (Vec<Line>, Line, bool) {
    let mut args = vec!["-d"];
    args.extend_from_slice(extra);
    let out = srv.client(&args);
    out.assert_ok();
    figures(&out.stderr)
}

#[test]
fn tcp_idle_and_loaded_figures_on_loopback() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let (iv, total, alone) = run(&srv, &["-t", "3", "--latency=20"]);
    assert!(!alone);
    let (n, p50, _) = total.kinds[IDLE];
    assert_eq!(n, 10, "idle round trips");
    assert!(p50 > 0.0 && p50 < 1.0, "idle p50 {p50} ms");
    // 20 probes a second for 3 s, each a handshake and a request.
    let f = total.kinds[FOREIGN].0;
    assert!((100..=124).contains(&f), "foreign samples {f}");
    assert_eq!(total.kinds[UP].0 * 2, f);
    assert_eq!(total.kinds[DOWN].0 * 2, f);
    assert!(
        total.kinds[SELF].0 >= 25,
        "self samples {}",
        total.kinds[SELF].0
    );
    assert_eq!(iv.len(), 3, "one line per interval");
    for (i, l) in iv.iter().enumerate() {
        assert!(l.kinds[FOREIGN].0 >= 30, "interval {i}: {l:?}");
        assert!(l.kinds[SELF].0 >= 8, "interval {i}: {l:?}");
        // Idle round trips are taken before the load, so only in the total.
        assert_eq!(l.kinds[IDLE].0, 0);
    }
}

#[test]
fn reverse_self_probes_come_from_the_server() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let (iv, total, _) = run(&srv, &["-t", "2", "-R", "--latency"]);
    // The client only receives: its self samples are the server's pushes.
    assert!(total.kinds[SELF].0 >= 15, "{total:?}");
    assert!(iv
        .iter()
        .all(|l| l.kinds[SELF].0 > 0 && l.kinds[FOREIGN].0 > 0));
}

#[test]
fn bidir_and_parallel_streams_are_all_sampled() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let (_, total, _) = run(&srv, &["-t", "2", "--bidir", "-P", "4", "--latency"]);
    // 4 own senders and 4 of the server's, 10 times a second, for 2 s.
    let s = total.kinds[SELF].0;
    assert!((120..=170).contains(&s), "self samples {s}");
}

#[test]
fn udp_load_has_foreign_probes_and_no_self() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let (iv, total, _) = run(
        &srv,
        &["-u", "-b", "7M", "-P", "16", "-t", "2", "--latency"],
    );
    assert_eq!(total.kinds[IDLE].0, 10);
    assert_eq!(total.kinds[SELF].0, 0, "UDP has no TCP round trips");
    assert!(iv.iter().all(|l| l.kinds[FOREIGN].0 >= 16), "{iv:?}");
    let (_, total, _) = run(&srv, &["-u", "-b", "7M", "-R", "-t", "1", "--latency"]);
    assert!(total.kinds[FOREIGN].0 >= 16, "{total:?}");
}

/// A fake server that takes one control connection far enough to read the
/// parameters document, and returns its bytes.
fn params_sent(extra: &[&str]) -> Vec<u8> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let mut args = vec!["-c", "127.0.0.1", "-p", &port, "-t", "1"];
    args.extend_from_slice(extra);
    let client = common::Proc::spawn(common::rperf3(), &args);
    let (mut s, _) = l.accept().unwrap();
    s.set_read_timeout(Some(REPLY)).unwrap();
    let mut cookie = [0u8; 37];
    s.read_exact(&mut cookie).unwrap();
    s.write_all(&[PARAM_EXCHANGE]).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).unwrap();
    drop(s);
    let _ = client.finish(Duration::from_secs(5));
    body
}

#[test]
fn without_latency_the_parameters_are_unchanged_bytes() {
    let plain = String::from_utf8(params_sent(&[])).unwrap();
    let asked = String::from_utf8(params_sent(&["--latency=30"])).unwrap();
    assert!(!plain.contains("rperf3"), "{plain}");
    // The same document, with one key more at its end (the data is timed too).
    assert_eq!(
        asked,
        format!(
            "{},\"rperf3_latency\":{{\"v\":1,\"rate\":30,\"owd\":1}}}}",
            &plain[..plain.len() - 1]
        )
    );
}

/// Cookie, PARAM_EXCHANGE, parameters asking for latency: the server answers
/// LATENCY_READY then CREATE_STREAMS.
fn latency_session(srv: &Server, cookie: &[u8; 37]) -> TcpStream {
    let mut s = handshake_with(srv, cookie);
    let mut p = tcp_params(1);
    p["time"] = json!(30);
    p["rperf3_latency"] = json!({"v": 1, "rate": 10});
    send_json(&mut s, &p);
    expect_state(&mut s, 76);
    expect_state(&mut s, CREATE_STREAMS);
    s
}

fn marked(cookie: &[u8; 37], m: u8) -> Vec<u8> {
    let mut c = cookie.to_vec();
    c[36] = m;
    c
}

fn wall_ns() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    d.as_nanos() as i64
}

/// A probe request written out by hand: "RP", 'Q', version 1, length 28,
/// sequence 5, send time 7, sizes 28 and 44.
const REQUEST: [u8; 28] = [
    b'R', b'P', b'Q', 1, 0, 0, 0, 28, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 28, 0, 0, 0, 44,
];

fn probe(srv: &Server, cookie: &[u8; 37], marker: u8, then: &[u8]) -> TcpStream {
    let mut s = connect(srv);
    let mut b = marked(cookie, marker);
    b.extend_from_slice(then);
    s.write_all(&b).unwrap();
    s
}

fn read_answer(s: &mut TcpStream) -> Vec<u8> {
    let mut a = [0u8; 44];
    s.read_exact(&mut a).expect("an answer");
    a.to_vec()
}

#[test]
fn probe_connections_are_routed_by_marker_and_answered() {
    let srv = Server::start(&["-d"]);
    let c = cookie(41);
    let _ctrl = latency_session(&srv, &c);
    let before = wall_ns();
    for marker in [b'P', b'F'] {
        let mut p = probe(&srv, &c, marker, &REQUEST);
        let a = read_answer(&mut p);
        // Type 'A', length 44, the sequence, time and sizes echoed.
        assert_eq!(&a[..4], b"RPA\x01");
        assert_eq!(a[4..8], 44u32.to_be_bytes());
        assert_eq!(&a[8..28], &REQUEST[8..28]);
        let recv = i64::from_be_bytes(a[28..36].try_into().unwrap());
        let sent = i64::from_be_bytes(a[36..44].try_into().unwrap());
        assert!(before <= recv && recv <= sent && sent <= wall_ns());
        if marker == b'F' {
            // One request per foreign probe: then the server closes.
            assert_eq!(read_to_close(&mut p), Vec::<u8>::new());
        }
    }
    // A marker the session does not know: closed unanswered, logged.
    let mut z = probe(&srv, &c, b'Z', &REQUEST);
    assert_eq!(read_to_close(&mut z), Vec::<u8>::new());
    assert!(
        srv.proc().wait_stderr("with unknown marker 'Z'", READY),
        "{}",
        srv.stderr()
    );
}

#[test]
fn garbage_on_a_probe_connection_closes_it_and_the_test_goes_on() {
    let srv = Server::start(&["-d"]);
    let c = cookie(42);
    let _ctrl = latency_session(&srv, &c);
    let mut g = probe(&srv, &c, b'P', b"GET / HTTP/1.1\r\n\r\n");
    assert_eq!(read_to_close(&mut g), Vec::<u8>::new());
    assert!(
        srv.proc().wait_stderr("not a probe frame", READY),
        "{}",
        srv.stderr()
    );
    // The session still answers its probes.
    let mut f = probe(&srv, &c, b'F', &REQUEST);
    assert_eq!(&read_answer(&mut f)[..3], b"RPA");
}

#[test]
fn a_probe_connection_that_never_speaks_is_closed_at_its_deadline() {
    let srv = Server::start(&["-d"]);
    let c = cookie(43);
    let _ctrl = latency_session(&srv, &c);
    let t = Instant::now();
    let mut p = probe(&srv, &c, b'P', &[]);
    p.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(read_to_close(&mut p), Vec::<u8>::new());
    let waited = t.elapsed();
    assert!(
        (Duration::from_millis(4_900)..Duration::from_millis(6_500)).contains(&waited),
        "closed after {waited:?}, wanted 5 s"
    );
    assert!(
        srv.proc().wait_stderr("no probe frame in time", READY),
        "{}",
        srv.stderr()
    );
}

#[test]
fn a_finished_tests_probe_is_closed_and_the_server_keeps_serving() {
    let srv = Server::start(&["-d"]);
    let c = cookie(44);
    let ctrl = latency_session(&srv, &c);
    drop(ctrl);
    assert!(srv.wait_banners(2, READY), "{}", srv.stdout());
    let mut p = probe(&srv, &c, b'P', &REQUEST);
    assert_eq!(read_to_close(&mut p), Vec::<u8>::new());
    assert!(
        srv.proc()
            .wait_stderr("marked 'P' for no running test", READY),
        "{}",
        srv.stderr()
    );
    srv.client(&["-n", "10M", "--latency"]).assert_ok();
}

#[test]
fn a_client_that_does_not_ask_never_sees_the_new_state() {
    let srv = Server::start(&[]);
    let mut s = handshake_with(&srv, &cookie(45));
    send_json(&mut s, &tcp_params(1));
    expect_state(&mut s, CREATE_STREAMS);
    // And a stock client's marked connection is never made; a marked one for
    // this test without latency is closed by its session.
    let mut p = probe(&srv, &cookie(45), b'P', &REQUEST);
    assert_eq!(read_to_close(&mut p), Vec::<u8>::new());
}

#[test]
fn the_servers_metrics_hold_what_the_client_measured() {
    use common::prom;
    let (srv, mport) = prom::server(&[]);
    let (_, total, _) = run(&srv, &["-t", "2", "--bidir", "--latency"]);
    let count = |k: &str| format!("rperf3_latency_seconds_count{{kind=\"{k}\"}}");
    let m = prom::scrape_until(mport, "the test counted", |m| prom::outcome(m, "ok") == 1.0);
    assert_eq!(prom::get(&m, &count("idle")), total.kinds[IDLE].0 as f64);
    assert_eq!(
        prom::get(&m, &count("foreign")),
        total.kinds[FOREIGN].0 as f64
    );
    // The client's own streams' samples, forwarded, and the server's, pushed:
    // the server also keeps pushes the client had no time to read at the end.
    let own = prom::get(&m, &count("self"));
    let seen = total.kinds[SELF].0 as f64;
    assert!(
        own >= seen && own <= seen + 4.0,
        "server {own}, client {seen}"
    );
}

#[test]
fn json_carries_the_figures_per_interval_and_at_the_end() {
    let _gate = common::load::timed();
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "2", "-R", "-P", "2", "--latency", "-J"]);
    out.assert_ok();
    let j = out.json();
    let end = &j["end"]["latency"];
    assert_eq!(end["with_server"], json!(true));
    assert_eq!(end["idle"]["count"], json!(10));
    let p50 = end["idle"]["p50_ms"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 < 1.0, "idle p50 {p50}");
    let ivs = j["intervals"].as_array().unwrap();
    assert_eq!(ivs.len(), 2);
    for iv in ivs {
        let l = &iv["latency"];
        assert_eq!(l["idle"]["count"], json!(0));
        assert!(
            l["loaded"]["foreign"]["count"].as_u64().unwrap() >= 16,
            "{l}"
        );
        // Two server streams pushed about 10 round trips a second each.
        assert!(l["loaded"]["self"]["count"].as_u64().unwrap() >= 14, "{l}");
    }
    // Without --latency: no latency key anywhere.
    let plain = srv.client(&["-t", "1", "-J"]).json();
    assert!(plain["end"].get("latency").is_none());
    assert!(plain["intervals"][0].get("latency").is_none());
}
