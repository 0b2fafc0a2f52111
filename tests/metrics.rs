//! `--metrics`: the server's Prometheus endpoint, checked against counters
//! rperf3 does not own (the stock iperf3 client's figures, iptables' drop
//! count), against hostile scrapers, and scraped by a real Prometheus.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::json::{self, num};
use common::prom::{get, http_get, outcome, scrape, scrape_until, server};
use common::*;
use serde_json::Value;

/// Datagrams one UDP system call moves (rperf3_sys::mmsg::MAX_BATCH): what a
/// UDP stream may move after its final sample.
const MAX_BATCH: f64 = 64.0;

/// `metric` grew by what the JSON says moved, plus at most `slack` moved
/// after the test's final sample.
fn check_moved(before: f64, after: f64, json: f64, slack: f64, what: &str) {
    let d = after - before;
    assert!(
        d >= json && d - json <= slack,
        "{what}: metric grew by {d}, the test's JSON says {json} (slack {slack})"
    );
}

const RX_TCP: &str = "rperf3_bytes_received_total{protocol=\"tcp\"}";
const TX_TCP: &str = "rperf3_bytes_sent_total{protocol=\"tcp\"}";
const RX_UDP: &str = "rperf3_bytes_received_total{protocol=\"udp\"}";
const PKT_RX: &str = "rperf3_udp_packets_total{direction=\"received\"}";
const PKT_TX: &str = "rperf3_udp_packets_total{direction=\"sent\"}";
const LOST: &str = "rperf3_udp_packets_lost_total";

/// An iptables rule at the head of `chain`, deleted when dropped; its counters
/// are the kernel's, not rperf3's. Its spec ends with a comment that finds it.
struct Rule {
    chain: &'static str,
    spec: Vec<String>,
}

impl Rule {
    fn insert(chain: &'static str, spec: &[&str]) -> Self {
        let spec: Vec<String> = spec.iter().map(|s| s.to_string()).collect();
        let mut args = vec!["-I".to_string(), chain.to_string()];
        args.extend(spec.iter().cloned());
        run_program("iptables", &args, CLIENT_TIMEOUT).assert_ok();
        Self { chain, spec }
    }

    /// (packets, bytes) the rule has matched, from `iptables -v -S`.
    fn counters(&self) -> (u64, u64) {
        let out = run_program("iptables", &["-v", "-S", self.chain], CLIENT_TIMEOUT);
        let tag = &self.spec[self.spec.len() - 1];
        out.assert_ok()
            .stdout
            .lines()
            .find(|l| l.contains(tag.as_str()))
            .and_then(|l| {
                let mut c = l.split(" -c ").nth(1)?.split_whitespace();
                Some((c.next()?.parse().ok()?, c.next()?.parse().ok()?))
            })
            .unwrap_or_else(|| panic!("rule {tag} not in:\n{}", out.stdout))
    }
}

impl Drop for Rule {
    fn drop(&mut self) {
        let mut args = vec!["-D".to_string(), self.chain.to_string()];
        args.extend(self.spec.iter().cloned());
        let _ = run_program("iptables", &args, CLIENT_TIMEOUT);
    }
}

/// Counted by rperf3's server and by the stock iperf3 client on the other end:
/// the metrics must match iperf3's own figures (what it wrote, read, sent or
/// counted arriving), within what the sockets hold in flight; the server's
/// retransmits, with iptables dropping some of its segments, cover at least
/// the drops iptables counted.
#[test]
fn issue10_metrics_count_live_and_match_the_peers_figures() {
    if !require_tool("iperf3") || !require_tool("iptables") {
        return;
    }
    let (srv, mport) = server(&[]);
    let m0 = scrape(mport);
    assert_eq!(get(&m0, "rperf3_tests_running"), 0.0);
    assert_eq!(get(&m0, RX_TCP), 0.0);
    let stock = |args: &[&str]| {
        let mut a = vec!["-J"];
        a.extend_from_slice(args);
        let out = run_program("iperf3", &srv.args(&a), CLIENT_TIMEOUT);
        out.assert_ok();
        out.json()
    };

    // A TCP test with two streams: counters grow while it runs.
    let client = Proc::spawn("iperf3", &srv.args(&["-t", "2", "-P", "2", "-J"]));
    let during = scrape_until(mport, "running with bytes", |m| {
        get(m, "rperf3_tests_running") == 1.0 && get(m, RX_TCP) > 0.0
    });
    let rate = "rperf3_test_throughput_bytes_per_second{test=\"1\",protocol=\"tcp\",\
                direction=\"received\"}";
    let later = scrape_until(mport, "growing", |m| get(m, RX_TCP) > get(&during, RX_TCP));
    assert!(get(&later, rate) > 0.0, "{later:#?}");
    // A client arriving meanwhile is refused as busy.
    let busy = srv.client(&["-t", "1"]);
    assert_eq!(busy.code(), Some(1));
    assert!(
        busy.stderr.contains("the server is busy running a test"),
        "{}",
        busy.stderr
    );
    let tcp = client.finish(CLIENT_TIMEOUT);
    tcp.assert_ok();
    let tcp = tcp.json();
    // The slot is free once the session has closed, just after it counts.
    let m1 = scrape_until(mport, "the test counted and its slot free", |m| {
        outcome(m, "ok") == 1.0 && get(m, "rperf3_tests_running") == 0.0
    });
    assert!(
        !m1.keys().any(|k| k.contains("test=\"1\"")),
        "gauges of an ended test"
    );
    // What iperf3 wrote, less what its two connections held in flight at the end.
    within_flight(
        get(&m1, RX_TCP),
        num(&tcp, "end.sum_sent.bytes"),
        2,
        "TCP received vs iperf3's sent",
    );
    assert_eq!(outcome(&m1, "refused"), 1.0);

    // Reverse: the server sends. iptables drops 1 in 50 of its data segments
    // (large packets from its port) on their way into the client, so the
    // kernel retransmits.
    let port = srv.port.to_string();
    let tag = format!("rperf3-metrics-test-{port}");
    let drops = Rule::insert(
        "INPUT",
        &[
            "-i",
            "lo",
            "-p",
            "tcp",
            "--sport",
            &port,
            "-m",
            "length",
            "--length",
            "10000:65535",
            "-m",
            "statistic",
            "--mode",
            "nth",
            "--every",
            "50",
            "--packet",
            "0",
            "-j",
            "DROP",
            "-m",
            "comment",
            "--comment",
            &tag,
        ],
    );
    // Everything the server's port puts on the wire, counted as it leaves.
    let out_tag = format!("rperf3-metrics-test-out-{port}");
    let wire = Rule::insert(
        "OUTPUT",
        &[
            "-o",
            "lo",
            "-p",
            "tcp",
            "--sport",
            &port,
            "-m",
            "comment",
            "--comment",
            &out_tag,
        ],
    );
    let retrans_before = retrans_segs();
    let rev = stock(&["-t", "1", "-R"]);
    let retrans_after = retrans_segs();
    let dropped = drops.counters().0;
    let (segments, wire_bytes) = wire.counters();
    drop((drops, wire));
    let m2 = scrape_until(mport, "the reverse test counted", |m| {
        outcome(m, "ok") == 2.0
    });
    // The server sent at least what iperf3 counted (iperf3 reads on after its
    // final count until the results exchange, so it may take in much more: 351
    // MB more was seen under load), and no more than left its port on the wire
    // (payload, headers and the retransmitted 1 in 50) plus what its send
    // buffer still held when it closed.
    let sent = get(&m2, TX_TCP) - get(&m1, TX_TCP);
    let counted = num(&rev, "end.sum_received.bytes");
    let limit = wire_bytes as f64 + interop::send_buffer_max();
    assert!(
        sent >= counted && sent <= limit,
        "TCP sent {sent}: iperf3 counted {counted}, {wire_bytes} bytes in {segments} \
         segments left the port (limit {limit})"
    );
    // Every dropped segment is sent again; one dropped just before the final
    // sample may be resent after it, so a tenth of the drops may be missing.
    let retrans = get(&m2, "rperf3_tcp_retransmits_total");
    assert!(
        dropped >= 10 && retrans >= 0.9 * dropped as f64,
        "{retrans} retransmits counted, iptables dropped {dropped} segments"
    );
    // And no more than the kernel retransmitted meanwhile (this namespace's
    // count: every test running now, so an upper bound only).
    let kernel = (retrans_after - retrans_before) as f64;
    assert!(
        retrans <= kernel,
        "{retrans} retransmits counted, the kernel retransmitted {kernel} segments"
    );
    assert!(retrans >= num(&rev, "end.sum_sent.retransmits"));

    // UDP from rperf3, then from a stock iperf3 client: packets and loss as
    // the server's receiver reported them in the clients' JSON, and against
    // what the stock client says it sent.
    let mut before = m2;
    let mut ok = 2.0;
    for program in [rperf3(), "iperf3".into()] {
        let run = run_program(
            &program,
            &srv.args(&["-u", "-b", "20M", "-t", "1", "-J"]),
            CLIENT_TIMEOUT,
        );
        run.assert_ok();
        let j = run.json();
        ok += 1.0;
        let after = scrape_until(mport, "the UDP test counted", |m| outcome(m, "ok") == ok);
        // A receive batch in hand when the test stopped is counted after its
        // final sample: up to MAX_BATCH datagrams more than the JSON, and
        // the loss it reveals with them.
        let (pkts, lost) = (
            num(&j, "end.sum_received.packets"),
            num(&j, "end.sum_received.lost_packets"),
        );
        let len = num(&j, "end.sum_received.bytes") / pkts.max(1.0);
        let d_pkts = get(&after, PKT_RX) - get(&before, PKT_RX);
        let d_lost = get(&after, LOST) - get(&before, LOST);
        assert!(d_pkts >= pkts && d_lost >= lost, "{d_pkts} {d_lost} vs {j}");
        check_moved(
            0.0,
            d_pkts - d_lost,
            pkts - lost,
            MAX_BATCH,
            "UDP datagrams",
        );
        check_moved(
            get(&before, RX_UDP),
            get(&after, RX_UDP),
            num(&j, "end.sum_received.bytes"),
            MAX_BATCH * len,
            "UDP bytes",
        );
        if program.as_os_str() == "iperf3" {
            // iperf3 counted what it sent: nothing arrives that it did not send,
            // and loopback loses almost nothing.
            let sent = num(&j, "end.sum_sent.packets");
            let arrived = d_pkts - d_lost;
            assert!(
                arrived <= sent && sent - arrived <= interop::udp_loss_bound(sent),
                "the metrics count {arrived} datagrams arrived of {sent} iperf3 sent"
            );
        }
        before = after;
    }
    // A UDP test the server sends: iperf3's receiver saw as many datagrams
    // (its highest sequence number), less those still queued at the end.
    let urev = stock(&["-u", "-b", "20M", "-t", "1", "-R"]);
    let want = ok + 1.0;
    let m3 = scrape_until(mport, "the reverse UDP test counted", |m| {
        outcome(m, "ok") == want
    });
    let sent = get(&m3, PKT_TX) - get(&before, PKT_TX);
    let seen = num(&urev, "end.sum_received.packets");
    assert!(
        sent >= seen && sent - seen <= interop::udp_loss_bound(sent),
        "the metrics count {sent} datagrams sent, iperf3 saw {seen}"
    );
    assert_eq!((outcome(&m3, "error"), outcome(&m3, "refused")), (0.0, 1.0));
    drop(srv);
}

/// `received` is `sent` less at most what `streams` TCP connections hold in
/// flight (their largest send and receive buffers), and never more.
fn within_flight(received: f64, sent: f64, streams: usize, what: &str) {
    let slack = streams as f64 * interop::in_flight_per_stream();
    assert!(
        received <= sent && received >= sent - slack,
        "{what}: received {received}, sent {sent} (slack {slack})"
    );
}

#[test]
fn issue10_queued_clients_are_counted() {
    let (srv, mport) = server(&["--queue", "1"]);
    let first = srv.spawn_client(&["-t", "2"]);
    scrape_until(mport, "one running", |m| {
        get(m, "rperf3_tests_running") == 1.0
    });
    let second = srv.spawn_client(&["-t", "1"]);
    let m = scrape_until(mport, "one queued", |m| {
        get(m, "rperf3_clients_queued") == 1.0
    });
    assert_eq!(get(&m, "rperf3_tests_running"), 1.0);
    first.finish(CLIENT_TIMEOUT).assert_ok();
    second.finish(CLIENT_TIMEOUT).assert_ok();
    let m = scrape_until(mport, "both counted", |m| outcome(m, "ok") == 2.0);
    assert_eq!(get(&m, "rperf3_clients_queued"), 0.0);
    assert_eq!(outcome(&m, "refused"), 0.0);
}

#[test]
fn issue10_hostile_scrapers_block_neither_scrapes_nor_tests() {
    let (srv, mport) = server(&[]);
    // Silent connections, more than the endpoint keeps, and one that
    // trickles a request byte by byte.
    let silent: Vec<_> = (0..40)
        .map(|_| TcpStream::connect(("127.0.0.1", mport)).unwrap())
        .collect();
    let mut trickle = TcpStream::connect(("127.0.0.1", mport)).unwrap();
    let opened = Instant::now();
    let client = srv.spawn_client(&["-t", "2", "-J"]);
    for b in b"GET /metr" {
        trickle.write_all(&[*b]).unwrap();
        let t = Instant::now();
        let m = scrape(mport);
        // Blocked would mean waiting for the trickler's 5 s deadline.
        assert!(
            t.elapsed() < Duration::from_millis(2500),
            "a scrape took {:?}",
            t.elapsed()
        );
        assert!(m.contains_key(RX_TCP));
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = client.finish(CLIENT_TIMEOUT);
    out.assert_ok();
    json::assert_no_error(&out.json());
    // The trickler is closed at its deadline (5 s from its accept), unanswered.
    trickle
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut buf = Vec::new();
    let _ = trickle.read_to_end(&mut buf);
    assert!(buf.is_empty(), "{}", String::from_utf8_lossy(&buf));
    assert!(
        opened.elapsed() < Duration::from_secs(8),
        "{:?}",
        opened.elapsed()
    );
    // Wrong paths get 404.
    assert_eq!(http_get(mport, "/").0, "HTTP/1.1 404 Not Found");
    drop(silent);
    drop(srv);
}

#[test]
fn issue10_bad_metrics_address_is_refused_at_startup() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = run_client(
        &["-s", "-p", &free_port().to_string(), "--metrics", &addr],
        CLIENT_TIMEOUT,
    );
    assert_eq!(out.code(), Some(1), "{}{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains(&format!(
            "unable to start listener for connections: metrics on {addr}: Address already in use"
        )),
        "{all}"
    );
}

/// Debian's Prometheus scrapes the endpoint and answers a query for it.
#[test]
fn issue10_prometheus_scrapes_the_endpoint() {
    if !require_tool("prometheus") {
        return;
    }
    let (srv, mport) = server(&[]);
    srv.client(&["-t", "1"]).assert_ok();
    // Counted before its release, which the next banner follows.
    assert!(srv.wait_banners(2, Duration::from_secs(10)));
    let dir = scratch_file("prometheus");
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  \
             - job_name: rperf3\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n"
        ),
    )
    .unwrap();
    let pport = free_port();
    let prom = Proc::spawn(
        "prometheus",
        &[
            format!("--config.file={}", config.display()),
            format!("--storage.tsdb.path={}", dir.join("data").display()),
            format!("--web.listen-address=127.0.0.1:{pport}"),
        ],
    );
    let deadline = Instant::now() + Duration::from_secs(25);
    let series = loop {
        let answer = TcpStream::connect(("127.0.0.1", pport))
            .ok()
            .map(|_| http_get(pport, "/api/v1/query?query=rperf3_tests_total"));
        if let Some((status, body)) = answer.filter(|(s, _)| s.contains("200")) {
            let v: Value = serde_json::from_str(&body).expect("query JSON");
            let r = v["data"]["result"].as_array().cloned().unwrap_or_default();
            if !r.is_empty() {
                break r;
            }
            let _ = status;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus has no rperf3_tests_total:\n{}",
            prom.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let ok = series
        .iter()
        .find(|s| s["metric"]["outcome"] == "ok")
        .unwrap_or_else(|| panic!("{series:#?}"));
    assert_eq!(ok["metric"]["job"], "rperf3");
    assert_eq!(ok["value"][1], "1", "{ok}");
    assert_eq!(series.len(), 5, "one series per outcome: {series:#?}");
    drop(prom);
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `Tcp: RetransSegs` of this network namespace.
fn retrans_segs() -> u64 {
    let snmp = std::fs::read_to_string("/proc/net/snmp").expect("/proc/net/snmp");
    let rows: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Tcp:")).collect();
    let names: Vec<&str> = rows[0].split_whitespace().collect();
    let values: Vec<&str> = rows[1].split_whitespace().collect();
    let k = names
        .iter()
        .position(|n| *n == "RetransSegs")
        .expect("RetransSegs");
    values[k].parse().expect("a count")
}
