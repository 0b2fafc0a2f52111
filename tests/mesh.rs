//! `rperf3 mesh` end to end on loopback: agents on their own 127.x addresses
//! (one port), a peers file that also lists a stock iperf3 server, an address
//! where nothing listens, something that is not iperf at all and a garbage
//! line. One cycle: every ordered pair of live agents measured once, no node
//! in two tests at once by the servers' own logs, the odd members each
//! reported for what they are, a killed agent reported and skipped while the
//! others finish, and each agent's metrics equal to its own JSON lines.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{IpAddr, TcpListener};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::Value;

use crate::common::mesh_records::{assert_nobody_twice_at_once, field, lines, served};
use crate::common::prom::Scrape;
use crate::common::{free_port, free_port_on, require_tool, rperf3, scratch_file, Proc, Signal};

/// A /24 of loopback addresses of its own for each test of this process.
fn subnet() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    format!("127.{}.{}", 100 + std::process::id() % 100, n % 250)
}

/// The next whole second at least `lead` away: where the cycles' grid starts.
fn anchor(lead: f64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    format!("{}", (now + lead).ceil())
}

/// An agent: `rperf3 mesh --name NAME -B IP ...`.
fn agent(name: &str, ip: &str, port: u16, peers: &Path, extra: &[&str]) -> Proc {
    let port = port.to_string();
    let p = peers.to_string_lossy().into_owned();
    let mut args = vec![
        "mesh", "--name", name, "--peers", &p, "-B", ip, "-p", &port, "-J",
    ];
    args.extend_from_slice(extra);
    Proc::spawn(rperf3(), &args)
}

/// A port free on the first `hosts` addresses of `net`, the agents' own.
fn port_on(net: &str, hosts: u32) -> u16 {
    free_port_on(
        &(1..=hosts)
            .map(|i| format!("{net}.{i}"))
            .collect::<Vec<_>>(),
    )
}

/// Accepts connections and answers each like a web server would.
fn not_iperf(ip: &str, port: u16) -> TcpListener {
    let l = TcpListener::bind((ip, port)).expect("bind");
    let l2 = l.try_clone().unwrap();
    std::thread::spawn(move || {
        for c in l2.incoming() {
            let Ok(mut c) = c else { return };
            let mut b = [0u8; 64];
            let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = c.read(&mut b);
            let _ = c.write_all(b"HTTP/1.0 400 Bad Request\r\n\r\n");
        }
    });
    l
}

fn by_pair(ls: &[Value]) -> HashMap<(String, String), Vec<Value>> {
    let mut m: HashMap<(String, String), Vec<Value>> = HashMap::new();
    for l in ls {
        m.entry((field(l, "source").into(), field(l, "destination").into()))
            .or_default()
            .push(l.clone());
    }
    m
}

/// The agent's series of `metric` toward `dest` (with `extra` labels).
fn series(m: &Scrape, metric: &str, src: &str, dest: &str, extra: &str) -> Option<f64> {
    m.get(&format!(
        "{metric}{{source=\"{src}\",destination=\"{dest}\"{extra}}}"
    ))
    .copied()
}

/// Each agent's metrics hold exactly its own lines' figures.
fn assert_metrics_match(name: &str, m: &Scrape, ls: &[Value]) {
    for l in ls.iter().filter(|l| field(l, "source") == name) {
        let d = field(l, "destination");
        let outcome = field(l, "outcome");
        let n = ls
            .iter()
            .filter(|x| field(x, "destination") == d && field(x, "outcome") == outcome)
            .count() as f64;
        let extra = format!(",outcome=\"{outcome}\"");
        assert_eq!(
            series(m, "rperf3_mesh_tests_total", name, d, &extra),
            Some(n),
            "{l}"
        );
        if !matches!(outcome, "ok" | "not_rperf3") {
            assert_eq!(
                series(m, "rperf3_mesh_throughput_bits_per_second", name, d, ""),
                None
            );
            continue;
        }
        let get = |metric: &str, extra: &str| {
            series(m, metric, name, d, extra).unwrap_or_else(|| panic!("no {metric} for {d}"))
        };
        assert_eq!(
            get("rperf3_mesh_throughput_bits_per_second", ""),
            l["throughput_bps"].as_f64().unwrap()
        );
        assert_eq!(get("rperf3_mesh_rpm", ""), l["rpm"].as_f64().unwrap());
        assert_eq!(
            get("rperf3_mesh_retransmits", ""),
            l["retransmits"].as_f64().unwrap()
        );
        assert_eq!(
            get("rperf3_mesh_last_success_timestamp_seconds", ""),
            l["end"].as_f64().unwrap()
        );
        for (q, k) in [("0.5", "p50_ms"), ("0.99", "p99_ms")] {
            let want = l["latency"]["loaded"][k].as_f64().unwrap() / 1000.0;
            let got = get(
                "rperf3_mesh_loaded_latency_seconds",
                &format!(",quantile=\"{q}\""),
            );
            assert!(
                (got - want).abs() <= want * 1e-12,
                "{d} {q}: {got} vs {want}"
            );
        }
    }
}

#[test]
fn a_cycle_measures_every_pair_once_and_reports_the_odd_members_issue23() {
    if !require_tool("iperf3") {
        return;
    }
    let net = subnet();
    let ip = |i: u32| format!("{net}.{i}");
    let port = port_on(&net, 7);
    let metrics_port = free_port();
    let stock = Proc::spawn("iperf3", &["-s", "-B", &ip(5), "-p", &port.to_string()]);
    let _alien = not_iperf(&ip(7), port);
    let peers = scratch_file("mesh-peers");
    let mut text = String::from("# four agents and three odd members\n");
    for i in 1..=4 {
        text.push_str(&format!("n{i} {}\n", ip(i)));
    }
    text.push_str(&format!(
        "stock {}\ngone {}\nalien {}\nthis line is garbage\n",
        ip(5),
        ip(6),
        ip(7)
    ));
    std::fs::write(&peers, text).unwrap();
    let start = anchor(2.0);
    let mut agents: Vec<Proc> = (1..=4)
        .map(|i| {
            let m = format!("{}:{metrics_port}", ip(i));
            agent(
                &format!("n{i}"),
                &ip(i),
                port,
                &peers,
                &[
                    "-t",
                    "1",
                    "--slot",
                    "2",
                    "--start-at",
                    &start,
                    "--period",
                    "600",
                    "--metrics",
                    &m,
                ],
            )
        })
        .collect();
    // 7 members: 7 rounds, 14 slots of 2 s. n4 dies after its first test.
    assert!(
        agents[3].wait_stdout("\"source\":\"n4\"", Duration::from_secs(30)),
        "n4 never tested"
    );
    agents[3].signal(Signal::SIGKILL);
    let killed_at = crate::common::mesh_records::log_time(&utc_now()).unwrap();
    // Each live agent tests the 6 others.
    for a in &agents[..3] {
        let done = a.wait_stdout_until(Duration::from_secs(45), |s| s.lines().count() >= 6);
        assert!(done, "no 6 lines:\n{}\n{}", a.stdout(), a.stderr());
    }
    let scrapes: Vec<Scrape> = (1..=3).map(|i| scrape_at(&ip(i), metrics_port)).collect();
    for a in &agents[..3] {
        a.signal(Signal::SIGTERM);
    }
    let outs: Vec<_> = agents
        .drain(..)
        .map(|a| a.finish(Duration::from_secs(10)))
        .collect();
    drop(stock);
    let mut all = Vec::new();
    for o in &outs[..3] {
        assert_eq!(o.code(), Some(0), "{o}");
        all.extend(lines(&o.stdout));
    }
    all.extend(lines(&outs[3].stdout));
    let pairs = by_pair(&all);
    for s in ["n1", "n2", "n3"] {
        for d in ["n1", "n2", "n3", "n4", "stock", "gone", "alien"] {
            if s == d {
                continue;
            }
            let v = pairs
                .get(&(s.into(), d.into()))
                .unwrap_or_else(|| panic!("no {s} -> {d}"));
            assert_eq!(v.len(), 1, "{s} -> {d} twice: {v:?}");
            let l = &v[0];
            let outcome = field(l, "outcome");
            let want = match d {
                "stock" => "not_rperf3",
                "gone" => "unreachable",
                "alien" => "error",
                "n4" if l["start"].as_f64().unwrap() > killed_at => "unreachable",
                _ => "ok",
            };
            assert_eq!(outcome, want, "{l}");
            if matches!(want, "ok" | "not_rperf3") {
                assert!(l["throughput_bps"].as_f64().unwrap() > 1e6, "{l}");
                assert!(l["latency"]["idle"]["count"].as_u64().unwrap() > 0, "{l}");
            } else {
                assert!(!field(l, "error").is_empty(), "{l}");
            }
            if want == "ok" {
                assert!(l["rpm"].as_f64().unwrap() > 0.0, "{l}");
                assert!(l["latency"]["loaded"]["count"].as_u64().unwrap() > 0, "{l}");
            }
        }
    }
    // The stock server answered the test, not the latency offer; "alien"
    // spoke something else.
    let stock_line = &pairs[&("n1".to_string(), "stock".to_string())][0];
    assert!(
        field(stock_line, "error").contains("stock iperf3 server"),
        "{stock_line}"
    );
    let alien_line = &pairs[&("n1".to_string(), "alien".to_string())][0];
    assert!(!field(alien_line, "error").contains("busy"), "{alien_line}");
    // The garbage line was named, and the mesh went on.
    assert!(
        outs[0].stderr.contains("line 9: expected \"NAME ADDRESS\""),
        "{}",
        outs[0].stderr
    );
    // Nobody in two tests at once, by the servers' own logs.
    let nodes: HashMap<IpAddr, String> = (1..=4)
        .map(|i| (ip(i).parse().unwrap(), format!("n{i}")))
        .collect();
    let mut recs = Vec::new();
    for (i, o) in outs.iter().enumerate() {
        recs.extend(served(&format!("n{}", i + 1), &o.stderr));
    }
    // Every agent-to-agent test of a live destination is in its server's log.
    let ok_between_agents = all
        .iter()
        .filter(|l| field(l, "outcome") == "ok" && field(l, "destination").starts_with('n'))
        .count();
    assert_eq!(
        recs.iter()
            .filter(|r| r.outcome.as_deref() == Some("ok"))
            .count(),
        ok_between_agents
    );
    assert_nobody_twice_at_once(&recs, &nodes);
    for (i, m) in scrapes.iter().enumerate() {
        let name = format!("n{}", i + 1);
        assert_metrics_match(&name, m, &lines(&outs[i].stdout));
        assert_eq!(m.get("rperf3_mesh_members"), Some(&7.0));
    }
    let uniq: HashSet<_> = all
        .iter()
        .map(|l| (field(l, "source"), l["slot"].as_u64()))
        .collect();
    assert_eq!(uniq.len(), all.len(), "a source twice in one slot");
}

/// The log's clock now, in its format.
fn utc_now() -> String {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let secs = ms / 1000;
    let (d, s) = (secs / 86_400, secs % 86_400);
    // Civil from days (Howard Hinnant).
    let z = d as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms % 1000
    )
}

/// One scrape of an agent's metrics on its own address.
fn scrape_at(ip: &str, port: u16) -> Scrape {
    let mut s = std::net::TcpStream::connect((ip, port)).expect("metrics");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let body = out.split_once("\r\n\r\n").map_or("", |x| x.1);
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[test]
fn a_member_that_leaves_changes_the_next_cycle_and_loses_its_series_issue23() {
    let net = subnet();
    let ip = |i: u32| format!("{net}.{i}");
    let port = port_on(&net, 7);
    let metrics_port = free_port();
    let peers = scratch_file("mesh-leave");
    std::fs::write(&peers, format!("a {}\nb {}\nc {}\n", ip(1), ip(2), ip(3))).unwrap();
    let start = anchor(2.0);
    let m = format!("{}:{metrics_port}", ip(1));
    let a = agent(
        "a",
        &ip(1),
        port,
        &peers,
        &[
            "-t",
            "1",
            "--slot",
            "1.5",
            "--start-at",
            &start,
            "--metrics",
            &m,
        ],
    );
    let b = agent(
        "b",
        &ip(2),
        port,
        &peers,
        &["-t", "1", "--slot", "1.5", "--start-at", &start],
    );
    // c (nothing there) leaves once the first cycle runs: that cycle still
    // tries it, the next does not.
    assert!(
        a.wait_stdout("\"cycle\"", Duration::from_secs(20)),
        "{}",
        a.stderr()
    );
    std::fs::write(&peers, format!("a {}\nb {}\n", ip(1), ip(2))).unwrap();
    // Cycle 0 has 6 slots (3 members), so a's second line toward b is in cycle 1.
    let seen_next = a.wait_stdout_until(Duration::from_secs(30), |s| {
        lines(s).iter().any(|l| {
            field(l, "destination") == "b" && l["cycle"].as_u64() != lines(s)[0]["cycle"].as_u64()
        })
    });
    assert!(seen_next, "{}\n{}", a.stdout(), a.stderr());
    let m = scrape_at(&ip(1), metrics_port);
    a.signal(Signal::SIGTERM);
    b.signal(Signal::SIGTERM);
    let (oa, ob) = (
        a.finish(Duration::from_secs(10)),
        b.finish(Duration::from_secs(10)),
    );
    assert_eq!((oa.code(), ob.code()), (Some(0), Some(0)), "{oa}\n{ob}");
    let la = lines(&oa.stdout);
    let first = la[0]["cycle"].as_u64().unwrap();
    let to_c: Vec<&Value> = la
        .iter()
        .filter(|l| field(l, "destination") == "c")
        .collect();
    assert_eq!(to_c.len(), 1, "{la:?}");
    assert_eq!(to_c[0]["cycle"].as_u64(), Some(first));
    assert_eq!(field(to_c[0], "outcome"), "unreachable");
    assert!(m.keys().all(|k| !k.contains("destination=\"c\"")), "{m:#?}");
    assert_eq!(m.get("rperf3_mesh_members"), Some(&2.0));
    assert!(series(&m, "rperf3_mesh_throughput_bits_per_second", "a", "b", "").is_some());
    assert!(
        oa.stderr.contains("cycle") && oa.stderr.contains("3 members"),
        "{}",
        oa.stderr
    );
    assert!(oa.stderr.contains("2 members"), "{}", oa.stderr);
}

#[test]
fn discovery_that_fails_is_a_message_and_the_agent_still_serves_issue23() {
    let port = free_port();
    let kubeconfig = scratch_file("kubeconfig");
    // An API that is not there.
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
         users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
         current-context: x\n",
    )
    .unwrap();
    for (what, args, msg) in [
        (
            "dns",
            vec!["--peers-dns", "no-such-name.invalid"],
            "unable to resolve no-such-name.invalid",
        ),
        (
            "k8s",
            vec!["--peers-k8s", "rperf3", "--namespace", "default"],
            "unable to list the EndpointSlices of rperf3",
        ),
        (
            "file",
            vec!["--peers", "/nonexistent/peers"],
            "unable to read the peers file /nonexistent/peers",
        ),
    ] {
        let p = port.to_string();
        let env = format!("KUBECONFIG={}", kubeconfig.display());
        let bin = rperf3().to_string_lossy().into_owned();
        let mut all = vec![
            env.as_str(),
            bin.as_str(),
            "mesh",
            "--name",
            "x",
            "-p",
            &p,
            "-B",
            "127.0.0.1",
            "-t",
            "1",
            "--slot",
            "1",
        ];
        all.extend(args);
        let agent = Proc::spawn("env", &all);
        assert!(
            agent.wait_stderr(msg, Duration::from_secs(15)),
            "{what}: {}",
            agent.stderr()
        );
        assert!(
            agent.wait_stderr("no members known yet", Duration::from_secs(5)),
            "{what}: {}",
            agent.stderr()
        );
        // It serves all the same.
        let c = Proc::spawn(rperf3(), &["-c", "127.0.0.1", "-p", &p, "-t", "1", "-J"])
            .finish(Duration::from_secs(20));
        assert_eq!(c.code(), Some(0), "{what}: {c}");
        agent.signal(Signal::SIGTERM);
        let o = agent.finish(Duration::from_secs(15));
        assert_eq!(o.code(), Some(0), "{what}: {o}");
        assert!(o.stdout.is_empty(), "{what}: {o}");
    }
}

#[test]
fn bad_mesh_command_lines_are_refused_issue23() {
    let o = Proc::spawn(rperf3(), &["mesh", "-t", "3"]).finish(Duration::from_secs(10));
    assert_eq!(o.code(), Some(1));
    assert_eq!(
        o.stderr,
        "rperf3: mesh: say where the members come from: --peers, --peers-dns or --peers-k8s\n\
         Try `rperf3 mesh --help' for more information.\n"
    );
    let o = Proc::spawn(rperf3(), &["mesh", "--help"]).finish(Duration::from_secs(10));
    assert_eq!(o.code(), Some(0));
    assert!(o.stdout.starts_with("Usage: rperf3 mesh "), "{o}");
    // A port someone else holds: the agent says so and stops.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = taken.local_addr().unwrap().port().to_string();
    let o = Proc::spawn(
        rperf3(),
        &["mesh", "--peers", "/dev/null", "-B", "127.0.0.1", "-p", &p],
    )
    .finish(Duration::from_secs(15));
    assert_eq!(o.code(), Some(1), "{o}");
    assert!(
        o.stderr
            .contains(&format!("the server could not listen on port {p}")),
        "{o}"
    );
    assert!(o.stderr.contains("Address already in use"), "{o}");
}

#[test]
fn budgets_skip_a_cycles_later_tests_and_text_lines_read_at_a_glance_issue23() {
    let net = subnet();
    let ip = |i: u32| format!("{net}.{i}");
    let port = port_on(&net, 7);
    let peers = scratch_file("mesh-budget");
    std::fs::write(&peers, format!("a {}\nb {}\nc {}\n", ip(1), ip(2), ip(3))).unwrap();
    let start = anchor(2.0);
    let common = [
        "-t",
        "1",
        "--slot",
        "1.5",
        "--start-at",
        &start,
        "--cycles",
        "1",
        "-b",
        "8M",
    ];
    // a: its first test (1 MB at 8 Mbit/s) spends a 500 KB budget.
    let mut a_args = common.to_vec();
    a_args.extend(["--cycle-bytes", "500K"]);
    // b: only tests that start in the cycle's first 3 s (its first two slots).
    let mut b_args = common.to_vec();
    b_args.extend(["--cycle-time", "3"]);
    let a = agent("a", &ip(1), port, &peers, &a_args);
    let b = agent("b", &ip(2), port, &peers, &b_args);
    // c writes text lines (no -J).
    let p = peers.to_string_lossy().into_owned();
    let (ip3, port_s) = (ip(3), port.to_string());
    let mut c_args = vec![
        "mesh", "--name", "c", "--peers", &p, "-B", &ip3, "-p", &port_s,
    ];
    c_args.extend(common);
    let c = Proc::spawn(rperf3(), &c_args);
    let (oa, ob, oc) = (
        a.finish(Duration::from_secs(30)),
        b.finish(Duration::from_secs(30)),
        c.finish(Duration::from_secs(30)),
    );
    for o in [&oa, &ob, &oc] {
        assert_eq!(o.code(), Some(0), "{o}");
    }
    let la = lines(&oa.stdout);
    assert_eq!(la.len(), 2, "{}", oa.stdout);
    assert_eq!(field(&la[0], "outcome"), "ok", "{}", oa.stdout);
    assert_eq!(field(&la[1], "outcome"), "budget", "{}", oa.stdout);
    assert!(
        field(&la[1], "error").contains("--cycle-bytes"),
        "{}",
        oa.stdout
    );
    // b is a source in slots 0 and 5 (the plan of 3 members).
    let lb = lines(&ob.stdout);
    let outcomes: Vec<(u64, &str)> = lb
        .iter()
        .map(|l| (l["slot"].as_u64().unwrap(), field(l, "outcome")))
        .collect();
    assert_eq!(outcomes, [(0, "ok"), (5, "budget")], "{}", ob.stdout);
    assert!(
        field(&lb[1], "error").contains("--cycle-time"),
        "{}",
        ob.stdout
    );
    // 3 members, 6 slots: each is a source twice.
    let text: Vec<&str> = oc.stdout.lines().collect();
    assert_eq!(text.len(), 2, "{}", oc.stdout);
    for l in text {
        assert!(l.contains(" c -> ") && l.contains("  ok  "), "{l}");
        assert!(l.contains("bits/sec") && l.contains("RPM"), "{l}");
    }
}

/// Two views of the membership: n1 and n5 know five members, n2 to n4 only
/// the first four. The plans disagree: in slot 1 n5 and n3 both test n2, in
/// slot 3 n5 and n2 both test n4. The servers' refusals keep every node in
/// one test at a time, as client or server, by the servers' own logs.
#[test]
fn agents_that_disagree_never_put_a_node_in_two_tests_issue23() {
    let net = subnet();
    let ip = |i: u32| format!("{net}.{i}");
    let port = port_on(&net, 7);
    let four: String = (1..=4).map(|i| format!("n{i} {}\n", ip(i))).collect();
    let (common, odd) = (scratch_file("mesh-view4"), scratch_file("mesh-view5"));
    std::fs::write(&common, &four).unwrap();
    std::fs::write(&odd, format!("{four}n5 {}\n", ip(5))).unwrap();
    let start = anchor(2.0);
    let args = [
        "-t",
        "1",
        "--slot",
        "1.5",
        "--start-at",
        &start,
        "--cycles",
        "1",
    ];
    let agents: Vec<Proc> = (1..=5)
        .map(|i| {
            let peers = if i == 1 || i == 5 { &odd } else { &common };
            agent(&format!("n{i}"), &ip(i), port, peers, &args)
        })
        .collect();
    let outs: Vec<_> = agents
        .into_iter()
        .map(|a| a.finish(Duration::from_secs(40)))
        .collect();
    let mut all = Vec::new();
    let mut recs = Vec::new();
    for (i, o) in outs.iter().enumerate() {
        assert_eq!(o.code(), Some(0), "{o}");
        all.extend(lines(&o.stdout));
        recs.extend(served(&format!("n{}", i + 1), &o.stderr));
    }
    let nodes: HashMap<IpAddr, String> = (1..=5)
        .map(|i| (ip(i).parse().unwrap(), format!("n{i}")))
        .collect();
    assert_nobody_twice_at_once(&recs, &nodes);
    // The plans did collide, twice: one of each two was told busy.
    let busy: Vec<(u64, &str)> = all
        .iter()
        .filter(|l| field(l, "outcome") == "busy")
        .map(|l| (l["slot"].as_u64().unwrap(), field(l, "destination")))
        .collect();
    assert!(
        busy.contains(&(1, "n2")) && busy.contains(&(3, "n4")),
        "{busy:?}: {all:#?}"
    );
    // Each tested every member it knows.
    for (i, want) in [(1, 4), (2, 3), (3, 3), (4, 3), (5, 4)] {
        let n = lines(&outs[i - 1].stdout).len();
        assert_eq!(n, want, "n{i}: {}", outs[i - 1].stdout);
    }
}
