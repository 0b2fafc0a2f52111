//! Tests that end badly, seen through `--metrics`: each failure the test
//! provokes (a client killed mid-test, wrong credentials, a client above the
//! server's bitrate limit, a client refused as busy) moves exactly its own
//! `outcome` counter and no other, the client says why in iperf3's words, and
//! the server serves the next client.

use crate::common;

use common::auth::{self, Peer, AUTH_FAILED, MARIO};
use common::prom::{self, outcomes, scrape, scrape_until, OUTCOMES};
use common::*;

/// The outcome counters once exactly `want` (by label) have been counted.
fn expect_outcomes(mport: u16, what: &str, want: &[(&str, f64)]) {
    let expected = OUTCOMES.map(|o| want.iter().find(|(l, _)| *l == o).map_or(0.0, |(_, n)| *n));
    let m = scrape_until(mport, what, |m| {
        outcomes(m) == expected && prom::get(m, "rperf3_tests_running") == 0.0
    });
    // Nothing more arrives afterwards (a late second count of the same test).
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(outcomes(&scrape(mport)), expected, "{what}: {m:#?}");
}

#[test]
fn issue16_a_client_killed_mid_test_counts_as_error() {
    let (srv, mport) = prom::server(&[]);
    let victim = srv.spawn_client(&["-t", "10", "-b", "200M"]);
    scrape_until(mport, "the test running with bytes", |m| {
        prom::get(m, "rperf3_tests_running") == 1.0
            && prom::get(m, "rperf3_bytes_received_total{protocol=\"tcp\"}") > 0.0
    });
    victim.signal(Signal::SIGKILL);
    let out = victim.finish(CLIENT_TIMEOUT);
    assert_eq!(out.code(), None, "killed by a signal: {out}");
    expect_outcomes(mport, "the killed test counted", &[("error", 1.0)]);
    // The server says what ended it, in iperf3's words, and serves the next
    // client.
    assert!(
        srv.proc().wait_stderr(
            "rperf3: the client has unexpectedly closed the connection\n",
            CLIENT_TIMEOUT
        ),
        "{}",
        srv.stderr()
    );
    srv.client(&["-n", "1M"]).assert_ok();
    expect_outcomes(
        mport,
        "the next test counted",
        &[("ok", 1.0), ("error", 1.0)],
    );
}

#[test]
fn issue16_a_wrong_password_counts_as_auth_failed() {
    let users = auth::users_file(&format!("{MARIO}\n"));
    let mport = free_port();
    let addr = format!("127.0.0.1:{mport}");
    let srv = auth::start_server(Peer::Ours, &users, &["--metrics", &addr]).expect("rperf3");
    let mut peers = vec![Peer::Ours];
    // A stock client that fails authentication lands in the same counter.
    if require_tool("iperf3") {
        peers.push(Peer::Iperf312);
    }
    for (i, peer) in peers.iter().enumerate() {
        let out = auth::mario(*peer, &srv, "not-rossi");
        assert_eq!(out.code(), Some(1), "{peer:?}: {out}");
        assert!(out.stderr.contains(AUTH_FAILED), "{peer:?}: {out}");
        let n = (i + 1) as f64;
        expect_outcomes(mport, "the refused login counted", &[("auth_failed", n)]);
    }
    // The right password still gets in.
    auth::mario(Peer::Ours, &srv, "rossi").assert_ok();
    let n = peers.len() as f64;
    expect_outcomes(
        mport,
        "the good login counted",
        &[("ok", 1.0), ("auth_failed", n)],
    );
}

#[test]
fn issue16_a_test_above_the_bitrate_limit_counts_as_error() {
    // 20 Mbit/s averaged over 1 s: an unpaced loopback test exceeds it in
    // its first second and is stopped; one asking for more up front is
    // refused at the parameters.
    let (srv, mport) = prom::server(&["--server-bitrate-limit", "20M/1"]);
    let want = "total required bandwidth is larger than server limit";
    for (args, n) in [
        (&["-t", "5"][..], 1.0),
        (&["-t", "1", "-b", "50M"][..], 2.0),
    ] {
        let t = std::time::Instant::now();
        let out = srv.client(args);
        assert_eq!(out.code(), Some(1), "{out}");
        assert!(out.stderr.contains(want), "{out}");
        assert!(
            t.elapsed() < std::time::Duration::from_secs(4),
            "stopped after {:?}",
            t.elapsed()
        );
        expect_outcomes(mport, "the stopped test counted", &[("error", n)]);
    }
    // Within the limit, a test runs to its end.
    srv.client(&["-t", "1", "-b", "10M"]).assert_ok();
    expect_outcomes(
        mport,
        "the paced test counted",
        &[("ok", 1.0), ("error", 2.0)],
    );
}

#[test]
fn issue16_a_stock_client_refused_as_busy_counts_as_refused() {
    let program = if let Some(p) = iperf3_321() {
        p
    } else if require_tool("iperf3") {
        "iperf3".into()
    } else {
        return;
    };
    let (srv, mport) = prom::server(&[]);
    let first = srv.spawn_client(&["-t", "3"]);
    scrape_until(mport, "one test running", |m| {
        prom::get(m, "rperf3_tests_running") == 1.0
    });
    let busy = run_program(&program, &srv.args(&["-t", "1"]), CLIENT_TIMEOUT);
    assert_eq!(busy.code(), Some(1), "{busy}");
    assert!(
        busy.stderr
            .contains("the server is busy running a test. try again later"),
        "{busy}"
    );
    // Counted at once, while the first test still runs.
    let m = scrape_until(mport, "the refusal counted", |m| {
        prom::outcome(m, "refused") == 1.0
    });
    assert_eq!(prom::get(&m, "rperf3_tests_running"), 1.0, "{m:#?}");
    first.finish(CLIENT_TIMEOUT).assert_ok();
    expect_outcomes(
        mport,
        "the first test counted",
        &[("ok", 1.0), ("refused", 1.0)],
    );
}
