//! Golden tests of the UDP text layout: the 3.21 fixtures, and bidir `-P 2`
//! checked against captured iperf3 runs.

use crate::input::*;
use crate::testutil::*;

#[test]
fn udp_client_matches_fixture() {
    let (mut r, out) = client_tcp(false);
    let t = udp_test(Side::Client);
    let si = start_info(Side::Client, false);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:55637", "127.0.0.1:27911"));
    r.start(&si, &t);
    r.interval(&iv(vec![udp_tx(0.0, 1.0, 126_000, 90)]));
    r.interval(&iv(vec![udp_tx(1.0, 2.0008, 124_600, 89)]));
    let udp = UdpTotals {
        packets: 179,
        ..Default::default()
    };
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![StreamFinal {
            udp: Some(udp),
            ..fin(250_600, 2.0)
        }],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: false,
        peer: Some(PeerSummary {
            sender_has_retransmits: -1,
            streams: vec![PeerStream {
                jitter: 0.006e-3,
                packets: 179,
                omitted_packets: Some(0),
                omitted_errors: Some(0),
                ..peer(1, 250_600, -1, 2.0)
            }],
            ..Default::default()
        }),
        diskfile: None,
    });
    assert_eq!(done(r, &out), fixture("udp.client.txt"));
}

#[test]
fn udp_server_matches_fixture() {
    let (mut r, out, _) = reporter(|_| {}, Side::Server);
    let t = udp_test(Side::Server);
    let mut si = start_info(Side::Server, false);
    si.accepted_connection = Some("127.0.0.1:41272".parse().unwrap());
    r.server_banner(27911, 1);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, false, "127.0.0.1:27911", "127.0.0.1:55637"));
    r.start(&si, &t);
    r.interval(&iv(vec![udp_rx(0.0, 1.004, 126_000, 0.006e-3, 90)]));
    r.interval(&iv(vec![udp_rx(1.004, 2.0, 124_600, 0.006e-3, 89)]));
    let udp = UdpTotals {
        packets: 179,
        jitter: 0.006e-3,
        ..Default::default()
    };
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![StreamFinal {
            udp: Some(udp),
            ..fin(250_600, 2.0)
        }],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: false,
        peer: None,
        diskfile: None,
    });
    assert_eq!(done(r, &out), fixture("udp.server.txt"));
}

fn capture(name: &str) -> String {
    let p = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/captures-3.12")
        .join(name);
    std::fs::read_to_string(p).unwrap()
}

fn udp_bidir_test(side: Side) -> TestInfo {
    TestInfo {
        num_streams: 2,
        bidir: true,
        blksize: 32768,
        ..udp_test(side)
    }
}

const KB128: u64 = 131_072;

fn udp_rx_fin(jitter_ms: f64) -> StreamFinal {
    let udp = UdpTotals {
        packets: 8,
        jitter: jitter_ms / 1000.0,
        ..Default::default()
    };
    StreamFinal {
        udp: Some(udp),
        ..fin(2 * KB128, 2.0)
    }
}

fn udp_tx_fin() -> StreamFinal {
    let udp = UdpTotals {
        packets: 8,
        ..Default::default()
    };
    StreamFinal {
        udp: Some(udp),
        ..fin(2 * KB128, 2.0)
    }
}

fn udp_peer(id: u32, jitter_ms: f64) -> PeerStream {
    PeerStream {
        jitter: jitter_ms / 1000.0,
        packets: 8,
        omitted_packets: Some(0),
        omitted_errors: Some(0),
        ..peer(id, 2 * KB128, -1, 2.0)
    }
}

#[test]
fn udp_bidir_p2_client_matches_capture() {
    let (mut r, out) = client_tcp(false);
    let t = udp_bidir_test(Side::Client);
    let mut si = start_info(Side::Client, false);
    si.connecting_to = Some(("127.0.0.1".into(), 27999));
    r.control_connected(&si, &t);
    for (sock, id, tx, port) in [
        (5, 1, true, 33619),
        (7, 3, true, 36927),
        (9, 4, false, 43729),
        (12, 5, false, 60853),
    ] {
        r.stream_connected(&stream(
            sock,
            id,
            tx,
            &format!("127.0.0.1:{port}"),
            "127.0.0.1:27999",
        ));
    }
    r.start(&si, &t);
    for (s, e, j1, j2) in [(0.0, 1.0, 0.0158, 0.0088), (1.0, 2.0, 0.0232, 0.0181)] {
        r.interval(&iv(vec![
            udp_tx(s, e, KB128, 4),
            udp_tx(s, e, KB128, 4),
            udp_rx(s, e, KB128, j1 / 1000.0, 4),
            udp_rx(s, e, KB128, j2 / 1000.0, 4),
        ]));
    }
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![
            udp_tx_fin(),
            udp_tx_fin(),
            udp_rx_fin(0.0232),
            udp_rx_fin(0.0181),
        ],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: false,
        peer: Some(PeerSummary {
            sender_has_retransmits: 0,
            streams: vec![
                udp_peer(1, 0.0004),
                udp_peer(3, 0.0012),
                udp_peer(4, 0.0),
                udp_peer(5, 0.0),
            ],
            ..Default::default()
        }),
        diskfile: None,
    });
    assert_eq!(done(r, &out), capture("udp_bidir_P2.client.txt"));
}

#[test]
fn udp_bidir_p2_server_matches_capture() {
    let (mut r, out, _) = reporter(|_| {}, Side::Server);
    let t = udp_bidir_test(Side::Server);
    let mut si = start_info(Side::Server, false);
    si.accepted_connection = Some("127.0.0.1:40404".parse().unwrap());
    r.server_banner(27999, 1);
    r.control_connected(&si, &t);
    for (sock, id, tx, port) in [
        (5, 1, false, 33619),
        (6, 3, false, 36927),
        (9, 4, true, 43729),
        (12, 5, true, 60853),
    ] {
        r.stream_connected(&stream(
            sock,
            id,
            tx,
            "127.0.0.1:27999",
            &format!("127.0.0.1:{port}"),
        ));
    }
    r.start(&si, &t);
    for (s, e, j1, j2) in [(0.0, 1.0, 0.0002, 0.0006), (1.0, 2.0, 0.0004, 0.0012)] {
        r.interval(&iv(vec![
            udp_rx(s, e, KB128, j1 / 1000.0, 4),
            udp_rx(s, e, KB128, j2 / 1000.0, 4),
            udp_tx(s, e, KB128, 4),
            udp_tx(s, e, KB128, 4),
        ]));
    }
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![
            udp_rx_fin(0.0004),
            udp_rx_fin(0.0012),
            udp_tx_fin(),
            udp_tx_fin(),
        ],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: false,
        peer: None,
        diskfile: None,
    });
    assert_eq!(done(r, &out), capture("udp_bidir_P2.server.txt"));
}
