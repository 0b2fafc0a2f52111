//! UDP between rperf3 and Debian's iperf3 3.12, both ways round, `-J` on both
//! ends: packets, loss and bytes must reconcile between the two documents, and
//! multi-stream handshakes (several streams on one UDP port) must never fail.
//! Against iperf3 3.21 with `--gsro`, both ends send and receive datagram
//! trains (UDP segmentation / receive offload) and the figures still reconcile.

use crate::common;

use common::interop::{run, run_with, Mode, Pairing};
use common::json::num;

macro_rules! both_ways {
    ($name:ident, $body:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn ours_to_iperf3() {
                if common::require_tool("iperf3") {
                    ($body)(Pairing::OursToIperf3);
                }
            }

            #[test]
            fn iperf3_to_ours() {
                if common::require_tool("iperf3") {
                    ($body)(Pairing::Iperf3ToOurs);
                }
            }
        }
    };
}

/// One UDP test: clean on both sides, right stream count, figures reconcile.
/// Returns the problems found (empty when all is well).
fn udp(p: Pairing, args: &[&str], mode: Mode, streams: usize) -> Vec<String> {
    let mut r = run(p, args);
    if !r.problems.is_empty() {
        return vec![format!("{}\n{}", r.problems.join("; "), r.transcript)];
    }
    let per_direction = if mode == Mode::Bidir { 2 } else { 1 };
    r.check_stream_counts(streams * per_direction);
    r.check_udp_accounting(mode);
    r.check_duration(1.0);
    if r.problems.is_empty() {
        Vec::new()
    } else {
        vec![format!("{}\n{}", r.problems.join("\n  "), r.transcript)]
    }
}

/// One UDP test against iperf3 3.21 with `--gsro`: figures reconcile, and each
/// side's `test_start` says offload is on (rperf3's: for the directions it runs,
/// where the kernel has it; iperf3's: as asked).
fn udp_321_gsro(p: Pairing, args: &[&str], mode: Mode) {
    let Some(peer) = common::iperf3_321() else {
        return;
    };
    let mut a = vec!["--gsro"];
    a.extend_from_slice(args);
    let mut r = run_with(&peer, p, &a);
    r.assert_clean();
    r.check_stream_counts(if mode == Mode::Bidir { 2 } else { 1 });
    r.check_udp_accounting(mode);
    r.assert_clean();
    let ours = match p {
        Pairing::OursToIperf3 => &r.client,
        Pairing::Iperf3ToOurs => &r.server,
    };
    let theirs = match p {
        Pairing::OursToIperf3 => &r.server,
        Pairing::Iperf3ToOurs => &r.client,
    };
    // iperf3 3.21 writes what `--gsro` asked for.
    for k in ["gso", "gro"] {
        assert_eq!(
            num(theirs, &format!("start.test_start.{k}")),
            1.0,
            "{}",
            r.transcript
        );
    }
    // rperf3: segmentation where it sends, receive offload where it receives.
    let ours_client = matches!(p, Pairing::OursToIperf3);
    let sends = mode == Mode::Bidir || (mode == Mode::Normal) == ours_client;
    let receives = mode == Mode::Bidir || (mode == Mode::Reverse) == ours_client;
    let want = |b: bool| if b { 1.0 } else { 0.0 };
    assert_eq!(
        num(ours, "start.test_start.gso"),
        want(sends),
        "{}",
        r.transcript
    );
    assert_eq!(
        num(ours, "start.test_start.gro"),
        want(receives),
        "{}",
        r.transcript
    );
}

both_ways!(gsro_321, |p| {
    udp_321_gsro(p, &["-u", "-b", "200M", "-t", "1"], Mode::Normal);
    udp_321_gsro(p, &["-u", "-b", "200M", "-t", "1", "-R"], Mode::Reverse);
    udp_321_gsro(
        p,
        &["-u", "-b", "100M/20", "-t", "1", "--bidir"],
        Mode::Bidir,
    );
});

fn assert_udp(p: Pairing, args: &[&str], mode: Mode, streams: usize) {
    let problems = udp(p, args, mode, streams);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

both_ways!(normal_10m, |p| {
    assert_udp(p, &["-u", "-b", "10M", "-t", "1"], Mode::Normal, 1);
});

both_ways!(reverse_10m, |p| {
    assert_udp(p, &["-u", "-b", "10M", "-t", "1", "-R"], Mode::Reverse, 1);
});

both_ways!(bidir_10m, |p| {
    assert_udp(
        p,
        &["-u", "-b", "10M", "-t", "1", "--bidir"],
        Mode::Bidir,
        1,
    );
});

both_ways!(parallel_2_10m, |p| {
    assert_udp(
        p,
        &["-u", "-b", "10M", "-t", "1", "-P", "2"],
        Mode::Normal,
        2,
    );
});

both_ways!(counters_64bit, |p| {
    let args = ["-u", "-b", "10M", "-t", "1", "--udp-counters-64bit"];
    assert_udp(p, &args, Mode::Normal, 1);
});

// Sender rate: about what `-b` asked for (paced, per stream).
both_ways!(rate_is_paced, |p| {
    let r = run(p, &["-u", "-b", "10M", "-t", "1"]);
    r.assert_clean();
    let bps = num(&r.client, "end.sum_sent.bits_per_second");
    assert!(
        (9.0e6..11.0e6).contains(&bps),
        "sender rate {bps} bit/s for -b 10M\n{}",
        r.transcript
    );
});

/// Every one of `times` runs must succeed; all failures are listed.
fn repeated(p: Pairing, args: &[&str], mode: Mode, streams: usize, times: usize) {
    let mut failures = Vec::new();
    for i in 0..times {
        for f in udp(p, args, mode, streams) {
            failures.push(format!("run {i}: {f}"));
        }
    }
    assert_eq!(
        failures.len(),
        0,
        "{} of {times} runs failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

both_ways!(parallel_2_ten_times, |p| {
    repeated(p, &["-u", "-P", "2", "-t", "1"], Mode::Normal, 2, 10);
});

both_ways!(bidir_parallel_2_ten_times, |p| {
    repeated(
        p,
        &["-u", "--bidir", "-P", "2", "-t", "1"],
        Mode::Bidir,
        2,
        10,
    );
});
