//! The UDP client and server against each other on loopback, through the
//! library: what the client sent (counted by the engine) against what the
//! server counted and reported back.

use std::net::UdpSocket;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rperf3_report::iperf2::model::{Event2, Row2, RowKind2, Tag2, UdpRecv2};
use rperf3_report::iperf2::Report2;

use super::config::*;
use super::{run, Outcome2};
use crate::Interrupt;

#[derive(Default)]
pub(crate) struct Collect(Mutex<Vec<Event2>>);

impl Report2 for Collect {
    fn event(&self, e: Event2) {
        self.0.lock().unwrap().push(e);
    }
}

impl Collect {
    pub(crate) fn events(&self) -> Vec<Event2> {
        self.0.lock().unwrap().clone()
    }
}

pub(crate) fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub(crate) fn common(port: u16) -> Common2 {
    Common2 {
        port,
        transport: Transport2::Udp,
        ..Common2::default()
    }
}

pub(crate) fn client(host: &str, port: u16, rate: Rate2, secs: f64, parallel: u32) -> Config2 {
    Config2 {
        role: Role2::Client(Client2 {
            host: host.into(),
            end: End2::Time(Duration::from_secs_f64(secs)),
            parallel,
            rate: Some(rate),
            mode: Mode2::Normal,
            listen_port: None,
            compat: false,
            peer_detect: false,
            no_udp_fin: false,
            input: Input2::Pattern,
            sync_transfer_id: false,
            txstart: None,
            txdelay: None,
            connect_only: None,
            incr_dstport: false,
            bounceback: None,
            isoch: None,
        }),
        common: common(port),
        output: Output2::default(),
    }
}

pub(crate) fn server(port: u16, max_clients: Option<u32>) -> Config2 {
    Config2 {
        role: Role2::Server(Server2 {
            single_client: false,
            max_clients,
            single_udp: false,
            only_from: None,
            ssm_source: None,
            daemon: false,
        }),
        common: Common2 {
            time: Some(Duration::from_secs(20)),
            ..common(port)
        },
        output: Output2::default(),
    }
}

/// Runs `cfg` on a thread; the writer ends it with a signal byte.
pub(crate) fn spawn(
    cfg: Config2,
) -> (
    Arc<Collect>,
    std::thread::JoinHandle<Outcome2>,
    std::os::unix::net::UnixStream,
) {
    let rep = Arc::new(Collect::default());
    let (intr, w) = Interrupt::pair().unwrap();
    let r2: Arc<dyn Report2> = rep.clone();
    let h = std::thread::spawn(move || run(&cfg, r2, intr));
    (rep, h, w)
}

pub(crate) fn recv_of(r: &Row2) -> UdpRecv2 {
    match r.kind {
        RowKind2::UdpRecv(u) => u,
        k => panic!("not a receiver row: {k:?}"),
    }
}

fn finals(ev: &[Event2]) -> Vec<Row2> {
    ev.iter()
        .filter_map(|e| match e {
            Event2::Final(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

fn sent(ev: &[Event2], tag: Tag2) -> u64 {
    ev.iter()
        .find_map(|e| match e {
            Event2::Sent { tag: t, datagrams } if *t == tag => Some(*datagrams),
            _ => None,
        })
        .expect("a Sent line")
}

fn reports(ev: &[Event2]) -> Vec<Row2> {
    ev.iter()
        .filter_map(|e| match e {
            Event2::ServerReport(r) => Some(r.clone()),
            _ => None,
        })
        .collect()
}

/// Waits until the server's listener answers on `port` (its settings block
/// is out once it is bound).
pub(crate) fn wait_listening(rep: &Collect) {
    for _ in 0..500 {
        if rep
            .events()
            .iter()
            .any(|e| matches!(e, Event2::Settings(_)))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("server never listened: {:?}", rep.events());
}

#[test]
fn client_and_server_agree_on_every_datagram() {
    let port = free_port();
    let mut sc = server(port, Some(1));
    sc.common.interval = Some(Duration::from_millis(500));
    let (srep, sh, _w) = spawn(sc);
    wait_listening(&srep);
    let mut c = client("127.0.0.1", port, Rate2::Bits(10_000_000), 1.0, 1);
    c.common.interval = Some(Duration::from_millis(500));
    let (crep, ch, _cw) = spawn(c);
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let cev = crep.events();
    let sev = srep.events();
    let n_sent = sent(&cev, Tag2::Id(1));
    // 10 Mbit/s of 1470-byte datagrams for 1 s: 850 datagrams (+2 in "Sent").
    assert!((840..=860).contains(&n_sent), "{n_sent}");
    let rep = reports(&cev);
    assert_eq!(rep.len(), 1, "{cev:?}");
    let r = recv_of(&rep[0]);
    // iperf 2's totals: the server counts the FIN's number; "Sent" is one more.
    assert_eq!(r.total, n_sent - 1);
    assert_eq!(r.lost, 0);
    let sf = finals(&sev);
    assert_eq!(sf.len(), 1);
    let s = recv_of(&sf[0]);
    assert_eq!((s.total, s.lost, s.out_of_order), (r.total, 0, 0));
    assert_eq!(sf[0].bytes, rep[0].bytes);
    assert_eq!(sf[0].bytes, r.total * 1470);
    // Two interval rows on each side.
    let ints = |ev: &[Event2]| {
        ev.iter()
            .filter(|e| matches!(e, Event2::Interval(_)))
            .count()
    };
    assert_eq!(ints(&cev), 2, "{cev:?}");
    assert_eq!(ints(&sev), 2, "{sev:?}");
}

#[test]
fn parallel_pps_flows_are_separate_tests() {
    let port = free_port();
    let mut sc = server(port, Some(3));
    sc.common.interval = Some(Duration::from_millis(500));
    let (srep, sh, _w) = spawn(sc);
    wait_listening(&srep);
    let (crep, ch, _cw) = spawn(client("127.0.0.1", port, Rate2::Packets(2000), 1.0, 3));
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let cev = crep.events();
    let sev = srep.events();
    let mut totals: Vec<u64> = reports(&cev).iter().map(|r| recv_of(r).total).collect();
    let mut stotals: Vec<u64> = finals(&sev)
        .iter()
        .filter(|r| matches!(r.tag, Tag2::Id(_)))
        .map(|r| recv_of(r).total)
        .collect();
    // The server adds the client's flows up: [SUM] per interval and in all.
    let sum = finals(&sev)
        .into_iter()
        .find(|r| r.tag == Tag2::Sum(3))
        .expect("a [SUM] total");
    assert_eq!(recv_of(&sum).total, stotals.iter().sum::<u64>());
    let sum_rows = |k: f64| {
        sev.iter()
            .filter(|e| matches!(e, Event2::Interval(r) if r.tag == Tag2::Sum(3) && r.start == k))
            .count()
    };
    assert_eq!((sum_rows(0.0), sum_rows(0.5)), (1, 1), "{sev:?}");
    totals.sort();
    stotals.sort();
    assert_eq!(totals.len(), 3);
    assert_eq!(totals, stotals);
    // 2000 pps for 1 s each: never more (the pacer does not run ahead). A
    // late wakeup near the end costs what its lateness holds (the time is
    // up before the pacer catches up): up to 14 on a loaded machine, more
    // than 40 once beside the whole suite; 5% short still tells pps apart
    // from any other unit.
    for t in 1..=3 {
        let n = sent(&cev, Tag2::Id(t));
        assert!((1900..=2010).contains(&n), "{n}");
    }
    assert_eq!(
        sent(&cev, Tag2::Sum(3)),
        (1..=3).map(|t| sent(&cev, Tag2::Id(t))).sum::<u64>()
    );
}

#[test]
fn garbage_ends_only_its_own_flow() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    // A datagram header and a flags word announcing a header longer than it.
    let mut d = [0u8; 30];
    d[3] = 1;
    d[16] = 0x48;
    d[18] = 0x01;
    d[19] = 0xa0;
    junk.send_to(&d, ("127.0.0.1", port)).unwrap();
    junk.send_to(&[1, 2, 3], ("127.0.0.1", port)).unwrap();
    let (crep, ch, _cw) = spawn(client("127.0.0.1", port, Rate2::Packets(500), 0.3, 1));
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let msgs: Vec<String> = srep
        .events()
        .iter()
        .filter_map(|e| match e {
            Event2::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    assert!(
        msgs[0].starts_with("WARNING: bad test header from 127.0.0.1:"),
        "{msgs:?}"
    );
    assert_eq!(reports(&crep.events()).len(), 1);
}

#[test]
fn no_udp_fin_gets_no_report_and_the_server_still_ends_the_flow() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    let mut c = client("127.0.0.1", port, Rate2::Packets(1000), 0.3, 1);
    if let Role2::Client(cl) = &mut c.role {
        cl.no_udp_fin = true;
    }
    let (crep, ch, _cw) = spawn(c);
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let cev = crep.events();
    assert!(reports(&cev).is_empty());
    let n = sent(&cev, Tag2::Id(1));
    let s = recv_of(&finals(&srep.events())[0]);
    assert_eq!((s.total, s.lost), (n - 1, 0));
}

fn with_mode(mut c: Config2, m: Mode2) -> Config2 {
    if let Role2::Client(cl) = &mut c.role {
        cl.mode = m;
    }
    c
}

fn recv_finals(ev: &[Event2], tag: Tag2) -> Vec<UdpRecv2> {
    finals(ev)
        .iter()
        .filter(|r| r.tag == tag && matches!(r.kind, RowKind2::UdpRecv(_)))
        .map(recv_of)
        .collect()
}

#[test]
fn reverse_the_server_sends_at_the_clients_rate_and_ends_with_its_fin() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    let c = with_mode(
        client("127.0.0.1", port, Rate2::Packets(1000), 1.0, 1),
        Mode2::Reverse,
    );
    let (crep, ch, _cw) = spawn(c);
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let (cev, sev) = (crep.events(), srep.events());
    // The server is the sender: its "Sent" against what the client counted.
    let n = sent(&sev, Tag2::Id(1));
    assert!((995..=1010).contains(&n), "{n}");
    let got = recv_finals(&cev, Tag2::ReverseId(1));
    assert_eq!(got.len(), 1, "{cev:?}");
    assert_eq!((got[0].total, got[0].lost), (n - 1, 0));
    // No report either way, and no sender on the client.
    assert!(reports(&cev).is_empty());
    assert!(!cev.iter().any(|e| matches!(e, Event2::Sent { .. })));
}

#[test]
fn full_duplex_both_directions_count_every_datagram() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    let c = with_mode(
        client("127.0.0.1", port, Rate2::Packets(800), 1.0, 1),
        Mode2::FullDuplex,
    );
    let (crep, ch, _cw) = spawn(c);
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let (cev, sev) = (crep.events(), srep.events());
    let up = sent(&cev, Tag2::Id(1));
    let down = sent(&sev, Tag2::Id(1));
    let s = recv_finals(&sev, Tag2::Id(1));
    let c = recv_finals(&cev, Tag2::ReverseId(1));
    assert_eq!((s[0].total, s[0].lost), (up - 1, 0), "{sev:?}");
    assert_eq!((c[0].total, c[0].lost), (down - 1, 0), "{cev:?}");
    assert!(reports(&cev).is_empty());
}

#[test]
fn a_header_asking_for_absurd_counts_is_refused_and_the_next_client_served() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    let cfg = client("127.0.0.1", port, Rate2::Packets(500), 0.3, 1);
    let Role2::Client(cl) = &cfg.role else {
        unreachable!()
    };
    let mut req = super::udp_client::request(&cfg, cl, 1470);
    req.streams = 1_000_000;
    let mut d =
        super::udp_common::payload(200, &req.udp_header(rperf3_proto2::VERSION_2_2_1, port));
    rperf3_proto2::DatagramHeader {
        seq: 1,
        sent: super::udp_wire::wall_now(),
    }
    .encode(&mut d, true);
    let liar = UdpSocket::bind("127.0.0.1:0").unwrap();
    liar.send_to(&d, ("127.0.0.1", port)).unwrap();
    let (crep, ch, _cw) = spawn(cfg);
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let msgs: Vec<String> = srep
        .events()
        .iter()
        .filter_map(|e| match e {
            Event2::Message(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(msgs.len(), 1, "{msgs:?}");
    let want = format!(
        "WARNING: bad test header from {}: {}; flow dropped",
        liar.local_addr().unwrap(),
        rperf3_proto2::HeaderError::TooManyStreams {
            streams: 1_000_000,
            max: 256
        }
    );
    assert_eq!(msgs[0], want);
    assert_eq!(reports(&crep.events()).len(), 1);
}

#[test]
fn dash_c_on_the_server_serves_only_that_host() {
    let port = free_port();
    let mut sc = server(port, Some(1));
    if let Role2::Server(s) = &mut sc.role {
        s.only_from = Some("127.0.0.2".into());
    }
    let (srep, sh, _w) = spawn(sc);
    wait_listening(&srep);
    // From 127.0.0.1: ignored (no FIN handshake, so it ends at once).
    let mut other = client("127.0.0.1", port, Rate2::Packets(500), 0.2, 1);
    if let Role2::Client(cl) = &mut other.role {
        cl.no_udp_fin = true;
    }
    let (_orep, oh, _ow) = spawn(other);
    assert_eq!(oh.join().unwrap().status, 0);
    let mut allowed = client("127.0.0.1", port, Rate2::Packets(500), 0.2, 1);
    allowed.common.bind = Some(Bind2 {
        host: "127.0.0.2".into(),
        port: None,
        device: None,
    });
    let (arep, ah, _aw) = spawn(allowed);
    assert_eq!(ah.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let peers: Vec<_> = srep
        .events()
        .iter()
        .filter_map(|e| match e {
            Event2::Connected(c) => Some(c.peer.ip()),
            _ => None,
        })
        .collect();
    assert_eq!(
        peers,
        vec!["127.0.0.2".parse::<std::net::IpAddr>().unwrap()]
    );
    let r = recv_of(&reports(&arep.events())[0]);
    assert_eq!(r.total, sent(&arep.events(), Tag2::Id(1)) - 1);
}

#[test]
fn single_threaded_server_serves_flows_one_after_another() {
    let port = free_port();
    let mut sc = server(port, Some(2));
    if let Role2::Server(s) = &mut sc.role {
        s.single_udp = true;
    }
    let (srep, sh, _w) = spawn(sc);
    wait_listening(&srep);
    for _ in 0..2 {
        let (crep, ch, _cw) = spawn(client("127.0.0.1", port, Rate2::Packets(500), 0.3, 1));
        assert_eq!(ch.join().unwrap().status, 0);
        let r = recv_of(&reports(&crep.events())[0]);
        assert_eq!(
            (r.total, r.lost),
            (sent(&crep.events(), Tag2::Id(1)) - 1, 0)
        );
    }
    assert_eq!(sh.join().unwrap().status, 0);
    assert_eq!(finals(&srep.events()).len(), 2);
}

#[test]
fn dash_n_sends_exactly_the_bytes_asked_for() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    let mut c = client("127.0.0.1", port, Rate2::Packets(5000), 1.0, 1);
    if let Role2::Client(cl) = &mut c.role {
        cl.end = End2::Bytes(100 * 1470);
    }
    let (crep, ch, _cw) = spawn(c);
    assert_eq!(ch.join().unwrap().status, 0);
    assert_eq!(sh.join().unwrap().status, 0);
    let cev = crep.events();
    // 100 data datagrams, the FIN numbered 101, "Sent" one more.
    assert_eq!(sent(&cev, Tag2::Id(1)), 102);
    let r = recv_of(&reports(&cev)[0]);
    assert_eq!((r.total, r.lost), (101, 0));
    let s = finals(&srep.events());
    assert_eq!(s[0].bytes, 101 * 1470);
}

#[test]
fn short_trip_times_datagrams_carry_the_small_header() {
    use rperf3_proto2::{classify_udp, RequestLimits, SmallTripTimes, UdpStart};
    let mut cfg = client("127.0.0.1", 5001, Rate2::Packets(10), 1.0, 1);
    cfg.common.trip_times = true;
    let Role2::Client(cl) = &cfg.role else {
        unreachable!()
    };
    let req = super::udp_client::request(&cfg, cl, 100);
    let (short, small) = super::udp_client::body(&cfg, &req, 100);
    assert!(small && SmallTripTimes::is_small(&short));
    let (long, small) = super::udp_client::body(&cfg, &req, 1470);
    assert!(!small && !SmallTripTimes::is_small(&long));
    // What a server reads from each: trip-times, 32- or 64-bit numbers.
    let now = super::udp_wire::wall_now();
    for (mut d, seq64) in [(short, false), (long, true)] {
        rperf3_proto2::DatagramHeader { seq: 1, sent: now }.encode(&mut d, seq64);
        let Ok(UdpStart::Test(r)) = classify_udp(&d, now, &RequestLimits::default()) else {
            panic!("not a test")
        };
        assert!(r.trip_times);
        assert_eq!(r.seq64, seq64);
    }
}

#[test]
fn a_reverse_client_facing_a_silent_server_ends_on_its_own() {
    // A bound socket that never answers: the request goes unanswered.
    let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let c = with_mode(
        client("127.0.0.1", port, Rate2::Packets(100), 0.5, 1),
        Mode2::Reverse,
    );
    let t0 = std::time::Instant::now();
    let (crep, ch, _cw) = spawn(c);
    assert_eq!(ch.join().unwrap().status, 0);
    // -t, then the grace for the server's FIN; never longer.
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(2400) && took < Duration::from_secs(4),
        "{took:?}"
    );
    let got = recv_finals(&crep.events(), Tag2::ReverseId(1));
    assert_eq!((got[0].total, got[0].reads), (0, 0));
    // The request went out (repeated while nothing came back), and no more.
    silent.set_nonblocking(true).unwrap();
    let mut n = 0;
    let mut b = [0u8; 2048];
    while silent.recv(&mut b).is_ok() {
        n += 1;
    }
    assert!((2..=100).contains(&n), "{n}");
}

#[test]
fn a_trickler_is_cut_off_after_its_announced_time() {
    let port = free_port();
    let (srep, sh, _w) = spawn(server(port, Some(1)));
    wait_listening(&srep);
    // A header announcing -t 0.5, then one datagram a second (never silent
    // long enough to end the flow that way) and no FIN.
    let cfg = client("127.0.0.1", port, Rate2::Packets(1), 0.5, 1);
    let Role2::Client(cl) = &cfg.role else {
        unreachable!()
    };
    let req = super::udp_client::request(&cfg, cl, 200);
    let mut d =
        super::udp_common::payload(200, &req.udp_header(rperf3_proto2::VERSION_2_2_1, port));
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let t0 = std::time::Instant::now();
    let mut seq = 1;
    while !sh.is_finished() && t0.elapsed() < Duration::from_secs(12) {
        rperf3_proto2::DatagramHeader {
            seq,
            sent: super::udp_wire::wall_now(),
        }
        .encode(&mut d, true);
        s.send_to(&d, ("127.0.0.1", port)).unwrap();
        seq += 1;
        std::thread::sleep(Duration::from_secs(1));
    }
    assert_eq!(sh.join().unwrap().status, 0);
    // 0.5 s announced + 5 s grace.
    let took = t0.elapsed();
    assert!(
        took > Duration::from_millis(5400) && took < Duration::from_secs(8),
        "{took:?}"
    );
    let f = finals(&srep.events());
    assert_eq!(f.len(), 1);
    assert_eq!(recv_of(&f[0]).lost, 0);
}
