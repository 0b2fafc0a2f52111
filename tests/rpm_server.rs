//! The server's side of `--rpm`, spoken to byte by byte: load connections (the
//! test's cookie marked 'D' or 'U') carry data in their direction while the test
//! runs, close with it, and are refused by a test that did not ask for them.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::raw::*;
use common::Server;
use serde_json::json;

/// Cookie, PARAM_EXCHANGE, parameters with the latency offer (and `rpm` when
/// asked): the server answers LATENCY_READY then CREATE_STREAMS.
fn session(srv: &Server, cookie: &[u8; 37], rpm: bool) -> TcpStream {
    let mut s = handshake_with(srv, cookie);
    let mut p = tcp_params(1);
    p["time"] = json!(30);
    p["rperf3_latency"] = if rpm {
        json!({"v": 1, "rate": 0, "rpm": 1})
    } else {
        json!({"v": 1, "rate": 0})
    };
    send_json(&mut s, &p);
    expect_state(&mut s, 76);
    expect_state(&mut s, CREATE_STREAMS);
    s
}

fn load(srv: &Server, cookie: &[u8; 37], marker: u8) -> TcpStream {
    let mut s = connect(srv);
    let mut c = *cookie;
    c[36] = marker;
    s.write_all(&c).unwrap();
    s
}

#[test]
fn rpm_load_connections_carry_data_and_end_with_the_test() {
    let srv = Server::start(&["-d"]);
    let c = cookie(61);
    let ctrl = session(&srv, &c, true);
    // 'D': the server sends at once, as fast as the connection takes it.
    let mut down = load(&srv, &c, b'D');
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0usize;
    while got < 8 << 20 {
        match down.read(&mut buf) {
            Ok(0) => panic!("closed after {got} bytes"),
            Ok(n) => got += n,
            Err(e) => panic!("after {got} bytes: {e}"),
        }
    }
    // 'U': the server reads; 8 MB cannot fit in the socket buffers alone.
    let mut up = load(&srv, &c, b'U');
    up.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    for _ in 0..128 {
        up.write_all(&buf).expect("the server reads the uplink");
    }
    // The control connection goes: the test ends, and its load connections
    // are shut rather than left sending.
    drop(ctrl);
    let t = Instant::now();
    loop {
        match down.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => assert!(t.elapsed() < Duration::from_secs(5), "still sending"),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("not closed: {e}"),
        }
    }
}

#[test]
fn a_test_without_rpm_closes_load_connections_unserved() {
    let srv = Server::start(&["-d"]);
    let c = cookie(62);
    let _ctrl = session(&srv, &c, false);
    let mut down = load(&srv, &c, b'D');
    assert_eq!(read_to_close(&mut down), Vec::<u8>::new());
    assert!(
        srv.proc()
            .wait_stderr("closed a load connection: the test is not --rpm", READY),
        "{}",
        srv.stderr()
    );
}
