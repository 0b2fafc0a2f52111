//! Programs run with piped stdout/stderr read by background threads: a test
//! waits for a line (an event) instead of sleeping, and every failure shows
//! what the program printed.

use std::io::Read;
use std::path::Path;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::peer_log::log_peer;
use super::Signal;

/// Everything one program printed, read as it arrives.
#[derive(Default)]
struct Captured {
    buf: Mutex<(Vec<u8>, bool)>, // (bytes so far, end of file seen)
    grew: Condvar,
}

impl Captured {
    fn pump(self: Arc<Self>, mut from: impl Read + Send + 'static) {
        std::thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                let n = from.read(&mut chunk).unwrap_or(0);
                let mut g = self.buf.lock().unwrap();
                if n == 0 {
                    g.1 = true;
                } else {
                    g.0.extend_from_slice(&chunk[..n]);
                }
                self.grew.notify_all();
                if n == 0 {
                    return;
                }
            }
        });
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().unwrap().0).into_owned()
    }

    /// Waits until `pred` holds for the text so far; false on deadline or EOF
    /// without it.
    fn wait_for(&self, deadline: Instant, pred: impl Fn(&str) -> bool) -> bool {
        let mut g = self.buf.lock().unwrap();
        loop {
            if pred(&String::from_utf8_lossy(&g.0)) {
                return true;
            }
            let now = Instant::now();
            if g.1 || now >= deadline {
                return false;
            }
            g = self.grew.wait_timeout(g, deadline - now).unwrap().0;
        }
    }

    fn wait_eof(&self, deadline: Instant) -> bool {
        let mut g = self.buf.lock().unwrap();
        while !g.1 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            g = self.grew.wait_timeout(g, deadline - now).unwrap().0;
        }
        true
    }
}

/// What a finished program printed and how it ended.
#[derive(Debug)]
pub(crate) struct Output {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub cmdline: String,
}

impl Output {
    /// Exit code (None when killed by a signal).
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics with everything printed unless the exit status is 0.
    pub(crate) fn assert_ok(&self) -> &Self {
        assert!(self.status.success(), "expected success:\n{self}");
        self
    }

    /// The whole of stdout as one JSON document.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{self}"))
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "$ {}\nstatus: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.cmdline, self.status, self.stdout, self.stderr
        )
    }
}

/// A running program with captured output; killed if dropped unfinished.
pub(crate) struct Proc {
    child: Option<Child>,
    out: Arc<Captured>,
    err: Arc<Captured>,
    /// Stdout not read yet ([`Proc::spawn_unread_stdout`]).
    unread: Option<ChildStdout>,
    cmdline: String,
}

impl Proc {
    pub(crate) fn spawn<S: AsRef<str>>(program: impl AsRef<Path>, args: &[S]) -> Self {
        let mut p = Self::spawn_unread_stdout(program, args);
        p.read_stdout();
        p
    }

    /// Like [`Proc::spawn`], but stdout is a pipe nobody reads (a paused
    /// pager, a supervisor's full pipe) until [`Proc::read_stdout`].
    pub(crate) fn spawn_unread_stdout<S: AsRef<str>>(
        program: impl AsRef<Path>,
        args: &[S],
    ) -> Self {
        let program = program.as_ref();
        let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
        let cmdline = format!("{} {}", program.display(), args.join(" "));
        log_peer(program, &args);
        let mut child = spawn_retrying_busy(
            Command::new(program)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .unwrap_or_else(|e| panic!("cannot start {cmdline}: {e}"));
        let out = Arc::new(Captured::default());
        let err = Arc::new(Captured::default());
        err.clone().pump(child.stderr.take().expect("piped"));
        Self {
            unread: child.stdout.take(),
            child: Some(child),
            out,
            err,
            cmdline,
        }
    }

    /// Closes the unread stdout pipe: the program's writes fail (EPIPE).
    pub(crate) fn close_stdout(&mut self) {
        if self.unread.take().is_some() {
            // Nothing more will be read: stdout is at its end for `finish`.
            self.out.buf.lock().unwrap().1 = true;
            self.out.grew.notify_all();
        }
    }

    /// Starts reading stdout (once; later calls do nothing).
    pub(crate) fn read_stdout(&mut self) {
        if let Some(o) = self.unread.take() {
            self.out.clone().pump(o);
        }
    }

    pub(crate) fn pid(&self) -> nix::unistd::Pid {
        let id = self.child.as_ref().expect("running").id();
        nix::unistd::Pid::from_raw(id as i32)
    }

    pub(crate) fn stdout(&self) -> String {
        self.out.text()
    }

    pub(crate) fn stderr(&self) -> String {
        self.err.text()
    }

    /// Waits (up to `timeout`) for `needle` in stdout.
    pub(crate) fn wait_stdout(&self, needle: &str, timeout: Duration) -> bool {
        self.out
            .wait_for(Instant::now() + timeout, |s| s.contains(needle))
    }

    /// Waits (up to `timeout`) for `needle` in stderr.
    pub(crate) fn wait_stderr(&self, needle: &str, timeout: Duration) -> bool {
        self.err
            .wait_for(Instant::now() + timeout, |s| s.contains(needle))
    }

    /// Waits (up to `timeout`) until stdout satisfies `pred`.
    pub(crate) fn wait_stdout_until(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        self.out.wait_for(Instant::now() + timeout, pred)
    }

    /// Waits (up to `timeout`) until stderr satisfies `pred`.
    pub(crate) fn wait_stderr_until(&self, timeout: Duration, pred: impl Fn(&str) -> bool) -> bool {
        self.err.wait_for(Instant::now() + timeout, pred)
    }

    pub(crate) fn signal(&self, sig: Signal) {
        nix::sys::signal::kill(self.pid(), sig)
            .unwrap_or_else(|e| panic!("kill({sig}) {}: {e}", self.cmdline));
    }

    /// Still running (not exited)?
    pub(crate) fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Waits for the program to end; kills it and fails the test after `timeout`.
    pub(crate) fn finish(mut self, timeout: Duration) -> Output {
        self.read_stdout();
        let deadline = Instant::now() + timeout;
        // Both pipes close when the program exits: an event, not a poll.
        let ended = self.out.wait_eof(deadline) && self.err.wait_eof(deadline);
        if !ended {
            self.kill();
            let partial = self.collect();
            panic!("timed out after {timeout:?}, killed:\n{partial}");
        }
        self.collect()
    }

    /// SIGKILL, if it still runs.
    pub(crate) fn kill(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
        }
    }

    /// Waits for the killed or ended program and takes what it printed.
    pub(crate) fn collect(&mut self) -> Output {
        self.read_stdout();
        let mut child = self.child.take().expect("collected once");
        let status = child.wait().expect("wait");
        let far = Instant::now() + Duration::from_secs(5);
        self.out.wait_eof(far);
        self.err.wait_eof(far);
        Output {
            status,
            stdout: self.out.text(),
            stderr: self.err.text(),
            cmdline: self.cmdline.clone(),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.kill();
            let out = self.collect();
            if std::thread::panicking() {
                eprintln!("=== output of a program still running at the failure ===\n{out}");
            }
        }
    }
}

/// Spawns `cmd`, again while exec says "Text file busy": a wrapper script
/// another test thread has just written can still be open for writing in a
/// child that thread forked and has not yet exec'd (the fd closes on exec).
fn spawn_retrying_busy(cmd: &mut Command) -> std::io::Result<Child> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match cmd.spawn() {
            Err(e)
                if e.raw_os_error() == Some(nix::errno::Errno::ETXTBSY as i32)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            r => return r,
        }
    }
}
