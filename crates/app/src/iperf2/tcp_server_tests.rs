//! The iperf 2 TCP server's host behaviour through the library: SIGINT,
//! `-t`, `-c host`, `-1`, and the header variants of `-X` and `-C` clients,
//! stock and ours.

use std::process::Command;
use std::time::{Duration, Instant};

use rperf3_report::iperf2::model::{Event2, Tag2};

use super::config::*;
use super::tcp_tests::{client, finals, free_port, peer, run_client, server, Ours};

fn server_with(port: u16, f: impl FnOnce(&mut Server2, &mut Common2)) -> Config2 {
    let mut cfg = server(port);
    let Role2::Server(s) = &mut cfg.role else {
        unreachable!()
    };
    f(s, &mut cfg.common);
    cfg
}

fn client_with(cfg: Config2, f: impl FnOnce(&mut Client2, &mut Common2)) -> Config2 {
    let mut cfg = cfg;
    let Role2::Client(c) = &mut cfg.role else {
        unreachable!()
    };
    f(c, &mut cfg.common);
    cfg
}

fn connected(e: &[Event2]) -> usize {
    e.iter()
        .filter(|e| matches!(e, Event2::Connected(_)))
        .count()
}

/// SIGINT during a test: the server ends it, its final row is out, and the
/// server exits 0 at once, as iperf 2.
#[test]
fn sigint_flushes_the_running_tests_final_row() {
    let port = free_port();
    let srv = Ours::start(server(port));
    let cfg = client(port, Mode2::Normal, End2::Time(Duration::from_secs(20)), 1);
    let cl = std::thread::spawn(move || run_client(&cfg));
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| connected(e) == 1));
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    let rep = srv.rep.clone();
    assert_eq!(srv.interrupt().status, 0);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    let f = finals(&rep.events());
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].bytes > 0);
    // The client sees its connection end and stops, well before its -t 20.
    let (o, crep) = cl.join().unwrap();
    assert_eq!(o.status, 0);
    let cf = crep.finals();
    assert!(cf[0].bytes >= f[0].bytes, "{cf:?} {f:?}");
}

/// Server `-t 1`: a client asking for 20 s is cut at 1 s, and the server stops
/// serving after its time.
#[test]
fn server_time_ends_its_tests_and_itself() {
    let port = free_port();
    let srv = Ours::start(server_with(port, |_, c| {
        c.time = Some(Duration::from_secs(1));
    }));
    let t = Instant::now();
    let cfg = client(port, Mode2::Normal, End2::Time(Duration::from_secs(20)), 1);
    let (o, crep) = run_client(&cfg);
    assert_eq!(o.status, 0);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "{:?} {:?} {:?}",
        t.elapsed(),
        crep.events(),
        srv.rep.events()
    );
    let o = srv
        .join(Duration::from_secs(5))
        .expect("the server ended by itself");
    assert_eq!(o.status, 0);
}

/// `-c 127.0.0.2` on the server: a client from 127.0.0.1 is refused with a
/// message; one bound (`-B`) to 127.0.0.2 is served.
#[test]
fn only_from_refuses_other_hosts_and_bind_picks_the_source() {
    let port = free_port();
    let srv = Ours::start(server_with(port, |s, _| {
        s.only_from = Some("127.0.0.2".into());
    }));
    let (_, rep) = run_client(&client(port, Mode2::Normal, End2::Bytes(100_000), 1));
    assert!(srv.rep.wait_for(Duration::from_secs(5), |e| e.iter().any(
        |e| matches!(e, Event2::Message(m) if m.contains("refused: only 127.0.0.2 is served"))
    )));
    assert!(finals(&srv.rep.events()).is_empty());
    drop(rep);
    let cfg = client_with(
        client(port, Mode2::Normal, End2::Bytes(100_000), 1),
        |_, c| {
            c.bind = Some(Bind2 {
                host: "127.0.0.2".into(),
                port: None,
                device: None,
            });
        },
    );
    let (o, _) = run_client(&cfg);
    assert_eq!(o.status, 0);
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| finals(e).len() == 1));
    let e = srv.rep.events();
    let peer = e.iter().find_map(|e| match e {
        Event2::Connected(c) => Some(c.peer),
        _ => None,
    });
    assert_eq!(
        peer.map(|p| p.ip().to_string()).as_deref(),
        Some("127.0.0.2")
    );
    assert_eq!(finals(&e)[0].bytes, 100_000);
}

/// `-1`: a second client is not served while the first runs (its connection
/// waits in the backlog), then it is.
#[test]
fn single_client_serves_one_at_a_time() {
    let port = free_port();
    let srv = Ours::start(server_with(port, |s, _| s.single_client = true));
    let a = client(
        port,
        Mode2::Normal,
        End2::Time(Duration::from_millis(800)),
        1,
    );
    let b = client(port, Mode2::Normal, End2::Bytes(100_000), 1);
    let ha = std::thread::spawn(move || run_client(&a));
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| connected(e) == 1));
    let hb = std::thread::spawn(move || run_client(&b));
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(8), |e| connected(e) == 2));
    let e = srv.rep.events();
    // The second connection line comes after the first test's final row.
    let first_final = e
        .iter()
        .position(|e| matches!(e, Event2::Final(_)))
        .unwrap();
    let second_conn = e
        .iter()
        .enumerate()
        .filter(|(_, e)| matches!(e, Event2::Connected(_)))
        .nth(1)
        .unwrap()
        .0;
    assert!(first_final < second_conn, "{e:?}");
    assert_eq!(ha.join().unwrap().0.status, 0);
    assert_eq!(hb.join().unwrap().0.status, 0);
}

/// `-X` (our client waits for the ack, which carries the server's version)
/// and `-C` (no header at all) against stock servers, and the stock clients'
/// `-X` and `-C` against ours: byte counts agree, and our server names a
/// `-X` client's version on its connection line.
#[test]
fn peer_detect_and_compat_both_ways() {
    for v in ["2.1.8", "2.2.1"] {
        let Some(bin) = peer(v) else { continue };
        for (flag, x) in [("-X", true), ("-C", false)] {
            let port = free_port();
            let srv = Ours::start(server(port));
            let out = Command::new(&bin)
                .args([
                    "-c",
                    "127.0.0.1",
                    "-p",
                    &port.to_string(),
                    "-n",
                    "3000000",
                    flag,
                ])
                .output()
                .unwrap();
            assert!(out.status.success(), "{v} {flag}");
            assert!(srv
                .rep
                .wait_for(Duration::from_secs(5), |e| finals(e).len() == 1));
            let e = srv.rep.events();
            assert_eq!(finals(&e)[0].bytes, 3_000_000, "{v} {flag}");
            let pv = e.iter().find_map(|e| match e {
                Event2::Connected(c) => Some(c.peer_version.clone()),
                _ => None,
            });
            let want = if v == "2.1.8" { "2.1.8" } else { "2.2.1-rc" };
            assert_eq!(pv.flatten().as_deref(), x.then_some(want), "{v} {flag}");
            drop(srv);
            // Ours against the stock server.
            let port = free_port();
            let mut st = Command::new(&bin)
                .args(["-s", "-p", &port.to_string(), "-y", "C"])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let end = Instant::now() + Duration::from_secs(5);
            while !super::tcp_tests::listening(port) {
                assert!(Instant::now() < end);
                std::thread::sleep(Duration::from_millis(10));
            }
            let cfg = client_with(
                client(port, Mode2::Normal, End2::Bytes(3_000_000), 1),
                |c, _| {
                    c.peer_detect = x;
                    c.compat = !x;
                },
            );
            let (o, rep) = run_client(&cfg);
            assert_eq!(o.status, 0, "{v} {flag}: {:?}", rep.messages());
            assert_eq!(rep.finals()[0].bytes, 3_000_000);
            assert_eq!(rep.finals()[0].tag, Tag2::Id(1));
            std::thread::sleep(Duration::from_millis(300));
            let _ = Command::new("kill")
                .args(["-INT", &st.id().to_string()])
                .status();
            let _ = st.wait();
            let mut text = String::new();
            std::io::Read::read_to_string(st.stdout.as_mut().unwrap(), &mut text).unwrap();
            let bytes: Vec<u64> = text
                .lines()
                .filter_map(|l| l.split(',').nth(7)?.parse().ok())
                .collect();
            // A stock server reads a compat client's first 4 bytes to find
            // there is no header, and does not count them (ours does).
            let lost = if x { 0 } else { 4 };
            assert_eq!(bytes, [3_000_000 - lost], "{v} {flag}: {text}");
        }
    }
}

/// `-S`, `-Z`, `-M`, `-N` and `-w` on the client's socket as the kernel
/// reports them (`ss`), and the header's TOS applied by our server to its
/// accepted socket, as iperf 2's server does.
#[test]
fn socket_options_reach_the_kernel_on_both_ends() {
    let port = free_port();
    let srv = Ours::start(server(port));
    let cfg = client_with(
        client(
            port,
            Mode2::Normal,
            End2::Time(Duration::from_millis(1500)),
            1,
        ),
        |c, common| {
            c.rate = Some(Rate2::Bits(8_000_000));
            common.tos = Some(0x20);
            common.congestion = Some("reno".into());
            common.mss = Some(1000);
            common.nodelay = true;
            common.window = Some(256 * 1024);
        },
    );
    let cl = std::thread::spawn(move || run_client(&cfg));
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| connected(e) == 1));
    let ss = |filter: String| {
        let out = Command::new("ss")
            .args(["-tin", "--tos", &filter])
            .output()
            .expect("ss (iproute2) is needed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let client_side = ss(format!("dport = :{port}"));
    let server_side = ss(format!("sport = :{port}"));
    let (o, rep) = cl.join().unwrap();
    assert_eq!(o.status, 0);
    // With timestamps, TCP_MAXSEG 1000 leaves 988 bytes of payload.
    for want in ["tos:0x20", "reno", "mss:988"] {
        assert!(client_side.contains(want), "{want}: {client_side}");
    }
    assert!(server_side.contains("tos:0x20"), "{server_side}");
    // The settings block shows the kernel's buffer for -w 256K (doubled).
    let w = rep.events().into_iter().find_map(|e| match e {
        Event2::Settings(s) => Some((s.window, s.window_requested, s.nodelay)),
        _ => None,
    });
    assert_eq!(w, Some((512 * 1024, true, true)));
}

/// `-F file`: the whole file goes out (its partial last block too, which the
/// stock client drops) after the header, and the sender stops at its end; the
/// stock server counts every byte.
#[test]
fn file_input_sends_the_whole_file() {
    let Some(bin) = peer("2.2.1") else { return };
    let path = std::env::temp_dir().join(format!("iperf2-f-{}.bin", std::process::id()));
    let data: Vec<u8> = (0..1_000_003u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let port = free_port();
    let mut st = Command::new(&bin)
        .args(["-s", "-p", &port.to_string(), "-y", "C"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while !super::tcp_tests::listening(port) {
        assert!(Instant::now() < end);
        std::thread::sleep(Duration::from_millis(10));
    }
    let t = Instant::now();
    let cfg = client_with(
        client(port, Mode2::Normal, End2::Time(Duration::from_secs(10)), 1),
        |c, _| c.input = Input2::File(path.to_string_lossy().into_owned()),
    );
    let (o, rep) = run_client(&cfg);
    let _ = std::fs::remove_file(&path);
    assert_eq!(o.status, 0, "{:?}", rep.messages());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // The 64-byte header, then the file.
    assert_eq!(rep.finals()[0].bytes, 1_000_067);
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill")
        .args(["-INT", &st.id().to_string()])
        .status();
    let _ = st.wait();
    let mut text = String::new();
    std::io::Read::read_to_string(st.stdout.as_mut().unwrap(), &mut text).unwrap();
    let bytes: Vec<u64> = text
        .lines()
        .filter_map(|l| l.split(',').nth(7)?.parse().ok())
        .collect();
    assert_eq!(bytes, [1_000_067], "{text}");
}

/// A flood of silent connections: past the limit the oldest are closed to
/// make room (each with a message), and a real client is served at once.
#[test]
fn a_flood_of_silent_connections_does_not_keep_a_client_out() {
    let port = free_port();
    let srv = Ours::start(server(port));
    let n = super::tcp_shared::MAX_PENDING as usize + 6;
    let flood: Vec<std::net::TcpStream> = (0..n)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let t = Instant::now();
    let (o, rep) = run_client(&client(port, Mode2::Normal, End2::Bytes(1_000_000), 1));
    assert_eq!(o.status, 0, "{:?}", rep.messages());
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| !finals(e).is_empty()));
    assert_eq!(finals(&srv.rep.events())[0].bytes, 1_000_000);
    let evicted = srv
        .rep
        .messages()
        .iter()
        .filter(|m| m.contains("closed while still sending its test header, to make room"))
        .count();
    assert!(evicted >= 6, "{evicted}");
    drop(flood);
}

/// TCP `-b 200pps -l 1000`: 200 writes of 1000 bytes a second, counted by our
/// server's receiver (the 64-byte header on top; one write either way at the
/// edges of the second).
#[test]
fn packets_per_second_paces_writes() {
    let port = free_port();
    let srv = Ours::start(server(port));
    let cfg = client_with(
        client(port, Mode2::Normal, End2::Time(Duration::from_secs(1)), 1),
        |c, common| {
            c.rate = Some(Rate2::Packets(200));
            common.len = Some(1000);
        },
    );
    let (o, rep) = run_client(&cfg);
    assert_eq!(o.status, 0);
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| !finals(e).is_empty()));
    let got = finals(&srv.rep.events())[0].bytes;
    assert!((199_064..=201_064).contains(&got), "{got}");
    assert_eq!(rep.finals()[0].bytes, got);
}

/// A stock `-X --trip-times` client reads a 52-byte ack: ours sends it, so
/// the client goes on (it would wait for 24 more bytes after a 28-byte ack).
#[test]
fn a_trip_times_peer_detect_client_gets_its_long_ack() {
    let Some(bin) = peer("2.2.1") else { return };
    let port = free_port();
    let srv = Ours::start(server(port));
    let out = Command::new("timeout")
        .args([
            "-s",
            "KILL",
            "10",
            &bin,
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
        ])
        .args(["-n", "2000000", "-X", "--trip-times", "-y", "C"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| !finals(e).is_empty()));
    // With trip-times the stock client writes whole bursts: it reports what
    // it wrote, and that is what arrived.
    // (Trip-times make it print 2.2.1's -e records: bytes in field 8.)
    let text = String::from_utf8_lossy(&out.stdout);
    let sent: Vec<u64> = text
        .lines()
        .filter(|l| l.starts_with('+'))
        .filter_map(|l| l.split(',').nth(8)?.parse().ok())
        .collect();
    assert_eq!(sent, [finals(&srv.rep.events())[0].bytes], "{text}");
    assert!(sent[0] >= 2_000_000);
}

/// Server `-B 127.0.0.2`: it listens there only; a client of 127.0.0.1 is
/// refused by the kernel and says so in iperf 2's words, exiting 0 as iperf 2.
#[test]
fn server_bind_listens_on_that_address_only() {
    let port = free_port();
    let srv = Ours::start(server_with(port, |_, c| {
        c.bind = Some(Bind2 {
            host: "127.0.0.2".into(),
            port: None,
            device: None,
        });
    }));
    let (o, rep) = run_client(&client(port, Mode2::Normal, End2::Bytes(10_000), 1));
    assert_eq!(o.status, 0);
    let m = rep.messages();
    let want =
        format!("[  1] tcp connect to 127.0.0.1 port {port} failed (Connection refused) on ");
    assert!(m.len() == 1 && m[0].starts_with(&want), "{m:?}");
    let mut cfg = client(port, Mode2::Normal, End2::Bytes(10_000), 1);
    let Role2::Client(c) = &mut cfg.role else {
        unreachable!()
    };
    c.host = "127.0.0.2".into();
    let (o, rep) = run_client(&cfg);
    assert_eq!(o.status, 0);
    assert_eq!(rep.finals()[0].bytes, 10_000);
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| finals(e).len() == 1));
}

/// `-F` naming no file: iperf 2's two lines, then the test runs with the
/// pattern (as 2.1.8 and 2.2.1 do).
#[test]
fn a_missing_input_file_falls_back_to_the_pattern() {
    let port = free_port();
    let srv = Ours::start(server(port));
    let cfg = client_with(
        client(port, Mode2::Normal, End2::Bytes(300_000), 1),
        |c, _| c.input = Input2::File("/nonexistent/iperf2-input".into()),
    );
    let (o, rep) = run_client(&cfg);
    assert_eq!(o.status, 0);
    assert_eq!(
        rep.messages(),
        [
            "Unable to open the file stream",
            "Will use the default data stream"
        ]
    );
    assert_eq!(rep.finals()[0].bytes, 300_000);
    assert!(srv
        .rep
        .wait_for(Duration::from_secs(5), |e| finals(e).len() == 1));
}
