//! `-A n,m`: the client runs on CPU n and asks the server to run the test on
//! CPU m; seen in /proc, on rperf3 and on stock iperf3 peers.

use crate::common;

use std::time::Duration;

use common::{require_tool, Proc, Server};

/// (thread name, Cpus_allowed_list) of every thread of `pid`.
fn threads(pid: nix::unistd::Pid) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let field = |k: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        out.push((field("Name:"), field("Cpus_allowed_list:")));
    }
    out
}

/// The CPUs a process may use when nobody pinned it.
fn all_cpus() -> String {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap()
        .trim()
        .to_string()
}

fn two_cpus() -> bool {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    common::require(n >= 2, "second CPU to pin apart")
}

/// Starts `client` and waits for its first interval line.
fn running(client: Proc) -> Proc {
    assert!(
        client.wait_stdout("  0.00-1.", Duration::from_secs(10)),
        "{}",
        client.stdout()
    );
    client
}

#[test]
fn the_client_and_the_servers_test_threads_run_where_asked() {
    if !two_cpus() {
        return;
    }
    let srv = Server::start(&["--max-tests", "2"]);
    let client = running(srv.spawn_client(&["-t", "3", "-A", "0,1"]));
    for (name, cpus) in threads(client.pid()) {
        assert_eq!(cpus, "0", "client thread {name}");
    }
    let server = threads(srv.proc().pid());
    for (name, cpus) in &server {
        // Only this test's threads move; the host stays free for others.
        let want = if name.starts_with("test-") || name.starts_with("stream-") {
            "1".to_string()
        } else {
            all_cpus()
        };
        assert_eq!(*cpus, want, "server thread {name}: {server:?}");
    }
    client.finish(Duration::from_secs(30)).assert_ok();
}

#[test]
fn a_cpu_that_does_not_exist_is_an_error_on_either_side() {
    let srv = Server::start(&[]);
    let out = srv.client(&["-t", "1", "-A", "1000"]);
    assert_eq!(out.code(), Some(1), "{out}");
    assert_eq!(
        out.stderr,
        "rperf3: error - unable to set CPU affinity: Invalid argument\n"
    );
    let out = srv.client(&["-t", "1", "-A", "0,1000"]);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr
            .contains("error - unable to set CPU affinity: Invalid argument"),
        "{out}"
    );
    srv.client(&["-n", "1M"]).assert_ok();
}

#[test]
fn stock_iperf3_asks_and_is_asked_for_a_cpu() {
    if !two_cpus() || !require_tool("iperf3") {
        return;
    }
    // A stock client asks the rperf3 server for CPU 0.
    let srv = Server::start(&[]);
    let client = running(Proc::spawn(
        "iperf3",
        &srv.args(&["-t", "3", "-A", "1,0", "--forceflush"]),
    ));
    for (name, cpus) in threads(srv.proc().pid()) {
        if name.starts_with("test-") || name.starts_with("stream-") {
            assert_eq!(cpus, "0", "server thread {name}");
        }
    }
    client.finish(Duration::from_secs(30)).assert_ok();
    // The rperf3 client asks a stock server for CPU 1.
    let stock = Server::start_iperf3(&[]);
    let client = running(stock.spawn_client(&["-t", "3", "-A", "0,1"]));
    let pinned = threads(stock.proc().pid());
    assert!(pinned.iter().all(|(_, c)| c == "1"), "{pinned:?}");
    client.finish(Duration::from_secs(30)).assert_ok();
}
