//! Where reports go: stdout/stderr, or `--logfile` for both (as iperf3).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use rperf3_app::config::{Config, OutputConfig, Role};
use rperf3_report::input::Side;
use rperf3_report::{ReportOptions, Reporter};

/// The output destination, shared by every test of a server.
#[derive(Clone)]
pub(crate) enum Sink {
    Std,
    File(Arc<Mutex<File>>),
}

impl Sink {
    /// Opens `--logfile` for appending, as iperf3 does.
    pub(crate) fn open(out: &OutputConfig) -> anyhow::Result<Self> {
        match &out.logfile {
            None => Ok(Self::Std),
            Some(p) => {
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .with_context(|| format!("unable to open log file: {}", p.display()))?;
                Ok(Self::File(Arc::new(Mutex::new(f))))
            }
        }
    }

    fn writers(&self) -> (Box<dyn Write + Send>, Box<dyn Write + Send>) {
        match self {
            Self::Std => (Box::new(io::stdout()), Box::new(io::stderr())),
            Self::File(f) => (Box::new(Shared(f.clone())), Box::new(Shared(f.clone()))),
        }
    }
}

struct Shared(Arc<Mutex<File>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).flush()
    }
}

/// A reporter for a client run.
pub(crate) fn reporter(prog: &str, cfg: &Config, side: Side) -> anyhow::Result<Reporter> {
    let sink = Sink::open(&cfg.output)?;
    Ok(reporter_to(prog, cfg, side, &sink))
}

/// A reporter writing to `sink`.
pub(crate) fn reporter_to(prog: &str, cfg: &Config, side: Side, sink: &Sink) -> Reporter {
    let out = &cfg.output;
    let mut opts = ReportOptions::new(
        side,
        rperf3_app::setup::version_string(),
        rperf3_sys::system::uname_line(),
    );
    opts.json = out.json;
    opts.json_stream = out.json_stream;
    opts.json_stream_full_output = out.json_stream_full_output;
    opts.verbose = out.verbose;
    opts.format = out.format;
    opts.prog = prog.to_string();
    opts.forceflush = out.forceflush;
    if let Role::Client(cc) = &cfg.role {
        opts.title = cc.title.clone();
        opts.extra_data = cc.extra_data.clone();
    }
    if let Some(fmt) = out.timestamps.clone() {
        opts.timestamp = Some(Box::new(move || rperf3_sys::time::strftime_now(&fmt)));
    }
    let (o, e) = sink.writers();
    Reporter::new(opts, o, e)
}
