//! The agent's server: rperf3's own multi-test server on a thread of the
//! agent, started from the command line a user would type (`-s -p PORT`),
//! sharing the node's single test slot with the agent's own tests and
//! serving the mesh's series beside its metrics.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use rperf3_app::config::Role;
use rperf3_app::{Collector, Exclusive, Interrupt, ServeHooks};
use rperf3_report::input::Side;
use rperf3_report::{ReportOptions, Reporter};

use super::args::MeshArgs;
use crate::cli::{self, Command};

/// How long the server may take to listen.
const START_LIMIT: Duration = Duration::from_secs(10);

/// The running server.
pub(crate) struct Server {
    thread: JoinHandle<i32>,
    stop: UnixStream,
    quiet: Arc<AtomicBool>,
}

/// The server's error lines, as warnings of the agent's log (with its time
/// and level), until the agent stops it on purpose (then its "interrupt -
/// the server has terminated" is no news).
struct ToLog {
    quiet: Arc<AtomicBool>,
    partial: Vec<u8>,
}

impl Write for ToLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=i).collect();
            if !self.quiet.load(Ordering::Relaxed) {
                log::warn!("{}", String::from_utf8_lossy(&line).trim_end());
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The server's command line.
pub(crate) fn server_argv(a: &MeshArgs) -> Vec<OsString> {
    let mut v = vec!["-s".to_string(), "-p".into(), a.port.to_string()];
    if let Some(b) = &a.bind {
        v.extend(["-B".into(), b.clone()]);
    }
    if let Some(m) = a.metrics {
        v.extend(["--metrics".into(), m.to_string()]);
    }
    v.into_iter().map(OsString::from).collect()
}

impl Server {
    /// Starts it and waits until it listens; `Err` is the message.
    pub(crate) fn start(
        prog: &str,
        a: &MeshArgs,
        exclusive: Arc<Exclusive>,
        series: Arc<dyn Collector>,
    ) -> Result<Self, String> {
        let cfg = match cli::parse(prog, &server_argv(a)) {
            Ok(Command::Run(inv)) => inv.config,
            Ok(_) => return Err("not a server command line".into()),
            Err(e) => return Err(e.message.trim_end().to_string()),
        };
        let Role::Server(sc) = cfg.role.clone() else {
            return Err("not a server command line".into());
        };
        let (mut intr, stop) = Interrupt::pair().map_err(|e| e.to_string())?;
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let hooks = ServeHooks {
            exclusive: Some(exclusive),
            extra_metrics: Some(series),
            ready: Some(ready_tx),
            side: None,
        };
        let label = "server".to_string();
        let quiet = Arc::new(AtomicBool::new(false));
        let hush = quiet.clone();
        let thread = std::thread::Builder::new()
            .name("mesh-server".into())
            .spawn(move || {
                // Served tests print nothing on stdout (that is the agent's
                // own tests' lines); their errors go to the log.
                let mut make = |_: Option<u64>| {
                    let mut opts = ReportOptions::new(
                        Side::Server,
                        rperf3_app::version_string(),
                        rperf3_sys::system::uname_line(),
                    );
                    opts.prog = label.clone();
                    let err = ToLog {
                        quiet: hush.clone(),
                        partial: Vec::new(),
                    };
                    Reporter::new(opts, Box::new(io::sink()), Box::new(err))
                };
                rperf3_app::serve_with(&sc, &cfg.common, &mut make, &mut intr, None, hooks).status
            })
            .map_err(|e| e.to_string())?;
        match ready_rx.recv_timeout(START_LIMIT) {
            Ok(()) => Ok(Self {
                thread,
                stop,
                quiet,
            }),
            // It ended before listening: its reporter said why.
            Err(_) => {
                let mut s = stop;
                let _ = s.write_all(b"x");
                let _ = thread.join();
                Err(format!("the server could not listen on port {}", a.port))
            }
        }
    }

    /// Whether it still runs (it ends only when told to).
    pub(crate) fn is_running(&self) -> bool {
        !self.thread.is_finished()
    }

    /// Stops it: running tests end as on a signal.
    pub(crate) fn stop(mut self) {
        self.quiet.store(true, Ordering::Relaxed);
        let _ = self.stop.write_all(b"x");
        let _ = self.thread.join();
    }
}
