//! Golden tests: inputs that reproduce the numbers of iperf3 3.21's text fixtures
//! must print the fixture byte for byte. Other layouts (server `-V`, bidir
//! `-V`, reverse, omit, title, timestamps) are checked against real iperf3 runs.

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

/// Server `-V` (layout checked against iperf3 3.12, same strings in 3.21).
#[test]
fn tcp_server_verbose_notes_missing_sender_statistics() {
    let (mut r, out, _) = reporter(|o| o.verbose = true, Side::Server);
    let t = test_info(Side::Server, Protocol::Tcp);
    let si = start_info(Side::Server, true);
    r.preamble();
    r.server_banner(5201, 1);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, false, "127.0.0.1:5201", "127.0.0.1:51544"));
    r.start(&si, &t);
    r.interval(&iv(vec![plain(0.0, 1.0, 2_900_000_000)]));
    r.end(&FinalInput {
        streams: vec![fin(2_900_000_000, 1.0)],
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
    let text = done(r, &out);
    let expect = "\
iperf 3.21+
Linux vm 6.18.44-fc-v595 #1 SMP PREEMPT_DYNAMIC @0 x86_64
-----------------------------------------------------------
Server listening on 5201 (test #1)
-----------------------------------------------------------
Time: Sat, 21 Nov 2026 04:53:47 GMT
Accepted connection from 127.0.0.1, port 41188
      Cookie: yys3vtkxwb6ffuu6vtmbwsixxjlwweqwngq6
      TCP MSS: 0 (default)
[  5] local 127.0.0.1 port 5201 connected to 127.0.0.1 port 51544
Starting Test: protocol: TCP, 1 streams, 131072 byte blocks, omitting 0 seconds, 2 second test, tos 0
[ ID] Interval           Transfer     Bitrate
[  5]   0.00-1.00   sec  2.70 GBytes  23.2 Gbits/sec                  
- - - - - - - - - - - - - - - - - - - - - - - - -
Test Complete. Summary Results:
[ ID] Interval           Transfer     Bitrate
[  5] (sender statistics not available)
[  5]   0.00-1.00   sec  2.70 GBytes  23.2 Gbits/sec                  receiver
rcv_tcp_congestion bbr
";
    assert_eq!(text, expect);
}

/// Bidir `-V` client: per-group CPU and congestion lines in iperf3's odd order.
#[test]
fn tcp_bidir_verbose_client_summary_order() {
    let (mut r, out) = client_tcp(true);
    let t = TestInfo {
        bidir: true,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, true, "127.0.0.1:42568", "127.0.0.1:28600"));
    r.stream_connected(&stream(7, 3, false, "127.0.0.1:42570", "127.0.0.1:28600"));
    r.start(&si, &t);
    r.interval(&iv(vec![
        tcp_tx(0.0, 1.0, 2_630_000_000, 1, 1023 * 1024),
        plain(0.0, 1.0, 317_700_000),
    ]));
    r.end(&FinalInput {
        streams: vec![tcp_fin(5_165_000_000, 2.0, 12), fin(786_400_000, 2.0)],
        cpu: Cpu {
            total: 95.6,
            user: 1.3,
            system: 94.3,
        },
        congestion: Some("bbr".into()),
        has_retransmits: true,
        peer: Some(PeerSummary {
            cpu: Cpu {
                total: 46.1,
                user: 2.1,
                system: 44.0,
            },
            sender_has_retransmits: 1,
            congestion: Some("bbr".into()),
            streams: vec![
                peer(1, 5_165_000_000, -1, 2.0),
                peer(3, 791_700_000, 0, 2.0),
            ],
        }),
        diskfile: None,
    });
    let text = done(r, &out);
    let tail: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Test Complete"))
        .collect();
    assert_eq!(
        tail,
        [
            "Test Complete. Summary Results:",
            "[ ID][Role] Interval           Transfer     Bitrate         Retr",
            "[  5][TX-C]   0.00-2.00   sec  4.81 GBytes  20.7 Gbits/sec   12            sender",
            "[  5][TX-C]   0.00-2.00   sec  4.81 GBytes  20.7 Gbits/sec                  receiver",
            "CPU Utilization: local/sender 95.6% (1.3%u/94.3%s), remote/receiver 46.1% (2.1%u/44.0%s)",
            "CPU Utilization: local/receiver 95.6% (1.3%u/94.3%s), remote/sender 46.1% (2.1%u/44.0%s)",
            "snd_tcp_congestion bbr",
            "rcv_tcp_congestion bbr",
            "[  7][RX-C]   0.00-2.00   sec   755 MBytes  3.17 Gbits/sec    0            sender",
            "[  7][RX-C]   0.00-2.00   sec   750 MBytes  3.15 Gbits/sec                  receiver",
            "snd_tcp_congestion bbr",
            "rcv_tcp_congestion bbr",
            "",
            "iperf Done.",
        ]
    );
    assert!(
        text.contains("[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd\n")
    );
    assert!(text.contains(
        "[  7][RX-C]   0.00-1.00   sec   303 MBytes  2.54 Gbits/sec                  \n"
    ));
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
    r.stream_connected(&stream(5, 1, false, "127.0.0.1:51700", "127.0.0.1:28207"));
    r.start(&si, &t);
    r.interval(&iv(vec![plain(0.0, 1.0, 1_632_000_000)]));
    r.end(&FinalInput {
        streams: vec![fin(3_178_000_000, 2.0)],
        cpu: Cpu::default(),
        congestion: Some("bbr".into()),
        has_retransmits: false,
        peer: Some(PeerSummary {
            sender_has_retransmits: 1,
            congestion: Some("bbr".into()),
            streams: vec![peer(1, 3_178_000_000, 10, 2.0)],
            ..Default::default()
        }),
        diskfile: None,
    });
    let text = done(r, &out);
    let expect = "\
Connecting to host 127.0.0.1, port 27911
Reverse mode, remote host 127.0.0.1 is sending
[  5] local 127.0.0.1 port 51700 connected to 127.0.0.1 port 28207
[ ID] Interval           Transfer     Bitrate
[  5]   0.00-1.00   sec  1.52 GBytes  13.1 Gbits/sec                  
- - - - - - - - - - - - - - - - - - - - - - - - -
[ ID] Interval           Transfer     Bitrate         Retr
[  5]   0.00-2.00   sec  2.96 GBytes  12.7 Gbits/sec   10            sender
[  5]   0.00-2.00   sec  2.96 GBytes  12.7 Gbits/sec                  receiver

iperf Done.
";
    assert_eq!(text, expect);
}

#[test]
fn omitted_interval_title_and_timestamps() {
    let (mut r, out, err) = reporter(
        |o| {
            o.title = Some("tt".into());
            o.timestamp = Some(Box::new(|| "Sat Nov 21 05:37:36 2026 ".into()));
        },
        Side::Client,
    );
    let t = TestInfo {
        omit: 1,
        ..test_info(Side::Client, Protocol::Tcp)
    };
    let si = start_info(Side::Client, true);
    r.control_connected(&si, &t);
    r.stream_connected(&stream(5, 1, true, "127.0.0.1:39398", "127.0.0.1:28952"));
    r.start(&si, &t);
    let mut s = tcp_tx(0.0, 1.0, 3_167_000_000, 5, 895 * 1024);
    s.omitted = true;
    r.interval(&iv(vec![s]));
    r.interval(&iv(vec![tcp_tx(
        0.00003,
        1.0,
        3_028_000_000,
        0,
        895 * 1024,
    )]));
    r.server_output(ServerOutput::Text(
        "Accepted connection from 127.0.0.1, port 1\n".into(),
    ));
    r.end(&FinalInput {
        streams: vec![tcp_fin(3_028_000_000, 1.0, 0)],
        cpu: Cpu::default(),
        congestion: None,
        has_retransmits: true,
        peer: Some(PeerSummary {
            sender_has_retransmits: -1,
            streams: vec![peer(1, 3_028_000_000, -1, 1.0)],
            ..Default::default()
        }),
        diskfile: None,
    });
    let text = done(r, &out);
    let p = "Sat Nov 21 05:37:36 2026 tt:  ";
    let expect = format!(
        "\
{p}Connecting to host 127.0.0.1, port 27911
{p}[  5] local 127.0.0.1 port 39398 connected to 127.0.0.1 port 28952
{p}[ ID] Interval           Transfer     Bitrate         Retr  Cwnd
{p}[  5]   0.00-1.00   sec  2.95 GBytes  25.3 Gbits/sec    5    895 KBytes       (omitted)
{p}[  5]   0.00-1.00   sec  2.82 GBytes  24.2 Gbits/sec    0    895 KBytes       
{p}- - - - - - - - - - - - - - - - - - - - - - - - -
{p}[ ID] Interval           Transfer     Bitrate         Retr
{p}[  5]   0.00-1.00   sec  2.82 GBytes  24.2 Gbits/sec    0            sender
{p}[  5]   0.00-1.00   sec  2.82 GBytes  24.2 Gbits/sec                  receiver
{p}
Server output:
Accepted connection from 127.0.0.1, port 1

{p}
{p}iperf Done.
"
    );
    assert_eq!(text, expect);
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
