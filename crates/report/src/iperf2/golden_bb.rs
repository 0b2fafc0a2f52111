//! Golden tests of the bounceback client's layout against iperf 2.2.1's own
//! output (`tcp-bounceback`, `tcp-bb-period0`, `tcp-bb-sizes`, `tcp-bb-noqa`,
//! `tcp-bb-hold`): the figures of each row are read back from the capture,
//! printed, and compared. The settings block, the column titles, the round
//! trip, TCP and byte columns and the histogram line must match character
//! for character; the rate and RPS (derived from rounded figures) must match
//! with their numbers masked.

use std::net::SocketAddr;
use std::time::UNIX_EPOCH;

use super::golden::{mask, print};
use super::golden_parse::{fixture, int, num};
use super::model::{
    Bb2, BbSettings2, Connection2, Event2, Hist2, Layout2, Proto2, Row2, RowKind2, Settings2,
    Side2, Tag2, TcpConnInfo2, TcpSend2,
};

/// The settings block of a bounceback client's capture.
fn settings(lines: &[String]) -> Settings2 {
    let first = &lines[1];
    let w: Vec<&str> = first.split_whitespace().collect();
    let bb = lines[2]
        .split("size = ")
        .nth(1)
        .and_then(|x| x.split_once(") (server hold req="))
        .expect("bounceback line");
    let sizes: Vec<u32> =
        bb.0.split('/')
            .map(|s| int(s.trim().trim_end_matches(" Byte")) as u32)
            .collect();
    let hold = int(bb.1.split_whitespace().next().unwrap_or("0")) as u32;
    let (count, period) = match lines[3].strip_prefix("Bursting request ") {
        Some(r) => {
            let v: Vec<&str> = r.split_whitespace().collect();
            (int(v[0]) as u32, num(v[3]))
        }
        None => (10, 0.0),
    };
    let window_line = lines
        .iter()
        .find(|l| l.starts_with("TCP window size:"))
        .unwrap();
    let window = if window_line.contains("4.00 MByte") {
        4 << 20
    } else {
        16 << 10
    };
    Settings2 {
        side: Side2::Client,
        proto: Proto2::Tcp,
        host: Some("127.0.0.1".into()),
        port: int(w[6]) as u16,
        pid: int(w[9]) as u32,
        flows: 1,
        len: 128 * 1024,
        ipg_us: None,
        window,
        window_requested: false,
        requested_window: None,
        congestion: Some("bbr".into()),
        congestion_asked: None,
        tos: 0,
        tos_by_dscp: false,
        connect_only: false,
        nodelay: true,
        mss: None,
        multicast: None,
        ttl: None,
        mode_note: None,
        trip_times: false,
        histograms: false,
        hist_bins: Default::default(),
        jitter_bin_us: None,
        isoch: None,
        bounceback: Some(BbSettings2 {
            request: sizes[0],
            reply: sizes[1],
            hold_us: hold,
            quickack: lines[2].contains("tcp_quickack"),
            count,
            period,
        }),
    }
}

/// A `Tx=1.95 KByte`-style figure, given the exact count it must be a
/// multiple of (`unit` bytes per round trip).
fn bytes(count: u64, unit: u32) -> u64 {
    count * u64::from(unit)
}

/// A BB row: `[  1] 0.00-1.00 sec  1.95 KBytes  16.0 Kbits/sec    10=0.041/...`.
fn bb_row(l: &str, s: &Settings2) -> Row2 {
    let bb = s.bounceback.unwrap();
    let w: Vec<&str> = l[5..].split_whitespace().collect();
    let (a, b) = w[0].split_once('-').unwrap();
    let (cnt, stats) = w[6].split_once('=').unwrap();
    let count = int(cnt);
    let ns: Vec<f64> = stats.split('/').map(|x| num(x) * 1e6).collect();
    let retries = int(w[8]);
    let tcp = (!w[9].starts_with('-')).then(|| {
        // 0K/(0)/0(0) or 576K/(18)/49(67)
        let p: Vec<&str> = w[9].split('/').collect();
        let (rtt, var) = p[2].split_once('(').unwrap();
        TcpSend2 {
            cwnd_bytes: int(p[0].trim_end_matches('K')) * 1024,
            cwnd_pkts: int(p[1].trim_matches(|c| c == '(' || c == ')')) as u32,
            rtt_us: int(rtt) as u32,
            rttvar_us: int(var.trim_end_matches(')')) as u32,
            ..TcpSend2::default()
        }
    });
    let (tx, rx) = (bytes(count, bb.request), bytes(count, bb.reply));
    Row2 {
        tag: Tag2::Id(1),
        addrs: None,
        start: num(a),
        end: num(b),
        bytes: tx + rx,
        kind: RowKind2::Bounceback(Bb2 {
            count,
            mean_ns: ns[0],
            min_ns: ns[1] as u64,
            max_ns: ns[2] as u64,
            stdev_ns: ns[3],
            retries,
            tcp,
            tx_bytes: tx,
            rx_bytes: rx,
        }),
        at: UNIX_EPOCH,
    }
}

/// The histogram line, its bins turned back into the core's buckets (one
/// value in the middle of each bin) and binned again by the core.
fn hist(l: &str) -> Hist2 {
    let (head, rest) = l.split_once(" sec  BB8(f)-PDF: ").unwrap();
    let (a, b) = head[5..].trim().split_once('-').unwrap();
    let bins = rest.split_once(")=").unwrap().1.split(' ').next().unwrap();
    let buckets = bins
        .split(',')
        .map(|kc| {
            let (k, c) = kc.split_once(':').unwrap();
            ((int(k) - 1) * 100_000 + 50_000, int(c))
        })
        .collect::<Vec<_>>();
    Hist2 {
        tag: Tag2::Id(1),
        start: num(a),
        end: num(b),
        name: "BB8(f)".into(),
        bins: rperf3_latency::Binned::of(&buckets, 0, 100_000, 100_000),
        max_at: None,
    }
}

fn replay(name: &str) {
    let want = fixture(&format!("{name}.client.txt"));
    let s = settings(&want);
    let conn = want
        .iter()
        .position(|l| l.contains("connected with"))
        .unwrap();
    let local: SocketAddr = "127.0.0.1:50968".parse().unwrap();
    let mut events = vec![
        Event2::Settings(s.clone()),
        Event2::Connected(Connection2 {
            tag: Tag2::Id(1),
            local,
            device: Some("lo".into()),
            peer: SocketAddr::new(local.ip(), s.port),
            notes: vec![],
            peer_version: None,
            tcp: Some(TcpConnInfo2 {
                icwnd: 319,
                mss: 32741,
                irtt_us: 25,
            }),
            connect_time: None,
            connect_only: false,
            at: UNIX_EPOCH,
        }),
    ];
    let rows: Vec<&String> = want[conn + 2..].iter().collect();
    for (i, l) in rows.iter().enumerate() {
        if l.contains("-PDF:") {
            events.push(Event2::Histogram(hist(l)));
        } else if i + 2 == rows.len() {
            events.push(Event2::Final(bb_row(l, &s)));
        } else {
            events.push(Event2::Interval(bb_row(l, &s)));
        }
    }
    let layout = Layout2 {
        enhanced: true,
        ..Layout2::default()
    };
    let got = print(Side2::Client, &layout, events);
    let ctx = || {
        format!(
            "{name}\n--- got:\n{}\n--- want:\n{}",
            got.join("\n"),
            want.join("\n")
        )
    };
    assert_eq!(got.len(), want.len(), "{}", ctx());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        if i == conn {
            // Ports, date and connect time come from elsewhere; the notes
            // are checked with the live tests.
            continue;
        }
        if w.contains("RPS=") {
            // Everything up to the RPS figure but the rate is exact.
            let cut = |s: &str| {
                s.split("/sec")
                    .nth(1)
                    .unwrap()
                    .split("RPS=")
                    .next()
                    .unwrap()
                    .to_string()
            };
            assert_eq!(cut(g), cut(w), "line {i}\n{}", ctx());
            assert_eq!(mask(g), mask(w), "line {i}\n{}", ctx());
        } else {
            assert_eq!(g, w, "line {i}\n{}", ctx());
        }
    }
}

#[test]
fn golden_bounceback_matches_2_2_1() {
    for name in [
        "tcp-bounceback",
        "tcp-bb-e",
        "tcp-bb-period0",
        "tcp-bb-sizes",
        "tcp-bb-noqa",
        "tcp-bb-hold",
    ] {
        replay(name);
    }
}

/// `--txstart-time`: 2.2.1's line, whole seconds left rounded up, the start
/// to the second and the time now to the millisecond.
#[test]
fn golden_txstart_line_matches_2_2_1() {
    use super::golden_parse::civil_secs;
    let want = fixture("tcp-txstart.client.txt");
    let line = want.iter().find(|l| l.contains("Client traffic")).unwrap();
    let hms = |h: u64, m: u64, s: u64| h * 3600 + m * 60 + s;
    let e = Event2::TxStart {
        tag: Tag2::Id(1),
        start: civil_secs(2026, 11, 25, hms(22, 32, 43), 0),
        now: civil_secs(2026, 11, 25, hms(22, 32, 41), 843_000),
    };
    let layout = Layout2 {
        enhanced: true,
        ..Layout2::default()
    };
    assert_eq!(
        print(Side2::Client, &layout, vec![e]),
        std::slice::from_ref(line)
    );
}

/// `--histograms` on a `--trip-times` server (2.2.1's `tcp-hist` and
/// `udp-hist`): the block's line, and each `F8-PDF` / `T8-PDF` line rebuilt
/// from its bins, its outlier count and its largest delay with the time it
/// arrived.
#[test]
fn golden_histogram_lines_match_2_2_1() {
    for (name, proto, at) in [("tcp-hist", Proto2::Tcp, 4), ("udp-hist", Proto2::Udp, 3)] {
        histogram_case(name, proto, at);
    }
}

fn histogram_case(name: &str, proto: Proto2, at: usize) {
    use std::time::Duration;
    let want = fixture(&format!("{name}.server.txt"));
    let mut s = settings_for_server();
    (s.histograms, s.proto, s.len) = (true, proto, 1470);
    let layout = Layout2 {
        enhanced: true,
        ..Layout2::default()
    };
    let block = print(Side2::Server, &layout, vec![Event2::Settings(s)]);
    assert_eq!(block[at], want[at], "{name}");
    assert_eq!(
        block.len(),
        want.iter().position(|l| l.starts_with("[")).unwrap(),
        "{name}"
    );
    let mut n = 0;
    for l in want.iter().filter(|l| l.contains("-PDF:")) {
        let (head, rest) = l.split_once(" sec ").unwrap();
        let (name, _) = rest.split_once("-PDF:").unwrap();
        let mut h = hist(&format!(
            "{head} sec  BB8(f)-PDF:{}",
            rest.split_once("-PDF:").unwrap().1
        ));
        h.name = name.into();
        let tail = rest.rsplit_once(" (").unwrap().1.trim_end_matches(')');
        let (ms, at) = tail.split_once(" ms/").unwrap();
        let (secs, us) = at.split_once('.').unwrap();
        h.max_at = Some((
            (num(ms) * 1e6).round() as u64,
            UNIX_EPOCH + Duration::from_secs(int(secs)) + Duration::from_micros(int(us)),
        ));
        assert_eq!(
            print(Side2::Server, &layout, vec![Event2::Histogram(h)]),
            std::slice::from_ref(l)
        );
        n += 1;
    }
    assert_eq!(n, 3);
}

fn settings_for_server() -> Settings2 {
    Settings2 {
        side: Side2::Server,
        proto: Proto2::Tcp,
        host: None,
        port: 25160,
        pid: 17006,
        flows: 1,
        len: 128 * 1024,
        ipg_us: None,
        window: 128 * 1024,
        window_requested: false,
        requested_window: None,
        congestion: Some("bbr".into()),
        congestion_asked: None,
        tos: 0,
        tos_by_dscp: false,
        connect_only: false,
        nodelay: false,
        mss: None,
        multicast: None,
        ttl: None,
        mode_note: None,
        trip_times: false,
        bounceback: None,
        histograms: false,
        hist_bins: Default::default(),
        jitter_bin_us: None,
        isoch: None,
    }
}

/// `--jitter-histograms` on a UDP server (2.2.1's `udp-jitter-hist`): the
/// block's line, and each `J8-PDF` / `J8(f)-PDF` line (one space after `sec`,
/// no largest value) rebuilt from its bins and outlier count.
#[test]
fn golden_jitter_histogram_lines_match_2_2_1() {
    let want = fixture("udp-jitter-hist.server.txt");
    let mut s = settings_for_server();
    (s.jitter_bin_us, s.proto, s.len) = (Some(100), Proto2::Udp, 1470);
    let layout = Layout2 {
        enhanced: true,
        ..Layout2::default()
    };
    let block = print(Side2::Server, &layout, vec![Event2::Settings(s)]);
    let at = want
        .iter()
        .position(|l| l.starts_with("Enabled jitter histograms"))
        .unwrap();
    assert_eq!(block[at], want[at]);
    assert_eq!(
        block.len(),
        want.iter().position(|l| l.starts_with("[")).unwrap()
    );
    let mut n = 0;
    for l in want.iter().filter(|l| l.contains("-PDF:")) {
        let (head, rest) = l.split_once(" sec ").unwrap();
        let (name, body) = rest.split_once("-PDF:").unwrap();
        let mut h = hist(&format!("{head} sec  BB8(f)-PDF:{body}"));
        h.name = name.into();
        assert_eq!(
            print(Side2::Server, &layout, vec![Event2::Histogram(h)]),
            std::slice::from_ref(l)
        );
        n += 1;
    }
    assert!(n >= 3, "{n} lines");
}
