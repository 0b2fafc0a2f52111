//! Hostile parameter exchanges against a running server: lengths no document
//! can have (huge, negative as iperf3's signed int reads them), bytes that are
//! not UTF-8, numbers of the wrong type or far out of range. Each gets the
//! answer iperf3 3.21 gives to the same bytes (checked against it when it is
//! here), the server says why, and the next real client is served at once.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use common::raw::*;
use common::{iperf3_321, Server};
use serde_json::{json, Value};

/// What a server answered a parameters document with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// A state byte (CREATE_STREAMS: the parameters were taken).
    State(u8),
    /// SERVER_ERROR with this iperf3 error code.
    Error(i32),
    /// The connection closed without a word.
    Closed,
}

/// One hostile exchange.
struct Case {
    what: &'static str,
    /// What follows PARAM_EXCHANGE on the wire.
    bytes: Vec<u8>,
    /// iperf3 3.21's reply to these bytes.
    reply: Reply,
    /// What rperf3's server logs, when it refuses.
    logged: &'static str,
}

/// The parameters of a one-stream TCP test with `key` set to `value`.
fn params_with(key: &str, value: Value) -> Vec<u8> {
    let mut p = tcp_params(1);
    p[key] = value;
    framed_json(&p)
}

const RECV_PARAMS: &str = "error - unable to receive parameters from client";

fn cases() -> Vec<Case> {
    let length = |n: u32| n.to_be_bytes().to_vec();
    // A whole test's parameters with `--extra-data` that is not UTF-8
    // (Latin-1 "café"), as an iperf3 client in a Latin-1 locale sends it:
    // cJSON takes string bytes as they come.
    let latin1 = {
        let text = serde_json::to_string(&tcp_params(1)).unwrap();
        let mut body = text.trim_end_matches('}').as_bytes().to_vec();
        body.extend_from_slice(b",\"extra_data\":\"caf\xe9\"}");
        let mut v = length(body.len() as u32);
        v.extend_from_slice(&body);
        v
    };
    vec![
        Case {
            what: "a 4 GB document",
            bytes: length(0xFFFF_FFF0),
            reply: Reply::Error(114),
            logged: RECV_PARAMS,
        },
        Case {
            what: "length -1",
            bytes: length(u32::MAX),
            reply: Reply::Error(114),
            logged: RECV_PARAMS,
        },
        Case {
            what: "length i32::MIN",
            bytes: length(0x8000_0000),
            reply: Reply::Error(114),
            logged: RECV_PARAMS,
        },
        Case {
            what: "a string that is not UTF-8",
            bytes: latin1,
            reply: Reply::State(CREATE_STREAMS),
            logged: "",
        },
        Case {
            what: "\"parallel\": \"x\"",
            bytes: params_with("parallel", json!("x")),
            reply: Reply::State(CREATE_STREAMS),
            logged: "",
        },
        Case {
            what: "\"len\": [1]",
            bytes: params_with("len", json!([1])),
            reply: Reply::State(CREATE_STREAMS),
            logged: "",
        },
        Case {
            what: "\"time\": -1",
            bytes: params_with("time", json!(-1)),
            reply: Reply::Error(5),
            logged: "error - test duration valid values are 0 to 86400 seconds",
        },
        Case {
            what: "\"time\": 1e300",
            bytes: params_with("time", json!(1e300)),
            reply: Reply::Error(5),
            logged: "error - test duration valid values are 0 to 86400 seconds",
        },
        Case {
            what: "\"parallel\": 1e300",
            bytes: params_with("parallel", json!(1e300)),
            reply: Reply::Error(6),
            logged: "error - invalid number of parallel streams (min = 1, max = 128)",
        },
        Case {
            what: "\"parallel\": -2147483649",
            bytes: params_with("parallel", json!(-2_147_483_649_i64)),
            reply: Reply::Error(6),
            logged: "error - invalid number of parallel streams (min = 1, max = 128)",
        },
    ]
}

/// Sends a case after the handshake and reads the server's first answer.
fn exchange(srv: &Server, case: &Case) -> (Reply, std::net::TcpStream) {
    let mut s = handshake(srv);
    s.write_all(&case.bytes).unwrap();
    let reply = read_to_close_or_state(&mut s);
    (reply, s)
}

/// The first reply: a state byte other than SERVER_ERROR is returned at once;
/// SERVER_ERROR is read with its code.
fn read_to_close_or_state(s: &mut std::net::TcpStream) -> Reply {
    use std::io::Read;
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(0) => Reply::Closed,
        Ok(_) if b[0] == SERVER_ERROR => {
            let mut rest = vec![SERVER_ERROR];
            rest.extend(read_to_close(s));
            error_or_close(&rest).map_or(Reply::Closed, Reply::Error)
        }
        Ok(_) => Reply::State(b[0]),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Reply::Closed,
        Err(e) => panic!("no reply: {e}"),
    }
}

#[test]
fn issue16_hostile_parameters_get_iperf3s_answer_and_the_next_client_is_served() {
    let cases = cases();
    // iperf3 3.21, when here, gives the answers the table says.
    if let Some(p) = iperf3_321() {
        let stock = Server::start_program(Path::new(&p), &["--forceflush"]);
        for (i, case) in cases.iter().enumerate() {
            // iperf3 listens anew after each session.
            assert!(stock.wait_banners(i + 1, READY), "{}", stock.stdout());
            let (reply, s) = exchange(&stock, case);
            drop(s);
            assert_eq!(reply, case.reply, "iperf3 3.21, {}", case.what);
        }
    }
    let srv = Server::start(&[]);
    for (i, case) in cases.iter().enumerate() {
        let (reply, s) = exchange(&srv, case);
        assert_eq!(reply, case.reply, "{}\n{}", case.what, srv.stderr());
        if reply == Reply::State(CREATE_STREAMS) {
            // Taken with the bad value ignored: one stream (the default) starts
            // the test.
            let mut ctl = s;
            let mut data = connect(&srv);
            data.write_all(COOKIE).unwrap();
            expect_state(&mut ctl, TEST_START);
            expect_state(&mut ctl, TEST_RUNNING);
            drop((ctl, data));
        } else {
            drop(s);
            assert!(
                srv.proc().wait_stderr(case.logged, READY),
                "{}: server did not log {:?}:\n{}",
                case.what,
                case.logged,
                srv.stderr()
            );
        }
        // Back to listening, and a real client is served at once.
        assert!(srv.wait_banners(2 * i + 2, READY), "{}", srv.stdout());
        let t = Instant::now();
        srv.client(&["-n", "1M"]).assert_ok();
        assert!(
            t.elapsed() < Duration::from_secs(2),
            "{}: next client took {:?}",
            case.what,
            t.elapsed()
        );
    }
}

#[test]
fn issue16_a_stock_clients_latin1_extra_data_is_taken() {
    if !common::require_tool("iperf3") {
        return;
    }
    let srv = Server::start(&[]);
    // The shell passes the byte 0xE9 as it is; iperf3 3.12 puts it in its
    // parameters unchanged.
    let cmd = format!(
        "exec iperf3 -c 127.0.0.1 -p {} -n 1M -J --extra-data \"$(printf 'caf\\351')\"",
        srv.port
    );
    let out = common::run_program("sh", &["-c", &cmd], common::CLIENT_TIMEOUT);
    let doc = out.assert_ok().json();
    common::json::assert_no_error(&doc);
    // The whole -n went out, and the server received from it (what was
    // still in flight at TEST_END is not counted, as by iperf3's own server).
    assert_eq!(common::json::num(&doc, "end.sum_sent.bytes"), 1048576.0);
    assert!(
        common::json::num(&doc, "end.sum_received.bytes") > 0.0,
        "{out}"
    );
}
