//! The one harness every binary test uses: the binary's path, port allocation,
//! server guards that are killed on drop, and clients with a hard timeout.
//!
//! Processes run with piped stdout/stderr read by background threads, so a test
//! can wait for a line to appear (an event) instead of sleeping, and every
//! failure message can show what each program printed.

pub(crate) mod auth;
pub(crate) mod capture;
#[macro_use]
pub(crate) mod interop;
#[macro_use]
pub(crate) mod iperf2;
pub(crate) mod json;
pub(crate) mod lo_ns;
pub(crate) mod load;
pub(crate) mod mesh_records;
pub(crate) mod peer_log;
pub(crate) mod proc;
pub(crate) mod prom;
pub(crate) mod raw;
pub(crate) mod sock_close;
pub(crate) mod stock_refusal;
pub(crate) mod strace;
pub(crate) mod tcp_streams;

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub(crate) use nix::sys::signal::Signal;
pub(crate) use proc::{Output, Proc};

/// Default hard limit for one short (`-t 1`/`-t 2`) client run.
pub(crate) const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server may take to start listening.
const LISTEN_DEADLINE: Duration = Duration::from_secs(10);

/// The binary under test.
pub(crate) fn rperf3() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rperf3"))
}

/// Where tests may write files (log files); cargo provides it per target dir.
pub(crate) fn scratch_file(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let n = SCRATCH.fetch_add(1, Ordering::SeqCst);
    let path = dir.join(format!("{}-{}-{name}", std::process::id(), n));
    let _ = std::fs::remove_file(&path);
    path
}
static SCRATCH: AtomicU32 = AtomicU32::new(0);

/// A port nobody else uses: outside the kernel's ephemeral range (so client
/// sockets never hold it), a per-process starting point (so concurrent test
/// processes start far apart), a process-wide counter (so parallel tests in one
/// process never get the same one), and a bind check for TCP and UDP.
pub(crate) fn free_port() -> u16 {
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000; // 20000..32000, below 32768 (ip_local_port_range)
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = (std::process::id().wrapping_mul(2654435761) >> 7) % SPAN;
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let port = (LOW + (base + n) % SPAN) as u16;
        if port_is_free(port) {
            return port;
        }
    }
    panic!("no free port in {LOW}..{}", LOW + SPAN);
}

fn port_is_free(port: u16) -> bool {
    let tcp = TcpListener::bind(("::", port)).or_else(|_| TcpListener::bind(("0.0.0.0", port)));
    let udp = UdpSocket::bind(("::", port)).or_else(|_| UdpSocket::bind(("0.0.0.0", port)));
    tcp.is_ok() && udp.is_ok()
}

/// A [`free_port`] that also binds TCP and UDP on each of `ips`: the
/// wildcard check does not always see a socket another test holds on one
/// loopback address and port.
pub(crate) fn free_port_on(ips: &[String]) -> u16 {
    loop {
        let port = free_port();
        let free = ips.iter().all(|ip| {
            TcpListener::bind((ip.as_str(), port)).is_ok()
                && UdpSocket::bind((ip.as_str(), port)).is_ok()
        });
        if free {
            return port;
        }
    }
}

/// True when the suite runs as CI (`CI=true`): a missing peer, tool or kernel
/// capability is then a failure, never a skip.
pub(crate) fn ci() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Whether a capability a test needs is `present`. Missing: a panic naming
/// `what` under `CI=true`, else a note on stderr and `false` so the caller skips.
pub(crate) fn require(present: bool, what: &str) -> bool {
    if present {
        return true;
    }
    assert!(!ci(), "{what} is required in CI");
    eprintln!("note: no {what} here, skipping this test");
    false
}

/// The newest iperf3 peer: `IPERF3_321` if set, else `../shared/peers/iperf3-3.21`
/// beside the checkout. Missing: a failure under `CI=true`; elsewhere a note and
/// `None`, and the caller skips that part.
pub(crate) fn iperf3_321() -> Option<PathBuf> {
    peer_file("IPERF3_321", "iperf3-3.21", "iperf3 3.21")
}

/// A stock peer's binary: the file `var` names if set, else `name` in
/// `../shared/peers` beside the checkout. Missing: a failure under `CI=true`;
/// elsewhere a note and `None`.
pub(crate) fn peer_file(var: &str, name: &str, what: &str) -> Option<PathBuf> {
    let (p, from) = match std::env::var_os(var) {
        Some(p) => (PathBuf::from(p), var),
        None => (
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../shared/peers")
                .join(name),
            "the default place",
        ),
    };
    if p.is_file() {
        return Some(p);
    }
    assert!(
        !ci(),
        "the {what} peer is required in CI: {} ({from}) is not a file; set {var} to its path",
        p.display()
    );
    eprintln!("note: {} not found, skipping the {what} part", p.display());
    None
}

/// Open file descriptors of a process.
pub(crate) fn fd_count(pid: nix::unistd::Pid) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// Threads of a process.
pub(crate) fn thread_count(pid: nix::unistd::Pid) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count)
}

/// Resident memory of a process, KiB.
pub(crate) fn rss_kib(pid: nix::unistd::Pid) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// True when `tool` can be run. Missing: a panic when `CI=true` (the CI machine
/// must have it), else a note on stderr and `false` so the caller skips.
pub(crate) fn require_tool(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if found {
        return true;
    }
    assert!(!ci(), "{tool} is required in CI");
    eprintln!("note: {tool} not found, skipping this test");
    false
}

/// Whether this kernel offers `algo` to unprivileged sockets (a failure under
/// CI when it does not).
pub(crate) fn congestion_available(algo: &str) -> bool {
    let list = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    require(
        list.split_whitespace().any(|a| a == algo),
        &format!("{algo} congestion control in this kernel"),
    )
}

/// A server on a free port, killed when dropped.
pub(crate) struct Server {
    pub port: u16,
    proc: Option<Proc>,
}

impl Server {
    /// `rperf3 -s -p PORT args...`
    pub(crate) fn start(args: &[&str]) -> Self {
        Self::start_program(&rperf3(), args)
    }

    /// `iperf3 -s -p PORT args...` (call `require_tool("iperf3")` first).
    pub(crate) fn start_iperf3(args: &[&str]) -> Self {
        Self::start_program(Path::new("iperf3"), args)
    }

    pub(crate) fn start_program(program: &Path, args: &[&str]) -> Self {
        Self::start_with(program, &[], args, |p, a| Proc::spawn(p, a))
    }

    /// `env VARS... faketime -f OFFSET rperf3 -s -p PORT args...`: a server
    /// whose wall clock is OFFSET off (`+1s`). The kernel's receive stamps
    /// stay on the real clock.
    pub(crate) fn start_faketime(offset: &str, args: &[&str]) -> Self {
        let bin = rperf3().display().to_string();
        // The library itself rather than the `faketime` program, which forks:
        // killing it at the test's end would leave the server running.
        let lib = run_program(
            "faketime",
            &["-f", "+0", "printenv", "LD_PRELOAD"],
            CLIENT_TIMEOUT,
        );
        let preload = format!("LD_PRELOAD={}", lib.stdout.trim());
        let fake = format!("FAKETIME={offset}");
        // Only the wall clock: with a faked monotonic clock too, libfaketime's
        // sleeps leave a paced sender asleep.
        let wrap = [
            preload.as_str(),
            fake.as_str(),
            "FAKETIME_DONT_FAKE_MONOTONIC=1",
            &bin,
        ];
        Self::start_with(Path::new("env"), &wrap, args, |p, a| Proc::spawn(p, a))
    }

    /// `rperf3 -s -p PORT args...` whose stdout nobody reads until
    /// [`Server::read_stdout`].
    pub(crate) fn start_unread_stdout(args: &[&str]) -> Self {
        Self::start_with(&rperf3(), &[], args, |p, a| Proc::spawn_unread_stdout(p, a))
    }

    fn start_with(
        program: &Path,
        prefix: &[&str],
        args: &[&str],
        spawn: fn(&Path, &[&str]) -> Proc,
    ) -> Self {
        // A port that looked free can still be taken by the time the server
        // binds (another process's socket lingering on it): try the next one.
        for attempt in 1.. {
            let port = free_port();
            let p = port.to_string();
            let mut all = prefix.to_vec();
            all.extend(["-s", "-p", &p]);
            all.extend_from_slice(args);
            let mut proc = spawn(program, &all);
            match wait_listening(&mut proc, port) {
                Ok(()) => {
                    return Self {
                        port,
                        proc: Some(proc),
                    }
                }
                Err(out)
                    if attempt < 5
                        && (out.stderr.contains("Address already in use")
                            || out.stdout.contains("Address already in use")) =>
                {
                    eprintln!("port {port} was taken, trying another; sockets on it:");
                    let _ = Command::new("ss")
                        .args(["-tanup", "state", "all", "sport", "=", &format!(":{port}")])
                        .status();
                }
                Err(out) => panic!("server exited before listening:\n{out}"),
            }
        }
        unreachable!("the loop returns or panics")
    }

    pub(crate) fn proc(&self) -> &Proc {
        self.proc.as_ref().expect("running")
    }

    pub(crate) fn proc_mut(&mut self) -> &mut Proc {
        self.proc.as_mut().expect("running")
    }

    /// Closes a [`Server::start_unread_stdout`] server's stdout pipe.
    pub(crate) fn close_stdout(&mut self) {
        self.proc.as_mut().expect("running").close_stdout();
    }

    /// Starts reading a [`Server::start_unread_stdout`] server's stdout.
    pub(crate) fn read_stdout(&mut self) {
        self.proc.as_mut().expect("running").read_stdout();
    }

    pub(crate) fn stdout(&self) -> String {
        self.proc().stdout()
    }

    pub(crate) fn stderr(&self) -> String {
        self.proc().stderr()
    }

    pub(crate) fn signal(&self, sig: Signal) {
        self.proc().signal(sig)
    }

    /// Client arguments aimed at this server: `-c 127.0.0.1 -p PORT extra...`.
    pub(crate) fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut v = vec![
            "-c".to_string(),
            "127.0.0.1".to_string(),
            "-p".to_string(),
            self.port.to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    /// Runs `rperf3 -c` against this server.
    pub(crate) fn client(&self, extra: &[&str]) -> Output {
        run_client(&self.args(extra), CLIENT_TIMEOUT)
    }

    /// Starts `rperf3 -c` against this server without waiting.
    pub(crate) fn spawn_client(&self, extra: &[&str]) -> Proc {
        Proc::spawn(rperf3(), &self.args(extra))
    }

    /// Waits (up to `timeout`) until the server's stdout satisfies `pred`.
    pub(crate) fn wait_stdout_until(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        self.proc().wait_stdout_until(timeout, pred)
    }

    /// Waits until a text-mode server has printed its "Server listening" banner
    /// `n` times: the n-th banner comes once the (n-1)-th session is over and
    /// the server is back to listening.
    pub(crate) fn wait_banners(&self, n: usize, timeout: Duration) -> bool {
        self.proc()
            .wait_stdout_until(timeout, |s| s.matches("Server listening on").count() >= n)
    }

    /// Waits for the server to exit by itself (`-1`, signals).
    pub(crate) fn wait_exit(mut self, timeout: Duration) -> Output {
        self.proc.take().expect("running").finish(timeout)
    }

    /// Stops the server and returns what it printed.
    pub(crate) fn stop(mut self) -> Output {
        let mut p = self.proc.take().expect("running");
        p.kill();
        p.collect()
    }
}

/// Waits until `proc`, a server started some other way (under strace,
/// prlimit, ...), listens on `port`; fails the test with its output if it
/// exits first.
pub(crate) fn await_listening(proc: &mut Proc, port: u16) {
    if let Err(out) = wait_listening(proc, port) {
        panic!("server exited before listening:\n{out}");
    }
}

/// Readiness without connecting: a probe connection would itself be a control
/// connection (an iperf3 `-1` server takes it as its one test, and both log an
/// error), so look for the listening socket in the kernel's table instead.
fn wait_listening(proc: &mut Proc, port: u16) -> Result<(), Output> {
    let deadline = Instant::now() + LISTEN_DEADLINE;
    while !is_listening(port) {
        if !proc.is_running() {
            return Err(proc.collect());
        }
        assert!(
            Instant::now() < deadline,
            "server not listening on {port} after {LISTEN_DEADLINE:?}:\n{}\n{}",
            proc.stdout(),
            proc.stderr()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

/// Waits until something listens on `port` (a server reopening its
/// listener); fails the test after `timeout`.
pub(crate) fn wait_for_listener(port: u16, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !is_listening(port) {
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} after {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Is there a TCP socket in LISTEN state (0A) on `port`?
pub(crate) fn is_listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let mut it = l.split_whitespace();
                let local = it.nth(1).unwrap_or("");
                let state = it.nth(1).unwrap_or("");
                local.ends_with(&want) && state == "0A"
            })
        })
    })
}

/// The (send, receive) queues in bytes of the TCP socket at `local_port` whose
/// peer is at `remote_port`, from the kernel's table: what it holds unacked,
/// and what arrived that its program has not read yet.
pub(crate) fn tcp_queues(local_port: u16, remote_port: u16) -> Option<(u64, u64)> {
    let (local, remote) = (format!(":{local_port:04X}"), format!(":{remote_port:04X}"));
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|f| {
        let t = std::fs::read_to_string(f).ok()?;
        t.lines().skip(1).find_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            if !(w.get(1)?.ends_with(&local) && w.get(2)?.ends_with(&remote)) {
                return None;
            }
            let (tx, rx) = w.get(4)?.split_once(':')?;
            Some((
                u64::from_str_radix(tx, 16).ok()?,
                u64::from_str_radix(rx, 16).ok()?,
            ))
        })
    })
}

/// Runs `rperf3 args...` to the end; kills it and fails the test after `timeout`.
pub(crate) fn run_client<S: AsRef<str>>(args: &[S], timeout: Duration) -> Output {
    Proc::spawn(rperf3(), args).finish(timeout)
}

/// Runs any program to the end with a hard timeout.
pub(crate) fn run_program<S: AsRef<str>>(
    program: impl AsRef<Path>,
    args: &[S],
    timeout: Duration,
) -> Output {
    Proc::spawn(program, args).finish(timeout)
}
