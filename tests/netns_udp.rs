//! UDP against the kernel's own counts: loss equals an iptables rule's drop
//! counter (single datagrams and offloaded trains, both directions), rate and
//! loss through an overloaded tbf, pacing at 100M/1G/10G counted in the
//! sender's OUTPUT chain, and trains reaching the wire as single datagrams.

use std::time::Duration;

use crate::netns::{
    self, count, json_doc, num, with_retries, Attempt, Pair, Side, DEV, ETH_HEADER, PORT,
};
use crate::{rate_check, rel, roles, run_test, RUN_TIMEOUT, SHAPER_RATE};

/// UDP payload per datagram in these tests.
const UDP_LEN: u32 = 1400;
/// UDP + IPv4 headers: the IP packet of a datagram is `UDP_LEN + 28` bytes.
const UDP_IP_HEADERS: u32 = 8 + 20;

// ------------------------------------------------------- UDP + counting rules

/// iptables match for the test's data only (not the 4-byte UDP handshake, not
/// the TCP control connection), in the direction of the data: single datagrams
/// and, in the sender's OUTPUT chain, trains of them sent with UDP_SEGMENT
/// (netfilter sees a train before the device cuts it up).
fn data_match(reverse: bool) -> Vec<String> {
    let port = if reverse { "--sport" } else { "--dport" };
    let ip_len = format!("{}:65535", UDP_LEN + UDP_IP_HEADERS);
    let port_no = PORT.to_string();
    [
        "-p", "udp", port, &port_no, "-m", "length", "--length", &ip_len,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Appends a rule `match + extra` to `chain` in `side`'s namespace.
fn add_rule(pair: &Pair, side: Side, chain: &str, m: &[String], extra: &[&str]) {
    let mut a = vec!["iptables", "-A", chain];
    a.extend(m.iter().map(String::as_str));
    a.extend_from_slice(extra);
    pair.on(side, &a);
}

/// Counting rules: data datagrams entering the sender's IP output (after the
/// socket accepted them) and passing the receiver's IP input.
fn count_udp_data(pair: &Pair, reverse: bool) {
    let (sender, receiver) = roles(reverse);
    let m = data_match(reverse);
    add_rule(pair, sender, "OUTPUT", &m, &["-j", "ACCEPT"]);
    add_rule(pair, receiver, "INPUT", &m, &["-j", "ACCEPT"]);
}

/// Datagrams in what a rule counted: each packet (a datagram or a train of
/// them) has one IP + UDP header and `UDP_LEN`-byte payloads.
fn datagrams((packets, bytes): (u64, u64)) -> u64 {
    let payload = bytes - packets * u64::from(UDP_IP_HEADERS);
    assert_eq!(
        payload % u64::from(UDP_LEN),
        0,
        "{packets} packets, {bytes} bytes"
    );
    payload / u64::from(UDP_LEN)
}

/// What both UDP tests read from the two documents and the kernel.
struct UdpFigures {
    /// Datagrams the sender reports (its `end.sum_sent.packets`).
    sent: u64,
    /// Datagrams the receiver read: its `end.sum_received.bytes` / length.
    received: u64,
    /// The receiver's `end.sum_received.lost_packets`.
    lost: u64,
    /// The receiver's `end.sum_received.packets`: highest sequence number seen.
    highest: u64,
    /// Kernel: data datagrams through the sender's OUTPUT chain.
    kernel_sent: u64,
    /// Kernel: packets through that chain (fewer when datagrams went as trains).
    kernel_sent_packets: u64,
    /// Kernel: UDP datagrams the receiver's sockets handed to rperf3
    /// (SNMP InDatagrams, counted on read; includes the one handshake datagram).
    kernel_read: u64,
    /// Kernel: datagrams the receiver's socket buffer had no room for.
    rcvbuf_errors: u64,
}

impl UdpFigures {
    fn read(
        pair: &Pair,
        reverse: bool,
        sdoc: &serde_json::Value,
        rdoc: &serde_json::Value,
    ) -> Self {
        let (sender, receiver) = roles(reverse);
        let out = *pair.iptables_counters(sender, "OUTPUT").last().unwrap();
        Self {
            sent: count(sdoc, "end.sum_sent.packets"),
            received: count(rdoc, "end.sum_received.bytes") / u64::from(UDP_LEN),
            lost: count(rdoc, "end.sum_received.lost_packets"),
            highest: count(rdoc, "end.sum_received.packets"),
            kernel_sent: datagrams(out),
            kernel_sent_packets: out.0,
            kernel_read: pair.udp_snmp(receiver, "InDatagrams"),
            rcvbuf_errors: pair.udp_snmp(receiver, "RcvbufErrors"),
        }
    }

    fn summary(&self) -> String {
        format!(
            "sender sent {} (kernel OUTPUT {} in {} packets); receiver read {} (kernel InDatagrams {} incl. 1 \
             handshake; RcvbufErrors {}), highest seq {}, lost {}",
            self.sent,
            self.kernel_sent,
            self.kernel_sent_packets,
            self.received,
            self.kernel_read,
            self.rcvbuf_errors,
            self.highest,
            self.lost
        )
    }

    /// Checks that hold whatever the machine's load: each end counts exactly
    /// what went through its socket, and the loss is the gaps below the
    /// highest sequence number (a veth never reorders).
    fn assert_exact_counts(&self, burst: u32, late: u64, ctx: &str) {
        assert_eq!(
            self.sent, self.kernel_sent,
            "sender's end.sum_sent.packets != datagrams the kernel's OUTPUT chain saw\n{ctx}"
        );
        assert_eq!(
            self.received + self.lost,
            self.highest,
            "received (bytes / {UDP_LEN}) + lost_packets != packets (highest sequence number) \
             in the receiver's end.sum_received\n{ctx}"
        );
        // The receiver's worker may read a datagram or two after the final sample,
        // with `-b rate/N` what one burst queued, and in -R (the server keeps
        // sending until TEST_END) what the path delivers in `late`; those are
        // outside the test, as in iperf3, and the counts above stay consistent
        // without them.
        let after_end = self.kernel_read.saturating_sub(self.received + 1);
        assert!(
            self.received < self.kernel_read && after_end <= u64::from(burst.max(2)) + late,
            "receiver's end.sum_received.bytes / {UDP_LEN} (+1 handshake) vs datagrams the \
             kernel handed to rperf3 (SNMP Udp InDatagrams): {after_end} read after the end\n{ctx}"
        );
        assert!(self.highest <= self.sent, "highest seq beyond sent\n{ctx}");
    }
}

/// Sequence numbers the random drop rule may hit: well below the ~17900
/// datagrams of the test, so every drop is followed by datagrams that arrive.
/// (A receiver sees loss only as gaps below the highest sequence number: a
/// drop among the very last datagrams is invisible to any iperf3 receiver.)
const DROP_SEQ_MAX: u64 = 9000;

/// UDP at 50 Mbit/s while the receiver's INPUT drops 1% of the data datagrams
/// at random: the loss rperf3 reports is exactly the rule's drop counter. With
/// `burst`, datagrams go out in `-b 50M/burst` bursts, each one train sent with
/// segmentation offload, so drops fall in the middle of trains.
fn udp_loss_equals_iptables_drops(reverse: bool, burst: Option<u32>) -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let (_, receiver) = roles(reverse);
    // The iperf3 header's 32-bit sequence number sits 8 bytes into the payload:
    // 16 bytes past the start of the UDP header.
    let seq = format!("0>>22&0x3C@16=1:{DROP_SEQ_MAX}");
    add_rule(
        &pair,
        receiver,
        "INPUT",
        &data_match(reverse),
        &[
            "-m",
            "u32",
            "--u32",
            &seq,
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
    count_udp_data(&pair, reverse);

    let l = UDP_LEN.to_string();
    let rate = burst.map_or("50M".to_string(), |b| format!("50M/{b}"));
    let mut args = vec!["-u", "-b", &rate, "-l", &l, "-t", "4"];
    if reverse {
        args.push("-R");
    }
    let (cdoc, sdoc) = run_test(&pair, &args);
    let (tdoc, rdoc) = if reverse {
        (&sdoc, &cdoc)
    } else {
        (&cdoc, &sdoc)
    };

    let f = UdpFigures::read(&pair, reverse, tdoc, rdoc);
    let dropped = datagrams(pair.iptables_counters(receiver, "INPUT")[0]);
    let stream_lost = count(rdoc, "end.streams.0.udp.lost_packets");
    let client_lost = count(&cdoc, "end.sum_received.lost_packets");
    let lost_percent = num(rdoc, "end.sum_received.lost_percent");
    let client_percent = num(&cdoc, "end.sum_received.lost_percent");
    let client_packets = count(&cdoc, "end.sum_received.packets");
    let ctx = format!(
        "UDP -b {rate}, 1% random drop, reverse={reverse}: iptables dropped {dropped}; rperf3 lost {} \
         (stream {stream_lost}, client's view {client_lost}/{client_packets} = \
         {client_percent:.4}%); {}",
        f.lost,
        f.summary()
    );
    eprintln!("{ctx}");

    assert!(dropped >= 20, "the drop rule hardly fired\n{ctx}");
    if let Some(b) = burst {
        // The bursts really left as trains (when the kernel has the offload).
        let gso = num(tdoc, "start.test_start.gso") == 1.0;
        assert!(
            !gso || f.kernel_sent_packets * u64::from(b) / 2 <= f.kernel_sent,
            "bursts of {b} did not go out as trains\n{ctx}"
        );
    }
    assert!(
        f.highest > DROP_SEQ_MAX,
        "too few datagrams for the drop window\n{ctx}"
    );
    let outcome = if f.lost == dropped {
        Attempt::Pass
    } else {
        // Datagrams the socket buffer refused while rperf3 was descheduled are
        // gaps too: a busy machine, not a counting error.
        assert!(
            f.lost > dropped && f.lost - dropped <= f.rcvbuf_errors,
            "reported loss {} != iptables drops {dropped}\n{ctx}",
            f.lost
        );
        Attempt::Disturbed(format!("receiver socket overflowed\n{ctx}"))
    };
    assert_eq!(stream_lost, f.lost, "stream loss != sum loss\n{ctx}");
    assert_eq!(
        client_lost, f.lost,
        "client's loss != receiver's loss\n{ctx}"
    );
    // The percentage is of the sender's count where the document knows it
    // (iperf3 does so): always on the client, never on a server, which writes
    // its document before the results exchange.
    let rdoc_base = if reverse { f.sent } else { f.highest };
    for (pct, lost, packets) in [
        (lost_percent, f.lost, rdoc_base),
        (client_percent, client_lost, f.sent),
    ] {
        let want = 100.0 * lost as f64 / packets as f64;
        assert!(
            (pct - want).abs() < 1e-9,
            "lost_percent {pct} != 100 x {lost} / {packets} = {want}\n{ctx}"
        );
    }
    // -R: the client stops reading a moment after its final sample while the
    // server still sends; allow what 50 Mbit/s delivers in 1 ms, as the
    // overload test allows its shaper's (a busy host read 4 there).
    let late = if reverse {
        50_000_000 / 8 / (u64::from(UDP_LEN) + 42) / 1000 + 1
    } else {
        0
    };
    f.assert_exact_counts(burst.unwrap_or(1), late, &ctx);
    outcome
}

#[test]
fn udp_loss_equals_iptables_drops_forward() {
    let _one_at_a_time = netns::serial();
    with_retries("UDP random drop", || {
        udp_loss_equals_iptables_drops(false, None)
    });
}

#[test]
fn udp_loss_in_offloaded_trains_equals_iptables_drops() {
    let _one_at_a_time = netns::serial();
    with_retries("UDP trains, random drop", || {
        udp_loss_equals_iptables_drops(false, Some(20))
    });
}

#[test]
fn udp_reverse_loss_in_offloaded_trains_equals_iptables_drops() {
    let _one_at_a_time = netns::serial();
    with_retries("UDP -R trains, random drop", || {
        udp_loss_equals_iptables_drops(true, Some(20))
    });
}

#[test]
fn udp_reverse_loss_equals_iptables_drops() {
    let _one_at_a_time = netns::serial();
    with_retries("UDP -R random drop", || {
        udp_loss_equals_iptables_drops(true, None)
    });
}

// ----------------------------------------------------------- UDP overload + tbf

/// UDP offered at 150 Mbit/s into a 100 Mbit/s tbf on the sender's egress: the
/// receiver's rate is the shaper's, scaled by payload per frame, and the loss
/// rperf3 reports is exactly the datagrams sent but not received, less the few
/// sent after the last one the receiver read.
fn udp_overload_through_tbf(reverse: bool) -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let (sender, _) = roles(reverse);
    // The queue (about 42 datagrams) is shorter than what the socket's send
    // buffer lets the sender have in flight (about 90), so the shaper drops
    // the excess instead of the send buffer slowing the sender down. The 64 KB
    // bucket covers a sender stalled up to ~5 ms.
    pair.on(
        sender,
        &[
            "tc", "qdisc", "add", "dev", DEV, "root", "tbf", "rate", "100mbit", "burst", "64kb",
            "limit", "60kb",
        ],
    );
    count_udp_data(&pair, reverse);

    let l = UDP_LEN.to_string();
    let mut args = vec!["-u", "-b", "150M", "-l", &l, "-t", "4"];
    if reverse {
        args.push("-R");
    }
    let (cdoc, sdoc) = run_test(&pair, &args);
    let (tdoc, rdoc) = if reverse {
        (&sdoc, &cdoc)
    } else {
        (&cdoc, &sdoc)
    };

    let frame = UDP_LEN + UDP_IP_HEADERS + ETH_HEADER;
    let expected = SHAPER_RATE * f64::from(UDP_LEN) / f64::from(frame);
    let measured = num(rdoc, "end.sum_received.bits_per_second");
    let offered = num(tdoc, "end.sum_sent.bits_per_second");
    let f = UdpFigures::read(&pair, reverse, tdoc, rdoc);
    let tail = f.sent - f.highest.min(f.sent);
    let ctx = format!(
        "UDP 150M into tbf 100M reverse={reverse}: received {:.3} Mbit/s vs expected {:.3} \
         (100 Mbit/s x {UDP_LEN}/{frame}), offered {:.3}; rperf3 lost {} vs sent - received = \
         {} ({tail} sent after the highest seq the receiver read); {}\nshaper: {}",
        measured / 1e6,
        expected / 1e6,
        offered / 1e6,
        f.lost,
        f.sent as i64 - f.received as i64,
        f.summary(),
        pair.qdisc_stats(sender)
    );
    eprintln!("{ctx}");

    let rate = rate_check("received rate", measured, expected, 0.02, &ctx);
    // Every datagram the receiver missed is reported lost, except the ones
    // sent after the last it read (no sequence number above them shows the
    // gap: the shaper's drops at the very end, and with -R what the server
    // still sent after the client had stopped reading). Those are few.
    // -R: the client stops reading a moment after its final sample; allow what
    // the 100 Mbit/s shaper delivers in 1 ms (9 frames of 1442 bytes).
    let late = if reverse {
        100_000_000 / 8 / 1442 / 1000 + 1
    } else {
        0
    };
    f.assert_exact_counts(1, late, &ctx);
    assert_eq!(
        (f.lost + tail) as i64,
        f.sent as i64 - f.received as i64,
        "reported loss + tail != sent - received\n{ctx}"
    );
    if f.sent < f.received + f.received / 5 {
        return Attempt::Disturbed(format!("the shaper hardly dropped anything\n{ctx}"));
    }
    if tail > f.sent / 100 {
        return Attempt::Disturbed(format!("the end of the test took long\n{ctx}"));
    }
    rate
}

#[test]
fn udp_overload_rate_and_loss_match_tbf() {
    let _one_at_a_time = netns::serial();
    with_retries("UDP overload through tbf", || {
        udp_overload_through_tbf(false)
    });
}

#[test]
fn udp_reverse_overload_rate_and_loss_match_tbf() {
    let _one_at_a_time = netns::serial();
    with_retries("UDP -R overload through tbf", || {
        udp_overload_through_tbf(true)
    });
}

// ------------------------------------------------------------ pacing

/// Where a pacing test runs: across the veth pair, or on the server
/// namespace's own loopback (this veth pair carries about 8 Gbit/s of UDP
/// here, too little for `-b 10G`).
#[derive(Clone, Copy, PartialEq)]
enum Path {
    Veth,
    Loopback,
}

/// `-u -b rate` for 3 s, counted by the kernel: the data datagrams through the
/// sender's OUTPUT chain and through the receiver's INPUT chain, over the
/// sender's test time, are the asked rate within 0.5%. Trains (segmentation
/// offload) must not let the sender run ahead, and what reaches the receiver
/// must be paced too, not only what the sender's report says.
fn udp_pacing_counted_by_the_kernel(rate: &str, target: f64, path: Path) -> Attempt {
    let Some(pair) = Pair::new() else {
        return Attempt::Skip;
    };
    let l = UDP_LEN.to_string();
    let args = ["-u", "-b", rate, "-l", &l, "-t", "3"];
    let (sender, receiver) = match path {
        Path::Veth => (Side::Client, Side::Server),
        Path::Loopback => (Side::Server, Side::Server),
    };
    let m = data_match(false);
    add_rule(&pair, sender, "OUTPUT", &m, &["-j", "ACCEPT"]);
    add_rule(&pair, receiver, "INPUT", &m, &["-j", "ACCEPT"]);
    let (cdoc, sdoc) = match path {
        Path::Veth => run_test(&pair, &args),
        Path::Loopback => {
            let server = pair.start_server();
            let port = PORT.to_string();
            let mut all = vec![
                env!("CARGO_BIN_EXE_rperf3"),
                "-c",
                "127.0.0.1",
                "-J",
                "-p",
                &port,
            ];
            all.extend_from_slice(&args);
            let client = pair.spawn(Side::Server, &all).finish(RUN_TIMEOUT);
            let server = server.finish(Duration::from_secs(5));
            (json_doc(&client), json_doc(&server))
        }
    };
    let secs = num(&cdoc, "end.sum_sent.seconds");
    let out = datagrams(*pair.iptables_counters(sender, "OUTPUT").last().unwrap());
    let inp = datagrams(*pair.iptables_counters(receiver, "INPUT").last().unwrap());
    let bps = |n: u64| n as f64 * f64::from(UDP_LEN) * 8.0 / secs;
    let ctx = format!(
        "-b {rate} for {secs:.4} s: kernel OUTPUT {out} datagrams ({:.2} Mbit/s), receiver's \
         INPUT {inp} ({:.2} Mbit/s); sender's report {} datagrams; receiver lost {}; \
         offload in effect: gso {} (sender), gro {} (receiver)",
        bps(out) / 1e6,
        bps(inp) / 1e6,
        count(&cdoc, "end.sum_sent.packets"),
        count(&sdoc, "end.sum_received.lost_packets"),
        num(&cdoc, "start.test_start.gso"),
        num(&sdoc, "start.test_start.gro"),
    );
    eprintln!("{ctx}");
    assert_eq!(count(&cdoc, "end.sum_sent.packets"), out, "{ctx}");
    for (what, n) in [("sent", out), ("arrived", inp)] {
        let off = rel(bps(n), target);
        // Above the rate is the pacer's fault whatever the load; below it a
        // sender starved of CPU can explain.
        assert!(
            off <= 0.005,
            "{what}: {:.3}% above the rate\n{ctx}",
            off * 100.0
        );
        if off < -0.005 {
            return Attempt::Disturbed(format!("{what}: {:.3}% below\n{ctx}", -off * 100.0));
        }
    }
    Attempt::Pass
}

#[test]
fn udp_pacing_at_100m_1g_and_10g_counted_by_the_kernel() {
    let _one_at_a_time = netns::serial();
    for (rate, target, path) in [
        ("100M", 100e6, Path::Veth),
        ("1G", 1e9, Path::Veth),
        ("10G", 10e9, Path::Loopback),
    ] {
        with_retries(&format!("UDP pacing at {rate}"), || {
            udp_pacing_counted_by_the_kernel(rate, target, path)
        });
    }
}

// ------------------------------------------------------------ trains on the wire

/// Datagrams sent as offloaded trains (`-b 100M/20`: bursts of 20, one train
/// each) leave the device as ordinary iperf3 datagrams: a capture on the
/// receiving veth shows every one with the `-l` size and the sequence numbers
/// 1, 2, 3, ... without a gap.
#[test]
fn udp_trains_reach_the_wire_as_single_datagrams_in_sequence() {
    let _one_at_a_time = netns::serial();
    if std::process::Command::new("tshark")
        .arg("-v")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "tshark is missing (CI=true makes this a failure)"
        );
        eprintln!("SKIP: tshark is missing");
        return;
    }
    let Some(pair) = Pair::new() else {
        return;
    };
    const COUNT: usize = 2000;
    let filter = format!("udp and dst port {PORT} and greater 100");
    let n = COUNT.to_string();
    let capture = pair.spawn(
        Side::Server,
        &[
            "tshark",
            "-i",
            DEV,
            "-f",
            &filter,
            "-c",
            &n,
            "-T",
            "fields",
            "-e",
            "udp.length",
            "-e",
            "data.data",
        ],
    );
    // The capture is ready once its packet socket exists.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while pair
        .on(Side::Server, &["cat", "/proc/net/packet"])
        .lines()
        .count()
        < 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "tshark did not start capturing"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let l = UDP_LEN.to_string();
    let (cdoc, _) = run_test(&pair, &["-u", "-b", "100M/20", "-l", &l, "-k", &n]);
    let cap = capture.finish(Duration::from_secs(10));
    let gso = num(&cdoc, "start.test_start.gso");
    let mut seqs = Vec::new();
    for line in cap.stdout.lines() {
        let (len, data) = line.split_once('\t').unwrap_or_else(|| panic!("{line:?}"));
        assert_eq!(
            len,
            (UDP_LEN + 8).to_string(),
            "UDP length: {line}\n{cap:?}"
        );
        // The sequence number: payload bytes 8..12.
        seqs.push(u64::from_str_radix(&data[16..24], 16).unwrap());
    }
    let want: Vec<u64> = (1..=COUNT as u64).collect();
    assert_eq!(seqs, want, "test_start.gso = {gso}; {cap:?}");
    assert_eq!(count(&cdoc, "end.sum_sent.packets"), COUNT as u64);
}
