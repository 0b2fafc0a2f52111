//! Golden checks of layouts the repository's captures do not show, against
//! iperf 2.2.1 output captured on this host (the same build as the fixtures,
//! on loopback, 2026-11-25): `-e` sums (`[SUM-cnt]`/`[SUM-n]`), `-e` settings
//! with `-S`/`-N`/`-Z`/`-w`, a UDP client receiving (`-R`), a server sending
//! UDP, and `--hide-ips` over IPv6. The commands are given per case.

use super::golden::{compare, print, tcp_kind, udp_kind};
use super::golden_parse::{Kind, Replayer};
use super::model::{Layout2, Side2, Tag2};

fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

fn check(name: &str, side: Side2, layout: Layout2, kind: &dyn Fn(Tag2) -> Kind, text: &str) {
    let want = lines(text);
    let rp = Replayer {
        side,
        kind,
        ipg_us: None,
        trip_times: false,
    }
    .text(&want);
    let got = print(side, &layout, rp.events);
    compare(name, &got, &want, &rp.cmp);
}

fn e() -> Layout2 {
    Layout2 {
        enhanced: true,
        ..Layout2::default()
    }
}

/// `iperf -c 127.0.0.1 -e -N -w 64K -S 0x20 -Z reno -p P -t 1 -P 2` (the
/// second stream's connection line came before the block).
const TCP_E_OPTIONS_CLIENT: &str = "\
[  2] local 127.0.0.1%lo port 45626 connected with 127.0.0.1 port 27002 (reno) (tos tx=0x20,dscp=8,ecn=0) (icwnd/mss/irtt=319/32741/55) (ct=0.12 ms) on 2026-11-25 19:16:23.140 (UTC)
------------------------------------------------------------
Client connecting to 127.0.0.1, TCP port 27002 with pid 18272 (2/0 flows/load)
Write buffer size: 131072 Byte
TCP congestion control set to reno using reno
TOS set to 0x20 (dscp=8,ecn=0) and nodelay (Nagle off)
TCP window size:  128 KByte (WARNING: requested 64.0 KByte)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 45642 connected with 127.0.0.1 port 27002 (reno) (tos tx=0x20,dscp=8,ecn=0) (icwnd/mss/irtt=319/32741/16) (ct=0.04 ms) on 2026-11-25 19:16:23.141 (UTC)
[ ID] Interval        Transfer    Bandwidth       Write/Err  Rtry     InF(pkts)/Cwnd(pkts)/RTT(var)        NetPwr
[  1] 0.00-1.00 sec  1.91 GBytes  16.4 Gbits/sec  15667/0         0        0K(0)/319K(10)/16(8) us  127968865
[  2] 0.00-1.00 sec  1.75 GBytes  15.0 Gbits/sec  14371/0         0        0K(0)/319K(10)/55(27) us  34188173
[SUM-cnt] Interval        Transfer    Bandwidth       Write/Err  Rtry
[SUM-2] 0.00-1.00 sec  3.67 GBytes  31.4 Gbits/sec  30038/0         0";

/// `iperf -s -e -w 64K -p P` serving the client above.
const TCP_E_OPTIONS_SERVER: &str = "\
------------------------------------------------------------
Server listening on TCP port 27002 with pid 18219
Read buffer size:  128 KByte (Dist bin width=16.0 KByte)
TCP congestion control default bbr
TCP window size:  128 KByte (WARNING: requested 64.0 KByte)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 27002 connected with 127.0.0.1 port 45626 (reno) (tos tx=0x20,dscp=8,ecn=0) (peer 2.2.1-rc) (icwnd/mss/irtt=320/32768/35) on 2026-11-25 19:16:23.141 (UTC)
[  2] local 127.0.0.1%lo port 27002 connected with 127.0.0.1 port 45642 (reno) (tos tx=0x20,dscp=8,ecn=0) (peer 2.2.1-rc) (icwnd/mss/irtt=320/32768/15) on 2026-11-25 19:16:23.141 (UTC)
[ ID] Interval        Transfer    Bandwidth       Reads=Dist
[  2] 0.00-1.00 sec  1.91 GBytes  16.4 Gbits/sec  19229=31:16:31:3465:1790:1495:216:12185
[  1] 0.00-1.00 sec  1.75 GBytes  15.1 Gbits/sec  18114=17:9:29:3653:1961:913:662:10870
[SUM-cnt] Interval        Transfer    Bandwidth       Reads=Dist
[SUM-2] 0.00-1.00 sec  3.67 GBytes  31.5 Gbits/sec  37343=48:25:60:7118:3751:2408:878:23055";

#[test]
fn golden_tcp_e_options_and_sums_match_2_2_1() {
    check(
        "tcp -e options client",
        Side2::Client,
        e(),
        &tcp_kind(Side2::Client),
        TCP_E_OPTIONS_CLIENT,
    );
    check(
        "tcp -e options server",
        Side2::Server,
        e(),
        &tcp_kind(Side2::Server),
        TCP_E_OPTIONS_SERVER,
    );
}

/// `iperf -c 127.0.0.1 -e -d -L 27022 -p P -t 1 -i 1`.
const TCP_E_DUAL_CLIENT: &str = "\
------------------------------------------------------------
Server listening on TCP port 27022 with pid 3717
Read buffer size:  128 KByte (Dist bin width=16.0 KByte)
TCP congestion control default bbr
TCP window size:  128 KByte (default)
------------------------------------------------------------
------------------------------------------------------------
Client connecting to 127.0.0.1, TCP port 27021 with pid 3717 (1/0 flows/load)
Write buffer size: 131072 Byte
TCP congestion control using bbr
TOS defaults to 0x0 (dscp=0,ecn=0) (Nagle on)
TCP window size: 16.0 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 39556 connected with 127.0.0.1 port 27021 (icwnd/mss/irtt=319/32741/34) (ct=0.23 ms) on 2026-11-25 19:29:11.620 (UTC)
[  2] local 127.0.0.1%lo port 27022 connected with 127.0.0.1 port 49230 on 2026-11-25 19:29:11.623 (UTC)
[ ID] Interval        Transfer    Bandwidth       Reads=Dist
[  2] 0.00-1.00 sec   301 MBytes  2.52 Gbits/sec  2411=1:1:0:1:0:2:0:2406
[ ID] Interval        Transfer    Bandwidth       Write/Err  Rtry     InF(pkts)/Cwnd(pkts)/RTT(var)        NetPwr
[  1] 0.00-1.00 sec  1.10 GBytes  9.48 Gbits/sec  9039/0         0        0K(0)/1023K(16)/143(57) us  8284117
[SUM-cnt] Interval        Transfer    Bandwidth       Write/Err  Rtry
[SUM-2] 0.00-1.00 sec  1.40 GBytes  12.0 Gbits/sec  9039/0         0
[  1] 0.00-1.01 sec  1.10 GBytes  9.41 Gbits/sec  9040/0         0        0K(0)/1023K(16)/143(57) us  8221400
[  2] 0.00-1.01 sec   304 MBytes  2.53 Gbits/sec  2435=1:1:0:1:0:2:0:2430
[SUM-2] 0.00-1.01 sec  1.40 GBytes  11.9 Gbits/sec  13886/0         0";

#[test]
fn golden_tcp_e_dual_client_matches_2_2_1() {
    let kind = |t: Tag2| match t {
        Tag2::Id(2) => Kind::TcpRecv,
        _ => Kind::TcpSend,
    };
    check(
        "tcp -e -d client",
        Side2::Client,
        e(),
        &kind,
        TCP_E_DUAL_CLIENT,
    );
}

/// `iperf -c 127.0.0.1 -u -e -b 1m -P 2 -p P -t 1 -i 1`.
const UDP_E_P2_CLIENT: &str = "\
------------------------------------------------------------
Client connecting to 127.0.0.1, UDP port 27011 with pid 20678 (2/0 flows/load)
TOS defaults to 0x0 (dscp=0,ecn=0) (Nagle on)
Sending 1470 byte datagrams, IPG target: 0.00 us (kalman adjust)
UDP buffer size:  208 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 43002 connected with 127.0.0.1 port 27011 on 2026-11-25 19:17:43.602 (UTC)
[  2] local 127.0.0.1%lo port 44726 connected with 127.0.0.1 port 27011 on 2026-11-25 19:17:43.602 (UTC)
[ ID] Interval        Transfer     Bandwidth      Write/Err/Timeo  PPS
[  1] 0.00-1.00 sec   123 KBytes  1.01 Mbits/sec  86/1/0      85 pps
[  2] 0.00-1.00 sec   123 KBytes  1.01 Mbits/sec  86/0/0      86 pps
[SUM-cnt] Interval        Transfer     Bandwidth      Write/Err  PPS
[SUM-2] 0.00-1.00 sec   247 KBytes  2.02 Mbits/sec  172/1      170 pps
[  1] 0.00-1.02 sec   126 KBytes  1.01 Mbits/sec  88/1/0      44 pps
[  1] Sent 89 datagrams
[  2] 0.00-1.02 sec   126 KBytes  1.01 Mbits/sec  88/0/0      44 pps
[  2] Sent 89 datagrams
[SUM-2] 0.00-1.02 sec   253 KBytes  2.02 Mbits/sec  176/1      174 pps
[SUM-2] Sent 178 datagrams
[  1] Server Report:
[ ID] Interval        Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS  Rx/inP  Read/Timeo/Trunc  NetPwr
[  1] 0.00-1.01 sec   125 KBytes  1.01 Mbits/sec   0.007 ms 1/88 (1.1%) 0.027/0.011/0.043/0.008 ms 87 pps 87/0(0) pkts 0/0/0 4754
[  2] Server Report:
[  2] 0.00-1.02 sec   126 KBytes  1.01 Mbits/sec   0.009 ms 0/88 (0%) 0.028/0.012/0.111/0.012 ms 85 pps 85/0(0) pkts 0/0/0 4445";

#[test]
fn golden_udp_e_sums_and_server_reports_match_2_2_1() {
    check(
        "udp -e -P 2 client",
        Side2::Client,
        e(),
        &udp_kind(Side2::Client),
        UDP_E_P2_CLIENT,
    );
}

/// `iperf -c 127.0.0.1 -u -R -p P -t 1 -i 1`: the client receives.
const UDP_R_CLIENT: &str = "\
------------------------------------------------------------
Client connecting to 127.0.0.1, UDP port 27031
Sending 1470 byte datagrams, IPG target: 0.00 us (kalman adjust)
UDP buffer size:  208 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1 port 36495 connected with 127.0.0.1 port 27031 (reverse)
[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams
[ *1] 0.00-1.00 sec   129 KBytes  1.06 Mbits/sec   0.003 ms 0/90 (0%)
[ *1] 0.00-1.02 sec   132 KBytes  1.06 Mbits/sec   0.007 ms 0/92 (0%)";

/// `iperf -s -u -p P` serving that client, then a plain UDP client: the
/// header lines come back for the second test.
const UDP_R_SERVER: &str = "\
------------------------------------------------------------
Server listening on UDP port 27031
UDP buffer size:  208 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1 port 27031 connected with 127.0.0.1 port 36495 (reverse) (no-udp-fin)
[ ID] Interval       Transfer     Bandwidth
[  1] 0.00-1.02 sec   132 KBytes  1.06 Mbits/sec
[  1] Sent 93 datagrams
[  2] local 127.0.0.1 port 27031 connected with 127.0.0.1 port 52184
[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams
[  2] 0.00-1.02 sec   132 KBytes  1.06 Mbits/sec   0.005 ms 0/92 (0%)";

#[test]
fn golden_udp_reverse_matches_2_2_1() {
    let client = |t: Tag2| match t {
        Tag2::ReverseId(_) => Kind::UdpRecv,
        _ => Kind::UdpSend,
    };
    check(
        "udp -R client",
        Side2::Client,
        Layout2::default(),
        &client,
        UDP_R_CLIENT,
    );
    let server = |t: Tag2| match t {
        Tag2::Id(1) => Kind::UdpSend,
        _ => Kind::UdpRecv,
    };
    check(
        "udp -R server",
        Side2::Server,
        Layout2::default(),
        &server,
        UDP_R_SERVER,
    );
}

/// `iperf -c ::1 -V --hide-ips -p P -t 1`: 2.2.1 hides the host, not IPv6
/// addresses.
const HIDE_IPS_V6_CLIENT: &str = "\
------------------------------------------------------------
Client connecting to (**hidden**), TCP port 27004
TCP window size: 3.76 MByte (default)
------------------------------------------------------------
[  1] local ::1 port 55686 connected with ::1 port 27004
[ ID] Interval       Transfer     Bandwidth
[  1] 0.00-1.01 sec   128 MBytes  1.06 Gbits/sec";

#[test]
fn golden_hide_ips_ipv6_matches_2_2_1() {
    let layout = Layout2 {
        hide_ips: true,
        ..Layout2::default()
    };
    check(
        "hide-ips v6 client",
        Side2::Client,
        layout,
        &tcp_kind(Side2::Client),
        HIDE_IPS_V6_CLIENT,
    );
}

/// `iperf -s -u -e -B 239.1.1.1 -p P`: with `-e` the read size comes between
/// the join and the single-client line.
const MC_E_SERVER: &str = "\
------------------------------------------------------------
Server listening on UDP port 27052 with pid 10976
Joining multicast group  239.1.1.1
Read buffer size: 1470 Byte 
Server set to single client traffic mode (per multicast receive)
UDP buffer size:  208 KByte (default)
------------------------------------------------------------";

#[test]
fn golden_multicast_e_server_block_matches_2_2_1() {
    check(
        "mc -e server",
        Side2::Server,
        e(),
        &udp_kind(Side2::Server),
        MC_E_SERVER,
    );
}

/// `iperf -c 127.0.0.1 -y C -p P -t 1 -P 2 -i 1` and its server (`-s -y C`):
/// sums are records with transfer id -1 and the client's port 0.
const CSV_P2_CLIENT: &str = "\
20261125191628,127.0.0.1,49014,127.0.0.1,27003,1,0.0-1.0,1358168128,10865345024
20261125191628,127.0.0.1,49008,127.0.0.1,27003,2,0.0-1.0,1129185344,9033482752
20261125191628,127.0.0.1,0,127.0.0.1,27003,-1,0.0-1.0,2487353472,19898827776
20261125191627,127.0.0.1,49014,127.0.0.1,27003,1,0.0-1.0,1358299200,10680646477
20261125191627,127.0.0.1,49008,127.0.0.1,27003,2,0.0-1.0,1129316416,8882847818
20261125191627,127.0.0.1,0,127.0.0.1,27003,-1,0.0-1.0,2487615616,19881103467";

const CSV_P2_SERVER: &str = "\
20261125191627,127.0.0.1,49008,127.0.0.1,27003,1,0.0-1.0,1129316416,8990299056
20261125191627,127.0.0.1,49014,127.0.0.1,27003,2,0.0-1.0,1358299200,10855266951
20261125191627,127.0.0.1,0,127.0.0.1,27003,-1,0.0-1.0,2487615616,19840233653";

#[test]
fn golden_csv_sums_match_2_2_1() {
    let csv = Layout2 {
        csv: true,
        ..Layout2::default()
    };
    for (side, text) in [
        (Side2::Client, CSV_P2_CLIENT),
        (Side2::Server, CSV_P2_SERVER),
    ] {
        let want = lines(text);
        let kind = tcp_kind(side);
        let rp = Replayer {
            side,
            kind: &kind,
            ipg_us: None,
            trip_times: false,
        };
        // Every field of a basic TCP record comes from the capture.
        assert_eq!(print(side, &csv, rp.csv(&want)), want);
    }
}

/// `iperf -c 127.0.0.1 -e --full-duplex -p P -t 1 -i 1`: each direction in
/// its own columns, then the pair as `[FD1]` under the plain title.
const TCP_E_FULL_DUPLEX_CLIENT: &str = "\
------------------------------------------------------------
Client connecting to 127.0.0.1, TCP port 27021 with pid 3700 (1/0 flows/load)
Write buffer size: 131072 Byte
TCP congestion control using bbr
TOS defaults to 0x0 (dscp=0,ecn=0) (Nagle on)
TCP window size: 16.0 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 39550 connected with 127.0.0.1 port 27021 (full-duplex) (icwnd/mss/irtt=319/32741/30) (ct=0.21 ms) on 2026-11-25 19:29:10.592 (UTC)
[ ID] Interval        Transfer    Bandwidth       Write/Err  Rtry     InF(pkts)/Cwnd(pkts)/RTT(var)        NetPwr
[  1] 0.00-1.00 sec   408 MBytes  3.43 Gbits/sec  3268/0         3      575K(9)/1023K(16)/229(134) us  1869923
[  1] 0.00-1.00 sec   409 MBytes  3.42 Gbits/sec  3269/0         3      575K(9)/1023K(16)/229(134) us  1867067
[ ID] Interval        Transfer    Bandwidth       Reads=Dist
[ *1] 0.00-1.00 sec   344 MBytes  2.89 Gbits/sec  2773=0:1:8:6:20:1:5:2732
[ ID] Interval       Transfer     Bandwidth
[FD1] 0.00-1.00 sec   753 MBytes  6.31 Gbits/sec
[ *1] 0.00-1.00 sec   346 MBytes  2.89 Gbits/sec  2785=1:1:8:6:20:1:5:2743
[FD1] 0.00-1.00 sec   754 MBytes  6.31 Gbits/sec";

#[test]
fn golden_tcp_e_full_duplex_matches_2_2_1() {
    check(
        "tcp -e --full-duplex client",
        Side2::Client,
        e(),
        &tcp_kind(Side2::Client),
        TCP_E_FULL_DUPLEX_CLIENT,
    );
}

/// `iperf -s -u -e -p P` serving the `-P 2` client above. 2.2.1 printed
/// `-0 pps` in these rows (a negative zero from its gap-based rate); rperf3
/// prints the datagrams over the span, so the capture's sign is dropped here.
const UDP_E_P2_SERVER: &str = "\
------------------------------------------------------------
Server listening on UDP port 27011 with pid 20674
Read buffer size: 1470 Byte 
UDP buffer size:  208 KByte (default)
------------------------------------------------------------
[  1] local 127.0.0.1%lo port 27011 connected with 127.0.0.1 port 44726 (peer 2.2.1-rc) on 2026-11-25 19:17:43.603 (UTC)
[  2] local 127.0.0.1%lo port 27011 connected with 127.0.0.1 port 43002 (peer 2.2.1-rc) on 2026-11-25 19:17:43.615 (UTC)
[ ID] Interval        Transfer     Bandwidth        Jitter   Lost/Total  Latency avg/min/max/stdev PPS Read/Timeo/NA NetPwr
[  2] 0.00-1.01 sec   125 KBytes  1.01 Mbits/sec   0.007 ms 1/88 (1.1%) 0.027/0.011/0.043/0.008 ms -0 pps 88/0/0 4754
[  1] 0.00-1.02 sec   126 KBytes  1.01 Mbits/sec   0.010 ms 0/88 (0%) 0.028/0.012/0.111/0.012 ms -0 pps 89/0/0 4444
[SUM-cnt] Interval     Transfer     Bandwidth       Lost/Total  Latency avg/min/max  PPS
[SUM-2] 0.00-1.02 sec   251 KBytes  2.01 Mbits/sec  1/176 (0.57%)  0.028/0.011/0.111  171 pps";

#[test]
fn golden_udp_e_server_sums_match_2_2_1() {
    check(
        "udp -e -P 2 server",
        Side2::Server,
        e(),
        &udp_kind(Side2::Server),
        &UDP_E_P2_SERVER.replace(" -0 pps", " 0 pps"),
    );
}
