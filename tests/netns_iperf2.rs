//! Ground truth for the iperf 2 personality (rperf3 run as `iperf`), as for
//! iperf3: TCP through a tbf equals the shaped rate, UDP loss equals an
//! iptables drop counter, `-b 2000pps` is the rate the kernel counts, and TCP
//! `-b 50M` is what a stock iperf 2.2.1 receiver measures. Figures are read
//! from the CSV reports (`-y C`), which carry exact byte counts.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::netns::cmd::{Bg, Done};
use crate::netns::iperf2::{ours, records, stock_221, total, Record};
use crate::netns::{self, with_retries, Attempt, Listen, Pair, Side, DEV, ETH_HEADER};

/// iperf 2's port (fixed: the namespaces are private).
const PORT2: u16 = 5001;
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
const UDP_LEN: u32 = 1400;

/// Starts `program -s -p 5001 -y C args...` in the server namespace; returns
/// once its socket is in the kernel's table (a probe would be a test).
fn start_server(pair: &Pair, program: &Path, args: &[&str]) -> Bg {
    let port = PORT2.to_string();
    let prog = program.to_str().expect("utf-8 path");
    let mut all = vec![prog, "-s", "-p", &port, "-y", "C"];
    all.extend_from_slice(args);
    let listen = if args.contains(&"-u") {
        Listen::Udp(PORT2)
    } else {
        Listen::Tcp(PORT2)
    };
    pair.spawn_listening(Side::Server, &all, &[listen])
}

/// Starts `program -c SERVER -p 5001 -y C args...` in the client namespace.
fn spawn_client(pair: &Pair, program: &Path, args: &[&str]) -> Bg {
    let port = PORT2.to_string();
    let prog = program.to_str().expect("utf-8 path");
    let mut all = vec![prog, "-c", &pair.server_ip, "-p", &port, "-y", "C"];
    all.extend_from_slice(args);
    pair.spawn(Side::Client, &all)
}

/// Ends a server as a person does (SIGINT): iperf 2 prints its last reports then.
fn stop(server: Bg) -> Done {
    server.interrupt();
    server.finish(Duration::from_secs(5))
}

fn rel(measured: f64, expected: f64) -> f64 {
    (measured - expected) / expected
}

// ---------------------------------------------------------------- TCP + tbf

/// TCP through a 100 Mbit/s tbf: the receiver's goodput after its first
/// second (slow start and the bucket's first burst) is the shaper's rate times
/// payload per frame, with MSS and MTU from the kernel's connection state.
fn tcp_through_tbf(reverse: bool) -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let sender = if reverse { Side::Server } else { Side::Client };
    for side in [Side::Server, Side::Client] {
        pair.on(
            side,
            &["sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"],
        );
    }
    pair.on(
        sender,
        &[
            "tc", "qdisc", "add", "dev", DEV, "root", "tbf", "rate", "100mbit", "burst", "64kb",
            "latency", "50ms",
        ],
    );
    let server = start_server(&pair, &ours(), &["-i", "1"]);
    let mut args = vec!["-t", "5", "-i", "1"];
    if reverse {
        args.push("-R");
    }
    let client = spawn_client(&pair, &ours(), &args);
    let (mss, pmtu) = pair.tcp_mss_pmtu_on(PORT2, sender, Duration::from_secs(3));
    let client = client.finish(RUN_TIMEOUT);
    assert!(client.success(), "client failed: {client}");
    let server = stop(server);
    let receiver_text = if reverse {
        &client.stdout
    } else {
        &server.stdout
    };
    // Whole-second intervals after the first: bytes over their span.
    let later: Vec<Record> = records(receiver_text)
        .into_iter()
        .filter(|r| r.id > 0 && r.start >= 1.0 && r.end - r.start > 0.99 && r.end - r.start < 1.01)
        .collect();
    assert!(
        later.len() >= 3,
        "too few interval records:\n{client}\n{server}"
    );
    let bytes: u64 = later.iter().map(|r| r.bytes).sum();
    let secs: f64 = later.iter().map(|r| r.end - r.start).sum();
    let measured = bytes as f64 * 8.0 / secs;
    let expected = 100e6 * f64::from(mss) / f64::from(pmtu + ETH_HEADER);
    let off = rel(measured, expected);
    let ctx = format!(
        "iperf 2 TCP reverse={reverse} through tbf 100M: {:.3} Mbit/s over {} intervals vs \
         {:.3} expected (mss {mss}, pmtu {pmtu})\nclient: {client}\nserver: {server}",
        measured / 1e6,
        later.len(),
        expected / 1e6
    );
    eprintln!("{}", ctx.lines().next().unwrap_or(""));
    assert!(off <= 0.01, "above what the shaper allows\n{ctx}");
    if off < -0.01 {
        return Attempt::Disturbed(ctx);
    }
    Attempt::Pass
}

#[test]
fn iperf2_tcp_goodput_matches_tbf_rate() {
    let _one_at_a_time = netns::serial();
    with_retries("iperf 2 TCP through tbf", || tcp_through_tbf(false));
}

#[test]
fn iperf2_tcp_reverse_goodput_matches_tbf_rate() {
    let _one_at_a_time = netns::serial();
    with_retries("iperf 2 TCP -R through tbf", || tcp_through_tbf(true));
}

// ------------------------------------------------------- UDP + counting rules

/// Data datagrams of the test (the length excludes nothing else there).
fn udp_match() -> Vec<String> {
    let len = format!("{}:65535", UDP_LEN + 28);
    [
        "-p",
        "udp",
        "--dport",
        &PORT2.to_string(),
        "-m",
        "length",
        "--length",
        &len,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn add_rule(pair: &Pair, side: Side, chain: &str, extra: &[&str]) {
    let m = udp_match();
    let mut a = vec!["iptables", "-A", chain];
    a.extend(m.iter().map(String::as_str));
    a.extend_from_slice(extra);
    pair.on(side, &a);
}

/// UDP at 50 Mbit/s while the receiver's INPUT drops 1% of the data datagrams
/// with sequence numbers 1..9000 (iperf 2's sequence number is the payload's
/// first word): the loss our server reports is exactly the rule's count.
fn udp_loss_equals_drops() -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    add_rule(
        &pair,
        Side::Server,
        "INPUT",
        &[
            "-m",
            "u32",
            "--u32",
            "0>>22&0x3C@8=1:9000",
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.01",
            "-j",
            "DROP",
        ],
    );
    let server = start_server(&pair, &ours(), &["-u"]);
    let l = UDP_LEN.to_string();
    let client = spawn_client(&pair, &ours(), &["-u", "-b", "50m", "-l", &l, "-t", "4"]);
    let client = client.finish(RUN_TIMEOUT);
    assert!(client.success(), "client failed: {client}");
    let server = stop(server);
    let dropped = pair.iptables_packets(Side::Server, "INPUT")[0];
    let rcvbuf = pair.udp_snmp(Side::Server, "RcvbufErrors");
    let t = total(&server.stdout, 1).unwrap_or_else(|| panic!("no total:\n{server}"));
    let (lost, expected_total) = t.lost_total();
    let ctx = format!(
        "iperf 2 UDP 50m, 1% drop: iptables dropped {dropped}, server lost {lost} of \
         {expected_total} (RcvbufErrors {rcvbuf})\nclient: {client}\nserver: {server}"
    );
    eprintln!("{}", ctx.lines().next().unwrap_or(""));
    assert!(dropped >= 20, "the drop rule hardly fired\n{ctx}");
    assert!(expected_total > 9000, "too few datagrams\n{ctx}");
    if lost == dropped {
        return Attempt::Pass;
    }
    assert!(
        lost > dropped && lost - dropped <= rcvbuf,
        "reported loss != iptables drops\n{ctx}"
    );
    Attempt::Disturbed(format!("receiver socket overflowed\n{ctx}"))
}

#[test]
fn iperf2_udp_loss_equals_iptables_drops() {
    let _one_at_a_time = netns::serial();
    with_retries("iperf 2 UDP random drop", udp_loss_equals_drops);
}

/// `-b 2000pps`: the datagrams the receiver's INPUT chain counts between two
/// readings well inside the test (not the sender's OUTPUT: a sender woken
/// late sends its due datagrams as one UDP_SEGMENT train, which OUTPUT
/// counts once; the device cuts it, so INPUT counts each), over the time between the readings (each
/// reading timed at its midpoint), are 2000 per second within 0.5% plus what the
/// readings' own durations leave unknown (an iptables run takes tens of ms on a
/// loaded machine).
fn pps_counted_by_the_kernel() -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    add_rule(&pair, Side::Server, "INPUT", &["-j", "ACCEPT"]);
    let server = start_server(&pair, &ours(), &["-u"]);
    let l = UDP_LEN.to_string();
    let client = spawn_client(
        &pair,
        &ours(),
        &["-u", "-b", "2000pps", "-l", &l, "-t", "6"],
    );
    let read = || {
        let before = Instant::now();
        let n = pair.iptables_packets(Side::Server, "INPUT")[0];
        let after = Instant::now();
        (n, before + (after - before) / 2, (after - before) / 2)
    };
    // Readings at about 1.5 s and 5 s: none in the first datagrams' start-up.
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(1500) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (n1, at1, half1) = read();
    while t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (n2, at2, half2) = read();
    let client = client.finish(RUN_TIMEOUT);
    assert!(client.success(), "client failed: {client}");
    let server = stop(server);
    let rate = (n2 - n1) as f64 / (at2 - at1).as_secs_f64();
    let ctx = format!(
        "iperf 2 -b 2000pps: kernel counted {} datagrams in {:.3} s (readings +-{:.1} ms) = \
         {rate:.1}/s\nclient: {client}\nserver: {server}",
        n2 - n1,
        (at2 - at1).as_secs_f64(),
        (half1 + half2).as_secs_f64() * 1e3
    );
    eprintln!("{}", ctx.lines().next().unwrap_or(""));
    let off = rel(rate, 2000.0);
    let unknown = (half1 + half2).as_secs_f64() / (at2 - at1).as_secs_f64();
    if off.abs() <= 0.005 + unknown {
        return Attempt::Pass;
    }
    // A sender never runs ahead of its schedule.
    assert!(off < 0.005 + unknown, "faster than asked\n{ctx}");
    Attempt::Disturbed(ctx)
}

#[test]
fn iperf2_pps_rate_counted_by_the_kernel() {
    let _one_at_a_time = netns::serial();
    with_retries("iperf 2 -b 2000pps", pps_counted_by_the_kernel);
}

/// TCP `-b 50M` (iperf 2: 50 x 2^20 bit/s) from our client, as a stock iperf
/// 2.2.1 server measures it: within 1%.
fn tcp_rate_limit_at_a_stock_receiver() -> Attempt {
    let Some(stock) = stock_221() else {
        return Attempt::Skip;
    };
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let server = start_server(&pair, &stock, &[]);
    let client = spawn_client(&pair, &ours(), &["-b", "50M", "-t", "4"]);
    let client = client.finish(RUN_TIMEOUT);
    assert!(client.success(), "client failed: {client}");
    let server = stop(server);
    let t = total(&server.stdout, 1).unwrap_or_else(|| panic!("no total:\n{server}"));
    let rate = t.bytes as f64 * 8.0 / t.end;
    let target = 50.0 * 1_048_576.0;
    let off = rel(rate, target);
    let ctx = format!(
        "iperf 2 TCP -b 50M: the 2.2.1 receiver counted {} bytes in {:.2} s = {:.3} Mbit/s vs \
         {:.3}\nclient: {client}\nserver: {server}",
        t.bytes,
        t.end,
        rate / 1e6,
        target / 1e6
    );
    eprintln!("{}", ctx.lines().next().unwrap_or(""));
    assert!(off <= 0.01, "faster than asked\n{ctx}");
    if off < -0.01 {
        return Attempt::Disturbed(ctx);
    }
    Attempt::Pass
}

#[test]
fn iperf2_tcp_rate_limit_at_a_stock_receiver() {
    let _one_at_a_time = netns::serial();
    with_retries("iperf 2 TCP -b 50M", tcp_rate_limit_at_a_stock_receiver);
}
