//! Golden tests of iperf 2's latency outputs: `--trip-times` rows both
//! ways, `--isochronous` over UDP and TCP, and the TCP write timer, each
//! replayed from a 2.2.1 capture and compared line for line.

use super::golden::{case, enhanced, text_case, text_case_cut, Case};
use super::golden_parse::{fixture, Kind};
use super::model::{Side2, Tag2};

#[test]
fn golden_trip_times_match_2_2_1() {
    // --trip-times -e: the TCP receiver's latency/inP/NetPwr columns, the
    // client's send-side warning, the UDP server's Rx/inP layout.
    for (name, ipg) in [("tcp-tripe", None), ("udp-tripe", Some(1176.0))] {
        let c = Case {
            layout: enhanced(),
            trip_times: true,
            ipg_us: ipg,
            ..case(name)
        };
        let [client, server] = text_case(&c, None);
        assert!(client[6].contains("Warn: Send side bloat") || name == "udp-tripe");
        assert!(server
            .iter()
            .any(|l| l.contains("(trip-times) (peer 2.2.1-rc)")));
    }
}

/// A TCP receiver's whole-test row with its `inP` figure cut out: 2.2.1's is
/// not the rate times the mean latency there (`8.68 Gbits/sec` at `2.332 ms`
/// prints `682 KByte`), while rperf3 keeps Little's law on every row.
fn without_final_inp(l: &str) -> String {
    match (l.contains(" 0.00-"), l.split_once(") ")) {
        (true, Some((head, rest))) if l.contains(" ms (") => {
            let rest: Vec<&str> = rest.split_whitespace().collect();
            format!(
                "{head}) inP {}",
                rest.get(2..).unwrap_or_default().join(" ")
            )
        }
        _ => l.to_string(),
    }
}

#[test]
fn golden_trip_times_back_match_2_2_1() {
    // --trip-times with -R and --full-duplex: the client's reverse rows
    // carry the burst latency columns (TCP) or the Rx/inP layout (UDP), and
    // both connection lines say (trip-times) after the mode's notes.
    // (udp-tripe-fullduplex is not here: its [FD1] rows are not printed.)
    for name in ["tcp-tripe-R", "tcp-tripe-fullduplex", "udp-tripe-R"] {
        let c = Case {
            layout: enhanced(),
            trip_times: true,
            ipg_us: name.starts_with("udp").then_some(1176.0),
            ..case(name)
        };
        // A -R server only sends; a UDP client receives its [ *1] rows,
        // a full-duplex UDP server sends its [ *1] rows.
        let over = |side: Side2, t: Tag2| {
            let sends = name.ends_with("-R") && side == Side2::Server;
            match (c.udp, side, t) {
                (false, ..) if sends => Some(Kind::TcpSend),
                (true, ..) if sends => Some(Kind::UdpSend),
                (true, Side2::Client, Tag2::ReverseId(_)) => Some(Kind::UdpRecv),
                (true, Side2::Server, Tag2::ReverseId(_)) => Some(Kind::UdpSend),
                _ => None,
            }
        };
        for got in text_case_cut(&c, Some(&over), &without_final_inp) {
            assert!(got.iter().any(|l| l.contains(" (trip-times)")), "{name}");
        }
    }
}

#[test]
fn golden_udp_isochronous_matches_2_2_1() {
    // --isochronous=60:20m,2m -e: the client's frame line instead of the IPG
    // line, "(isoch)", the Write/Err ... isoch:tx/miss/slip columns and the
    // schedule errors line; the server's rows are plain -e UDP rows.
    let c = Case {
        layout: enhanced(),
        ..case("udp-isoch")
    };
    let [client, server] = text_case(&c, None);
    assert_eq!(
        client[2],
        "Isochronous: 60.00 frames/sec mean=20.0 Mbit/s, stddev=2.00 Mbit/s, \
         Period/IPG=16.67/0.000 ms"
    );
    assert!(client[7].ends_with("Write/Err  PPS  isoch:tx/miss/slip"));
    assert!(
        client[8].ends_with("1732/0    1732 pps   61/0/0"),
        "{}",
        client[8]
    );
    assert!(server[5].contains("(isoch) (peer 2.2.1-rc)"));
}

/// A TCP sender row cut around NetPwr (rperf3's own figure): what comes
/// before it and what follows it, both to be exact.
fn around_netpwr(l: &str) -> (String, String) {
    let (head, tail) = l.rsplit_once(" us ").unwrap();
    let tail = tail.trim_start();
    let after = tail.split_once(' ').map_or("", |x| x.1);
    (head.to_string(), after.trim_start().to_string())
}

#[test]
fn golden_tcp_isochronous_matches_2_2_1_issue18() {
    // --isochronous=60:20m,2m -e over TCP: the frame line, "(isoch)" on both
    // connection lines, the Cwnd/RTT ... isoch:tx/miss/slip columns and the
    // schedule errors line; the server's rows are plain Reads=Dist rows.
    let c = Case {
        layout: enhanced(),
        ..case("tcp-isoch")
    };
    let [client, server] = text_case(&c, None);
    let want = fixture("tcp-isoch.client.txt");
    assert!(
        client[8].contains(" (isoch) (icwnd/mss/irtt="),
        "{}",
        client[8]
    );
    assert!(
        want[10].ends_with("us         61/0/0       136"),
        "{}",
        want[10]
    );
    // Here even NetPwr (rperf3's own figure, bytes per second over the RTT)
    // comes out as 2.2.1's: the rows are exact.
    for i in 10..=12 {
        assert_eq!(client[i], want[i]);
    }
    assert_eq!(client[13], want[13]);
    assert!(
        server[6].contains(" (isoch) (peer 2.2.1-rc)"),
        "{}",
        server[6]
    );
}

#[test]
fn golden_tcp_write_times_match_2_2_1_issue18() {
    // --histograms -b 50m -e on the client: the write timer on the buffer
    // line, the bins line, the write-times column and W8-PDF lines rebuilt
    // from their bins (the 5/95/99.7% bins are the formatter's, exact).
    let c = Case {
        layout: enhanced(),
        ..case("tcp-hist-client")
    };
    let [client, _] = text_case(&c, None);
    let want = fixture("tcp-hist-client.client.txt");
    assert_eq!(
        client[2],
        "Write buffer size: 131072 Byte (write timer enabled)"
    );
    assert_eq!(
        client[6],
        "Enabled write histograms bin-width=0.100 ms, bins=100000"
    );
    for i in [10, 12, 14] {
        let (g, w) = (around_netpwr(&client[i]), around_netpwr(&want[i]));
        assert_eq!(g, w, "row {i}");
    }
    assert!(client[15].starts_with("[  1] 0.00-2.05 sec W8(f)-PDF: bin(w=100us):cnt(97)="));
    for i in [11, 13, 15] {
        assert_eq!(client[i], want[i]);
    }
}
