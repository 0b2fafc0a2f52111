use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::time::Duration;

use super::http::Endpoint;
use super::*;

/// The value of the sample line `series` (name and labels, as printed).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

fn tcp_pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    (a, l.accept().unwrap().0)
}

#[test]
fn every_family_is_there_from_the_start() {
    let text = Metrics::new().encode();
    for o in TestOutcome::ALL {
        let s = format!("rperf3_tests_total{{outcome=\"{}\"}}", o.label());
        assert_eq!(value(&text, &s), Some(0.0), "{s} in\n{text}");
    }
    for s in [
        "rperf3_tests_running",
        "rperf3_clients_queued",
        "rperf3_bytes_received_total{protocol=\"tcp\"}",
        "rperf3_bytes_sent_total{protocol=\"udp\"}",
        "rperf3_udp_packets_total{direction=\"received\"}",
        "rperf3_udp_packets_lost_total",
        "rperf3_tcp_retransmits_total",
    ] {
        assert_eq!(value(&text, s), Some(0.0), "{s} in\n{text}");
    }
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn a_running_test_counts_live_and_its_totals_stay_after_it_ends() {
    let m = Metrics::new();
    let (a, _b) = tcp_pair();
    let (c, _d) = tcp_pair();
    let streams = [
        LiveStream::tcp(a, 0, false).unwrap(),
        LiveStream::tcp(c, 1, true).unwrap(),
    ];
    m.test_started(7, &streams);
    m.set_load(1, 2);
    streams[0].counters.add(1000);
    streams[1].counters.add(300);
    let text = m.encode();
    let rx = "rperf3_bytes_received_total{protocol=\"tcp\"}";
    assert_eq!(value(&text, rx), Some(1000.0), "{text}");
    assert_eq!(value(&text, "rperf3_clients_queued"), Some(2.0));
    let rate = "rperf3_test_throughput_bytes_per_second{test=\"7\",protocol=\"tcp\",\
                direction=\"received\"}";
    assert!(value(&text, rate).is_some_and(|r| r > 0.0), "{text}");
    // The sending stream's TCP_INFO: an RTT and a window.
    let cwnd = "rperf3_test_tcp_cwnd_bytes{test=\"7\",protocol=\"tcp\"}";
    assert!(value(&text, cwnd).is_some_and(|c| c > 0.0), "{text}");
    streams[0].counters.add(24);
    m.test_ended(7, TestOutcome::Ok);
    let text = m.encode();
    assert_eq!(value(&text, rx), Some(1024.0), "{text}");
    let tx = "rperf3_bytes_sent_total{protocol=\"tcp\"}";
    assert_eq!(value(&text, tx), Some(300.0), "{text}");
    assert_eq!(
        value(&text, "rperf3_tests_total{outcome=\"ok\"}"),
        Some(1.0)
    );
    assert!(
        !text.contains("test=\"7\""),
        "gauges of an ended test: {text}"
    );
}

#[test]
fn udp_receivers_report_packets_loss_and_jitter() {
    let m = Metrics::new();
    let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    a.connect("127.0.0.1:9").unwrap();
    let s = LiveStream::udp(a, 0, false).unwrap();
    s.with_udp_stats(|st, _| {
        st.packets = 100;
        st.lost = 3;
        st.jitter.seconds = 0.002;
    });
    m.test_started(1, std::slice::from_ref(&s));
    let text = m.encode();
    assert_eq!(
        value(&text, "rperf3_udp_packets_total{direction=\"received\"}"),
        Some(100.0)
    );
    assert_eq!(value(&text, "rperf3_udp_packets_lost_total"), Some(3.0));
    let j = "rperf3_test_udp_jitter_seconds{test=\"1\",protocol=\"udp\"}";
    assert_eq!(value(&text, j), Some(0.002), "{text}");
}

fn get(addr: std::net::SocketAddr, request: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn the_endpoint_answers_get_metrics_only() {
    let e = Endpoint::start("127.0.0.1:0".parse().unwrap(), Metrics::new()).unwrap();
    let ok = get(e.local_addr(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
    assert!(
        ok.contains("Content-Type: application/openmetrics-text"),
        "{ok}"
    );
    assert!(ok.contains("rperf3_tests_total{outcome=\"ok\"} 0"), "{ok}");
    for bad in [
        "GET / HTTP/1.1\r\n\r\n",
        "POST /metrics HTTP/1.1\r\n\r\n",
        "GET /metricsx HTTP/1.0\r\n\r\n",
    ] {
        let r = get(e.local_addr(), bad);
        assert!(r.starts_with("HTTP/1.1 404 Not Found\r\n"), "{bad:?}: {r}");
    }
}

#[test]
fn idle_connections_neither_block_a_scrape_nor_pile_up() {
    let e = Endpoint::start("127.0.0.1:0".parse().unwrap(), Metrics::new()).unwrap();
    // Twice the bound of silent connections: the oldest are pushed out.
    let idle: Vec<_> = (0..2 * http::MAX_CONNS)
        .map(|_| TcpStream::connect(e.local_addr()).unwrap())
        .collect();
    let t = Instant::now();
    let ok = get(e.local_addr(), "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(ok.starts_with("HTTP/1.1 200 OK"), "{ok}");
    // Blocked would mean waiting for the silent ones' deadline.
    assert!(t.elapsed() < http::CONN_DEADLINE / 2, "{:?}", t.elapsed());
    // The first silent one was closed to make room.
    let mut first = &idle[0];
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(first.read(&mut [0u8; 16]).unwrap(), 0);
}

/// The `rperf3_latency_seconds` series of one kind: its buckets as (le, cumulative
/// count) in exposition order, `_count` and `_sum`.
fn latency_series(text: &str, kind: &str) -> (Vec<(f64, u64)>, Option<f64>, Option<f64>) {
    let want = format!("kind=\"{kind}\"");
    let buckets = text
        .lines()
        .filter_map(|l| l.strip_prefix("rperf3_latency_seconds_bucket{"))
        .filter_map(|rest| {
            let (labels, n) = rest.split_once("} ")?;
            let mut labels = labels.split(',');
            labels.clone().any(|l| l == want).then_some(())?;
            let le = labels
                .find_map(|l| l.strip_prefix("le=\""))?
                .trim_end_matches('"');
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().unwrap()
            };
            Some((le, n.parse().unwrap()))
        })
        .collect();
    let count = value(
        text,
        &format!("rperf3_latency_seconds_count{{kind=\"{kind}\"}}"),
    );
    let sum = value(
        text,
        &format!("rperf3_latency_seconds_sum{{kind=\"{kind}\"}}"),
    );
    (buckets, count, sum)
}

#[test]
fn latency_round_trips_are_a_cumulative_histogram_by_kind_issue18() {
    use rperf3_latency::{Kind, Samples};
    let m = Metrics::new();
    let text = m.encode();
    assert!(
        text.contains("# TYPE rperf3_latency_seconds histogram\n"),
        "{text}"
    );
    for kind in latency::KINDS {
        let (b, count, sum) = latency_series(&text, kind);
        assert_eq!(b.len(), latency::BOUNDS.len() + 1, "{text}");
        assert!(b.iter().all(|x| x.1 == 0));
        assert_eq!((count, sum), (Some(0.0), Some(0.0)));
    }
    let mut s = Samples::default();
    // Idle: 50 and 80 µs (le 0.0001), 200 µs (le 0.00025).
    for us in [50, 80, 200] {
        s.record(Kind::Idle, us * 1000);
    }
    // Foreign: a handshake of 4 ms and requests of 30 ms and 40 ms.
    s.record(Kind::ForeignConnect, 4_000_000);
    s.record(Kind::ForeignRequest, 30_000_000);
    s.record(Kind::ForeignRequest, 40_000_000);
    // Self: 150 ms twice, and 7 s beyond the last bound.
    for ms in [150, 150, 7000] {
        s.record(Kind::SelfLoaded, ms * 1_000_000);
    }
    // Two tests end with the same samples: every count doubles.
    m.record_latency(&s);
    m.record_latency(&s);
    let text = m.encode();
    let at = |b: &[(f64, u64)], le: f64| b.iter().find(|x| x.0 == le).unwrap().1;
    for (kind, recorded, sum_s, checks) in [
        (
            "idle",
            3u32,
            330e-6,
            vec![(0.0001, 2), (0.00025, 3), (5.0, 3)],
        ),
        (
            "foreign",
            3,
            0.074,
            vec![(0.0025, 0), (0.005, 1), (0.025, 1), (0.05, 3)],
        ),
        (
            "self",
            3,
            7.3,
            vec![(0.1, 0), (0.25, 2), (5.0, 2), (f64::INFINITY, 3)],
        ),
    ] {
        let (b, count, sum) = latency_series(&text, kind);
        // Cumulative: never decreasing, the last (+Inf) equal to _count.
        assert!(
            b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{kind}: {b:?}"
        );
        assert_eq!(b.last().unwrap().0, f64::INFINITY);
        assert_eq!(count, Some(2.0 * f64::from(recorded)), "{kind}\n{text}");
        assert_eq!(b.last().unwrap().1, 2 * u64::from(recorded));
        for (le, n) in checks {
            assert_eq!(at(&b, le), 2 * n, "{kind} le {le}: {b:?}");
        }
        let sum = sum.unwrap();
        assert!((sum - 2.0 * sum_s).abs() < 1e-9, "{kind}: sum {sum}");
    }
}

#[test]
fn data_delays_and_bounceback_round_trips_are_histograms_from_the_start_issue18() {
    use rperf3_latency::{Histogram, OneWay, Samples, Way};
    let m = Metrics::new();
    let text = m.encode();
    for (family, series) in [
        ("data_one_way_seconds", "{direction=\"up\"}"),
        ("bounceback_seconds", ""),
    ] {
        assert!(
            text.contains(&format!("# TYPE rperf3_{family} histogram\n")),
            "{text}"
        );
        let count = format!("rperf3_{family}_count{series}");
        assert_eq!(value(&text, &count), Some(0.0), "{count} in\n{text}");
    }
    // Data up: 3 ms twice and 300 ms; a negative delay is no delay.
    let mut o = OneWay::new();
    for (sent, recv) in [(0, 3_000_000), (10, 3_000_010), (0, 300_000_000), (5, 0)] {
        o.record(sent, recv);
    }
    let mut s = Samples::default();
    s.merge_data(Way::Up, &o);
    // What the client measured of the data down is not the server's to count.
    s.merge_data(Way::Down, &o);
    m.record_latency(&s);
    let mut h = Histogram::new();
    for us in [20, 30, 2000] {
        h.record(us * 1000);
    }
    m.record_bounceback(&h);
    m.record_bounceback(&h);
    let text = m.encode();
    let up = |k: &str| value(&text, &format!("rperf3_data_one_way_seconds_{k}"));
    assert_eq!(up("count{direction=\"up\"}"), Some(3.0), "{text}");
    assert_eq!(up("bucket{le=\"0.0025\",direction=\"up\"}"), Some(0.0));
    assert_eq!(up("bucket{le=\"0.005\",direction=\"up\"}"), Some(2.0));
    assert_eq!(up("bucket{le=\"0.5\",direction=\"up\"}"), Some(3.0));
    assert!((up("sum{direction=\"up\"}").unwrap() - 0.306).abs() < 1e-9);
    let bb = |k: &str| value(&text, &format!("rperf3_bounceback_seconds_{k}"));
    assert_eq!(bb("count"), Some(6.0), "{text}");
    assert_eq!(bb("bucket{le=\"0.0001\"}"), Some(4.0));
    assert_eq!(bb("bucket{le=\"0.0025\"}"), Some(6.0));
    assert!((bb("sum").unwrap() - 2.0 * 0.00205).abs() < 1e-9);
}
