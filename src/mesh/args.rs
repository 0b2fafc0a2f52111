//! `rperf3 mesh`'s command line: a small table of options (for the parser,
//! the help and the man page) and the typed settings it gives.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::cli::units::{parse_rate, parse_size, to_count};
use crate::cli::CliError;

/// One option: short letter, long name, argument (empty: a flag), help.
pub(crate) struct MeshOpt {
    pub(crate) short: Option<char>,
    pub(crate) long: &'static str,
    pub(crate) metavar: &'static str,
    pub(crate) help: &'static str,
}

const fn opt(
    short: Option<char>,
    long: &'static str,
    metavar: &'static str,
    help: &'static str,
) -> MeshOpt {
    MeshOpt {
        short,
        long,
        metavar,
        help,
    }
}

/// Every option of `rperf3 mesh`, in help order.
pub(crate) static MESH_OPTIONS: &[MeshOpt] = &[
    opt(
        None,
        "name",
        "NAME",
        "this agent's name among the members (default: the host name)",
    ),
    opt(
        None,
        "peers",
        "FILE",
        "members from a file of NAME ADDRESS[:PORT] lines, read again each cycle",
    ),
    opt(
        None,
        "peers-dns",
        "NAME",
        "members are the addresses NAME resolves to (A and AAAA), named by address",
    ),
    opt(
        None,
        "peers-k8s",
        "SERVICE",
        "members are the ready endpoints of this Kubernetes Service, named by node",
    ),
    opt(
        None,
        "namespace",
        "NS",
        "the Service's namespace (default: the pod's own, else \"default\")",
    ),
    opt(
        Some('p'),
        "port",
        "PORT",
        "the port every agent serves tests on (default 5201)",
    ),
    opt(
        Some('B'),
        "bind",
        "ADDR",
        "serve on this address and test from it",
    ),
    opt(Some('t'), "time", "SECS", "each test's length (default 10)"),
    opt(
        None,
        "slot",
        "SECS",
        "a slot's length: one test with its setup and margin (default: -t plus 2)",
    ),
    opt(
        None,
        "period",
        "SECS",
        "the shortest cycle: cycles start on a grid of this (default 0: back to back)",
    ),
    opt(
        None,
        "start-at",
        "UNIX",
        "where the grid of cycles is counted from (default 0, the epoch)",
    ),
    opt(None, "cycles", "N", "cycles to run, 0 for ever (default 0)"),
    opt(Some('u'), "udp", "", "UDP tests (at -b, default 1M)"),
    opt(
        Some('b'),
        "bitrate",
        "RATE",
        "TCP: a cap per test; UDP: the rate ([KMG], bits/s)",
    ),
    opt(Some('P'), "parallel", "N", "streams per test (default 1)"),
    opt(
        Some('C'),
        "congestion",
        "ALGO",
        "TCP congestion control of the tests",
    ),
    opt(
        None,
        "cycle-bytes",
        "N",
        "skip this agent's remaining tests of a cycle once they sent this much ([KMG])",
    ),
    opt(
        None,
        "cycle-time",
        "SECS",
        "skip this agent's tests that would start this long after the cycle began",
    ),
    opt(
        None,
        "full-max",
        "N",
        "up to this many members every pair is tested each cycle (default 50)",
    ),
    opt(
        None,
        "sample",
        "N",
        "above that, tournament rounds per cycle: each agent meets N peers (default 8)",
    ),
    opt(
        Some('J'),
        "json",
        "",
        "one JSON line per test on standard output",
    ),
    opt(
        None,
        "metrics",
        "ADDR:PORT",
        "serve Prometheus metrics (the server's and each pair's) here",
    ),
    opt(
        None,
        "logfile",
        "FILE",
        "log lines to this file instead of standard error",
    ),
    opt(
        Some('d'),
        "debug",
        "",
        "log every step (default: tests and cycles)",
    ),
    opt(Some('h'), "help", "", "print this help"),
];

/// Where the members come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PeerSource {
    /// A peers file.
    File(PathBuf),
    /// The addresses a name resolves to.
    Dns(String),
    /// A Kubernetes Service's EndpointSlices.
    K8s {
        service: String,
        namespace: Option<String>,
    },
}

/// A parsed `rperf3 mesh` command line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MeshArgs {
    pub(crate) name: Option<String>,
    pub(crate) peers: PeerSource,
    pub(crate) port: u16,
    pub(crate) bind: Option<String>,
    pub(crate) time: f64,
    pub(crate) slot: f64,
    pub(crate) period: f64,
    pub(crate) start_at: f64,
    pub(crate) cycles: u64,
    pub(crate) udp: bool,
    pub(crate) bitrate: Option<u64>,
    pub(crate) parallel: u32,
    pub(crate) congestion: Option<String>,
    pub(crate) cycle_bytes: Option<u64>,
    pub(crate) cycle_time: Option<f64>,
    pub(crate) full_max: usize,
    pub(crate) sample: usize,
    pub(crate) json: bool,
    pub(crate) metrics: Option<SocketAddr>,
    pub(crate) logfile: Option<PathBuf>,
    pub(crate) debug: bool,
}

/// What the arguments ask for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum MeshCommand {
    Run(Box<MeshArgs>),
    Help(String),
}

/// The help of `rperf3 mesh`.
pub(crate) fn mesh_help(prog: &str) -> String {
    let mut s = format!(
        "Usage: {prog} mesh --peers FILE|--peers-dns NAME|--peers-k8s SERVICE [options]\n\n\
         A mesh agent: serves tests on its port and, on a schedule all agents compute\n\
         alike, tests every other member (a round-robin tournament in time slots: no\n\
         member is in two tests at once). One per node.\n\n"
    );
    for o in MESH_OPTIONS {
        let short = o.short.map_or("    ".to_string(), |c| format!("-{c}, "));
        let long = if o.metavar.is_empty() {
            o.long.to_string()
        } else {
            format!("{} {}", o.long, o.metavar)
        };
        s.push_str(&format!("  {short}--{long:<22} {}\n", o.help));
    }
    s
}

fn fail(prog: &str, msg: &str) -> CliError {
    CliError {
        message: format!("{prog}: mesh: {msg}\nTry `{prog} mesh --help' for more information.\n"),
        status: 1,
        code: None,
    }
}

fn seconds(prog: &str, name: &str, v: &str, min: f64) -> Result<f64, CliError> {
    match v.parse::<f64>() {
        // Up to year 5000 or so: a Unix time for --start-at fits too.
        Ok(x) if x.is_finite() && x >= min && x < 1e11 => Ok(x),
        _ => Err(fail(
            prog,
            &format!("--{name} takes seconds of at least {min}, not {v:?}"),
        )),
    }
}

fn whole(prog: &str, name: &str, v: &str, min: u64, max: u64) -> Result<u64, CliError> {
    match v.parse::<u64>() {
        Ok(x) if (min..=max).contains(&x) => Ok(x),
        _ => Err(fail(
            prog,
            &format!("--{name} takes a whole number from {min} to {max}, not {v:?}"),
        )),
    }
}

/// Finds the option a typed name means: `-x`, `--long`.
fn lookup(name: &str) -> Option<&'static MeshOpt> {
    if let Some(l) = name.strip_prefix("--") {
        return MESH_OPTIONS.iter().find(|o| o.long == l);
    }
    let c = name.strip_prefix('-')?.chars().next()?;
    MESH_OPTIONS.iter().find(|o| o.short == Some(c))
}

/// Parses the arguments after `mesh`.
pub(crate) fn parse_mesh(prog: &str, args: &[OsString]) -> Result<MeshCommand, CliError> {
    let mut values: Vec<(&'static str, String)> = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy();
        if !text.starts_with('-') || text == "-" {
            return Err(fail(prog, &format!("unexpected argument '{text}'")));
        }
        let (name, attached) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(v.to_string())),
            _ if !text.starts_with("--") && text.len() > 2 => {
                (text[..2].to_string(), Some(text[2..].to_string()))
            }
            _ => (text.to_string(), None),
        };
        let Some(o) = lookup(&name) else {
            return Err(fail(prog, &format!("unknown option '{text}'")));
        };
        if o.long == "help" {
            return Ok(MeshCommand::Help(mesh_help(prog)));
        }
        let value = if o.metavar.is_empty() {
            if attached.is_some() {
                return Err(fail(
                    prog,
                    &format!("option '--{}' takes no argument", o.long),
                ));
            }
            String::new()
        } else {
            match attached.or_else(|| it.next().map(|v| v.to_string_lossy().into_owned())) {
                Some(v) => v,
                None => {
                    return Err(fail(
                        prog,
                        &format!("option '--{}' requires an argument", o.long),
                    ))
                }
            }
        };
        values.push((o.long, value));
    }
    build(prog, &values).map(|a| MeshCommand::Run(Box::new(a)))
}

fn build(prog: &str, values: &[(&'static str, String)]) -> Result<MeshArgs, CliError> {
    let get = |n: &str| {
        values
            .iter()
            .rev()
            .find(|(k, _)| *k == n)
            .map(|(_, v)| v.as_str())
    };
    let has = |n: &str| get(n).is_some();
    let sources: Vec<PeerSource> = values
        .iter()
        .filter_map(|(k, v)| match *k {
            "peers" => Some(PeerSource::File(PathBuf::from(v))),
            "peers-dns" => Some(PeerSource::Dns(v.clone())),
            "peers-k8s" => Some(PeerSource::K8s {
                service: v.clone(),
                namespace: get("namespace").map(str::to_string),
            }),
            _ => None,
        })
        .collect();
    let peers = match &sources[..] {
        [one] => one.clone(),
        [] => {
            return Err(fail(
                prog,
                "say where the members come from: --peers, --peers-dns or --peers-k8s",
            ))
        }
        _ => {
            return Err(fail(
                prog,
                "give one of --peers, --peers-dns and --peers-k8s",
            ))
        }
    };
    if has("namespace") && !matches!(peers, PeerSource::K8s { .. }) {
        return Err(fail(prog, "--namespace goes with --peers-k8s"));
    }
    if let Some(n) = get("name") {
        rperf3_mesh::peers::check_name(n).map_err(|e| fail(prog, &format!("--name: {e}")))?;
    }
    // Whole seconds, as iperf3's -t.
    let time = get("time").map_or(Ok(10), |v| whole(prog, "time", v, 1, 86400))? as f64;
    let slot = get("slot").map_or(Ok(time + 2.0), |v| seconds(prog, "slot", v, 0.1))?;
    if slot < time {
        return Err(fail(
            prog,
            &format!("--slot {slot} is shorter than the test (-t {time})"),
        ));
    }
    let size = |n: &str| -> Result<Option<u64>, CliError> {
        get(n)
            .map(|v| {
                parse_size(v)
                    .and_then(|x| to_count(x, v))
                    .map_err(|e| fail(prog, &format!("--{n}: {e}")))
            })
            .transpose()
    };
    let bitrate = get("bitrate")
        .map(|v| {
            parse_rate(v)
                .and_then(|x| to_count(x, v))
                .map_err(|e| fail(prog, &format!("--bitrate: {e}")))
        })
        .transpose()?;
    let metrics = get("metrics")
        .map(|v| {
            v.parse::<SocketAddr>().map_err(|_| {
                fail(
                    prog,
                    &format!("--metrics takes an IP address and port (ADDR:PORT), not {v:?}"),
                )
            })
        })
        .transpose()?;
    Ok(MeshArgs {
        name: get("name").map(str::to_string),
        peers,
        port: get("port").map_or(Ok(5201), |v| whole(prog, "port", v, 1, 65535))? as u16,
        bind: get("bind").map(str::to_string),
        time,
        slot,
        period: get("period").map_or(Ok(0.0), |v| seconds(prog, "period", v, 0.0))?,
        start_at: get("start-at").map_or(Ok(0.0), |v| seconds(prog, "start-at", v, 0.0))?,
        cycles: get("cycles").map_or(Ok(0), |v| whole(prog, "cycles", v, 0, u64::MAX))?,
        udp: has("udp"),
        bitrate,
        parallel: get("parallel").map_or(Ok(1), |v| whole(prog, "parallel", v, 1, 128))? as u32,
        congestion: get("congestion").map(str::to_string),
        cycle_bytes: size("cycle-bytes")?,
        cycle_time: get("cycle-time")
            .map(|v| seconds(prog, "cycle-time", v, 0.0))
            .transpose()?,
        full_max: get("full-max").map_or(Ok(50), |v| whole(prog, "full-max", v, 2, 1_000_000))?
            as usize,
        sample: get("sample").map_or(Ok(8), |v| whole(prog, "sample", v, 1, 1_000_000))? as usize,
        json: has("json"),
        metrics,
        logfile: get("logfile").map(PathBuf::from),
        debug: has("debug"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<MeshCommand, CliError> {
        let v: Vec<OsString> = a.iter().map(OsString::from).collect();
        parse_mesh("rperf3", &v)
    }

    fn run(a: &[&str]) -> MeshArgs {
        match parse(a) {
            Ok(MeshCommand::Run(m)) => *m,
            other => panic!("{a:?}: {other:?}"),
        }
    }

    fn err(a: &[&str]) -> String {
        match parse(a) {
            Err(e) => e.message,
            other => panic!("{a:?}: {other:?}"),
        }
    }

    #[test]
    fn the_issue_command_line_parses() {
        let m = run(&[
            "--name",
            "n1",
            "--peers",
            "p.txt",
            "-t",
            "5",
            "--cycles",
            "3",
            "-J",
            "--metrics",
            "127.0.0.1:9464",
        ]);
        assert_eq!(m.name.as_deref(), Some("n1"));
        assert_eq!(m.peers, PeerSource::File("p.txt".into()));
        assert_eq!((m.time, m.slot, m.cycles), (5.0, 7.0, 3));
        assert!(m.json && !m.udp);
        assert_eq!(m.metrics, Some("127.0.0.1:9464".parse().unwrap()));
        assert_eq!((m.port, m.full_max, m.sample, m.parallel), (5201, 50, 8, 1));
    }

    #[test]
    fn options_take_their_values_every_way() {
        let m = run(&[
            "--peers-k8s=rperf3",
            "--namespace",
            "mesh",
            "-p5301",
            "-u",
            "-b",
            "10M",
            "-P",
            "2",
            "--slot=3.5",
            "-t",
            "1",
            "--cycle-bytes",
            "1G",
            "--cycle-time",
            "60",
            "--period",
            "600",
            "--start-at",
            "1700000000.5",
            "--full-max",
            "10",
            "--sample",
            "3",
            "-C",
            "cubic",
            "-B",
            "10.0.0.1",
            "-d",
        ]);
        assert_eq!(
            m.peers,
            PeerSource::K8s {
                service: "rperf3".into(),
                namespace: Some("mesh".into())
            }
        );
        assert_eq!(m.port, 5301);
        assert_eq!(m.bitrate, Some(10_000_000));
        assert_eq!(m.cycle_bytes, Some(1 << 30));
        assert_eq!(
            (m.slot, m.period, m.start_at),
            (3.5, 600.0, 1_700_000_000.5)
        );
        assert_eq!(m.cycle_time, Some(60.0));
        assert_eq!((m.full_max, m.sample, m.parallel), (10, 3, 2));
        assert_eq!(m.congestion.as_deref(), Some("cubic"));
        assert_eq!(m.bind.as_deref(), Some("10.0.0.1"));
        assert!(m.udp && m.debug);
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        assert_eq!(
            err(&["-t", "5"]),
            "rperf3: mesh: say where the members come from: --peers, --peers-dns or --peers-k8s\n\
             Try `rperf3 mesh --help' for more information.\n"
        );
        for (a, msg) in [
            (&["--peers", "a", "--peers-dns", "b"][..], "give one of"),
            (
                &["--peers", "a", "-t", "0"],
                "--time takes a whole number from 1",
            ),
            (&["--peers", "a", "-t", "abc"], "not \"abc\""),
            (
                &["--peers", "a", "-t", "10", "--slot", "5"],
                "shorter than the test",
            ),
            (
                &["--peers", "a", "--metrics", "nowhere"],
                "--metrics takes an IP address",
            ),
            (&["--peers", "a", "-b", "fast"], "--bitrate: "),
            (
                &["--peers", "a", "--port", "70000"],
                "--port takes a whole number",
            ),
            (
                &["--peers", "a", "--namespace", "x"],
                "--namespace goes with --peers-k8s",
            ),
            (&["--peers", "a", "--bogus"], "unknown option '--bogus'"),
            (&["--peers"], "option '--peers' requires an argument"),
            (&["--peers", "a", "-J=1"], "takes no argument"),
            (&["--peers", "a", "stray"], "unexpected argument 'stray'"),
            (&["--peers", "a", "--name", "has space"], "--name: "),
            (
                &["--peers", "a", "-P", "0"],
                "--parallel takes a whole number",
            ),
        ] {
            let e = err(a);
            assert!(e.contains(msg), "{a:?}: {e}");
        }
    }

    #[test]
    fn help_lists_every_option() {
        let MeshCommand::Help(h) = parse(&["--peers", "x", "-h"]).unwrap() else {
            panic!("no help");
        };
        for o in MESH_OPTIONS {
            assert!(h.contains(&format!("--{}", o.long)), "{}", o.long);
        }
    }
}
