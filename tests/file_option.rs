//! `-F/--file`: a file's bytes cross intact in each direction, between rperf3
//! ends and with stock iperf3 in either role; the `diskfile` report matches
//! iperf3 3.21's; an unopenable file and UDP are refused as iperf3 does.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{iperf3_321, require_tool, run_client, run_program, scratch_file, Server};

const LONG: Duration = Duration::from_secs(60);

/// A file of `len` pseudo-random bytes (not a multiple of any block size).
fn source(len: usize) -> PathBuf {
    let path = scratch_file("src.bin");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let data: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&path, data).unwrap();
    path
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn assert_same(a: &Path, b: &Path) {
    let (x, y) = (std::fs::read(a).unwrap(), std::fs::read(b).unwrap());
    assert_eq!(x.len(), y.len(), "{} vs {}", a.display(), b.display());
    assert!(x == y, "{} and {} differ", a.display(), b.display());
}

/// Runs a client of `program` against `srv` and checks it succeeded.
fn client_of(program: &Path, srv: &Server, extra: &[&str]) -> common::Output {
    let out = run_program(program, &srv.args(extra), LONG);
    assert_eq!(out.code(), Some(0), "{out}");
    out
}

#[test]
fn rperf3_to_rperf3_both_directions() {
    let src = source(3_000_001);
    // Client sends, server stores.
    let dst = scratch_file("dst.bin");
    let srv = Server::start(&["-1", "-F", s(&dst)]);
    let out = srv.client(&["-F", s(&src)]);
    out.assert_ok();
    assert!(
        out.stdout
            .contains("        Sent 2.86 MByte / 2.86 MByte (100%) of "),
        "{out}"
    );
    let srv_out = srv.wait_exit(LONG);
    assert!(srv_out
        .stdout
        .contains("        Sent 2.86 MByte / 2.86 MByte (100%) of "));
    assert_same(&src, &dst);
    // Server sends (-R), client stores.
    let dst = scratch_file("dst-r.bin");
    let srv = Server::start(&["-1", "-F", s(&src)]);
    srv.client(&["-R", "-t", "2", "-F", s(&dst)]).assert_ok();
    srv.wait_exit(LONG);
    assert_same(&src, &dst);
}

#[test]
fn a_file_alone_ends_the_test_at_its_size() {
    let src = source(1_000_000);
    let srv = Server::start(&[]);
    let out = srv.client(&["-F", s(&src), "-J"]);
    out.assert_ok();
    let j = out.json();
    assert_eq!(j["start"]["test_start"]["bytes"], 1_000_000);
    assert_eq!(j["start"]["test_start"]["duration"], 0);
    assert_eq!(j["end"]["sum_sent"]["bytes"], 1_000_000);
    assert!(j["end"]["sum_sent"]["seconds"].as_f64().unwrap() < 5.0);
}

/// The stock iperf3 binaries present: 3.21 (optional extra) and Debian's 3.12.
fn stock_iperf3s() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = iperf3_321().into_iter().collect();
    if require_tool("iperf3") {
        v.push(PathBuf::from("iperf3"));
    }
    v
}

#[test]
fn iperf3_servers_store_what_rperf3_sends_and_send_what_it_stores() {
    let src = source(3_000_001);
    for ip in stock_iperf3s() {
        let dst = scratch_file("dst-stock.bin");
        let srv = Server::start_program(&ip, &["-1", "-F", s(&dst)]);
        srv.client(&["-F", s(&src)]).assert_ok();
        srv.wait_exit(LONG);
        assert_same(&src, &dst);

        let dst = scratch_file("dst-stock-r.bin");
        let srv = Server::start_program(&ip, &["-1", "-F", s(&src)]);
        srv.client(&["-R", "-t", "2", "-F", s(&dst)]).assert_ok();
        srv.wait_exit(LONG);
        assert_same(&src, &dst);
    }
}

#[test]
fn rperf3_servers_store_what_iperf3_clients_send_and_send_them_files() {
    let src = source(2_500_003);
    for c in stock_iperf3s() {
        let dst = scratch_file("dst-from-iperf3.bin");
        let srv = Server::start(&["-1", "-F", s(&dst)]);
        client_of(&c, &srv, &["-F", s(&src)]);
        srv.wait_exit(LONG);
        assert_same(&src, &dst);

        let dst = scratch_file("dst-to-iperf3.bin");
        let srv = Server::start(&["-1", "-F", s(&src)]);
        client_of(&c, &srv, &["-R", "-t", "2", "-F", s(&dst)]);
        srv.wait_exit(LONG);
        assert_same(&src, &dst);
    }
}

fn object_keys(v: &serde_json::Value) -> Vec<String> {
    v.as_object().unwrap().keys().cloned().collect()
}

#[test]
fn json_diskfile_matches_iperf3_321() {
    let Some(ip321) = iperf3_321() else { return };
    let src = source(1_500_000);
    let srv = Server::start(&[]);
    let ours = srv.client(&["-F", s(&src), "-J"]);
    ours.assert_ok();
    let theirs = client_of(&ip321, &srv, &["-F", s(&src), "-J"]);
    let (a, b) = (ours.json(), theirs.json());
    let (sa, sb) = (&a["end"]["streams"][0], &b["end"]["streams"][0]);
    assert_eq!(object_keys(sa), ["sender", "diskfile", "receiver"]);
    assert_eq!(object_keys(sa), object_keys(sb));
    assert_eq!(object_keys(&sa["diskfile"]), object_keys(&sb["diskfile"]));
    for d in [&sa["diskfile"], &sb["diskfile"]] {
        assert_eq!(d["sent"], 1_500_000);
        assert_eq!(d["size"], 1_500_000);
        assert_eq!(d["percent_sent"], 100);
        assert_eq!(d["filename"], s(&src));
    }
    assert_eq!(
        a["start"]["test_start"]["bytes"],
        b["start"]["test_start"]["bytes"]
    );
}

#[test]
fn a_missing_file_is_error_14() {
    let srv = Server::start(&[]);
    let missing = scratch_file("missing.bin");
    let out = srv.client(&["-F", s(&missing)]);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr
            .contains("rperf3: error - unable to open -F file: No such file or directory"),
        "{out}"
    );
}

#[test]
fn udp_file_transfer_is_refused_on_both_sides() {
    let src = source(1000);
    let out = run_client(&["-c", "127.0.0.1", "-u", "-F", s(&src)], LONG);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(out
        .stderr
        .starts_with("rperf3: parameter error - cannot transfer file using UDP\n"));
    // A server given -F refuses UDP tests (error 34).
    let srv = Server::start(&["-F", s(&src)]);
    let out = srv.client(&["-u", "-t", "1"]);
    assert_eq!(out.code(), Some(1), "{out}");
    assert!(
        out.stderr.contains("cannot transfer file using UDP"),
        "{out}"
    );
    if let Some(ip321) = iperf3_321() {
        let out = run_program(&ip321, &srv.args(&["-u", "-t", "1"]), LONG);
        assert_eq!(out.code(), Some(1), "{out}");
        assert!(
            out.stderr
                .contains("error - cannot transfer file using UDP"),
            "{out}"
        );
    }
}
