//! Speaking the control protocol byte by byte to a server, as a test client
//! that can misbehave on purpose.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};

use super::Server;

/// A server that lost its client must be listening again within this time
/// (far below its 10 s read deadline).
pub(crate) const READY: Duration = Duration::from_secs(3);

/// Longest wait for one reply from the server.
pub(crate) const REPLY: Duration = Duration::from_secs(5);

pub(crate) const PARAM_EXCHANGE: u8 = 9;
pub(crate) const CREATE_STREAMS: u8 = 10;
pub(crate) const TEST_START: u8 = 1;
pub(crate) const TEST_RUNNING: u8 = 2;
pub(crate) const TEST_END: u8 = 4;
pub(crate) const EXCHANGE_RESULTS: u8 = 13;
pub(crate) const DISPLAY_RESULTS: u8 = 14;
pub(crate) const IPERF_DONE: u8 = 16;
pub(crate) const ACCESS_DENIED: u8 = 0xFF;
pub(crate) const SERVER_ERROR: u8 = 0xFE;

/// A 36-character cookie from iperf3's alphabet, plus the NUL.
pub(crate) const COOKIE: &[u8; 37] = b"rawtestcookie234567abcdefghijklmnopq\0";
/// Another test's cookie.
pub(crate) const COOKIE_2: &[u8; 37] = b"rawtestcookie234567abcdefghijklmnopr\0";

pub(crate) fn connect(srv: &Server) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", srv.port)).expect("connect");
    s.set_read_timeout(Some(REPLY)).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

pub(crate) fn read_byte(s: &mut TcpStream) -> u8 {
    let mut b = [0u8; 1];
    s.read_exact(&mut b).expect("one state byte");
    b[0]
}

pub(crate) fn expect_state(s: &mut TcpStream, want: u8) {
    let got = read_byte(s);
    assert_eq!(got, want, "state byte {got:#04x}, wanted {want:#04x}");
}

/// Everything until the server closes (or the reply deadline passes).
pub(crate) fn read_to_close(s: &mut TcpStream) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return out,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return out,
            Err(e) => panic!("server did not close the connection: {e}; got {out:?}"),
        }
    }
}

/// A JSON document as it goes on the control connection: length, then body.
pub(crate) fn framed_json(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&body);
    out
}

pub(crate) fn send_json(s: &mut TcpStream, v: &Value) {
    s.write_all(&framed_json(v)).unwrap();
}

pub(crate) fn read_json(s: &mut TcpStream) -> Value {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("length prefix");
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut body).expect("JSON body");
    serde_json::from_slice(&body).expect("JSON document")
}

/// The parameters iperf3 3.21 sends for a one-stream TCP test.
pub(crate) fn tcp_params(parallel: i64) -> Value {
    json!({"tcp": true, "omit": 0, "time": 1, "num": 0, "blockcount": 0,
           "parallel": parallel, "len": 131072, "pacing_timer": 1000,
           "client_version": "3.21"})
}

/// A server that failed a session answers with nothing or with SERVER_ERROR
/// and two int32 (error code, errno), then closes. Returns the code, if any.
pub(crate) fn error_or_close(reply: &[u8]) -> Option<i32> {
    if reply.is_empty() {
        return None;
    }
    assert_eq!(reply[0], SERVER_ERROR, "unexpected reply {reply:?}");
    assert_eq!(reply.len(), 9, "SERVER_ERROR + 8 bytes: {reply:?}");
    Some(i32::from_be_bytes(reply[1..5].try_into().unwrap()))
}

/// Cookie, PARAM_EXCHANGE: the common start of the cases below.
pub(crate) fn handshake(srv: &Server) -> TcpStream {
    handshake_with(srv, COOKIE)
}

/// Cookie, PARAM_EXCHANGE, with a given cookie (tests side by side).
pub(crate) fn handshake_with(srv: &Server, cookie: &[u8; 37]) -> TcpStream {
    let mut s = connect(srv);
    s.write_all(cookie).unwrap();
    expect_state(&mut s, PARAM_EXCHANGE);
    s
}

/// A distinct valid cookie for test number `n`.
pub(crate) fn cookie(n: u32) -> [u8; 37] {
    let mut c = *COOKIE;
    let digits = format!("{n:08}");
    for (i, d) in digits.bytes().enumerate() {
        // iperf3's alphabet has no 0 or 1: map digits onto letters.
        c[27 + i] = b'a' + (d - b'0');
    }
    c
}

/// Control connection and one TCP data stream up to TEST_RUNNING.
pub(crate) fn running_test(srv: &Server) -> (TcpStream, TcpStream) {
    running_test_with(srv, COOKIE, &tcp_params(1))
}

/// The same with a given cookie and parameters (one TCP stream).
pub(crate) fn running_test_with(
    srv: &Server,
    cookie: &[u8; 37],
    params: &Value,
) -> (TcpStream, TcpStream) {
    let mut ctl = handshake_with(srv, cookie);
    send_json(&mut ctl, params);
    expect_state(&mut ctl, CREATE_STREAMS);
    let mut data = connect(srv);
    data.write_all(cookie).unwrap();
    expect_state(&mut ctl, TEST_START);
    expect_state(&mut ctl, TEST_RUNNING);
    (ctl, data)
}

/// Client results for one TCP stream that sent `bytes`.
pub(crate) fn client_results(bytes: u64) -> Value {
    json!({"cpu_util_total": 1.0, "cpu_util_user": 0.5, "cpu_util_system": 0.5,
           "sender_has_retransmits": 0,
           "streams": [{"id": 1, "bytes": bytes, "retransmits": 0, "jitter": 0,
                        "errors": 0, "packets": 0, "start_time": 0, "end_time": 0.1}]})
}
