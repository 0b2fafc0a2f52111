//! Multicast as its users type it, run by the binary: rperf3 under the name
//! `iperf` and the stock iperf 2.2.1 and 2.1.8 on the bridge of namespaces,
//! each sending to the others' receivers. A group as the bind address joins
//! it (`-s -u -B GROUP`), `-H` makes the join source-specific, `%dev` picks
//! the interface and `-T` the TTL (hop limit). Each run's figures are held to
//! the receiving namespace's netfilter counters and to the stock end's own
//! report. Receivers run with `-P 1`, so they end after one flow.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use crate::netns::cmd::Bg;
use crate::netns::iperf2::{ours, stock_218, stock_221};
use crate::netns::kernel::iptables_rule_packets;
use crate::netns_mcast2::{Bridge, GROUP, PORT, TTL};
use crate::netns_mcast2_peers::{stock as start, stock_received, stock_sent};

/// A sender of `-t 1` ends well within this.
const SENDER: Duration = Duration::from_secs(10);
/// A receiver ends this soon after its sender (on the flow's FIN).
const RECEIVER: Duration = Duration::from_secs(5);
/// `-T` as the command line spells it.
const TTL_ARG: &str = "3";
const _: () = assert!(TTL == 3);

/// rperf3 as `iperf`, stock 2.2.1 and 2.1.8; `None` (a failure under CI)
/// when a stock one is missing.
fn programs() -> Option<[String; 3]> {
    let v221 = stock_221()?;
    let v218 = stock_218()?;
    Some([ours(), v221, v218].map(|p| p.display().to_string()))
}

/// Which of the three `p` is, for messages.
fn name(p: &str) -> &'static str {
    if p.ends_with("iperf-2.2.1") {
        "2.2.1"
    } else if p == "iperf" {
        "2.1.8"
    } else {
        "ours"
    }
}

#[derive(Clone, Copy, Debug)]
enum Ip {
    V4,
    V6,
}

impl Ip {
    fn group(self) -> &'static str {
        match self {
            Self::V4 => GROUP,
            Self::V6 => "ff1e::77",
        }
    }

    fn tables(self) -> &'static str {
        match self {
            Self::V4 => "iptables",
            Self::V6 => "ip6tables",
        }
    }

    /// The first payload word (the sequence number) is non-negative: data,
    /// not the FIN.
    fn data_only(self) -> [&'static str; 8] {
        let at = match self {
            Self::V4 => "28&0x80000000=0",
            Self::V6 => "48&0x80000000=0",
        };
        ["-p", "udp", "--dport", PORT, "-m", "u32", "--u32", at]
    }

    fn ttl_eq(self) -> [&'static str; 4] {
        match self {
            Self::V4 => ["-m", "ttl", "--ttl-eq", TTL_ARG],
            Self::V6 => ["-m", "hl", "--hl-eq", TTL_ARG],
        }
    }

    /// What the command line needs for this family (iperf 2 reads an IPv6
    /// `-B` only with `-V`).
    fn flags(self) -> &'static [&'static str] {
        match self {
            Self::V4 => &[],
            Self::V6 => &["-V"],
        }
    }
}

/// A receiving namespace's counts of the group's data datagrams.
#[derive(Debug, Clone, Copy)]
struct Counts {
    arrived: u64,
    /// Arrived with TTL (hop limit) [`TTL`].
    ttl: u64,
    dropped: u64,
    delivered: u64,
}

impl std::ops::Sub for Counts {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self {
            arrived: self.arrived - o.arrived,
            ttl: self.ttl - o.ttl,
            dropped: self.dropped - o.dropped,
            delivered: self.delivered - o.delivered,
        }
    }
}

/// The Bridge's rules (arrivals, every `nth` with TTL [`TTL`] dropped, the
/// rest delivered), in ip6tables for IPv6, and a second PREROUTING rule
/// counting the arrivals that carry TTL [`TTL`].
fn rules(b: &Bridge, part: &str, nth: u32, ip: Ip) {
    let data = ip.data_only();
    if let Ip::V6 = ip {
        let every = nth.to_string();
        let drop = [
            "-m",
            "statistic",
            "--mode",
            "nth",
            "--every",
            &every,
            "--packet",
            "0",
            "-j",
            "DROP",
        ];
        let pre = ["ip6tables", "-t", "mangle", "-A", "PREROUTING"];
        let inp = ["ip6tables", "-A", "INPUT"];
        b.exec(part, &[&pre[..], &data].concat());
        b.exec(part, &[&inp[..], &data, &ip.ttl_eq(), &drop].concat());
        b.exec(part, &[&inp[..], &data, &["-j", "ACCEPT"]].concat());
    } else {
        b.rules(part, nth);
    }
    let pre = [ip.tables(), "-t", "mangle", "-A", "PREROUTING"];
    b.exec(part, &[&pre[..], &data, &ip.ttl_eq()].concat());
}

fn counts(b: &Bridge, part: &str, ip: Ip) -> Counts {
    let list = |chain: &[&str]| {
        let args = [&[ip.tables()][..], chain, &["-v", "-n", "-x"]].concat();
        iptables_rule_packets(&b.exec(part, &args))
    };
    let pre = list(&["-t", "mangle", "-L", "PREROUTING"]);
    let (arrived, dropped, delivered) = match ip {
        Ip::V4 => b.counters(part),
        Ip::V6 => {
            let inp = list(&["-L", "INPUT"]);
            (pre[0], inp[0], inp[1])
        }
    };
    Counts {
        arrived,
        ttl: pre[1],
        dropped,
        delivered,
    }
}

/// Starts the receivers `args` of each (namespace, program), and hands them
/// back once each has joined `group` on `dev`.
fn receivers(b: &Bridge, dev: &str, group: &str, rx: &[(&str, &str)], args: &[&str]) -> Vec<Bg> {
    let started: Vec<Bg> = rx
        .iter()
        .map(|&(part, prog)| start(b, part, &[&[prog][..], args].concat()))
        .collect();
    started
        .into_iter()
        .zip(rx)
        .map(|(bg, &(part, _))| b.await_join(part, dev, group, bg))
        .collect()
}

/// Runs a sender in namespace `part` to its end; returns its output and its
/// "Sent N datagrams".
fn send(b: &Bridge, part: &str, args: &[&str]) -> (crate::netns::cmd::Done, u64) {
    let tx = start(b, part, args).finish(SENDER);
    assert!(tx.success(), "{tx}");
    let sent = stock_sent(&tx.stdout);
    (tx, sent)
}

/// One flow of `-t 1` from `sender` in `tx` to the group, with `-T`, to an
/// any-source receiver (`-s -u -B GROUP -P 1`) of each (namespace, program,
/// nth) in `rx`. Every data datagram must reach each namespace carrying the
/// TTL, and each receiver's lost/total must be its kernel's drops and the
/// sender's count.
fn asm_flow(b: &Bridge, ip: Ip, sender: &str, rx: &[(&str, &str, u32)]) {
    let g = ip.group();
    let before: Vec<Counts> = rx.iter().map(|r| counts(b, r.0, ip)).collect();
    let who: Vec<(&str, &str)> = rx.iter().map(|r| (r.0, r.1)).collect();
    let args = [
        &["-s", "-u"][..],
        ip.flags(),
        &["-B", g, "-P", "1", "-p", PORT],
    ]
    .concat();
    let rxs = receivers(b, "veth0", g, &who, &args);
    let c_args = [&[sender, "-c", g, "-u"][..], ip.flags()].concat();
    let tail = ["-T", TTL_ARG, "-t", "1", "-b", "2m", "-p", PORT];
    let (tx, sent) = send(b, "tx", &[&c_args[..], &tail].concat());
    for ((bg, &(part, prog, nth)), before) in rxs.into_iter().zip(rx).zip(before) {
        let done = bg.finish(RECEIVER);
        let c = counts(b, part, ip) - before;
        let what = format!("{ip:?} {} -> {} in {part}", name(sender), name(prog));
        eprintln!("{what}: Sent {sent}, kernel {c:?}");
        let ctx = format!("{what}: Sent {sent}, {c:?}\n{tx}\n{done}");
        assert_eq!(
            c.arrived,
            sent - 2,
            "data datagrams in the namespace\n{ctx}"
        );
        assert_eq!(c.ttl, c.arrived, "arrivals with TTL {TTL} (-T)\n{ctx}");
        let n = u64::from(nth);
        let every_nth = [c.arrived / n, c.arrived.div_ceil(n)];
        assert!(every_nth.contains(&c.dropped), "1 in {nth} dropped\n{ctx}");
        assert_eq!(c.delivered, c.arrived - c.dropped, "{ctx}");
        assert!(done.success(), "{ctx}");
        let (lost, total) = stock_received(&done.stdout);
        assert_eq!(
            (lost, total),
            (c.dropped, sent - 1),
            "receiver's lost/total against its kernel's drops and the sender's Sent - 1\n{ctx}"
        );
    }
}

fn asm_both_ways(ip: Ip) {
    let _serial = crate::netns::serial();
    let Some([ours, v221, v218]) = programs() else {
        return;
    };
    let Some(b) = Bridge::new() else {
        return;
    };
    if let Ip::V6 = ip {
        for (i, part) in ["tx", "rx1", "rx2"].iter().enumerate() {
            let a = format!("fd99::{}/64", i + 1);
            b.exec(part, &["ip", "addr", "add", &a, "dev", "veth0", "nodad"]);
        }
    }
    rules(&b, "rx1", 30, ip);
    rules(&b, "rx2", 20, ip);
    asm_flow(&b, ip, &ours, &[("rx1", &v221, 30), ("rx2", &v218, 20)]);
    asm_flow(&b, ip, &v221, &[("rx1", &ours, 30)]);
    asm_flow(&b, ip, &v218, &[("rx2", &ours, 20)]);
}

#[test]
fn binary_and_stock_share_a_group_with_its_ttl_both_ways() {
    asm_both_ways(Ip::V4);
}

#[test]
fn binary_and_stock_share_an_ipv6_group_with_its_hop_limit_both_ways() {
    asm_both_ways(Ip::V6);
}

// ------------------------------------------------------- source-specific

const SSM: &str = "232.77.1.1";
/// The sender `-H` names (namespace `tx`), and another (`rx2`).
const SOURCE: &str = "10.99.0.1";
const OTHER: &str = "10.99.0.3";

/// Counters in `rx1` of the data datagrams from [`SOURCE`] and [`OTHER`]:
/// arrived (PREROUTING) and passed by the kernel's membership (INPUT).
pub(crate) fn ssm_rules(b: &Bridge) {
    for chain in [&["-t", "mangle", "-A", "PREROUTING"][..], &["-A", "INPUT"]] {
        for src in [SOURCE, OTHER] {
            let args = [&["iptables"][..], chain, &["-s", src], &Ip::V4.data_only()].concat();
            b.exec("rx1", &args);
        }
    }
}

/// [arrived from SOURCE, from OTHER, delivered from SOURCE, from OTHER].
pub(crate) fn ssm_counts(b: &Bridge) -> [u64; 4] {
    let list = |c: &[&str]| {
        let args = [&["iptables"][..], c, &["-v", "-n", "-x"]].concat();
        iptables_rule_packets(&b.exec("rx1", &args))
    };
    let pre = list(&["-t", "mangle", "-L", "PREROUTING"]);
    let inp = list(&["-L", "INPUT"]);
    [pre[0], pre[1], inp[0], inp[1]]
}

/// The peers a receiver's connection lines name.
fn peers(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| {
            l.split_once(" connected with ")?
                .1
                .split_whitespace()
                .next()
        })
        .collect()
}

/// `receiver -s -u -B SSM -H SOURCE` in `rx1`; `sender` runs from [`OTHER`]
/// (first) and from [`SOURCE`]. Only the second flow may be received, and
/// the kernel must have delivered none of the first.
fn ssm_flow(b: &Bridge, receiver: &str, sender: &str) {
    let before = ssm_counts(b);
    let args = ["-s", "-u", "-B", SSM, "-H", SOURCE, "-P", "1", "-p", PORT];
    let rx = receivers(b, "veth0", SSM, &[("rx1", receiver)], &args).remove(0);
    let mcfilter = b.exec("rx1", &["cat", "/proc/net/mcfilter"]);
    let c_args = |t| [sender, "-c", SSM, "-u", "-t", t, "-b", "2m", "-p", PORT];
    // The other source first: an any-source receiver would take its flow.
    let mut other = start(b, "rx2", &c_args("1.5"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while ssm_counts(b)[1] == before[1] {
        if other.try_status().is_some() || Instant::now() > deadline {
            panic!("no datagram from {OTHER}: {}", other.finish(SENDER));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (tx, sent) = send(b, "tx", &c_args("1"));
    let done = rx.finish(RECEIVER);
    let other = other.finish(SENDER);
    assert!(other.success(), "{other}");
    let sent_other = stock_sent(&other.stdout);
    let c: Vec<u64> = ssm_counts(b)
        .iter()
        .zip(before)
        .map(|(a, b)| a - b)
        .collect();
    let what = format!("SSM {} -> {}", name(sender), name(receiver));
    eprintln!("{what}: Sent {sent} (other {sent_other}), kernel {c:?}");
    let ctx = format!(
        "{what}: Sent {sent}, other Sent {sent_other}; kernel [arrived source, other, \
         delivered source, other] {c:?}\n{tx}\n{other}\n{done}"
    );
    assert_eq!(peers(&done.stdout), [SOURCE], "only -H's source\n{ctx}");
    assert_eq!(c, [sent - 2, sent_other - 2, sent - 2, 0], "{ctx}");
    assert!(done.success(), "{ctx}");
    assert_eq!(stock_received(&done.stdout), (0, sent - 1), "{ctx}");
    // The kernel's filter on the group: the source alone, included.
    let hex = |a: &str| format!("{:#010x}", u32::from(a.parse::<Ipv4Addr>().unwrap()));
    let (g, s) = (hex(SSM), hex(SOURCE));
    assert!(
        mcfilter.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            matches!(w.as_slice(), [_, "veth0", lg, ls, "1", "0"] if *lg == g && *ls == s)
        }),
        "no (S,G) = ({SOURCE}, {SSM}) filter:\n{mcfilter}"
    );
}

#[test]
fn binary_and_stock_source_specific_receivers_take_one_source() {
    let _serial = crate::netns::serial();
    let Some([ours, v221, v218]) = programs() else {
        return;
    };
    let Some(b) = Bridge::new() else {
        return;
    };
    ssm_rules(&b);
    ssm_flow(&b, &ours, &v221);
    ssm_flow(&b, &v221, &ours);
    ssm_flow(&b, &ours, &v218);
}

// ------------------------------------------------------------------ %dev

const DEV_GROUP: &str = "239.77.1.2";

/// A second link, `veth1` from `tx` straight to `rx1`, beside the bridge
/// the multicast route of both points at; counters in `rx1` of the group's
/// data datagrams arriving by `veth0` and by `veth1`.
fn second_link(b: &Bridge) {
    let (tx, rx1) = (b.ns("tx"), b.ns("rx1"));
    b.ip(&[
        "ip", "-n", &tx, "link", "add", "veth1", "type", "veth", "peer", "name", "veth1", "netns",
        &rx1,
    ]);
    for (ns, a) in [(&tx, "10.98.0.1/24"), (&rx1, "10.98.0.2/24")] {
        b.ip(&["ip", "-n", ns, "addr", "add", a, "dev", "veth1"]);
        b.ip(&["ip", "-n", ns, "link", "set", "veth1", "gso_max_segs", "1"]);
        b.ip(&["ip", "-n", ns, "link", "set", "veth1", "up"]);
    }
    for dev in ["veth0", "veth1"] {
        let pre = ["iptables", "-t", "mangle", "-A", "PREROUTING", "-i", dev];
        b.exec("rx1", &[&pre[..], &Ip::V4.data_only()].concat());
    }
}

/// `receiver -s -u -B GROUP%veth1` in `rx1`, `sender -c GROUP%veth1` in
/// `tx` (iperf 2.2.1's spelling of a client's device): every data datagram
/// takes `veth1`, none the multicast route's `veth0`, and all are received.
fn dev_flow(b: &Bridge, receiver: &str, sender: &str) {
    let list = || {
        let l = b.exec(
            "rx1",
            &[
                "iptables",
                "-t",
                "mangle",
                "-L",
                "PREROUTING",
                "-v",
                "-n",
                "-x",
            ],
        );
        iptables_rule_packets(&l)
    };
    let before = list();
    let at = format!("{DEV_GROUP}%veth1");
    let args = ["-s", "-u", "-B", &at, "-P", "1", "-p", PORT];
    let rx = receivers(b, "veth1", DEV_GROUP, &[("rx1", receiver)], &args).remove(0);
    assert!(
        !b.member("rx1", "veth0", DEV_GROUP),
        "{receiver} joined on veth0 too"
    );
    let c_args = [sender, "-c", &at, "-u", "-t", "1", "-b", "2m", "-p", PORT];
    let (tx, sent) = send(b, "tx", &c_args);
    let done = rx.finish(RECEIVER);
    let c: Vec<u64> = list().iter().zip(before).map(|(a, b)| a - b).collect();
    let what = format!("%dev {} -> {}", name(sender), name(receiver));
    eprintln!("{what}: Sent {sent}, kernel [veth0, veth1] {c:?}");
    let ctx = format!("{what}: Sent {sent}\n{tx}\n{done}");
    assert_eq!(c, [0, sent - 2], "data datagrams by [veth0, veth1]\n{ctx}");
    assert!(done.success(), "{ctx}");
    assert_eq!(stock_received(&done.stdout), (0, sent - 1), "{ctx}");
}

#[test]
fn binary_and_stock_take_the_interface_a_dev_suffix_names() {
    let _serial = crate::netns::serial();
    let Some([ours, v221, v218]) = programs() else {
        return;
    };
    let Some(b) = Bridge::new() else {
        return;
    };
    second_link(&b);
    dev_flow(&b, &v221, &ours);
    dev_flow(&b, &ours, &v221);
    // 2.1.8 reads a receiver's `%dev` (its client ignores `-c GROUP%dev`).
    dev_flow(&b, &v218, &ours);
}
