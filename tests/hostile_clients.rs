//! Clients that try to hold the server: trickling every phase, repeating
//! TEST_START, idling by the hundred, going quiet in the middle of a test. Each
//! is cut at its phase's absolute deadline while a real client is served at
//! once, and the server's resources come back afterwards.

use crate::common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::raw::*;
use common::{fd_count, Server, Signal};

/// Sends `bytes` one at a time every `gap` until the server closes the
/// connection; returns when that happened (from the first byte).
fn trickle(s: &mut TcpStream, bytes: &[u8], gap: Duration) -> Duration {
    let t0 = Instant::now();
    for b in bytes.iter().cycle() {
        if s.write_all(&[*b]).is_err() {
            break;
        }
        std::thread::sleep(gap);
        if t0.elapsed() > Duration::from_secs(60) {
            panic!("still connected after 60 s");
        }
    }
    t0.elapsed()
}

/// Starts trickling `bytes` on `s` in the background, serves a real client at
/// once meanwhile, and returns how long after `t0` the server logged `error`
/// (its session, and the slot, ended then). The connection itself closes
/// within the server's 2 s closing grace after that.
fn cut_while_serving(
    srv: &Server,
    mut s: TcpStream,
    bytes: Vec<u8>,
    gap: Duration,
    t0: Instant,
    error: &str,
) -> Duration {
    let t = std::thread::spawn(move || trickle(&mut s, &bytes, gap));
    served_at_once(srv);
    assert!(
        srv.proc().wait_stderr(error, Duration::from_secs(45)),
        "{}",
        srv.stderr()
    );
    let logged = t0.elapsed();
    let closed = t.join().unwrap();
    assert!(
        closed < logged + Duration::from_secs(3),
        "closed {closed:?}, logged {logged:?}"
    );
    logged
}

/// A real client, run while the trickler holds its connection: served at once.
fn served_at_once(srv: &Server) {
    let t = Instant::now();
    srv.client(&["-n", "10M"]).assert_ok();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
}

fn within(d: Duration, lo_ms: u64, hi_ms: u64) -> bool {
    (Duration::from_millis(lo_ms)..Duration::from_millis(hi_ms)).contains(&d)
}

fn a_trickled_cookie_is_cut_at_10_s() {
    let srv = Server::start(&[]);
    let mut s = connect(&srv);
    let t = std::thread::spawn(move || trickle(&mut s, COOKIE, Duration::from_millis(700)));
    served_at_once(&srv);
    let held = t.join().unwrap();
    assert!(within(held, 9_500, 12_000), "held {held:?}");
    assert!(srv
        .proc()
        .wait_stderr("unable to receive cookie at server: timed out", READY));
}

fn trickled_parameters_are_cut_10_s_after_param_exchange() {
    let srv = Server::start(&["--max-tests", "2"]);
    let s = handshake(&srv);
    let t0 = Instant::now();
    let held = cut_while_serving(
        &srv,
        s,
        framed_json(&tcp_params(1)),
        Duration::from_millis(500),
        t0,
        "unable to receive parameters from client: timed out after 10 s",
    );
    assert!(within(held, 9_900, 11_000), "held {held:?}");
}

fn trickled_results_are_cut_30_s_after_test_end() {
    let srv = Server::start(&["--max-tests", "2"]);
    let (mut ctl, data) = running_test(&srv);
    ctl.write_all(&[TEST_END]).unwrap();
    expect_state(&mut ctl, EXCHANGE_RESULTS);
    let t0 = Instant::now();
    drop(data);
    let held = cut_while_serving(
        &srv,
        ctl,
        framed_json(&client_results(0)),
        Duration::from_millis(500),
        t0,
        "unable to receive results: timed out after 30 s",
    );
    assert!(within(held, 29_900, 31_000), "held {held:?}");
}

fn repeated_test_start_bytes_do_not_extend_stream_setup() {
    // TEST_START from a client is ignored, as by iperf3; after CREATE_STREAMS a
    // client that opens no stream and repeats it is cut after 30 s + 250 ms.
    let srv = Server::start(&["--max-tests", "2"]);
    let mut s = handshake(&srv);
    send_json(&mut s, &tcp_params(1));
    expect_state(&mut s, CREATE_STREAMS);
    let t = std::thread::spawn(move || trickle(&mut s, &[TEST_START], Duration::from_millis(300)));
    served_at_once(&srv);
    let held = t.join().unwrap();
    assert!(within(held, 29_500, 33_000), "held {held:?}");
    assert!(srv.proc().wait_stderr(
        "unable to accept stream connection: timed out after 30.2 s",
        READY
    ));
}

#[test]
fn three_hundred_idle_connections_do_not_stop_a_client() {
    let srv = Server::start(&[]);
    let pid = srv.proc().pid();
    // The baseline once the server is idle and listening.
    let base = fd_count(pid);
    let idle: Vec<TcpStream> = (0..300).map(|_| connect(&srv)).collect();
    served_at_once(&srv);
    drop(idle);
    // Every idle connection's descriptor is closed again (they go when they
    // close, or as the oldest when the handshake set is full).
    let deadline = Instant::now() + READY;
    while fd_count(pid) > base && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fd_count(pid), base, "descriptors left open");
    served_at_once(&srv);
}

#[test]
fn a_reverse_test_without_end_stops_when_the_client_stops_reading() {
    // -t 0 -R: the server sends forever; a client that freezes must not hold it.
    let srv = Server::start(&["--rcv-timeout", "2000"]);
    let frozen = srv.spawn_client(&["-t", "0", "-R"]);
    assert!(
        frozen.wait_stdout("sec", Duration::from_secs(5)),
        "{}",
        frozen.stdout()
    );
    frozen.signal(Signal::SIGSTOP);
    let t = Instant::now();
    assert!(
        srv.proc().wait_stderr(
            "unable to write to stream socket: nothing could be sent for 2 s",
            Duration::from_secs(10)
        ),
        "{}",
        srv.stderr()
    );
    // 2 s without progress once the socket buffers are full.
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    served_at_once(&srv);
    frozen.signal(Signal::SIGKILL);
}

#[test]
fn a_bidir_test_without_end_stops_when_the_client_stops_sending() {
    // --bidir -t 0 where the client only reads: its sender is stopped (SIGSTOP
    // on the whole process stops reading too), so both directions go idle.
    let srv = Server::start(&["--rcv-timeout", "2000"]);
    let frozen = srv.spawn_client(&["-t", "0", "--bidir"]);
    assert!(
        frozen.wait_stdout("sec", Duration::from_secs(5)),
        "{}",
        frozen.stdout()
    );
    frozen.signal(Signal::SIGSTOP);
    assert!(
        srv.proc().wait_stderr("error - ", Duration::from_secs(10)),
        "{}",
        srv.stderr()
    );
    let err = srv.stderr();
    assert!(
        err.contains("idle timeout for receiving data")
            || err.contains("nothing could be sent for 2 s"),
        "{err}"
    );
    served_at_once(&srv);
    frozen.signal(Signal::SIGKILL);
}

fn a_client_whose_server_freezes_gives_up_at_the_results_deadline() {
    let srv = Server::start(&[]);
    let client = srv.spawn_client(&["-t", "2"]);
    assert!(client.wait_stdout("sec", Duration::from_secs(5)));
    srv.signal(Signal::SIGSTOP);
    let t = Instant::now();
    let out = client.finish(Duration::from_secs(45));
    let took = t.elapsed();
    srv.signal(Signal::SIGCONT);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr.contains(
            "unable to receive control message - port may not be available, the other side \
             may have stopped running, etc.: timed out after 30 s"
        ),
        "{out}"
    );
    // About 1 s of test left, then the 30 s results deadline.
    assert!(within(took, 29_000, 34_000), "{took:?}");
}

#[test]
fn a_client_whose_server_dies_exits_at_once_with_the_reason() {
    let srv = Server::start(&[]);
    let client = srv.spawn_client(&["-t", "10"]);
    assert!(
        client.wait_stdout("sec", Duration::from_secs(5)),
        "{}",
        client.stdout()
    );
    srv.signal(Signal::SIGKILL);
    let t = Instant::now();
    let out = client.finish(Duration::from_secs(15));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(out.code(), Some(1), "{out}");
    // The control connection or a data stream notices first, either way with
    // the reason.
    assert!(
        out.stderr
            .contains("rperf3: error - control socket has closed unexpectedly")
            || out
                .stderr
                .contains("rperf3: error - unable to write to stream socket"),
        "{out}"
    );
}

/// CPU time (user + system) a process has used, in clock ticks.
fn cpu_ticks(pid: nix::unistd::Pid) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the ")" that closes the command name: utime is the 12th.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn out_of_descriptors_the_server_neither_spins_nor_locks_clients_out() {
    // Room for about 30 connections, and 100 idle ones arrive.
    let port = common::free_port();
    let p = port.to_string();
    let bin = common::rperf3();
    let mut srv = common::Proc::spawn(
        "prlimit",
        &["--nofile=48:48", bin.to_str().unwrap(), "-s", "-p", &p],
    );
    common::await_listening(&mut srv, port);
    let idle: Vec<TcpStream> = (0..100)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    assert!(
        srv.wait_stderr(
            "rperf3: error - unable to accept connection from client: Too many open files",
            READY
        ),
        "{}",
        srv.stderr()
    );
    // No busy loop: over 2 s the server uses a few percent of a core at most.
    let before = cpu_ticks(srv.pid());
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(srv.pid()) - before;
    assert!(used <= 10, "{used} ticks in 2 s");
    // A real client behind the flood still gets in, at once: the oldest idle
    // handshakes make room for it and for its data stream.
    let t = Instant::now();
    let out = common::run_client(
        &["-c", "127.0.0.1", "-p", &p, "-n", "10M"],
        Duration::from_secs(30),
    );
    out.assert_ok();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    drop(idle);
}

/// The control deadlines (10 s: cookie, parameters; 30 s: results, stream
/// setup, a frozen server) wait side by side: each holds its own server, and
/// the waits are idle time.
#[test]
fn control_deadlines_hold() {
    std::thread::scope(|s| {
        let runs = [
            s.spawn(a_trickled_cookie_is_cut_at_10_s),
            s.spawn(trickled_parameters_are_cut_10_s_after_param_exchange),
            s.spawn(trickled_results_are_cut_30_s_after_test_end),
            s.spawn(repeated_test_start_bytes_do_not_extend_stream_setup),
            s.spawn(a_client_whose_server_freezes_gives_up_at_the_results_deadline),
        ];
        for r in runs {
            if let Err(e) = r.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}
