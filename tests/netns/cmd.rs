//! Child processes with deadlines. Every command a ground-truth test runs (`ip`,
//! `tc`, `iptables`, rperf3 itself) goes through here, so a hung tool or a stuck
//! rperf3 ends the test with its output instead of hanging it, and a process left
//! running by a failed assertion is killed when its handle is dropped.

use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A running child whose stdout and stderr are collected in the background.
/// Dropping it kills the child if it is still running.
pub(crate) struct Bg {
    what: String,
    child: Option<Child>,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
}

/// What a finished (or killed) child left behind.
#[derive(Debug)]
pub(crate) struct Done {
    /// The command line, for messages.
    pub(crate) what: String,
    /// `None` when the deadline passed and the child was killed.
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

impl Bg {
    /// Starts `args[0]` with the remaining arguments, stdin closed.
    pub(crate) fn spawn(args: &[&str]) -> io::Result<Self> {
        // A stock peer among the arguments (`ip netns exec NS PEER ...`) is
        // counted for the test, as the other test binary's harness does.
        crate::peer_log::log_peer(std::path::Path::new(args[0]), &args[1..]);
        let mut child = Command::new(args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let out = child.stdout.take().map(drain);
        let err = child.stderr.take().map(drain);
        Ok(Self {
            what: args.join(" "),
            child: Some(child),
            out,
            err,
        })
    }

    /// Asks the child to stop (SIGINT), as a capture tool that flushes its
    /// file on the way out wants.
    pub(crate) fn interrupt(&self) {
        if let Some(c) = &self.child {
            let pid = nix::unistd::Pid::from_raw(c.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        }
    }

    /// The child's exit status if it has already ended.
    pub(crate) fn try_status(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits until the child ends or `timeout` passes (then kills it).
    pub(crate) fn finish(mut self, timeout: Duration) -> Done {
        let deadline = Instant::now() + timeout;
        let mut child = self.child.take().expect("child already taken");
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
            }
        };
        let text = |h: Option<JoinHandle<Vec<u8>>>| {
            h.and_then(|h| h.join().ok())
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default()
        };
        Done {
            what: std::mem::take(&mut self.what),
            status,
            stdout: text(self.out.take()),
            stderr: text(self.err.take()),
        }
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs a command to completion with a deadline.
pub(crate) fn run(args: &[&str], timeout: Duration) -> io::Result<Done> {
    Ok(Bg::spawn(args)?.finish(timeout))
}

impl Done {
    /// Whether the command ended by itself with exit status 0.
    pub(crate) fn success(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// stdout of a command that must have succeeded; panics with everything
    /// it printed otherwise.
    pub(crate) fn ok(self) -> String {
        assert!(self.success(), "command failed: {self}");
        self.stdout
    }
}

impl std::fmt::Display for Done {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(s) => write!(f, "`{}` exited with {s}", self.what)?,
            None => write!(f, "`{}` timed out and was killed", self.what)?,
        }
        write!(
            f,
            "\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.stdout, self.stderr
        )
    }
}
