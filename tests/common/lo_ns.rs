//! A fresh network namespace with only its own `lo`, for one test's two
//! programs: its kernel counters (`/proc/net/snmp`, the TCP table, socket
//! events) then count that test's traffic and nothing else, however many
//! tests run beside it. Dropping it kills what still runs inside and deletes it.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::{run_program, Output, Proc};

const PREFIX: &str = "rp3lo-";
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) struct LoNs {
    name: String,
}

impl LoNs {
    /// A new namespace with `lo` up, or `None` after a skip note when this
    /// machine cannot make one (a failure under `CI=true`).
    pub(crate) fn new() -> Option<Self> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        reap_stale();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let ns = Self {
            name: format!("{PREFIX}{}-{n}", std::process::id()),
        };
        let add = ip(&["netns", "add", &ns.name]);
        if !add.as_ref().is_ok_and(|o| o.status.success()) {
            let why = describe(&add);
            assert!(!super::ci(), "a network namespace is required in CI: {why}");
            eprintln!("note: no network namespace here ({why}): running on the host, unchecked by the kernel's counters");
            return None;
        }
        let up = ns.run(Path::new("ip"), &["link", "set", "lo", "up"]);
        assert!(up.status.success(), "cannot bring lo up:\n{up}");
        Some(ns)
    }

    /// `ip netns exec NAME program args...`: the arguments that start
    /// `program` inside (the same process: `ip` execs it).
    pub(crate) fn argv(&self, program: &Path, args: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = ["netns", "exec", &self.name]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.push(program.to_string_lossy().into_owned());
        v.extend(args.iter().map(|s| s.to_string()));
        v
    }

    /// Starts `program` inside.
    pub(crate) fn spawn(&self, program: &Path, args: &[&str]) -> Proc {
        Proc::spawn("ip", &self.argv(program, args))
    }

    /// Runs `program` inside to its end (killed, and the test failed, after
    /// `TOOL_TIMEOUT`).
    pub(crate) fn run(&self, program: &Path, args: &[&str]) -> Output {
        run_program("ip", &self.argv(program, args), TOOL_TIMEOUT)
    }

    /// The namespace's `/proc/net/snmp`.
    pub(crate) fn snmp(&self) -> String {
        let out = self.run(Path::new("cat"), &["/proc/net/snmp"]);
        assert!(out.status.success(), "{out}");
        out.stdout
    }
}

/// Waits until `server`, started inside a namespace, listens on `port` there
/// (its own view of the TCP table: a probe connection would be taken as a
/// test); fails the test with its output if it exits first or after
/// `TOOL_TIMEOUT`.
pub(crate) fn await_listening(server: &mut Proc, port: u16) {
    let want = format!(":{port:04X}");
    let listening = |pid: nix::unistd::Pid| {
        ["tcp", "tcp6"].iter().any(|t| {
            std::fs::read_to_string(format!("/proc/{pid}/net/{t}")).is_ok_and(|text| {
                text.lines().skip(1).any(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    f.get(1).is_some_and(|a| a.ends_with(&want)) && f.get(3) == Some(&"0A")
                })
            })
        })
    };
    let deadline = std::time::Instant::now() + TOOL_TIMEOUT;
    while !listening(server.pid()) {
        if !server.is_running() {
            panic!("server exited before listening:\n{}", server.collect());
        }
        assert!(
            std::time::Instant::now() < deadline,
            "server not listening on {port} after {TOOL_TIMEOUT:?}:\n{}\n{}",
            server.stdout(),
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

impl Drop for LoNs {
    fn drop(&mut self) {
        delete(&self.name);
    }
}

/// Runs `ip args...` to its end, killed after `TOOL_TIMEOUT` (then `Err`):
/// never a panic, as `Drop` uses it too.
fn ip(args: &[&str]) -> std::io::Result<std::process::Output> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = std::time::Instant::now() + TOOL_TIMEOUT;
    // Its output is a few lines, well within a pipe's buffer until it exits.
    while child.try_wait()?.is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other(format!("ip {args:?} timed out")));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output()
}

fn describe(r: &std::io::Result<std::process::Output>) -> String {
    match r {
        Ok(o) => format!(
            "`ip netns add`: {}, {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => format!("cannot run `ip`: {e}"),
    }
}

/// Kills what still runs inside (a namespace lives on while a process is in
/// it), then deletes it.
fn delete(name: &str) {
    if let Ok(o) = ip(&["netns", "pids", name]) {
        for pid in String::from_utf8_lossy(&o.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                let pid = nix::unistd::Pid::from_raw(pid);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            }
        }
    }
    let _ = ip(&["netns", "del", name]);
}

/// Deletes namespaces a killed earlier run left behind (their names carry
/// the pid of a process that no longer exists).
fn reap_stale() {
    let Ok(o) = ip(&["netns", "list"]) else {
        return;
    };
    for name in String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
    {
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let pid = rest.split('-').next().unwrap_or("");
        if !pid.is_empty() && !Path::new(&format!("/proc/{pid}")).exists() {
            delete(name);
        }
    }
}
