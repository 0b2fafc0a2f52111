//! A routed path with a known bottleneck, for the responsiveness method over
//! HTTP/2 (RPM): three namespaces, client - router - server, joined by two
//! veth pairs, with a 100 Mbit/s tbf on the router's egress toward the loaded
//! direction's receiver (toward the client when the downlink is shaped,
//! toward the server when the uplink is), its FIFO long (`latency 150ms`) or
//! short (`latency 5ms`), as `queue.rs`'s [`Fifo`] describes it.
//!
//! Why a router: a tbf on the sender's own interface stays nearly empty with a
//! TCP load (TCP small queues park only a few packets per socket in the
//! qdisc), but one in a router in the middle holds whatever the senders' windows
//! put in flight, as a bloated home router does. The ends' routes carry
//! `congctl cubic`, a loss-based algorithm that fills the FIFO: the host's
//! default (BBR) keeps it nearly empty, and `sysctl` inside a namespace refuses
//! algorithms outside `tcp_allowed_congestion_control` (cubic is not there on
//! this machine), while a route's `congctl` is not checked against it.
//!
//! What the rig knows: the idle round trip (`ping` before any load) and the
//! tbf's backlog, sampled in the background, whose bytes over the rate are the
//! queueing delay each packet of the loaded direction waits.
//!
//! In the server namespace it starts the reference RPM server (Debian's nginx
//! and an upload sink, `tests/fixtures/rpm-server/start.sh`) and rperf3's own
//! (`rperf3 -s --rpm-http ADDR:PORT`); in the client namespace it runs
//! goresponsiveness (`../shared/peers/goresponsiveness`) and rperf3's client
//! (`rperf3 --rpm-url URL`). Dropping the rig (even while a test panics) stops
//! both servers and deletes the namespaces with whatever still runs in them.
//!
//! Missing tools (nginx, openssl, python3, ping, goresponsiveness) skip the
//! tests with a note, and fail them under `CI=true` (see [`unavailable`]).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::cmd::{run, Bg, Done};
use super::queue::{backlog, median, ping_rtts, Backlog, Fifo, Sampled, RATE};
use super::wake_probe::WakeProbe;
use super::{delete_ns, json_doc, reap_stale, unavailable, COUNTER, DEV, ETH_HEADER, PREFIX};

const TOOL_TIMEOUT: Duration = Duration::from_secs(10);
/// The router's interface toward the client, and toward the server.
const TO_CLIENT: &str = "toc";
const TO_SERVER: &str = "tos";
/// Echo requests for the idle round trip: 50, 10 ms apart (half a second;
/// the first also waits for neighbour discovery, the median ignores it).
const IDLE_PINGS: u32 = 50;
/// Making the certificate and the sparse `large` file, and starting nginx
/// and the sink: well under a second here; a busy machine gets the rest.
const NGINX_START: Duration = Duration::from_secs(30);
/// From starting a server to its socket listening (or its ready line).
const LISTEN_WITHIN: Duration = Duration::from_secs(10);
/// After goresponsiveness's direction ran out its time: the 15 s it adds
/// when throughput never became stable ("speculative" results), plus slack
/// for starting and for a slow TLS handshake on a busy machine.
const GR_EXTRA: Duration = Duration::from_secs(25);
/// After rperf3's client ran out its `--rpm-time`: its idle probes before
/// the stage, the JSON at the end, and slack on a busy machine.
const CLIENT_EXTRA: Duration = Duration::from_secs(25);
/// A backlog below this is a drained queue (a few packets).
const DRAINED: u64 = 3000;

/// Which direction crosses the bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shaped {
    /// Server to client: the tbf is on the router's interface toward the
    /// client; download loads fill it.
    Downlink,
    /// Client to server: the tbf is on the router's interface toward the
    /// server; upload loads fill it.
    Uplink,
}

impl Shaped {
    /// rperf3's `--rpm-stages` value, and the key of its stage in `-J`.
    pub(crate) fn stage(self) -> (&'static str, &'static str) {
        match self {
            Self::Downlink => ("down", "downlink"),
            Self::Uplink => ("up", "uplink"),
        }
    }

    /// goresponsiveness's name of the direction (its Prometheus keys).
    fn gr_label(self) -> &'static str {
        match self {
            Self::Downlink => "download",
            Self::Uplink => "upload",
        }
    }
}

/// The three namespaces, the shaped link and the idle round trip.
pub(crate) struct RouterRig {
    pub(crate) client_ns: String,
    pub(crate) router_ns: String,
    pub(crate) server_ns: String,
    pub(crate) server_ip: String,
    pub(crate) shaped: Shaped,
    /// `ping`'s round trips client to server across the idle rig, ms.
    pub(crate) idle_ping_ms: Vec<f64>,
    /// Scratch files (nginx's root, goresponsiveness's figures).
    pub(crate) dir: PathBuf,
    gr: PathBuf,
}

/// goresponsiveness: `GORESPONSIVENESS` if set, else
/// `../shared/peers/goresponsiveness` beside the checkout.
fn goresponsiveness() -> PathBuf {
    std::env::var_os("GORESPONSIVENESS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peers/goresponsiveness"),
        PathBuf::from,
    )
}

/// The reference server's start script: `RPM_SERVER_START` if set, else the
/// repository's copy (`tests/fixtures/rpm-server`).
fn start_script() -> PathBuf {
    std::env::var_os("RPM_SERVER_START").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpm-server/start.sh"),
        PathBuf::from,
    )
}

/// Deletes the scratch directories a killed earlier run left behind (named
/// as its namespaces, after a process that no longer exists).
fn reap_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if name.ends_with("-rpm") && !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

fn sh(args: &[&str]) -> String {
    run(args, TOOL_TIMEOUT)
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", args[0]))
        .ok()
}

impl RouterRig {
    /// Builds the three namespaces with the tbf on the router's interface
    /// toward `shaped`'s receiver, then measures the idle round trip. `None`
    /// (after a skip note) when the machine lacks a tool; panics on other
    /// setup failures.
    pub(crate) fn new(shaped: Shaped, fifo: Fifo) -> Option<Self> {
        let tools: [(&[&str], &str); 6] = [
            (&["ip", "-V"], "iproute2"),
            (&["tc", "-V"], "iproute2"),
            (&["ping", "-V"], "iputils-ping"),
            (&["nginx", "-v"], "apt-get install -y nginx-light"),
            (&["openssl", "version"], "apt-get install -y openssl"),
            (&["python3", "--version"], "python3"),
        ];
        for (tool, from) in tools {
            match run(tool, TOOL_TIMEOUT) {
                Ok(d) if d.success() => {}
                Ok(d) => return unavailable(&format!("`{}` does not work: {d}", tool[0])),
                Err(e) => return unavailable(&format!("`{}` is missing ({from}): {e}", tool[0])),
            }
        }
        let gr = goresponsiveness();
        if !gr.is_file() {
            return unavailable(&format!("goresponsiveness is missing: {}", gr.display()));
        }
        if !start_script().is_file() {
            return unavailable(&format!(
                "the reference RPM server is missing: {}",
                start_script().display()
            ));
        }
        reap_stale();
        reap_stale_dirs();
        // One counter with the two-namespace pairs, so no two rigs of this
        // process ever share a name.
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        // The pid right after the prefix: reap_stale() deletes what a killed
        // run left behind.
        let id = format!("{PREFIX}{}-{n}-rpm", std::process::id());
        let dir = std::env::temp_dir().join(&id);
        // Built before anything exists so that Drop removes whatever the
        // steps below managed to create.
        let mut rig = Self {
            client_ns: format!("{id}-c"),
            router_ns: format!("{id}-r"),
            server_ns: format!("{id}-s"),
            server_ip: format!("10.82.{}.2", n % 256),
            shaped,
            idle_ping_ms: Vec::new(),
            dir,
            gr,
        };
        std::fs::create_dir_all(&rig.dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", rig.dir.display()));
        for ns in [&rig.client_ns, &rig.router_ns, &rig.server_ns] {
            let d = run(&["ip", "netns", "add", ns], TOOL_TIMEOUT)
                .unwrap_or_else(|e| panic!("cannot run ip: {e}"));
            if !d.success() {
                return unavailable(&format!("cannot create a network namespace: {d}"));
            }
            sh(&["ip", "-n", ns, "link", "set", "lo", "up"]);
        }
        let (c_net, s_net) = (format!("10.81.{}", n % 256), format!("10.82.{}", n % 256));
        for (end, router_dev, net) in [
            (&rig.client_ns, TO_CLIENT, &c_net),
            (&rig.server_ns, TO_SERVER, &s_net),
        ] {
            // Made inside the namespaces: no clash with the host's names.
            sh(&[
                "ip",
                "link",
                "add",
                router_dev,
                "netns",
                &rig.router_ns,
                "type",
                "veth",
                "peer",
                "name",
                DEV,
                "netns",
                end,
            ]);
            let gw = format!("{net}.1");
            sh(&[
                "ip",
                "-n",
                &rig.router_ns,
                "addr",
                "add",
                &format!("{gw}/30"),
                "dev",
                router_dev,
            ]);
            sh(&[
                "ip",
                "-n",
                end,
                "addr",
                "add",
                &format!("{net}.2/30"),
                "dev",
                DEV,
            ]);
            sh(&["ip", "-n", &rig.router_ns, "link", "set", router_dev, "up"]);
            sh(&["ip", "-n", end, "link", "set", DEV, "up"]);
            // Every connection of this end takes cubic from its route (both
            // the ones it opens and the ones it accepts).
            sh(&[
                "ip", "-n", end, "route", "replace", "default", "via", &gw, "dev", DEV, "congctl",
                "cubic",
            ]);
        }
        sh(&[
            "ip",
            "netns",
            "exec",
            &rig.router_ns,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ]);
        // A 64 KB bucket for the long FIFO (a late dequeue catches up, and a
        // whole GSO train at the head is 5 ms against 150); the short one
        // cuts trains into packets (10 KB), or one train would be its whole
        // queue and the packets behind it would wait less than the backlog
        // says (see QueueRig::cut_trains).
        let burst = match fifo {
            Fifo::Long => "64kb",
            Fifo::Short => "10kb",
        };
        sh(&[
            "ip",
            "netns",
            "exec",
            &rig.router_ns,
            "tc",
            "qdisc",
            "add",
            "dev",
            rig.bottleneck(),
            "root",
            "tbf",
            "rate",
            "100mbit",
            "burst",
            burst,
            "latency",
            fifo.latency(),
        ]);
        let count = IDLE_PINGS.to_string();
        let ping = rig.spawn(
            &rig.client_ns,
            &[
                "ping",
                "-n",
                "-c",
                &count,
                "-i",
                "0.01",
                "-W",
                "2",
                &rig.server_ip,
            ],
        );
        let d = ping.finish(Duration::from_secs(10));
        assert!(d.status.is_some(), "ping did not end: {d}");
        rig.idle_ping_ms = ping_rtts(&d.stdout);
        assert!(
            rig.idle_ping_ms.len() as u32 >= IDLE_PINGS / 2,
            "the idle rig lost echo requests: {d}"
        );
        Some(rig)
    }

    /// The router's interface that holds the tbf.
    pub(crate) fn bottleneck(&self) -> &'static str {
        match self.shaped {
            Shaped::Downlink => TO_CLIENT,
            Shaped::Uplink => TO_SERVER,
        }
    }

    /// The median idle round trip, milliseconds.
    pub(crate) fn base_ms(&self) -> f64 {
        median(&self.idle_ping_ms)
    }

    /// Starts a program inside `ns`.
    pub(crate) fn spawn(&self, ns: &str, args: &[&str]) -> Bg {
        let mut all = vec!["ip", "netns", "exec", ns];
        all.extend_from_slice(args);
        Bg::spawn(&all).unwrap_or_else(|e| panic!("cannot start {args:?}: {e}"))
    }

    /// Runs a tool inside `ns` (it must succeed); its stdout.
    pub(crate) fn exec(&self, ns: &str, args: &[&str]) -> String {
        let mut all = vec!["ip", "netns", "exec", ns];
        all.extend_from_slice(args);
        sh(&all)
    }

    /// `tc -s qdisc` of the bottleneck, for messages.
    pub(crate) fn qdisc_stats(&self) -> String {
        self.exec(
            &self.router_ns,
            &["tc", "-s", "qdisc", "show", "dev", self.bottleneck()],
        )
    }

    /// The TCP goodput the tbf allows, bits per second: it counts whole
    /// frames (the Ethernet header too), and TCP/IP headers with timestamps
    /// take 20 + 20 + 12 bytes of each MTU.
    pub(crate) fn tcp_goodput(&self) -> f64 {
        let link = self.exec(
            &self.router_ns,
            &["ip", "link", "show", "dev", self.bottleneck()],
        );
        let mtu: u32 = link
            .split_whitespace()
            .skip_while(|w| *w != "mtu")
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no mtu in {link}"));
        RATE * f64::from(mtu - 52) / f64::from(mtu + ETH_HEADER)
    }

    /// Starts sampling the bottleneck's backlog in the background.
    pub(crate) fn sample_backlog(&self) -> Sampler {
        Sampler::start(self.router_ns.clone(), self.bottleneck())
    }

    /// Waits until the bottleneck holds no more than a few packets (a load
    /// that just ended has drained, and the next run starts from an empty
    /// queue). Panics with the qdisc after `within`.
    pub(crate) fn wait_drained(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            let tc = self.qdisc_stats();
            if backlog(&tc).0 < DRAINED {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the bottleneck did not drain within {within:?}:\n{tc}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts the reference RPM server (nginx and its upload sink) on
    /// `port` in the server namespace; returns once it listens.
    pub(crate) fn start_nginx(&self, port: u16) -> Nginx {
        let dir = self.dir.join(format!("nginx-{port}"));
        let script = start_script();
        let port_s = port.to_string();
        let dir_s = dir.to_string_lossy().into_owned();
        let d = run(
            &[
                "ip",
                "netns",
                "exec",
                &self.server_ns,
                "bash",
                &script.to_string_lossy(),
                &dir_s,
                &self.server_ip,
                &port_s,
            ],
            NGINX_START,
        )
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        // Built before checking, so that Drop stops whatever did start.
        let nginx = Nginx {
            dir,
            url: format!("https://{}:{port}/api/v1/config", self.server_ip),
        };
        assert!(d.success(), "the reference RPM server did not start: {d}");
        self.wait_listening(port);
        nginx
    }

    /// Starts `rperf3 -s -p 5201 --rpm-http SERVER:port` in the server
    /// namespace; returns once it printed its config URL (it listens then).
    pub(crate) fn start_rperf3_server(&self, port: u16) -> RperfServer {
        let listen = format!("{}:{port}", self.server_ip);
        let control = super::PORT.to_string();
        let needle = format!("https://{listen}/config");
        let args = [
            "ip",
            "netns",
            "exec",
            &self.server_ns,
            env!("CARGO_BIN_EXE_rperf3"),
            "-s",
            "-p",
            &control,
            "--rpm-http",
            &listen,
        ];
        let mut srv = RperfServer::spawn(&args, &needle, LISTEN_WITHIN);
        srv.url = format!("https://{listen}/api/v1/config");
        srv
    }

    /// Waits until a TCP socket listens on `port` in the server namespace.
    fn wait_listening(&self, port: u16) {
        let filter = format!("sport = :{port}");
        let deadline = Instant::now() + LISTEN_WITHIN;
        while self
            .exec(&self.server_ns, &["ss", "-Hltn", &filter])
            .trim()
            .is_empty()
        {
            assert!(
                Instant::now() < deadline,
                "nothing listens on port {port} after {LISTEN_WITHIN:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs goresponsiveness in the client namespace against `url` with
    /// `-rpm.timeout timeout_s` (per direction) until it has the figures of
    /// the shaped direction, then stops it: it always runs both directions
    /// (download first), and the other one adds nothing but time. Its
    /// figures come from its Prometheus file, written as each direction ends
    /// (its per-probe files are written only when the whole run ends).
    /// `mnp` is its `-rpm.mnp`, the most load-generating connections it
    /// opens (its default is 16).
    pub(crate) fn goresponsiveness(&self, url: &str, timeout_s: u32, mnp: u32, tag: &str) -> GrRun {
        let prom = self.dir.join(format!("gr-{tag}.prom"));
        let _ = std::fs::remove_file(&prom);
        let gr = self.gr.to_string_lossy().into_owned();
        let prom_s = prom.to_string_lossy().into_owned();
        let t = timeout_s.to_string();
        let mnp = mnp.to_string();
        let started = Instant::now();
        let mut bg = self.spawn(
            &self.client_ns,
            &[
                &gr,
                "-url",
                url,
                "-rpm.timeout",
                &t,
                "-rpm.mnp",
                &mnp,
                "-insecure-skip-verify",
                "-prometheus-stats-filename",
                &prom_s,
            ],
        );
        let label = self.shaped.gr_label();
        // The download direction runs first: the upload's figures come a
        // whole direction later.
        let directions = match self.shaped {
            Shaped::Downlink => 1,
            Shaped::Uplink => 2,
        };
        let within = (Duration::from_secs(timeout_s.into()) + GR_EXTRA) * directions;
        let last_key = format!("networkquality_{label}_connections ");
        let deadline = started + within;
        let text = loop {
            // The file is rewritten whole (truncated, then written): the
            // last key present means all of it is.
            if let Ok(t) = std::fs::read_to_string(&prom) {
                if t.contains(&last_key) {
                    break t;
                }
            }
            if bg.try_status().is_some() {
                panic!(
                    "goresponsiveness ended without the {label} figures: {}",
                    bg.finish(Duration::ZERO)
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "goresponsiveness had no {label} figures after {within:?}: {}",
                    bg.finish(Duration::ZERO)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let ended = Instant::now();
        // Killed: the other direction is not wanted.
        let done = bg.finish(Duration::ZERO);
        GrRun::parse(&text, label, started, ended)
            .unwrap_or_else(|| panic!("cannot read goresponsiveness's figures:\n{text}\n{done}"))
    }

    /// Runs `rperf3 --rpm-url URL --insecure -J --rpm-stages STAGE
    /// --rpm-time SECS` in the client namespace; its JSON document (it must
    /// end cleanly) and what it printed.
    pub(crate) fn rperf3_client(&self, url: &str, secs: u32) -> (Value, Done) {
        let (stage, _) = self.shaped.stage();
        let t = secs.to_string();
        let bg = self.spawn(
            &self.client_ns,
            &[
                env!("CARGO_BIN_EXE_rperf3"),
                "--rpm-url",
                url,
                "--insecure",
                "-J",
                "--rpm-stages",
                stage,
                "--rpm-time",
                &t,
            ],
        );
        let d = bg.finish(Duration::from_secs(secs.into()) + CLIENT_EXTRA);
        (json_doc(&d), d)
    }
}

impl Drop for RouterRig {
    fn drop(&mut self) {
        for ns in [&self.client_ns, &self.server_ns, &self.router_ns] {
            delete_ns(ns);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What goresponsiveness reported for one direction (its Prometheus file).
#[derive(Debug, Clone)]
pub(crate) struct GrRun {
    /// 60 / ((P90 self + P90 foreign / 3) / 2), its headline figure.
    pub(crate) p90_rpm: f64,
    /// Its "trimmed mean" RPM (the mean of the lowest 5%: printed for the
    /// record only).
    pub(crate) trimmed_rpm: f64,
    /// Its last one-second throughput, bits per second (the file's
    /// `bits_per_second` holds bytes per second).
    pub(crate) throughput_bps: f64,
    pub(crate) connections: u32,
    /// Whether throughput and responsiveness both became stable.
    pub(crate) stable: bool,
    pub(crate) started: Instant,
    pub(crate) ended: Instant,
}

impl GrRun {
    fn parse(text: &str, label: &str, started: Instant, ended: Instant) -> Option<Self> {
        let key = |k: &str| -> Option<f64> {
            let name = format!("networkquality_{label}_{k}");
            text.lines().find_map(|l| {
                let (n, v) = l.split_once(' ')?;
                (n == name).then(|| v.trim().parse().ok())?
            })
        };
        Some(Self {
            p90_rpm: key("p90_rpm_value")?,
            trimmed_rpm: key("trimmed_rpm_value")?,
            throughput_bps: key("bits_per_second")? * 8.0,
            connections: key("connections")? as u32,
            stable: key("test_stable")? == 1.0,
            started,
            ended,
        })
    }
}

/// The reference RPM server; dropping it stops nginx and the sink.
pub(crate) struct Nginx {
    dir: PathBuf,
    /// Its config URL.
    pub(crate) url: String,
}

/// The pid in `file`, if it holds one.
fn pid_in(file: &Path) -> Option<i32> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

impl Drop for Nginx {
    fn drop(&mut self) {
        use nix::sys::signal::{kill, Signal};
        use nix::unistd::Pid;
        let pids: Vec<i32> = ["nginx.pid", "slurp.pid"]
            .iter()
            .filter_map(|f| pid_in(&self.dir.join(f)))
            .collect();
        for &p in &pids {
            let _ = kill(Pid::from_raw(p), Signal::SIGTERM);
        }
        // nginx's master ends its workers first; the rig's namespace
        // deletion kills anything left after this.
        let deadline = Instant::now() + Duration::from_secs(5);
        while pids
            .iter()
            .any(|p| Path::new(&format!("/proc/{p}")).exists())
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        for &p in &pids {
            let _ = kill(Pid::from_raw(p), Signal::SIGKILL);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// rperf3's server, its stdout read line by line as it runs (its ready line
/// is the event the rig waits for). Dropping it kills it.
pub(crate) struct RperfServer {
    child: Option<Child>,
    out: Arc<Mutex<String>>,
    err: Option<JoinHandle<Vec<u8>>>,
    what: String,
    /// Its config URL for goresponsiveness and rperf3's client.
    pub(crate) url: String,
}

impl RperfServer {
    fn spawn(args: &[&str], needle: &str, within: Duration) -> Self {
        let mut child = Command::new(args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {args:?}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let err = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = stderr.read_to_end(&mut v);
            v
        });
        let out = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let (o, needle_owned) = (out.clone(), needle.to_string());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let ready = line.contains(&needle_owned);
                let mut o = o.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
                if ready {
                    let _ = tx.send(());
                }
            }
        });
        let mut srv = Self {
            child: Some(child),
            out,
            err: Some(err),
            what: args.join(" "),
            url: String::new(),
        };
        match rx.recv_timeout(within) {
            Ok(()) => srv,
            // Its stdout closed (it exited), or the deadline passed.
            Err(e) => panic!(
                "rperf3's server printed no `{needle}` line ({e:?} after at most \
                 {within:?}): {}",
                srv.stop()
            ),
        }
    }

    /// Kills it; what it printed.
    pub(crate) fn stop(&mut self) -> String {
        let status = self.child.take().map(|mut c| {
            let _ = c.kill();
            c.wait()
        });
        let err = self
            .err
            .take()
            .and_then(|h| h.join().ok())
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default();
        format!(
            "`{}` ({status:?})\n--- stdout ---\n{}\n--- stderr ---\n{err}",
            self.what,
            self.out.lock().unwrap()
        )
    }

    /// Whether it is still running (its output if not).
    pub(crate) fn check_alive(&mut self) -> Result<(), String> {
        let gone = self
            .child
            .as_mut()
            .is_none_or(|c| c.try_wait().ok().flatten().is_some());
        if gone {
            Err(self.stop())
        } else {
            Ok(())
        }
    }
}

impl Drop for RperfServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A background thread that reads the bottleneck's backlog (`tc -s qdisc
/// show`) every 20 ms, and beside it how late the host wakes a sleeping
/// thread, as `queue.rs`'s sampler does for a tbf on a veth end.
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Backlog>>>,
    thread: Option<JoinHandle<()>>,
    wake: Option<WakeProbe>,
}

impl Sampler {
    fn start(ns: String, dev: &'static str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, v) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let args = [
                "ip", "netns", "exec", &ns, "tc", "-s", "qdisc", "show", "dev", dev,
            ];
            while !s.load(Ordering::Relaxed) {
                let at = Instant::now();
                let out = sh(&args);
                let (bytes, packets) = backlog(&out);
                v.lock().unwrap().push(Backlog { at, bytes, packets });
                // Each look costs two processes; this keeps them to a share
                // of one core the load hardly notices.
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self {
            stop,
            seen,
            thread: Some(thread),
            wake: Some(WakeProbe::start()),
        }
    }

    /// Stops sampling; every sample, and how late the host's naps ended.
    pub(crate) fn stop(mut self) -> Sampled {
        self.stop.store(true, Ordering::Relaxed);
        let wake_late = self.wake.take().map(WakeProbe::stop).unwrap_or_default();
        if let Some(t) = self.thread.take() {
            t.join().expect("backlog sampler panicked");
        }
        Sampled {
            backlog: self.seen.lock().unwrap().clone(),
            wake_late,
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The samples of the last `span` of a load: up to the last sample that
/// shows the load's queue (a backlog of at least `from` bytes). A run's
/// figures come from its last intervals, and the queue grows while the
/// method adds connections, so the whole run would read low.
pub(crate) fn last_loaded(samples: &[Backlog], from: u64, span: Duration) -> &[Backlog] {
    let Some(last) = samples.iter().rposition(|b| b.bytes >= from) else {
        return &[];
    };
    let start = samples[last].at - span;
    let first = samples.partition_point(|b| b.at < start);
    &samples[first..=last]
}

/// The samples of the last `span` before `end`.
pub(crate) fn before(samples: &[Backlog], end: Instant, span: Duration) -> Vec<Backlog> {
    samples
        .iter()
        .filter(|b| b.at <= end && b.at + span >= end)
        .copied()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goresponsiveness_prometheus_figures() {
        let t = "networkquality_download_test_stable 0\nnetworkquality_download_p90_rpm_value \
                 67\nnetworkquality_download_trimmed_rpm_value 255\n\
                 networkquality_download_bits_per_second 11687945\n\
                 networkquality_download_connections 16\n";
        let now = Instant::now();
        let r = GrRun::parse(t, "download", now, now).unwrap();
        assert_eq!(r.p90_rpm, 67.0);
        assert_eq!(r.throughput_bps, 11_687_945.0 * 8.0);
        assert_eq!(r.connections, 16);
        assert!(!r.stable);
        assert!(GrRun::parse(t, "upload", now, now).is_none());
    }

    #[test]
    fn the_last_loaded_span() {
        let t0 = Instant::now();
        let at = |ms: u64, bytes: u64| Backlog {
            at: t0 + Duration::from_millis(ms),
            bytes,
            packets: 0,
        };
        let s = [
            at(0, 0),
            at(1000, 9000),
            at(2000, 9000),
            at(3000, 9000),
            at(4000, 0),
        ];
        let w = last_loaded(&s, 3000, Duration::from_millis(1500));
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].at, t0 + Duration::from_millis(3000));
        assert!(last_loaded(&s[..1], 3000, Duration::from_secs(1)).is_empty());
    }
}
