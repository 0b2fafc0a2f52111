//! Golden tests: inputs that reproduce the numbers of iperf3 3.21's text fixtures
//! must print the fixture byte for byte. Other layouts (server `-V`, bidir
//! `-V`, reverse, omit with title and timestamps) are compared with captures of
//! iperf3 3.21 runs (`tests/fixtures/iperf-3.21/`, listed in its README) with
//! their figures masked: the same lines, words and columns in the same order.

use crate::input::*;
use crate::testutil::*;
use crate::ServerOutput;

#[test]
fn tcp_client_matches_fixture() {
    let (mut r, out) = client_tcp(false);
    let t = test_info(Side::Client, Protocol::Tcp);
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:41268", "127.0.0.1:27911"));
    r.start(&si, &t);
    r.interval(&iv(vec![tcp_tx(0.0, 1.0, 1_850_000_000, 0, 1023 * 1024)]));
    r.interval(&iv(vec![tcp_tx(
        1.003,
        2.0015,
        1_954_210_119,
        11,
        1_436_549,
    )]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![tcp_fin(3_800_000_000, 2.0, 11)],
        cpu: Cpu::default(),
        congestion: Some("bbr".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            sender_has_retransmits: -1,
            congestion: Some("bbr".into()),
            streams: vec![peer(1, 3_800_000_000, -1, 2.0)],
            ..Default::default()
        }),
        diskfile: None,
    });
    assert_eq!(done(r, &out), fixture("tcp.client.txt"));
}

#[test]
fn tcp_server_matches_fixture() {
    let (mut r, out, _) = reporter(|_| {}, Side::Server);
    let t = test_info(Side::Server, Protocol::Tcp);
    let mut si = start_info(Side::Server, true);
    si.accepted_connection = Some("127.0.0.1:41260".parse().unwrap());
    r.server_banner(27911, 1);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, false, "127.0.0.1:27911", "127.0.0.1:41268"));
    r.start(&si, &t);
    r.interval(&iv(vec![plain(0.0, 1.004, 1_845_000_000)]));
    r.interval(&iv(vec![plain(1.0, 2.00124, 1_964_947_537)]));
    r.interval(&iv(vec![plain(2.001, 2.00176, 1_698_693)]));
    // The empty sliver after the last tick is dropped.
    r.interval(&iv(vec![plain(2.00176, 2.0018, 0)]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![fin(3_800_000_000, 2.0)],
        cpu: Cpu::default(),
        congestion: Some("bbr".into()),
        has_retransmits: false,
        peer: None,
        diskfile: None,
    });
    assert_eq!(done(r, &out), fixture("tcp.server.txt"));
}

#[test]
fn tcp_verbose_client_matches_fixture() {
    let (mut r, out) = client_tcp(true);
    let t = test_info(Side::Client, Protocol::Tcp);
    let mut si = start_info(Side::Client, true);
    si.timestamp_millis = 1_795_236_911_000;
    si.cookie = "k2dpvnnwy3j7zigpslzgkvg6g4gag2rchyiz".into();
    r.preamble();
    r.control_mss(32768);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:41334", "127.0.0.1:27911"));
    r.start(&si, &t);
    r.interval(&iv(vec![tcp_tx(0.0, 0.996, 2_346_475_443, 9, 4_844_421)]));
    r.interval(&iv(vec![tcp_tx(1.0, 1.996, 2_980_704_281, 0, 1_572_864)]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![tcp_fin(5_346_820_287, 1.996, 9)],
        cpu: Cpu {
            total: 40.6,
            user: 0.3,
            system: 40.3,
        },
        congestion: Some("bbr".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            cpu: Cpu {
                total: 48.8,
                user: 2.0,
                system: 46.8,
            },
            sender_has_retransmits: -1,
            congestion: Some("bbr".into()),
            streams: vec![peer(1, 5_346_820_287, -1, 1.996)],
        }),
        diskfile: None,
    });
    assert_eq!(done(r, &out), fixture("tcp_verbose.client.txt"));
}

#[test]
fn tcp_bidir_p2_client_matches_fixture() {
    let (mut r, out) = client_tcp(false);
    let t = TestInfo {
        num_streams: 2,
        bidir: true,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    for (sock, id, tx, port) in [
        (4, 1, true, 41282),
        (6, 3, true, 41284),
        (8, 4, false, 41300),
        (11, 5, false, 41310),
    ] {
        r.stream_connected(&stream(
            sock,
            id,
            tx,
            &format!("127.0.0.1:{port}"),
            "127.0.0.1:27911",
        ));
    }
    r.start(&si, &t);
    let d = 1.00015;
    r.interval(&iv(vec![
        tcp_tx(0.0, d, 810_401_694, 15, 3_009_413),
        tcp_tx(0.0, d, 949_485_569, 5, 4_320_133),
        plain(0.0, d, 1_117_600_000),
        plain(0.0, d, 981_800_000),
    ]));
    let (s, e) = (1.0, 1.99775);
    r.interval(&iv(vec![
        tcp_tx(s, e, 1_415_540_000, 1, 4_844_421),
        tcp_tx(s, e, 1_403_070_000, 0, 2_485_125),
        plain(s, e, 1_192_900_000),
        plain(s, e, 1_250_500_000),
    ]));
    let ts = 1.99765;
    let tr = 1.9998;
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![
            tcp_fin(2_226_131_217, ts, 16),
            tcp_fin(2_353_429_534, ts, 5),
            fin(2_313_518_624, ts),
            fin(2_228_527_126, ts),
        ],
        cpu: Cpu::default(),
        congestion: Some("bbr".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            sender_has_retransmits: 1,
            congestion: Some("bbr".into()),
            streams: vec![
                peer(1, 2_226_027_374, -1, tr),
                peer(3, 2_353_498_065, -1, tr),
                peer(4, 2_316_025_467, 5, tr),
                peer(5, 2_232_446_782, 11, tr),
            ],
            ..Default::default()
        }),
        diskfile: None,
    });
    assert_eq!(done(r, &out), fixture("tcp_bidir_P2.client.txt"));
}

/// Start facts of the captured runs: their time, for the `Time:` line's words.
fn captured_start(side: Side, millis: u64, cookie: &str) -> StartInfo {
    StartInfo {
        timestamp_millis: millis,
        cookie: cookie.into(),
        ..start_info(side, true)
    }
}

/// `text` against the capture `name`, figures masked.
fn assert_layout(text: &str, name: &str) {
    let (ours, theirs) = (masked(text), masked(&fixture(name)));
    for (n, (a, b)) in ours.lines().zip(theirs.lines()).enumerate() {
        assert_eq!(a, b, "{name} line {}:\n{text}", n + 1);
    }
    assert_eq!(
        ours.lines().count(),
        theirs.lines().count(),
        "{name}:\n{text}"
    );
}

/// Server `-V`: the sender's statistics are the client's, which a server does
/// not have, and it says so.
#[test]
fn tcp_server_verbose_notes_missing_sender_statistics() {
    let (mut r, out, _) = reporter(|o| o.verbose = true, Side::Server);
    let t = TestInfo {
        duration: 1,
        ..test_info(Side::Server, Protocol::Tcp)
    };
    let si = captured_start(
        Side::Server,
        1_795_624_945_000,
        "5vq7xsmfq73q555l4dmnukqepc7mxgkp773o",
    );
    r.preamble();
    r.server_banner(27911, 1);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, false, "127.0.0.1:27911", "127.0.0.1:48264"));
    r.start(&si, &t);
    r.interval(&iv(vec![plain(0.0, 1.0, 910_000_000)]));
    r.interval(&iv(vec![plain(1.0, 1.004, 4_194_304)]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![fin(914_194_304, 1.004)],
        cpu: Cpu {
            total: 39.3,
            user: 1.3,
            system: 38.0,
        },
        congestion: Some("bbr".into()),
        has_retransmits: false,
        peer: None,
        diskfile: None,
    });
    assert_layout(&done(r, &out), "tcp_server_verbose.server.txt");
}

/// Bidir `-V` client: per-group CPU and congestion lines in iperf3's odd order.
#[test]
fn tcp_bidir_verbose_client_summary_order() {
    let (mut r, out) = client_tcp(true);
    let t = TestInfo {
        bidir: true,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = captured_start(
        Side::Client,
        1_795_624_947_000,
        "ba5zown56362chrwh6wfexytkdfrfptwjk4p",
    );
    r.preamble();
    r.control_mss(32768);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:48278", "127.0.0.1:27911"));
    r.stream_connected(&stream(6, 3, false, "127.0.0.1:48284", "127.0.0.1:27911"));
    r.start(&si, &t);
    r.interval(&iv(vec![
        tcp_tx(0.0, 1.006, 710_000_000, 6, 4608 * 1024),
        plain(0.0, 1.006, 451_000_000),
    ]));
    r.interval(&iv(vec![
        tcp_tx(1.006, 2.0, 1_675_000_000, 9, 2304 * 1024),
        plain(1.006, 2.0, 521_000_000),
    ]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![tcp_fin(2_385_000_000, 2.0, 15), fin(972_000_000, 2.0)],
        cpu: Cpu {
            total: 36.5,
            user: 0.2,
            system: 36.3,
        },
        congestion: Some("bbr".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            cpu: Cpu {
                total: 26.3,
                user: 1.2,
                system: 25.1,
            },
            sender_has_retransmits: 1,
            congestion: Some("bbr".into()),
            streams: vec![
                peer(1, 2_385_000_000, -1, 2.006),
                peer(3, 975_000_000, 13, 2.006),
            ],
        }),
        diskfile: None,
    });
    assert_layout(&done(r, &out), "tcp_bidir_verbose.client.txt");
}

#[test]
fn reverse_client_prints_reverse_line_and_peer_retransmits() {
    let (mut r, out) = client_tcp(false);
    let t = TestInfo {
        reverse: true,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, false, "127.0.0.1:48308", "127.0.0.1:27911"));
    r.start(&si, &t);
    r.interval(&iv(vec![plain(0.0, 1.0, 918_000_000)]));
    r.interval(&iv(vec![plain(1.0, 2.0, 837_000_000)]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![fin(1_755_000_000, 2.0)],
        cpu: Cpu::default(),
        congestion: Some("bbr".into()),
        has_retransmits: false,
        peer: Some(PeerSummary {
            sender_has_retransmits: 1,
            congestion: Some("bbr".into()),
            streams: vec![peer(1, 1_757_000_000, 19, 2.006)],
            ..Default::default()
        }),
        diskfile: None,
    });
    assert_layout(&done(r, &out), "tcp_reverse.client.txt");
}

#[test]
fn omitted_interval_title_and_timestamps() {
    let (mut r, out, err) = reporter(
        |o| {
            o.title = Some("tt".into());
            o.timestamp = Some(Box::new(|| "Wed Nov 25 16:42:32 2026 ".into()));
        },
        Side::Client,
    );
    let t = TestInfo {
        omit: 1,
        duration: 1,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(4, 1, true, "127.0.0.1:48332", "127.0.0.1:27911"));
    r.start(&si, &t);
    let mut s = tcp_tx(0.0, 1.0, 767_000_000, 12, 1536 * 1024);
    s.omitted = true;
    r.interval(&iv(vec![s]));
    r.interval(&iv(vec![tcp_tx(
        0.00003,
        1.0,
        598_000_000,
        10,
        1023 * 1024,
    )]));
    // The server's text as the capture's client printed it.
    let captured = fixture("tcp_omit_title_timestamps.client.txt");
    let server_text: String = captured
        .split_inclusive('\n')
        .skip_while(|l| !l.starts_with("Server output:"))
        .skip(1)
        .take_while(|l| !l.starts_with("Wed Nov"))
        .collect();
    r.server_output(ServerOutput::Text(
        server_text.trim_end_matches('\n').to_string() + "\n",
    ));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![tcp_fin(598_000_000, 1.0, 10)],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: true,
        peer: Some(PeerSummary {
            sender_has_retransmits: -1,
            streams: vec![peer(1, 598_000_000, -1, 1.0)],
            ..Default::default()
        }),
        diskfile: None,
    });
    assert_layout(&done(r, &out), "tcp_omit_title_timestamps.client.txt");
    assert_eq!(err.text(), "");
}

#[test]
fn errors_go_to_the_error_writer_with_program_name() {
    let (mut r, out, err) = reporter(|o| o.prog = "rperf3".into(), Side::Client);
    r.error("unable to connect to server: Connection refused");
    r.finish().unwrap();
    assert_eq!(out.text(), "");
    assert_eq!(
        err.text(),
        "rperf3: error - unable to connect to server: Connection refused\n"
    );
}

#[test]
fn server_text_capture_starts_at_accepted_connection() {
    let (mut r, out, _) = reporter(|_| {}, Side::Server);
    let t = test_info(Side::Server, Protocol::Tcp);
    let si = start_info(Side::Server, true);
    r.server_banner(5201, 1);
    r.set_server_output_requested(true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, false, "127.0.0.1:5201", "127.0.0.1:60682"));
    r.start(&si, &t);
    r.interval(&iv(vec![plain(0.0, 1.0, 2_974_000_000)]));
    r.end(&FinalInput {
        latency: None,
        bounceback: None,
        streams: vec![fin(2_974_000_000, 1.0)],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: false,
        peer: None,
        diskfile: None,
    });
    let Some(ServerOutput::Text(copy)) = r.server_output_for_peer() else {
        panic!("no text copy");
    };
    let printed = done(r, &out);
    assert!(copy.starts_with("Accepted connection from 127.0.0.1, port 41188\n"));
    assert!(printed.ends_with(&copy));
    assert!(copy.ends_with("receiver\n"));
}
