//! Where reports go: stdout/stderr, or `--logfile` for both (as iperf3).
//!
//! A server may run tests side by side. Every write of a report is then one
//! whole unit on the shared destination (a JSON document, a text line), and with
//! `--max-tests` above 1 each text line starts with the test it belongs to.

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
    /// Holds the lock for the whole buffer, so another test's output cannot
    /// land inside it.
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).flush()
    }
}

/// Puts `prefix` before every line and writes each line whole (one
/// `write_all`), so lines of tests running side by side never mix.
struct Labeled<W: Write> {
    inner: W,
    prefix: String,
    partial: Vec<u8>,
}

impl<W: Write> Labeled<W> {
    fn new(inner: W, prefix: String) -> Self {
        Self {
            inner,
            prefix,
            partial: Vec::new(),
        }
    }
}

impl<W: Write> Write for Labeled<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(i) = self.partial.iter().position(|&b| b == b'\n') {
            let mut line = Vec::with_capacity(self.prefix.len() + i + 1);
            line.extend_from_slice(self.prefix.as_bytes());
            line.extend(self.partial.drain(..=i));
            self.inner.write_all(&line)?;
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<W: Write> Drop for Labeled<W> {
    fn drop(&mut self) {
        if !self.partial.is_empty() {
            let mut line = self.prefix.clone().into_bytes();
            line.append(&mut self.partial);
            let _ = self.inner.write_all(&line);
        }
    }
}

/// A reporter for a client run.
pub(crate) fn reporter(prog: &str, cfg: &Config, side: Side) -> anyhow::Result<Reporter> {
    let sink = Sink::open(&cfg.output)?;
    Ok(reporter_to(prog, cfg, side, &sink, None))
}

/// A reporter writing to `sink`; in text mode, `label` (a server's test number
/// when tests run side by side) starts every line.
pub(crate) fn reporter_to(
    prog: &str,
    cfg: &Config,
    side: Side,
    sink: &Sink,
    label: Option<u64>,
) -> Reporter {
    let out = &cfg.output;
    let mut opts = ReportOptions::new(
        side,
        rperf3_app::version_string(),
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
    let (mut o, mut e) = sink.writers();
    if let Some(n) = label.filter(|_| !out.json && !out.json_stream) {
        let prefix = format!("[test {n}] ");
        o = Box::new(Labeled::new(o, prefix.clone()));
        e = Box::new(Labeled::new(e, prefix));
    }
    Reporter::new(opts, o, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Default)]
    struct Log(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Log {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn labeled_lines_are_whole_and_prefixed() {
        let log = Log::default();
        {
            let mut w = Labeled::new(log.clone(), "[test 3] ".into());
            w.write_all(b"[  5]   0.00-1.00 ").unwrap();
            w.write_all(b"sec  1 GBytes\nSecond line\nand a tail")
                .unwrap();
        }
        let writes: Vec<String> = log
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|w| String::from_utf8(w.clone()).unwrap())
            .collect();
        assert_eq!(
            writes,
            [
                "[test 3] [  5]   0.00-1.00 sec  1 GBytes\n",
                "[test 3] Second line\n",
                "[test 3] and a tail"
            ]
        );
    }
}
