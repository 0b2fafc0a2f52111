//! One test of the schedule: an ordinary rperf3 client run in this process.
//!
//! The test's command line is built as a user would type it (`-c HOST -p PORT
//! -t SECS --latency -J ...`) and goes through the same parser and client as
//! `rperf3 -c`, so a mesh test is exactly such a run. Its `-J` document lands
//! in memory; the record is read from it. A watchdog interrupts a test that
//! outlives its deadline, as Ctrl-C would.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rperf3_app::config::Role;
use rperf3_app::Interrupt;
use rperf3_mesh::record::{read_document, Figures, Outcome};
use rperf3_report::input::Side;
use rperf3_report::{ReportOptions, Reporter};

use super::args::MeshArgs;
use crate::cli::{self, Command};

/// A writer into shared memory (the reporter's output).
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The client command line of a test to `endpoint` (`host:port` as the
/// member gives it).
pub(crate) fn client_argv(a: &MeshArgs, host: &str, port: u16) -> Vec<OsString> {
    let mut v: Vec<String> = vec![
        "-c".into(),
        host.into(),
        "-p".into(),
        port.to_string(),
        "-t".into(),
        format!("{}", a.time),
        "--latency".into(),
        "-J".into(),
        // A peer that does not answer must not hold the slot.
        "--connect-timeout".into(),
        "3000".into(),
    ];
    if let Some(b) = &a.bind {
        v.extend(["-B".into(), b.clone()]);
    }
    if a.udp {
        v.push("-u".into());
    }
    if let Some(b) = a.bitrate {
        v.extend(["-b".into(), b.to_string()]);
    } else if a.udp {
        v.extend(["-b".into(), "1M".into()]);
    }
    if a.parallel > 1 {
        v.extend(["-P".into(), a.parallel.to_string()]);
    }
    if let Some(c) = &a.congestion {
        v.extend(["-C".into(), c.clone()]);
    }
    v.into_iter().map(OsString::from).collect()
}

/// How one test went.
#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) outcome: Outcome,
    pub(crate) error: Option<String>,
    pub(crate) figures: Option<Figures>,
}

impl Ran {
    fn failed(outcome: Outcome, why: String) -> Self {
        Self {
            outcome,
            error: Some(why),
            figures: None,
        }
    }
}

/// Runs the test `argv` describes; a test still running at `deadline` is
/// interrupted and reported as [`Outcome::Timeout`], and one running when
/// `stop` fires (the agent's signal) is interrupted as Ctrl-C would.
pub(crate) fn run(prog: &str, argv: &[OsString], deadline: Instant, stop: &mut Interrupt) -> Ran {
    let inv = match cli::parse(prog, argv) {
        Ok(Command::Run(inv)) => inv,
        Ok(_) => return Ran::failed(Outcome::Error, "not a client command line".into()),
        Err(e) => return Ran::failed(Outcome::Error, e.message.trim_end().to_string()),
    };
    let cfg = inv.config;
    let Role::Client(cc) = cfg.role.clone() else {
        return Ran::failed(Outcome::Error, "not a client command line".into());
    };
    let pipes = || -> io::Result<_> { Ok((Interrupt::pair()?, UnixStream::pair()?)) };
    let ((mut intr, mut trigger), (done_rx, mut done_tx)) = match pipes() {
        Ok(p) => p,
        Err(e) => return Ran::failed(Outcome::Error, format!("unable to start a test: {e}")),
    };
    let out = Buffer::default();
    let mut opts = ReportOptions::new(
        Side::Client,
        rperf3_app::version_string(),
        rperf3_sys::system::uname_line(),
    );
    opts.json = true;
    opts.prog = prog.to_string();
    let rep = Reporter::new(opts, Box::new(out.clone()), Box::new(io::sink()));
    let common = cfg.common.clone();
    let spawned = std::thread::Builder::new()
        .name("mesh-test".into())
        .spawn(move || {
            rperf3_app::run_client(&cc, &common, rep, &mut intr, None);
            // The agent waits for this byte (or its deadline, or a signal).
            let _ = done_tx.write_all(b"x");
        });
    let thread = match spawned {
        Ok(t) => t,
        Err(e) => return Ran::failed(Outcome::Error, format!("unable to start a test: {e}")),
    };
    let mut timed_out = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            timed_out = true;
            break;
        }
        match rperf3_sys::poll::wait_readable(&[done_rx.as_fd(), stop.fd()], left) {
            Ok(r) if r[0] => break,
            Ok(r) if r[1] && stop.triggered() => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if thread.is_finished() {
        timed_out = false;
    } else {
        // As Ctrl-C: the client stops its streams and ends at once.
        let _ = trigger.write_all(b"x");
    }
    // An interrupted client ends within its own deadlines; the thread is
    // joined so that nothing of the test outlives it.
    let _ = thread.join();
    if timed_out {
        return Ran::failed(
            Outcome::Timeout,
            "the test was still running at its deadline (the next slot)".to_string(),
        );
    }
    let bytes = std::mem::take(&mut *out.0.lock().unwrap_or_else(|e| e.into_inner()));
    let doc: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(d) => d,
        Err(e) => return Ran::failed(Outcome::Error, format!("unreadable test output: {e}")),
    };
    match read_document(&doc) {
        Ok((outcome, figures)) => Ran {
            outcome,
            error: (outcome == Outcome::NotRperf3).then(|| {
                "the destination is a stock iperf3 server, not an rperf3 agent: no server-side latency"
                    .to_string()
            }),
            figures: Some(figures),
        },
        Err((outcome, why)) => Ran::failed(outcome, why),
    }
}

/// A pause between attempts at a busy destination.
pub(crate) const BUSY_RETRY: Duration = Duration::from_millis(250);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::args::{parse_mesh, MeshCommand};

    fn args(a: &[&str]) -> MeshArgs {
        let v: Vec<OsString> = a.iter().map(OsString::from).collect();
        match parse_mesh("rperf3", &v).unwrap() {
            MeshCommand::Run(m) => *m,
            MeshCommand::Help(_) => panic!(),
        }
    }

    fn words(v: &[OsString]) -> Vec<String> {
        v.iter().map(|s| s.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_test_is_the_command_line_a_user_would_type() {
        let a = args(&["--peers", "x", "-t", "3"]);
        assert_eq!(
            words(&client_argv(&a, "10.0.0.2", 5201)),
            [
                "-c",
                "10.0.0.2",
                "-p",
                "5201",
                "-t",
                "3",
                "--latency",
                "-J",
                "--connect-timeout",
                "3000"
            ]
        );
        let a = args(&[
            "--peers", "x", "-t", "2", "-u", "-P", "2", "-B", "10.0.0.1", "-C", "cubic",
        ]);
        let w = words(&client_argv(&a, "h", 1));
        assert!(w.ends_with(&[
            "-B".to_string(),
            "10.0.0.1".into(),
            "-u".into(),
            "-b".into(),
            "1M".into(),
            "-P".into(),
            "2".into(),
            "-C".into(),
            "cubic".into()
        ]));
        assert_eq!(w[5], "2");
        // Every argv it builds is one the client accepts.
        for a in [
            args(&["--peers", "x", "-t", "1", "-u", "-b", "5M"]),
            args(&["--peers", "x", "-b", "100M", "-P", "4"]),
        ] {
            match cli::parse("rperf3", &client_argv(&a, "127.0.0.1", 5201)) {
                Ok(Command::Run(_)) => {}
                other => panic!("{other:?}"),
            }
        }
    }
}
