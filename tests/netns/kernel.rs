//! Reading the kernel's own figures inside a namespace: iptables rule counters,
//! the UDP SNMP counters and a TCP connection's MSS. These are the ground truth
//! rperf3's reports are compared with, so each parser is strict and panics with
//! the raw text when it cannot find what it expects.

/// (packets, bytes) counters of every rule of an `iptables -L CHAIN -v -n -x`
/// listing, in rule order.
pub(crate) fn iptables_rule_counters(listing: &str) -> Vec<(u64, u64)> {
    listing
        .lines()
        .skip(2) // "Chain ..." and the column header
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut f = l.split_whitespace().map(|v| v.parse().ok());
            match (f.next().flatten(), f.next().flatten()) {
                (Some(p), Some(b)) => (p, b),
                _ => panic!("bad iptables line {l:?} in:\n{listing}"),
            }
        })
        .collect()
}

/// Packet counters of every rule, in rule order.
pub(crate) fn iptables_rule_packets(listing: &str) -> Vec<u64> {
    iptables_rule_counters(listing)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

/// The `Udp:` counter `name` of a `/proc/net/snmp` text (a header line of names
/// followed by a line of values).
pub(crate) fn snmp_udp(snmp: &str, name: &str) -> u64 {
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        panic!("no Udp: lines in /proc/net/snmp:\n{snmp}")
    };
    let i = names
        .split_whitespace()
        .position(|n| n == name)
        .unwrap_or_else(|| panic!("no Udp counter {name} in:\n{snmp}"));
    values
        .split_whitespace()
        .nth(i)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no value for Udp {name} in:\n{snmp}"))
}

/// `(mss, pmtu)` of the first connection in `ss -tin` output that shows both.
/// `mss` is the sender's segment payload (options already taken off), `pmtu`
/// the path MTU at the IP layer.
pub(crate) fn ss_mss_pmtu(ss: &str) -> Option<(u32, u32)> {
    let field = |line: &str, key: &str| {
        line.split_whitespace()
            .find_map(|t| t.strip_prefix(key).and_then(|v| v.parse().ok()))
    };
    ss.lines()
        .find_map(|l| Some((field(l, "mss:")?, field(l, "pmtu:")?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_counters_in_order() {
        let l = "Chain INPUT (policy ACCEPT 9 packets, 540 bytes)\n    pkts      bytes target     prot opt in     out     source               destination\n      81   115668 DROP       17   --  *      *       0.0.0.0/0            0.0.0.0/0            udp dpt:5201\n   17776 25384128 ACCEPT     17   --  *      *       0.0.0.0/0            0.0.0.0/0\n";
        assert_eq!(iptables_rule_packets(l), vec![81, 17776]);
        assert_eq!(
            iptables_rule_counters(l),
            vec![(81, 115668), (17776, 25384128)]
        );
    }

    #[test]
    fn snmp_udp_counter_by_name() {
        let s = "Ip: Forwarding DefaultTTL\nIp: 1 64\nUdp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\nUdp: 17777 0 3 2 3\nUdpLite: InDatagrams\nUdpLite: 0\n";
        assert_eq!(snmp_udp(s, "InDatagrams"), 17777);
        assert_eq!(snmp_udp(s, "RcvbufErrors"), 3);
    }

    #[test]
    fn mss_is_not_confused_with_advmss_or_rcvmss() {
        let s = "ESTAB 0 0 10.77.0.2:58644 10.77.0.1:5201\n\t cubic wscale:10,10 rto:208 rcvmss:536 advmss:1448 mss:1448 pmtu:1500 cwnd:44\n";
        assert_eq!(ss_mss_pmtu(s), Some((1448, 1500)));
        assert_eq!(ss_mss_pmtu("ESTAB 0 0 a:1 b:2\n"), None);
    }
}
