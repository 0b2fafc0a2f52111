//! Network-namespace fixture for ground-truth tests: two fresh namespaces joined
//! by a veth pair, an rperf3 server in one and its client in the other. The
//! kernel's shapers (tc) and counters (iptables, SNMP) inside those namespaces
//! give the figures rperf3's JSON reports must agree with. Only addresses inside
//! the namespaces are used, so no test traffic can leave the machine.
//!
//! When the tools or namespace support are missing the tests skip with a note,
//! except under `CI=true`, where that is a failure: CI must really run them.

pub(crate) mod cmd;
pub(crate) mod iperf2;
pub(crate) mod kernel;
pub(crate) mod mesh_rig;
pub(crate) mod pcap;
pub(crate) mod queue;
pub(crate) mod rpm_rig;
pub(crate) mod wake_probe;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

use cmd::{run, Bg, Done};

/// rperf3's control port inside the server namespace (private, so fixed).
pub(crate) const PORT: u16 = 5201;
/// The veth end's name in both namespaces (each namespace has its own names).
pub(crate) const DEV: &str = "veth0";
/// Frame bytes a packet carries below IP on a veth, as tbf counts them
/// (the Ethernet header; no FCS, preamble or gap).
pub(crate) const ETH_HEADER: u32 = 14;

const PREFIX: &str = "rp3gt-";
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

static COUNTER: AtomicU32 = AtomicU32::new(0);
static SERIAL: Mutex<()> = Mutex::new(());

/// Serialises the tests of one binary: they measure rates, and two at once on
/// a 2-core machine would make each other's figures wrong.
pub(crate) fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// Which side of the pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Server,
    Client,
}

/// A listening socket a server is waited for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Listen {
    Tcp(u16),
    Udp(u16),
}

/// Two namespaces joined by a veth pair. Dropping it kills whatever still runs
/// inside them and deletes both (which also removes the veth pair).
pub(crate) struct Pair {
    pub(crate) server_ns: String,
    pub(crate) client_ns: String,
    pub(crate) server_ip: String,
    pub(crate) client_ip: String,
}

/// Reports that the environment cannot run these tests: a skip note normally,
/// a failure under CI.
pub(crate) fn unavailable<T>(why: &str) -> Option<T> {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("netns ground-truth tests cannot run here (CI=true makes this a failure): {why}");
    }
    eprintln!("SKIP netns ground-truth test: {why}");
    None
}

/// Deletes namespaces a killed earlier run of these tests left behind (their
/// names carry the pid of a process that no longer exists).
fn reap_stale() {
    let Ok(d) = run(&["ip", "netns", "list"], TOOL_TIMEOUT) else {
        return;
    };
    for name in d.stdout.lines().filter_map(|l| l.split_whitespace().next()) {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !pid.is_empty() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            delete_ns(name);
        }
    }
}

impl Pair {
    /// Builds the pair, or returns `None` (after a skip note) when the machine
    /// cannot; panics on other setup failures.
    pub(crate) fn new() -> Option<Self> {
        for tool in [["ip", "-V"], ["tc", "-V"], ["iptables", "-V"], ["ss", "-V"]] {
            match run(&tool, TOOL_TIMEOUT) {
                Ok(d) if d.success() => {}
                Ok(d) => return unavailable(&format!("`{}` does not work: {d}", tool[0])),
                Err(e) => return unavailable(&format!("`{}` is missing: {e}", tool[0])),
            }
        }
        reap_stale();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let id = format!("{PREFIX}{}-{n}", std::process::id());
        // Built before any namespace exists so that Drop cleans up whatever the
        // steps below managed to create.
        let pair = Self {
            server_ns: format!("{id}-s"),
            client_ns: format!("{id}-c"),
            server_ip: format!("10.77.{}.1", n % 256),
            client_ip: format!("10.77.{}.2", n % 256),
        };
        for ns in [&pair.server_ns, &pair.client_ns] {
            let d = run(&["ip", "netns", "add", ns], TOOL_TIMEOUT)
                .unwrap_or_else(|e| panic!("cannot run ip: {e}"));
            if !d.success() {
                return unavailable(&format!("cannot create a network namespace: {d}"));
            }
        }
        // Created directly inside the namespaces, so the name never clashes
        // with an interface of the host.
        pair.host(&[
            "ip",
            "link",
            "add",
            DEV,
            "netns",
            &pair.server_ns,
            "type",
            "veth",
            "peer",
            "name",
            DEV,
            "netns",
            &pair.client_ns,
        ]);
        for (ns, ip) in [
            (&pair.server_ns, &pair.server_ip),
            (&pair.client_ns, &pair.client_ip),
        ] {
            pair.exec(ns, &["ip", "addr", "add", &format!("{ip}/30"), "dev", DEV]);
            pair.exec(ns, &["ip", "link", "set", "lo", "up"]);
            pair.exec(ns, &["ip", "link", "set", DEV, "up"]);
            // Like a NIC without UDP segmentation offload: the kernel cuts a
            // sender's datagram trains (UDP_SEGMENT) into datagrams at the
            // device, so the peer's netfilter sees each one. (A veth would
            // otherwise carry a train whole into the other namespace.)
            pair.exec(ns, &["ip", "link", "set", DEV, "gso_max_segs", "1"]);
        }
        Some(pair)
    }

    /// The namespace of a side.
    pub(crate) fn ns(&self, side: Side) -> &str {
        match side {
            Side::Server => &self.server_ns,
            Side::Client => &self.client_ns,
        }
    }

    fn host(&self, args: &[&str]) -> String {
        run(args, TOOL_TIMEOUT)
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", args[0]))
            .ok()
    }

    /// Runs a tool inside a side's namespace; it must succeed. Returns stdout.
    pub(crate) fn exec(&self, ns: &str, args: &[&str]) -> String {
        let mut all = vec!["ip", "netns", "exec", ns];
        all.extend_from_slice(args);
        self.host(&all)
    }

    /// Runs a tool inside a side's namespace and returns stdout.
    pub(crate) fn on(&self, side: Side, args: &[&str]) -> String {
        self.exec(self.ns(side), args)
    }

    /// Starts a process inside a side's namespace.
    pub(crate) fn spawn(&self, side: Side, args: &[&str]) -> Bg {
        let mut all = vec!["ip", "netns", "exec", self.ns(side)];
        all.extend_from_slice(args);
        Bg::spawn(&all).unwrap_or_else(|e| panic!("cannot start {args:?}: {e}"))
    }

    /// Starts `rperf3 -s -1 -J` in the server namespace and returns once it
    /// listens.
    pub(crate) fn start_server(&self) -> Bg {
        let port = PORT.to_string();
        self.spawn_listening(
            Side::Server,
            &[env!("CARGO_BIN_EXE_rperf3"), "-s", "-1", "-J", "-p", &port],
            &[Listen::Tcp(PORT)],
        )
    }

    /// Starts `args` in a side's namespace and returns once every socket in
    /// `listens` is in the kernel's table. (A probe connection would use up
    /// a `-1` server's test, so this watches for the sockets instead.)
    /// Panics with the program's output if it exits or 5 s pass first.
    pub(crate) fn spawn_listening(&self, side: Side, args: &[&str], listens: &[Listen]) -> Bg {
        let mut srv = self.spawn(side, args);
        let deadline = Instant::now() + Duration::from_secs(5);
        let listening = |l: &Listen| {
            let (flags, port) = match *l {
                Listen::Tcp(p) => ("-Hltn", p),
                Listen::Udp(p) => ("-Hlun", p),
            };
            let filter = format!("sport = :{port}");
            !self.on(side, &["ss", flags, &filter]).trim().is_empty()
        };
        while !listens.iter().all(listening) {
            if srv.try_status().is_some() || Instant::now() > deadline {
                panic!(
                    "{} did not start listening on {listens:?}: {}",
                    args[0],
                    srv.finish(Duration::ZERO)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        srv
    }

    /// Starts `rperf3 -c SERVER -J -p PORT ARGS...` in the client namespace.
    pub(crate) fn spawn_client(&self, args: &[&str]) -> Bg {
        let port = PORT.to_string();
        let mut all = vec![
            env!("CARGO_BIN_EXE_rperf3"),
            "-c",
            &self.server_ip,
            "-J",
            "-p",
            &port,
        ];
        all.extend_from_slice(args);
        self.spawn(Side::Client, &all)
    }

    /// Waits until a TCP connection to or from the rperf3 port in `side`'s
    /// namespace reports its MSS and path MTU (`ss -tin`), i.e. while a test runs.
    pub(crate) fn tcp_mss_pmtu(&self, side: Side, within: Duration) -> (u32, u32) {
        self.tcp_mss_pmtu_on(PORT, side, within)
    }

    /// [`Pair::tcp_mss_pmtu`] for a connection to or from `port`.
    pub(crate) fn tcp_mss_pmtu_on(&self, port: u16, side: Side, within: Duration) -> (u32, u32) {
        let filter = format!("( sport = :{port} or dport = :{port} )");
        let deadline = Instant::now() + within;
        loop {
            let ss = self.on(side, &["ss", "-Htin", "state", "established", &filter]);
            if let Some(v) = kernel::ss_mss_pmtu(&ss) {
                return v;
            }
            assert!(Instant::now() < deadline, "no TCP MSS seen in ss:\n{ss}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Packet counters of the rules of `chain` in `side`'s namespace, in order.
    pub(crate) fn iptables_packets(&self, side: Side, chain: &str) -> Vec<u64> {
        let l = self.on(side, &["iptables", "-L", chain, "-v", "-n", "-x"]);
        kernel::iptables_rule_packets(&l)
    }

    /// (packets, bytes) of every rule of `chain` in `side`'s namespace.
    pub(crate) fn iptables_counters(&self, side: Side, chain: &str) -> Vec<(u64, u64)> {
        let l = self.on(side, &["iptables", "-L", chain, "-v", "-n", "-x"]);
        kernel::iptables_rule_counters(&l)
    }

    /// A `Udp:` SNMP counter of `side`'s namespace.
    pub(crate) fn udp_snmp(&self, side: Side, name: &str) -> u64 {
        kernel::snmp_udp(&self.on(side, &["cat", "/proc/net/snmp"]), name)
    }

    /// `tc -s qdisc` of the veth in `side`'s namespace, for failure messages.
    pub(crate) fn qdisc_stats(&self, side: Side) -> String {
        self.on(side, &["tc", "-s", "qdisc", "show", "dev", DEV])
    }
}

/// Ends the processes a test started inside `ns` (a namespace lives on while
/// one is inside it), then deletes it, which also removes its veth end.
fn delete_ns(ns: &str) {
    if let Ok(d) = run(&["ip", "netns", "pids", ns], TOOL_TIMEOUT) {
        for pid in d.stdout.split_whitespace() {
            let _ = run(&["kill", "-9", pid], TOOL_TIMEOUT);
        }
    }
    let _ = run(&["ip", "netns", "del", ns], TOOL_TIMEOUT);
}

impl Drop for Pair {
    fn drop(&mut self) {
        delete_ns(&self.server_ns);
        delete_ns(&self.client_ns);
    }
}

/// The single JSON document an rperf3 run printed; panics (with the output)
/// if it did not end cleanly or reported an error.
pub(crate) fn json_doc(d: &Done) -> Value {
    assert!(d.success(), "rperf3 failed: {d}");
    let v: Value = serde_json::Deserializer::from_str(&d.stdout)
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON document from rperf3: {d}"));
    assert!(v.get("error").is_none(), "rperf3 reported an error: {d}");
    v
}

/// The number at a dotted path (`end.sum_received.bytes`, `end.streams.0.udp`).
pub(crate) fn num(doc: &Value, path: &str) -> f64 {
    let mut v = doc;
    for k in path.split('.') {
        let next = match k.parse::<usize>() {
            Ok(i) => v.get(i),
            Err(_) => v.get(k),
        };
        v = next.unwrap_or_else(|| panic!("no {path} in JSON document:\n{doc:#}"));
    }
    v.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number: {v} in:\n{doc:#}"))
}

/// Like [`num`] for counters, which must be whole non-negative numbers.
pub(crate) fn count(doc: &Value, path: &str) -> u64 {
    let x = num(doc, path);
    assert!(
        x >= 0.0 && x.fract() == 0.0,
        "{path} = {x} is not a count in:\n{doc:#}"
    );
    x as u64
}

/// The share of the machine's CPU time the hypervisor gave to other guests
/// (steal in /proc/stat) over `span`.
fn steal_share(span: Duration) -> Option<f64> {
    let read = || -> Option<(u64, u64)> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let v: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .take(8)
            .filter_map(|x| x.parse().ok())
            .collect();
        Some((*v.get(7)?, v.iter().sum()))
    };
    let (s0, t0) = read()?;
    std::thread::sleep(span);
    let (s1, t1) = read()?;
    (t1 > t0).then(|| (s1 - s0) as f64 / (t1 - t0) as f64)
}

/// After a disturbed attempt: waits (10 s at most) for a second in which the
/// hypervisor took under 2% of the CPU from this machine, so the next attempt
/// does not start in the same busy stretch (a CI run saw 7-21% steal while
/// three rate tests failed all their attempts). What it saw, if it waited.
fn wait_for_a_quiet_host() -> Option<String> {
    const QUIET: f64 = 0.02;
    const LONGEST: Duration = Duration::from_secs(10);
    let start = Instant::now();
    let mut worst = 0.0f64;
    while start.elapsed() < LONGEST {
        let share = steal_share(Duration::from_secs(1))?;
        if share < QUIET {
            return (worst > 0.0).then(|| {
                format!(
                    "waited {:.0?} for the host's steal to drop below 2% (up to {:.0}%)",
                    start.elapsed(),
                    worst * 100.0
                )
            });
        }
        worst = worst.max(share);
    }
    Some(format!(
        "the host's steal stayed at 2% or more for {LONGEST:?} (up to {:.0}%)",
        worst * 100.0
    ))
}

/// How one measurement came out.
pub(crate) enum Attempt {
    /// Every check held.
    Pass,
    /// The machine could not run the test (already reported by [`Pair::new`]).
    Skip,
    /// A figure was off in the way a busy machine can cause (a starved shaper
    /// or receiver), with the evidence. Errors a busy machine cannot explain
    /// panic at once instead.
    Disturbed(String),
}

/// Tries a measurement up to `ATTEMPTS` times: the machine is shared, so a
/// stalled process can starve a shaper or overflow a socket now and then, but
/// a figure that is wrong every time is rperf3's error.
pub(crate) fn with_retries(what: &str, mut measure: impl FnMut() -> Attempt) {
    const ATTEMPTS: usize = 3;
    let mut seen = Vec::new();
    for i in 1..=ATTEMPTS {
        if i > 1 {
            if let Some(note) = wait_for_a_quiet_host() {
                eprintln!("{what}: before attempt {i}: {note}");
            }
        }
        match measure() {
            Attempt::Pass | Attempt::Skip => return,
            Attempt::Disturbed(why) => {
                eprintln!("{what}: attempt {i} of {ATTEMPTS} disturbed: {why}");
                seen.push(why);
            }
        }
    }
    panic!(
        "{what}: off in all {ATTEMPTS} attempts:\n{}",
        seen.join("\n")
    );
}
