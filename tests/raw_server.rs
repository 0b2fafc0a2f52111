//! Raw control-connection bytes against our server: silent, short, oversized,
//! malformed and out-of-order clients. Each case checks what the server
//! answers, that it logs an error, and that it is ready for a real client
//! right after.

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::raw::*;
use common::Server;
use serde_json::json;

/// The server logged `what`, is back to listening (its `n`-th banner), and a
/// real client test succeeds.
fn assert_recovered(srv: &Server, n: usize, what: &str) {
    assert!(
        srv.proc().wait_stderr(what, READY),
        "server did not log {what:?}:\n{}",
        srv.stderr()
    );
    assert!(
        srv.wait_banners(n, READY),
        "server not listening again within {READY:?}:\n{}",
        srv.stdout()
    );
    srv.client(&["-n", "10M"]).assert_ok();
}

/// Named to sort first: it waits out the server's cookie deadline (10 s), and
/// starting first lets the other cases run beside it.
#[test]
fn a_silent_client_is_dropped_at_the_cookie_deadline_and_holds_nothing() {
    let srv = Server::start(&[]);
    let mut s = connect(&srv);
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let t0 = Instant::now();
    // Meanwhile a real client is served at once: a connection without a
    // cookie is not a test yet.
    srv.client(&["-n", "10M"]).assert_ok();
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "client waited {:?}",
        t0.elapsed()
    );
    let reply = read_to_close(&mut s);
    let waited = t0.elapsed();
    assert!(reply.is_empty(), "{reply:?}");
    assert!(
        srv.proc()
            .wait_stderr("unable to receive cookie at server: timed out", READY),
        "{}",
        srv.stderr()
    );
    assert!(
        (Duration::from_millis(9_900)..Duration::from_secs(12)).contains(&waited),
        "silent client dropped after {waited:?}, wanted 10 s"
    );
    srv.client(&["-n", "10M"]).assert_ok();
}

#[test]
fn a_test_in_progress_refuses_a_second_client_as_busy() {
    let srv = Server::start(&[]);
    let _first = handshake(&srv);
    // The first client has a slot (its cookie is in): a second is refused at once.
    let mut second = connect(&srv);
    second.write_all(COOKIE_2).unwrap();
    let reply = read_to_close(&mut second);
    assert_eq!(reply, [ACCESS_DENIED], "second control connection");
}

#[test]
fn short_cookie_then_close() {
    let srv = Server::start(&[]);
    let mut s = connect(&srv);
    s.write_all(b"abcdefghij").unwrap();
    drop(s);
    assert!(
        srv.proc().wait_stderr(
            "unable to receive cookie at server: connection closed",
            READY
        ),
        "{}",
        srv.stderr()
    );
    srv.client(&["-n", "10M"]).assert_ok();
}

#[test]
fn oversized_params_length_is_refused() {
    let srv = Server::start(&[]);
    let mut s = handshake(&srv);
    s.write_all(&9000u32.to_be_bytes()).unwrap();
    let code = error_or_close(&read_to_close(&mut s));
    assert!(
        matches!(code, None | Some(114)),
        "code {code:?} (114 = IERECVPARAMS)"
    );
    assert_recovered(&srv, 2, "unable to receive parameters from client");
}

#[test]
fn invalid_json_params_are_refused() {
    let srv = Server::start(&[]);
    let mut s = handshake(&srv);
    s.write_all(&5u32.to_be_bytes()).unwrap();
    s.write_all(b"{nope").unwrap();
    let code = error_or_close(&read_to_close(&mut s));
    assert!(
        matches!(code, None | Some(114)),
        "code {code:?} (114 = IERECVPARAMS)"
    );
    assert_recovered(&srv, 2, "unable to receive parameters from client");
}

#[test]
fn zero_parallel_streams_are_refused() {
    let srv = Server::start(&[]);
    let mut s = handshake(&srv);
    send_json(&mut s, &tcp_params(0));
    let reply = read_to_close(&mut s);
    let code = error_or_close(&reply);
    assert!(
        matches!(code, None | Some(6)),
        "code {code:?} (6 = IENUMSTREAMS)"
    );
    assert_recovered(&srv, 2, "error - ");
}

#[test]
fn client_vanishes_after_create_streams() {
    let srv = Server::start(&[]);
    let mut s = handshake(&srv);
    send_json(&mut s, &tcp_params(1));
    expect_state(&mut s, CREATE_STREAMS);
    drop(s);
    // iperf3's words, without "error - ": it ends such a test as done.
    assert_recovered(
        &srv,
        2,
        "rperf3: the client has unexpectedly closed the connection\n",
    );
}

#[test]
fn unknown_state_byte_ends_the_session() {
    let srv = Server::start(&[]);
    let (mut ctl, _data) = running_test(&srv);
    ctl.write_all(&[0x63]).unwrap();
    let code = error_or_close(&read_to_close(&mut ctl));
    assert!(
        matches!(code, None | Some(110)),
        "code {code:?} (110 = IEMESSAGE)"
    );
    assert_recovered(&srv, 2, "received an unknown control message");
}

#[test]
fn data_connection_with_wrong_cookie_is_refused_and_test_goes_on() {
    let srv = Server::start(&[]);
    let mut ctl = handshake(&srv);
    send_json(&mut ctl, &tcp_params(1));
    expect_state(&mut ctl, CREATE_STREAMS);
    // A stranger's cookie: ACCESS_DENIED on that connection only.
    let mut stranger = connect(&srv);
    stranger
        .write_all(b"wrongcookiewrongcookiewrongcookie234\0")
        .unwrap();
    assert_eq!(read_to_close(&mut stranger), [ACCESS_DENIED]);
    // The right cookie makes the stream, and the test runs to the end.
    let mut data = connect(&srv);
    data.write_all(COOKIE).unwrap();
    expect_state(&mut ctl, TEST_START);
    expect_state(&mut ctl, TEST_RUNNING);
    const SENT: u64 = 1 << 20;
    data.write_all(&vec![0x5a; SENT as usize]).unwrap();
    // TEST_END only once the server has read every byte (its socket's receive
    // queue empty, ours acknowledged), so its count must be exact.
    let ours = data.local_addr().unwrap().port();
    let deadline = Instant::now() + READY;
    while common::tcp_queues(ours, srv.port) != Some((0, 0))
        || common::tcp_queues(srv.port, ours).is_none_or(|(_, rx)| rx != 0)
    {
        assert!(Instant::now() < deadline, "the server never read the data");
        std::thread::sleep(Duration::from_millis(5));
    }
    ctl.write_all(&[TEST_END]).unwrap();
    expect_state(&mut ctl, EXCHANGE_RESULTS);
    send_json(
        &mut ctl,
        &json!({"cpu_util_total": 1.0, "cpu_util_user": 0.5, "cpu_util_system": 0.5,
                "sender_has_retransmits": 0,
                "streams": [{"id": 1, "bytes": SENT, "retransmits": 0, "jitter": 0,
                             "errors": 0, "packets": 0, "start_time": 0, "end_time": 0.1}]}),
    );
    let results = read_json(&mut ctl);
    let streams = results["streams"].as_array().expect("streams array");
    assert_eq!(streams.len(), 1, "{results}");
    assert_eq!(streams[0]["id"], 1, "{results}");
    let got = streams[0]["bytes"].as_u64().expect("bytes");
    assert_eq!(got, SENT, "server's count of what it read");
    assert_eq!(results["sender_has_retransmits"], -1, "a receiving server");
    expect_state(&mut ctl, DISPLAY_RESULTS);
    ctl.write_all(&[IPERF_DONE]).unwrap();
    ctl.shutdown(std::net::Shutdown::Write).unwrap();
    assert_eq!(read_to_close(&mut ctl), Vec::<u8>::new());
    drop(data);
    assert!(srv.wait_banners(2, READY), "{}", srv.stdout());
    assert!(srv.stdout().contains("receiver"), "{}", srv.stdout());
    srv.client(&["-n", "10M"]).assert_ok();
}

#[test]
fn the_hosts_own_errors_go_to_the_logfile() {
    let log = common::scratch_file("host.log");
    let srv = Server::start(&["--logfile", log.to_str().unwrap()]);
    let mut s = connect(&srv);
    s.write_all(b"abcdefghij").unwrap();
    drop(s);
    // A real test after it: its report follows the error in the file, so once
    // the report is there the error must be too.
    srv.client(&["-n", "10M"]).assert_ok();
    let deadline = Instant::now() + READY;
    let text = loop {
        let t = std::fs::read_to_string(&log).unwrap_or_default();
        if t.contains("receiver") || Instant::now() > deadline {
            break t;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        text.contains("rperf3: error - unable to receive cookie at server: connection closed"),
        "{text}"
    );
    let out = srv.stop();
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
}
