//! Where report text goes: the output and error writers, with iperf3's prefixes.
//!
//! Each chunk of text (one iperf3 `printf`) gets the `--timestamps` prefix and, on
//! the client, the `-T` title prefix. A server can keep a copy of its lines for
//! `--get-server-output` while still printing them. The first write error is kept
//! and reported at the end instead of aborting the test (a closed stdout pipe
//! must not stop the measurement). The binary's writers are [`crate::queue`]
//! handles, so no write here waits for the reader.

use std::io::{self, Write};

/// Supplies the `--timestamps` prefix (already strftime-formatted by the caller).
pub type TimestampFn = Box<dyn Fn() -> String + Send>;

pub(crate) struct Sink {
    out: Box<dyn Write + Send>,
    err: Box<dyn Write + Send>,
    title: Option<String>,
    timestamp: Option<TimestampFn>,
    capture: Option<String>,
    failed: Option<io::Error>,
}

impl Sink {
    pub(crate) fn new(
        out: Box<dyn Write + Send>,
        err: Box<dyn Write + Send>,
        title: Option<String>,
        timestamp: Option<TimestampFn>,
    ) -> Self {
        Self {
            out,
            err,
            title,
            timestamp,
            capture: None,
            failed: None,
        }
    }

    /// Starts keeping a copy of every text chunk from now on.
    pub(crate) fn start_capture(&mut self) {
        if self.capture.is_none() {
            self.capture = Some(String::new());
        }
    }

    pub(crate) fn captured(&self) -> Option<&str> {
        self.capture.as_deref()
    }

    fn stamp(&self) -> String {
        self.timestamp.as_ref().map(|f| f()).unwrap_or_default()
    }

    fn write_out(&mut self, s: &str) {
        if self.failed.is_none() {
            if let Err(e) = self.out.write_all(s.as_bytes()) {
                self.failed = Some(e);
            }
        }
    }

    /// One report chunk with its prefixes.
    pub(crate) fn text(&mut self, chunk: &str) {
        let mut line = self.stamp();
        if let Some(t) = &self.title {
            line.push_str(t);
            line.push_str(":  ");
        }
        line.push_str(chunk);
        if let Some(c) = &mut self.capture {
            c.push_str(&line);
        }
        self.write_out(&line);
    }

    /// Text without prefixes (JSON documents and events).
    pub(crate) fn raw(&mut self, s: &str) {
        self.write_out(s);
    }

    /// A diagnostic on the error writer, with the timestamp prefix.
    pub(crate) fn err_line(&mut self, s: &str) {
        let line = self.stamp() + s;
        // Diagnostics are best effort: there is nowhere left to report a failure.
        let _ = self.err.write_all(line.as_bytes());
        let _ = self.err.flush();
    }

    pub(crate) fn flush(&mut self) {
        if self.failed.is_none() {
            if let Err(e) = self.out.flush() {
                self.failed = Some(e);
            }
        }
    }

    /// The first write error, if any (taken once).
    pub(crate) fn take_error(&mut self) -> Option<io::Error> {
        self.failed.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    pub(crate) struct Shared(pub(crate) Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn prefixes_once_per_chunk_and_capture_matches_output() {
        let out = Shared::default();
        let mut s = Sink::new(
            Box::new(out.clone()),
            Box::new(io::sink()),
            Some("tt".into()),
            Some(Box::new(|| "Sat Nov 21 05:37:36 2026 ".to_string())),
        );
        s.text("a\n");
        s.start_capture();
        s.text("\nServer output:\nx\n");
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text,
            "Sat Nov 21 05:37:36 2026 tt:  a\nSat Nov 21 05:37:36 2026 tt:  \nServer output:\nx\n"
        );
        assert_eq!(
            s.captured(),
            Some("Sat Nov 21 05:37:36 2026 tt:  \nServer output:\nx\n")
        );
    }

    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_errors_are_kept_not_raised() {
        let mut s = Sink::new(Box::new(Broken), Box::new(io::sink()), None, None);
        s.text("x\n");
        s.text("y\n");
        assert_eq!(s.take_error().unwrap().kind(), io::ErrorKind::BrokenPipe);
        assert!(s.take_error().is_none());
    }
}
