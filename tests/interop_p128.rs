//! TCP with iperf3's most streams (`-P 128`) against stock iperf3 3.12 and
//! 3.21 in both roles: the test completes, both documents list 128 streams,
//! and every stream's figures agree between the two sides.

use crate::common;

use std::path::PathBuf;

use common::interop::{self, Mode, Pairing};
use common::tcp_streams::check_against_stock;
use common::*;

fn p128(pairing: Pairing, mode: Mode) {
    let mut peers: Vec<(&str, PathBuf)> = Vec::new();
    if require_tool("iperf3") {
        peers.push(("3.12", "iperf3".into()));
    }
    if let Some(p) = iperf3_321() {
        peers.push(("3.21", p));
    }
    let client_sends = mode == Mode::Normal;
    for (version, stock) in peers {
        let mut args = vec!["-P", "128", "-t", "1"];
        if !client_sends {
            args.push("-R");
        }
        let mut r = interop::run_with(&stock, pairing, &args);
        if r.problems.is_empty() {
            r.check_stream_counts(128);
            check_against_stock(&mut r, 128, version, pairing, client_sends);
        }
        assert!(
            r.problems.is_empty(),
            "{pairing:?} iperf3 {version} {args:?}: {:?}\n{}",
            r.problems,
            r.transcript
        );
    }
}

#[test]
fn issue16_p128_stock_clients_against_rperf3_server() {
    let _gate = load::heavy();
    p128(Pairing::Iperf3ToOurs, Mode::Normal);
    p128(Pairing::Iperf3ToOurs, Mode::Reverse);
}

#[test]
fn issue16_p128_rperf3_client_against_stock_servers() {
    let _gate = load::heavy();
    p128(Pairing::OursToIperf3, Mode::Normal);
    p128(Pairing::OursToIperf3, Mode::Reverse);
}
