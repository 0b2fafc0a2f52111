//! The fleet mesh against the kernel's truth: 16 agents, each in its own
//! namespace on a bridge, one node's sending shaped by a tbf, another's
//! receiving shaped on its bridge port, one pair's data dropped at random by
//! iptables. One cycle must show exactly those pairs (the shaped ones at the
//! tbf's rate, the lossy one with its retransmits between the drops counted
//! and the sender's retransmitted segments), measure every ordered pair once,
//! never put a node in two tests at once by the servers' own logs, report
//! and skip an agent killed mid-cycle while the others finish, and serve
//! metrics that a real Prometheus scrapes equal to the JSON lines.
//! A small UDP mesh holds one pair's loss to iptables' drop count exactly.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mesh_records::{assert_nobody_twice_at_once, field, lines, served};
use crate::netns::cmd::Bg;
use crate::netns::kernel::iptables_rule_packets;
use crate::netns::mesh_rig::MeshRig;

const PORT: &str = "5201";
const METRICS: &str = "9464";
/// Payload per frame on the bridge: MSS 1448 (1500 less IP, TCP and the
/// timestamp option) over 1500 + the Ethernet header, as tbf counts bytes.
const GOODPUT: f64 = 1448.0 / 1514.0;
/// Every agent's `-b`: the unshaped pairs' rate, bits per second.
const CAP: f64 = 100e6;

fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

fn sleep_until(t: f64) {
    let d = t - unix_now();
    if d > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(d));
    }
}

/// `Tcp: RetransSegs` of node `i`'s namespace.
fn retrans_segs(rig: &MeshRig, i: u32) -> u64 {
    let snmp = rig.exec(i, &["cat", "/proc/net/snmp"]);
    let rows: Vec<&str> = snmp.lines().filter(|l| l.starts_with("Tcp:")).collect();
    let names: Vec<&str> = rows[0].split_whitespace().collect();
    let vals: Vec<&str> = rows[1].split_whitespace().collect();
    let k = names.iter().position(|n| *n == "RetransSegs").unwrap();
    vals[k].parse().unwrap()
}

/// Writes the peers file of nodes 1..=n.
fn peers_file(rig: &MeshRig, tag: &str) -> std::path::PathBuf {
    let p = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{}-{tag}-peers", std::process::id()));
    let text: String = (1..=rig.n)
        .map(|i| format!("n{i} {}\n", rig.ip(i)))
        .collect();
    std::fs::write(&p, text).unwrap();
    p
}

/// Starts every node's agent; the grid starts at `start` (Unix seconds).
fn start_agents(rig: &MeshRig, peers: &std::path::Path, start: f64, extra: &[&str]) -> Vec<Bg> {
    let peers = peers.to_string_lossy().into_owned();
    let start = format!("{start}");
    (1..=rig.n)
        .map(|i| {
            let (name, ip) = (format!("n{i}"), rig.ip(i));
            let metrics = format!("{ip}:{METRICS}");
            let mut args = vec![
                env!("CARGO_BIN_EXE_rperf3"),
                "mesh",
                "--name",
                &name,
                "--peers",
                &peers,
                "-B",
                &ip,
                "-p",
                PORT,
                "--start-at",
                &start,
                "--period",
                "600",
                "-J",
                "--metrics",
                &metrics,
            ];
            args.extend_from_slice(extra);
            rig.spawn(i, &args)
        })
        .collect()
}

/// Prometheus in node 1's namespace scraping every agent once a second.
fn start_prometheus(rig: &MeshRig, dir: &std::path::Path) -> Bg {
    std::fs::create_dir_all(dir).unwrap();
    let targets: Vec<String> = (1..=rig.n)
        .map(|i| format!("'{}:{METRICS}'", rig.ip(i)))
        .collect();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\nscrape_configs:\n  \
             - job_name: mesh\n    static_configs:\n      - targets: [{}]\n",
            targets.join(", ")
        ),
    )
    .unwrap();
    rig.spawn(
        1,
        &[
            "prometheus",
            &format!("--config.file={}", config.display()),
            &format!("--storage.tsdb.path={}", dir.join("data").display()),
            &format!("--web.listen-address={}:9090", rig.ip(1)),
        ],
    )
}

/// An instant query at Unix time `at`: (labels, value) per series.
fn prom_query(rig: &MeshRig, q: &str, at: f64) -> Vec<(HashMap<String, String>, f64)> {
    let url = format!("http://{}:9090/api/v1/query", rig.ip(1));
    let out = rig.exec(
        1,
        &[
            "curl",
            "-sfG",
            &url,
            "--data-urlencode",
            &format!("query={q}"),
            "--data-urlencode",
            &format!("time={at}"),
        ],
    );
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    v["data"]["result"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|s| {
            let labels = s["metric"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
                .collect();
            (labels, s["value"][1].as_str().unwrap().parse().unwrap())
        })
        .collect()
}

/// Waits until Prometheus answers.
fn wait_prometheus(rig: &MeshRig, prom: &mut Bg) {
    let url = format!("http://{}:9090/-/ready", rig.ip(1));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ns = rig.ns(1);
        let ok = crate::netns::cmd::run(
            &["ip", "netns", "exec", &ns, "curl", "-sf", &url],
            Duration::from_secs(5),
        )
        .is_ok_and(|d| d.success());
        if ok {
            return;
        }
        assert!(prom.try_status().is_none(), "prometheus ended");
        assert!(Instant::now() < deadline, "prometheus never became ready");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A shaped pair's rate against the shaper's: never above it by more than
/// 1%. A shortfall is what a busy machine causes (16 agents on two cores: a
/// shaper or sender run late loses time it never gets back; up to 8 of
/// node 7's 15 senders read 1.4-5.9% short in one run, and one 16.7% short
/// in another), so the shaper's rate itself is held by the best of them
/// (see the test), and a pair may read short down to half, a wrong figure
/// rather than a slow machine. Returns the shortfall's share, with its line.
fn shaped_rate(what: &str, got: f64, want: f64) -> (f64, String) {
    let rel = (got - want) / want;
    let line = format!(
        "{what}: {:.3} Mbit/s vs {:.3} ({:+.2}%)",
        got / 1e6,
        want / 1e6,
        rel * 100.0
    );
    assert!((-0.5..=0.01).contains(&rel), "{line}");
    if rel < -0.01 {
        eprintln!("disturbed: {line}");
    }
    (rel, line)
}

#[test]
fn a_16_node_mesh_shows_the_shaped_and_lossy_pairs_issue23() {
    let _one_at_a_time = crate::netns::serial();
    let Some(rig) = MeshRig::new(16) else {
        return;
    };
    // Node 7 receives through 40 Mbit/s; node 3 sends to node 12 through 20.
    rig.shape_ingress(7, "40mbit");
    rig.shape_pair(3, 12, 20);
    // 2% of the data segments from node 5 to node 9 are lost.
    let src5 = rig.ip(5);
    rig.exec(
        9,
        &[
            "iptables",
            "-A",
            "INPUT",
            "-s",
            &src5,
            "-p",
            "tcp",
            "--dport",
            PORT,
            "-m",
            "length",
            "--length",
            "1000:65535",
            "-m",
            "statistic",
            "--mode",
            "random",
            "--probability",
            "0.02",
            "-j",
            "DROP",
        ],
    );
    let retrans5 = retrans_segs(&rig, 5);
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{}-mesh-prom", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut prom = start_prometheus(&rig, &dir);
    let peers = peers_file(&rig, "mesh16");
    let slot = 2.5;
    let start = (unix_now() + 4.0).ceil();
    let mut agents = start_agents(
        &rig,
        &peers,
        start,
        &["-t", "1", "--slot", "2.5", "-C", "reno", "-b", "100M"],
    );
    wait_prometheus(&rig, &mut prom);
    // 16 members: 15 rounds, 30 slots. Node 16 dies in the middle of slot 10.
    let killed_at = start + 10.5 * slot;
    sleep_until(killed_at);
    let dead = agents.pop().unwrap().finish(Duration::ZERO);
    let end = start + 30.0 * slot;
    sleep_until(end + 1.0);
    let at = unix_now();
    let prom_bps = prom_query(&rig, "rperf3_mesh_throughput_bits_per_second", at);
    let prom_ok = prom_query(&rig, "rperf3_mesh_tests_total{outcome=\"ok\"}", at);
    for a in &agents {
        a.interrupt();
    }
    let outs: Vec<_> = agents
        .into_iter()
        .map(|a| a.finish(Duration::from_secs(15)))
        .collect();
    drop(prom);
    let drops =
        iptables_rule_packets(&rig.exec(9, &["iptables", "-L", "INPUT", "-v", "-n", "-x"]))[0];
    let retrans5 = retrans_segs(&rig, 5) - retrans5;

    let mut all: Vec<Value> = Vec::new();
    for o in &outs {
        assert!(o.success(), "agent failed: {o}");
        all.extend(lines(&o.stdout));
    }
    all.extend(lines(&dead.stdout));
    let mut by_pair: HashMap<(u32, u32), Vec<&Value>> = HashMap::new();
    let node = |s: &str| s.trim_start_matches('n').parse::<u32>().unwrap();
    for l in &all {
        by_pair
            .entry((node(field(l, "source")), node(field(l, "destination"))))
            .or_default()
            .push(l);
    }
    let lossy = by_pair[&(5, 9)][0];
    let lossy_retrans = lossy["retransmits"].as_f64().unwrap();
    let report = |l: &Value| {
        format!(
            "{} -> {} {} {:.1} Mbit/s, {} retransmits",
            field(l, "source"),
            field(l, "destination"),
            field(l, "outcome"),
            l["throughput_bps"].as_f64().unwrap_or(0.0) / 1e6,
            l["retransmits"]
        )
    };
    // Only the pairs out of the ordinary, so that a failure's message is
    // not buried under 240 lines.
    let notable = |l: &&Value| {
        field(l, "outcome") != "ok"
            || l["throughput_bps"].as_f64().unwrap_or(0.0) < CAP * 0.93
            || l["retransmits"].as_f64().unwrap_or(0.0) >= 4.0
    };
    eprintln!(
        "{}",
        all.iter()
            .filter(notable)
            .map(report)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let mut into7 = Vec::new();
    // The unshaped pairs' rates and retransmits, judged together below.
    let (mut free_bps, mut free_retrans) = (Vec::new(), Vec::new());
    let mut as_lossy = Vec::new();
    for s in 1..=15u32 {
        for d in 1..=16u32 {
            if s == d {
                continue;
            }
            let v = by_pair
                .get(&(s, d))
                .unwrap_or_else(|| panic!("n{s} -> n{d} never tested"));
            assert_eq!(v.len(), 1, "n{s} -> n{d} tested twice: {v:?}");
            let l = v[0];
            let (t0, t1) = (l["start"].as_f64().unwrap(), l["end"].as_f64().unwrap());
            if d == 16 && t0 >= killed_at {
                assert_eq!(field(l, "outcome"), "unreachable", "{l}");
                continue;
            }
            if d == 16 && t1 > killed_at {
                // The test the kill cut short: any failure, said.
                continue;
            }
            assert_eq!(field(l, "outcome"), "ok", "{l}");
            let bps = l["throughput_bps"].as_f64().unwrap();
            let what = report(l);
            match (s, d) {
                (3, 12) => {
                    shaped_rate(&what, bps, 20e6 * GOODPUT);
                }
                (_, 7) => into7.push(shaped_rate(&what, bps, 40e6 * GOODPUT)),
                _ => {
                    assert!(
                        bps > CAP / 2.0,
                        "{what}: not shaped, so above half the {} Mbit/s cap",
                        CAP / 1e6
                    );
                    free_bps.push(bps);
                }
            }
            let r = l["retransmits"].as_f64().unwrap();
            if (s, d) != (5, 9) && (s, d) != (3, 12) && d != 7 {
                if r >= lossy_retrans {
                    as_lossy.push(format!(
                        "{what}: as many as the lossy pair's {lossy_retrans}"
                    ));
                }
                free_retrans.push(r);
            }
        }
    }
    // A busy machine holds back some unshaped pairs (on a noisy host: rates
    // down to 57% of the cap, and a stall past the retransmission timer
    // re-sending a window, 148 against the lossy pair's 243, once 297 against
    // 167 with the hypervisor taking 7-21% of the CPU); a shaper or a drop
    // rule on the wrong pairs would move the middle of them all, and would
    // put more than a few of them at the lossy pair's count.
    assert!(
        as_lossy.len() <= 3,
        "{} unshaped pairs retransmitted as much as the lossy one:\n{}",
        as_lossy.len(),
        as_lossy.join("\n")
    );
    let mid_bps = crate::netns::queue::median(&free_bps);
    let mid_retrans = crate::netns::queue::median(&free_retrans);
    assert!(
        (mid_bps - CAP).abs() <= CAP * 0.03,
        "the unshaped pairs' median rate {:.1} Mbit/s is not the {} Mbit/s cap",
        mid_bps / 1e6,
        CAP / 1e6
    );
    assert!(
        mid_retrans * 20.0 <= lossy_retrans,
        "the unshaped pairs' median retransmits {mid_retrans} are not far below the lossy pair's {lossy_retrans}"
    );
    // A slot the machine left alone reaches the shaper's rate: the best of
    // node 7's senders is within 1% of it.
    let best = into7.iter().map(|r| r.0).fold(f64::MIN, f64::max);
    assert!(
        into7.len() >= 10 && best >= -0.01,
        "no sender into node 7 reached its shaper: {:#?}",
        into7.iter().map(|r| &r.1).collect::<Vec<_>>()
    );
    assert!(
        lossy_retrans >= 0.9 * drops as f64 && lossy_retrans <= retrans5 as f64,
        "n5 -> n9: {lossy_retrans} retransmits for {drops} segments dropped, n5 retransmitted {retrans5}"
    );
    assert!(drops > 50, "too few drops to tell: {drops}");
    // The dead agent's own tests before it died are there, none after.
    for l in lines(&dead.stdout) {
        assert!(l["end"].as_f64().unwrap() < killed_at, "{l}");
    }
    // Nobody in two tests at once, by the servers' logs.
    let nodes: HashMap<IpAddr, String> = (1..=16)
        .map(|i| (rig.ip(i).parse().unwrap(), format!("n{i}")))
        .collect();
    let mut recs = Vec::new();
    for (i, o) in outs.iter().enumerate() {
        recs.extend(served(&format!("n{}", i + 1), &o.stderr));
    }
    recs.extend(served("n16", &dead.stderr));
    assert_nobody_twice_at_once(&recs, &nodes);
    // Each server served exactly the tests its sources say went well.
    for d in 1..=15u32 {
        let name = format!("n{d}");
        let served_ok = recs
            .iter()
            .filter(|r| r.server == name && r.outcome.as_deref() == Some("ok"))
            .count();
        let ok_lines = all
            .iter()
            .filter(|l| field(l, "destination") == name && field(l, "outcome") == "ok")
            .count();
        assert_eq!(served_ok, ok_lines, "{name}");
    }
    // Prometheus holds what the lines say, for every live source.
    let mut seen = 0;
    for (labels, v) in &prom_bps {
        let (s, d) = (node(&labels["source"]), node(&labels["destination"]));
        if s == 16 {
            continue;
        }
        let l = by_pair[&(s, d)][0];
        assert_eq!(*v, l["throughput_bps"].as_f64().unwrap(), "{labels:?}");
        seen += 1;
    }
    let measured = all
        .iter()
        .filter(|l| field(l, "outcome") == "ok" && field(l, "source") != "n16")
        .count();
    assert_eq!(
        seen, measured,
        "Prometheus has {seen} pairs' throughput, the lines {measured}"
    );
    let prom_ok: f64 = prom_ok
        .iter()
        .filter(|(l, _)| l["source"] != "n16")
        .map(|(_, v)| v)
        .sum();
    assert_eq!(prom_ok, measured as f64);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&peers);
    // Shaper state, for the record.
    eprintln!("{}\n{}", rig.qdiscs(3), rig.qdiscs(7));
}

#[test]
fn a_udp_mesh_loses_exactly_what_iptables_dropped_issue23() {
    let _one_at_a_time = crate::netns::serial();
    let Some(rig) = MeshRig::new(4) else {
        return;
    };
    // Every 50th data datagram from node 2 to node 3 is dropped: those whose
    // sequence number (8 bytes into iperf3's UDP payload) is 1..1000, so the
    // stream's hello is never lost and every drop has later datagrams that
    // show it (a receiver cannot see the loss of the very last ones).
    let src2 = rig.ip(2);
    rig.exec(
        3,
        &[
            "iptables",
            "-A",
            "INPUT",
            "-s",
            &src2,
            "-p",
            "udp",
            "--dport",
            PORT,
            "-m",
            "u32",
            "--u32",
            "0>>22&0x3C@16=1:1000",
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
        ],
    );
    let peers = peers_file(&rig, "mesh4");
    let start = (unix_now() + 3.0).ceil();
    let agents = start_agents(
        &rig,
        &peers,
        start,
        &["-t", "1", "--slot", "2", "-u", "-b", "20M", "--cycles", "1"],
    );
    let outs: Vec<_> = agents
        .into_iter()
        .map(|a| a.finish(Duration::from_secs(40)))
        .collect();
    let drops =
        iptables_rule_packets(&rig.exec(3, &["iptables", "-L", "INPUT", "-v", "-n", "-x"]))[0];
    let everything = || {
        outs.iter()
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut all = Vec::new();
    for o in &outs {
        assert!(o.success(), "an agent failed: {}", everything());
        all.extend(lines(&o.stdout));
    }
    assert_eq!(all.len(), 12, "{all:#?}");
    for l in &all {
        assert_eq!(field(l, "outcome"), "ok", "{l}");
        assert_eq!(field(l, "protocol"), "udp", "{l}");
        let lost = l["lost_packets"].as_u64().unwrap();
        let packets = l["packets"].as_u64().unwrap();
        let pct = l["lost_percent"].as_f64().unwrap();
        assert!(
            (pct - 100.0 * lost as f64 / packets as f64).abs() < 1e-9,
            "{l}"
        );
        if (field(l, "source"), field(l, "destination")) == ("n2", "n3") {
            assert_eq!(lost, drops, "{l}");
            assert!(drops > 10, "{drops}");
        } else {
            assert_eq!(lost, 0, "{l}");
        }
        assert!(l["jitter_ms"].as_f64().is_some(), "{l}");
    }
    let _ = std::fs::remove_file(&peers);
}
