//! `-m/--mptcp` seen from outside with `ss`: MPTCP data streams with stock
//! servers, and from the rperf3 server at its end of a client's `-m` streams,
//! as iperf3 3.21's server gives them.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{Proc, Server, CLIENT_TIMEOUT};

/// Whether this kernel offers MPTCP (`net.mptcp.enabled`); a failure under CI
/// when it does not.
fn mptcp_enabled() -> bool {
    let enabled = std::fs::read_to_string("/proc/sys/net/mptcp/enabled").unwrap_or_default();
    common::require(enabled.trim() == "1", "MPTCP (net.mptcp.enabled = 1)")
}

#[test]
fn mptcp_data_streams_against_a_mptcp_server() {
    if !(common::require_tool("iperf3") && common::require_tool("ss")) {
        return;
    }
    if !mptcp_enabled() {
        return;
    }
    // A 3.12 server has no MPTCP listener: the kernel falls back to TCP.
    let server = Server::start_program(Path::new("iperf3"), &["-1"]);
    server.client(&["-t", "1", "-m"]).assert_ok();
    let Some(peer) = common::iperf3_321() else {
        return;
    };
    // 3.21 listens with MPTCP when asked: the data stream (only) is MPTCP.
    let server = Server::start_program(&peer, &["-1"]);
    let client = server.spawn_client(&["-t", "3", "-m"]);
    let filter = format!("( dport = :{} )", server.port);
    let deadline = std::time::Instant::now() + Duration::from_secs(8);
    let mut seen = String::new();
    while std::time::Instant::now() < deadline && !seen.contains("tcp-ulp-mptcp") {
        std::thread::sleep(Duration::from_millis(50));
        let out = std::process::Command::new("ss")
            .args(["-tni", "state", "established", &filter])
            .output()
            .expect("ss");
        seen = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    assert_eq!(seen.matches("tcp-ulp-mptcp").count(), 1, "{seen}");
    client.finish(CLIENT_TIMEOUT).assert_ok();
}

/// `ss -Mn` lines (MPTCP sockets) whose local address is on `port`.
fn mptcp_sockets_on(port: u16) -> usize {
    let out = std::process::Command::new("ss")
        .args(["-Mn"])
        .output()
        .expect("ss");
    let suffix = format!(":{port}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(3)
                .is_some_and(|a| a.ends_with(&suffix))
        })
        .count()
}

#[test]
fn mptcp_clients_get_mptcp_data_streams_from_the_rperf3_server_issue_7() {
    if !common::require_tool("ss") {
        return;
    }
    if !mptcp_enabled() {
        return;
    }
    // As with a 3.21 server: the server's end of an -m data stream is an MPTCP
    // socket (ss -M), one per stream; the control connection stays TCP.
    // None: an rperf3 client; Some: the 3.21 peer.
    let mut clients = vec![None];
    clients.extend(common::iperf3_321().map(Some));
    for peer in clients {
        let server = Server::start(&["-1"]);
        let args = ["-t", "3", "-m", "-P", "2"];
        let client = match peer {
            None => server.spawn_client(&args),
            Some(p) => Proc::spawn(p, &server.args(&args)),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(8);
        let mut n = 0;
        while std::time::Instant::now() < deadline && n < 2 {
            std::thread::sleep(Duration::from_millis(50));
            n = mptcp_sockets_on(server.port);
        }
        assert_eq!(n, 2, "server-side MPTCP sockets");
        client.finish(CLIENT_TIMEOUT).assert_ok();
    }
    // Without -m the server's sockets are plain TCP.
    let server = Server::start(&["-1"]);
    let client = server.spawn_client(&["-t", "2"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(8);
    // The control connection and the data stream, at the server's end.
    let filter = format!("( sport = :{} )", server.port);
    let established = || {
        let out = std::process::Command::new("ss")
            .args(["-tnH", "state", "established", &filter])
            .output()
            .expect("ss");
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    while std::time::Instant::now() < deadline && established() < 2 {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(established(), 2);
    assert_eq!(mptcp_sockets_on(server.port), 0);
    client.finish(CLIENT_TIMEOUT).assert_ok();
}
