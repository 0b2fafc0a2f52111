//! Where reports go: stdout/stderr, or `--logfile` for both (as iperf3).
//!
//! Each destination has one queue and one writer thread
//! ([`rperf3_report::queue`]): tests hand it whole units and never wait for
//! the reader. A server may run tests side by side; every unit is one write
//! by that one thread (a JSON document, a text line), so the units of two
//! tests never mix, and with `--max-tests` above 1 each text line starts with
//! the test it belongs to.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;

use anyhow::Context;
use rperf3_app::config::{Config, OutputConfig, Role};
use rperf3_proto::{IperfError, IE_LOG_FILE};
use rperf3_report::input::Side;
use rperf3_report::queue::{OutputQueue, QUEUE_BYTES};
use rperf3_report::{ReportOptions, Reporter};

/// The output destinations, shared by every test of a server and the logger.
#[derive(Clone)]
pub(crate) struct Sink {
    out: OutputQueue,
    err: OutputQueue,
}

impl Sink {
    /// Starts the writers: one for `--logfile` (opened for appending, as
    /// iperf3 does), else one each for stdout and stderr, or a single one when
    /// both are the same file (`2>&1`, a terminal) so their lines keep their
    /// order.
    pub(crate) fn open(out: &OutputConfig) -> anyhow::Result<Self> {
        let spawn = |name: &str, dest: Box<dyn Write + Send>| {
            OutputQueue::spawn(name, dest, QUEUE_BYTES).context("unable to start the output writer")
        };
        match &out.logfile {
            None => {
                let out = spawn("stdout", Box::new(io::stdout()))?;
                let err = if same_file(io::stdout().as_fd(), io::stderr().as_fd()) {
                    out.clone()
                } else {
                    spawn("stderr", Box::new(io::stderr()))?
                };
                Ok(Self { out, err })
            }
            Some(p) => {
                let f = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| IperfError::from_io(IE_LOG_FILE, &e))?;
                let q = spawn("logfile", Box::new(f))?;
                Ok(Self {
                    out: q.clone(),
                    err: q,
                })
            }
        }
    }

    /// The iperf 2 personality's destinations: stdout, or `-o file` (opened
    /// for appending, as iperf 2 reopens its stdout); stderr stays stderr.
    pub(crate) fn open2(file: Option<&std::path::Path>) -> io::Result<Self> {
        let dest: Box<dyn Write + Send> = match file {
            Some(p) => Box::new(OpenOptions::new().create(true).append(true).open(p)?),
            None => Box::new(io::stdout()),
        };
        let out = OutputQueue::spawn("stdout", dest, QUEUE_BYTES)?;
        let err = if file.is_none() && same_file(io::stdout().as_fd(), io::stderr().as_fd()) {
            out.clone()
        } else {
            OutputQueue::spawn("stderr", Box::new(io::stderr()), QUEUE_BYTES)?
        };
        Ok(Self { out, err })
    }

    /// Where whole lines for stdout (or the `-o` file) go.
    pub(crate) fn out(&self) -> &OutputQueue {
        &self.out
    }

    pub(crate) fn writers(&self) -> (Box<dyn Write + Send>, Box<dyn Write + Send>) {
        (Box::new(self.out.writer()), Box::new(self.err.writer()))
    }

    /// Where `-d` log lines go: stderr, or the log file.
    pub(crate) fn log(&self) -> OutputQueue {
        self.err.clone()
    }

    /// At exit: waits until what is queued is written, unless `give_up` says
    /// to stop waiting.
    pub(crate) fn drain(&self, give_up: &dyn Fn() -> bool) {
        if self.out.drain(give_up) {
            self.err.drain(give_up);
        }
    }
}

/// Whether two descriptors are the same file (same device and inode).
fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> bool {
    let id = |fd: BorrowedFd<'_>| {
        let m = File::from(fd.try_clone_to_owned().ok()?).metadata().ok()?;
        Some((m.dev(), m.ino()))
    };
    matches!((id(a), id(b)), (Some(x), Some(y)) if x == y)
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
    use std::sync::{Arc, Mutex};

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
