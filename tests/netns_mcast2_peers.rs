//! Multicast with the stock programs on the same bridge as rperf3's iperf 2
//! personality: a stock sender's group reaches rperf3's receiver, rperf3's
//! sender reaches a stock receiver, and a source-specific receiver ignores a
//! second sender. Each receiver's figures are checked against its sender's
//! "Sent" and its own namespace's counters.

use std::time::{Duration, Instant};

use rperf3_app::iperf2::config::*;
use rperf3_report::iperf2::model::{Event2, RowKind2, Tag2};

use crate::netns::cmd::Bg;
use crate::netns::iperf2::{stock_218, stock_221};
use crate::netns_mcast2::{listening, receiver, sender, Bridge, Collect, GROUP, PORT, TTL};
use crate::netns_mcast2_binary::{ssm_counts, ssm_rules};

/// The "Sent N datagrams" count a stock client printed.
pub(crate) fn stock_sent(text: &str) -> u64 {
    text.lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("] Sent ")?;
            rest.split_whitespace().next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no Sent line in:\n{text}"))
}

/// (lost, total) of the last receiver row a stock server printed
/// (`... 0.004 ms 0/258 (0%)`).
pub(crate) fn stock_received(text: &str) -> (u64, u64) {
    text.lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let i = w.iter().position(|x| *x == "ms")?;
            let (lost, total) = w.get(i + 1)?.split_once('/')?;
            Some((lost.parse().ok()?, total.parse().ok()?))
        })
        .next_back()
        .unwrap_or_else(|| panic!("no receiver row in:\n{text}"))
}

fn ours_final(rep: &Collect) -> (u64, u64) {
    rep.0
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            Event2::Final(r) => match r.kind {
                RowKind2::UdpRecv(u) => Some((u.lost, u.total)),
                _ => None,
            },
            _ => None,
        })
        .expect("a receiver total")
}

fn ours_sent(rep: &Collect) -> u64 {
    rep.0
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            Event2::Sent {
                tag: Tag2::Id(1),
                datagrams,
            } => Some(*datagrams),
            _ => None,
        })
        .expect("Sent")
}

/// Starts a program (a stock peer, or rperf3 as `iperf`) inside a namespace.
pub(crate) fn stock(b: &Bridge, part: &str, args: &[&str]) -> Bg {
    let ns = b.ns(part);
    let mut all = vec!["ip", "netns", "exec", ns.as_str()];
    all.extend_from_slice(args);
    Bg::spawn(&all).unwrap_or_else(|e| panic!("cannot start {args:?}: {e}"))
}

#[test]
fn stock_and_ours_share_a_group_both_ways() {
    let _serial = crate::netns::serial();
    let Some(v221) = stock_221() else {
        return;
    };
    let v221 = v221.display().to_string();
    let Some(v218) = stock_218() else {
        return;
    };
    let v218 = v218.display().to_string();
    let Some(b) = Bridge::new() else {
        return;
    };
    b.rules("rx1", 30);
    b.rules("rx2", 20);
    let ttl = TTL.to_string();
    let (ours_rx, h1) = b.spawn("rx1", receiver());
    listening(&ours_rx);
    // `-P 2`: it ends after the stock flow and ours.
    let stock_rx = stock(
        &b,
        "rx2",
        &[&v221, "-s", "-u", "-B", GROUP, "-P", "2", "-p", PORT],
    );
    let stock_rx = b.await_join("rx2", "veth0", GROUP, stock_rx);
    // A stock 2.1.8 sender: rperf3's receiver and 2.2.1's both count it.
    let tx = stock(
        &b,
        "tx",
        &[
            &v218, "-c", GROUP, "-p", PORT, "-u", "-T", &ttl, "-b", "2m", "-t", "2",
        ],
    )
    .finish(Duration::from_secs(15));
    assert!(tx.success(), "{tx}");
    assert_eq!(h1.join().unwrap(), 0);
    let sent = stock_sent(&tx.stdout);
    let (lost, total) = ours_final(&ours_rx);
    let (arrived, dropped, delivered) = b.counters("rx1");
    assert_eq!(total, sent - 1, "{tx}");
    assert_eq!((lost, arrived), (dropped, sent - 2));
    assert_eq!(lost, arrived - delivered);
    // rperf3's sender to the stock receiver (its second flow).
    let mut cfg = sender();
    if let Role2::Client(c) = &mut cfg.role {
        c.end = End2::Time(Duration::from_secs(2));
    }
    let (ours_tx, ht) = b.spawn("tx", cfg);
    assert_eq!(ht.join().unwrap(), 0);
    let served = stock_rx.finish(Duration::from_secs(10));
    assert!(served.success(), "{served}");
    let ours = ours_sent(&ours_tx);
    // Its last row is our flow's total: every datagram we sent, less the
    // ones its namespace dropped (both flows' drops are counted, so the
    // stock receiver's first flow is taken off).
    let (slost, stotal) = stock_received(&served.stdout);
    assert_eq!(stotal, ours - 1, "{served}");
    let (arrived2, dropped2, delivered2) = b.counters("rx2");
    assert_eq!(arrived2, (sent - 2) + (ours - 2), "{served}");
    let first_flow_drops = (sent - 2).div_ceil(20);
    assert_eq!(slost, dropped2 - first_flow_drops, "{served}");
    assert_eq!(dropped2, arrived2 - delivered2);
}

#[test]
fn a_source_specific_receiver_ignores_a_second_sender() {
    let _serial = crate::netns::serial();
    let Some(b) = Bridge::new() else {
        return;
    };
    const SSM: &str = "232.77.1.1";
    let mut rcfg = receiver();
    rcfg.common.bind = Some(Bind2 {
        host: SSM.into(),
        port: None,
        device: Some("veth0".into()),
    });
    if let Role2::Server(s) = &mut rcfg.role {
        s.ssm_source = Some("10.99.0.1".into());
    }
    let (rx, hr) = b.spawn("rx1", rcfg);
    listening(&rx);
    let to_ssm = || {
        let mut c = sender();
        if let Role2::Client(cl) = &mut c.role {
            cl.host = SSM.into();
            cl.end = End2::Time(Duration::from_secs(2));
        }
        c
    };
    // The second sender (10.99.0.3) starts first: an any-source receiver
    // would take its flow. Its first datagram in rx1's namespace is the cue.
    ssm_rules(&b);
    let (other, ho) = b.spawn("rx2", to_ssm());
    let deadline = Instant::now() + Duration::from_secs(5);
    while ssm_counts(&b)[1] == 0 {
        assert!(Instant::now() < deadline, "no datagram from 10.99.0.3");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (tx, ht) = b.spawn("tx", to_ssm());
    assert_eq!(ho.join().unwrap(), 0);
    assert_eq!(ht.join().unwrap(), 0);
    assert_eq!(hr.join().unwrap(), 0);
    let ev = rx.0.lock().unwrap().clone();
    let peers: Vec<String> = ev
        .iter()
        .filter_map(|e| match e {
            Event2::Connected(c) => Some(c.peer.ip().to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(peers, ["10.99.0.1"], "{ev:?}");
    let (lost, total) = ours_final(&rx);
    assert_eq!((lost, total), (0, ours_sent(&tx) - 1));
    assert!(ours_sent(&other) > 100);
    // Its datagrams reached rx1's namespace; the kernel delivered none.
    let c = ssm_counts(&b);
    assert_eq!((c[1], c[3]), (ours_sent(&other) - 2, 0), "{c:?}");
}

#[test]
fn an_ipv6_group_carries_the_hop_limit_and_every_datagram() {
    let _serial = crate::netns::serial();
    let Some(b) = Bridge::new() else {
        return;
    };
    const GROUP6: &str = "ff15::77";
    for (i, part) in ["tx", "rx1"].iter().enumerate() {
        let a = format!("fd99::{}/64", i + 1);
        b.exec(
            part,
            &["ip", "-6", "addr", "add", &a, "dev", "veth0", "nodad"],
        );
    }
    let hl = TTL.to_string();
    b.exec(
        "rx1",
        &[
            "ip6tables",
            "-A",
            "INPUT",
            "-p",
            "udp",
            "--dport",
            PORT,
            "-m",
            "hl",
            "--hl-eq",
            &hl,
        ],
    );
    let mut rcfg = receiver();
    rcfg.common.bind = Some(Bind2 {
        host: GROUP6.into(),
        port: None,
        device: Some("veth0".into()),
    });
    let (rx, hr) = b.spawn("rx1", rcfg);
    listening(&rx);
    let mut scfg = sender();
    if let Role2::Client(c) = &mut scfg.role {
        c.host = GROUP6.into();
        c.end = End2::Time(Duration::from_secs(1));
    }
    // Out by the device named (IPV6_MULTICAST_IF), as `-B %veth0` asks.
    scfg.common.bind = Some(Bind2 {
        host: String::new(),
        port: None,
        device: Some("veth0".into()),
    });
    let (tx, ht) = b.spawn("tx", scfg);
    assert_eq!(ht.join().unwrap(), 0);
    assert_eq!(hr.join().unwrap(), 0);
    let sent = ours_sent(&tx);
    assert_eq!(ours_final(&rx), (0, sent - 1));
    // Every datagram, the FIN too, arrived with the hop limit -T set.
    let listing = b.exec("rx1", &["ip6tables", "-L", "INPUT", "-v", "-n", "-x"]);
    let with_hl = crate::netns::kernel::iptables_rule_packets(&listing)[0];
    assert_eq!(with_hl, sent - 1, "{listing}");
    // IPv6's default datagram: 1450 bytes.
    let settings = tx.0.lock().unwrap().iter().find_map(|e| match e {
        Event2::Settings(s) => Some(s.len),
        _ => None,
    });
    assert_eq!(settings, Some(1450));
}
