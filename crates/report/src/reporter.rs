//! The object drivers talk to: one `Reporter` per test, fed events in order.
//!
//! The drivers call it as the test goes (banner, control connection, streams,
//! TEST_START, each interval, the end, errors) and it prints iperf3's text at
//! once, or builds the `-J` document and prints it at `finish`, or emits
//! `--json-stream` events as they happen. It never measures anything.
//!
//! Call order for one test (each step optional where the test ends early):
//! server: `server_banner` → [`set_server_output_requested`, `set_peer_labels`]
//! → `control_connected` → `stream_connected`… → `start` → `interval`… →
//! `end` (peer = None) → `server_output_for_peer` → `finish`.
//! client: `preamble` → `control_mss` → `control_connected` →
//! `stream_connected`… → `start` → `interval`… → `end` → `server_output` →
//! `finish`. `error` / `interrupted` / `warning` may come at any point.
//!
//! [`set_server_output_requested`]: Reporter::set_server_output_requested
//! [`set_peer_labels`]: Reporter::set_peer_labels

use crate::cjson;
use crate::history::IntervalHistory;
use crate::input::{FinalInput, IntervalInput, Side, StartInfo, StreamInfo, TestInfo};
use crate::model::Layout;
use crate::sink::{Sink, TimestampFn};
use crate::start::{self, StartParts};
use crate::{end, interval, text};
use serde_json::{json, Map, Value};
use std::io::{self, Write};

/// How the report is printed.
pub struct ReportOptions {
    /// This process's side.
    pub side: Side,
    /// `-J`.
    pub json: bool,
    /// `--json-stream` (implies JSON output).
    pub json_stream: bool,
    /// `--json-stream-full-output`: also print the whole document at the end.
    pub json_stream_full_output: bool,
    /// `-V`.
    pub verbose: bool,
    /// `-f` letter; `None` = adaptive bits.
    pub format: Option<char>,
    /// `-T` (client); on a server use [`Reporter::set_peer_labels`].
    pub title: Option<String>,
    /// `--extra-data` (client); on a server use [`Reporter::set_peer_labels`].
    pub extra_data: Option<String>,
    /// Program name for text errors: `<prog>: error - <msg>`.
    pub prog: String,
    /// `--forceflush`: flush after every interval.
    pub forceflush: bool,
    /// `--timestamps`: returns the already formatted prefix of each line.
    pub timestamp: Option<TimestampFn>,
    /// `"iperf 3.21"`-style version string (JSON `start.version`, `-V` text).
    pub version: String,
    /// uname line (JSON `start.system_info`, `-V` text).
    pub system_info: String,
}

impl ReportOptions {
    /// Text output with every option off.
    pub fn new(side: Side, version: impl Into<String>, system_info: impl Into<String>) -> Self {
        Self {
            side,
            json: false,
            json_stream: false,
            json_stream_full_output: false,
            verbose: false,
            format: None,
            title: None,
            extra_data: None,
            prog: "iperf3".to_string(),
            forceflush: false,
            timestamp: None,
            version: version.into(),
            system_info: system_info.into(),
        }
    }
}

/// Output a server produced for the client (`--get-server-output`).
#[derive(Debug, Clone, PartialEq)]
pub enum ServerOutput {
    /// The server ran with `-J`: its document (start, intervals, end).
    Json(Value),
    /// The server ran in text mode: its lines from "Accepted connection" on.
    Text(String),
}

/// Turns one test's events into iperf3 output.
pub struct Reporter {
    side: Side,
    json: bool,
    json_stream: bool,
    full_output: bool,
    verbose: bool,
    format: char,
    prog: String,
    forceflush: bool,
    version: String,
    system_info: String,
    title: Option<String>,
    extra_data: Option<String>,
    sink: Sink,
    connect: Option<(StartInfo, TestInfo)>,
    layout: Option<Layout>,
    started: bool,
    streams: Vec<StreamInfo>,
    intervals: IntervalHistory,
    intervals_printed: usize,
    end: Option<Value>,
    error: Option<String>,
    server_output: Option<ServerOutput>,
    server_output_shown: bool,
    server_output_requested: bool,
    finished: bool,
}

impl Reporter {
    /// A reporter printing to `out` (stdout or the logfile) and `err` (stderr,
    /// or the logfile too, as iperf3 does with `--logfile`).
    pub fn new(
        opts: ReportOptions,
        out: Box<dyn Write + Send>,
        err: Box<dyn Write + Send>,
    ) -> Self {
        let title = opts.title.clone().filter(|_| opts.side == Side::Client);
        let json = opts.json || opts.json_stream;
        Self {
            side: opts.side,
            json,
            json_stream: opts.json_stream,
            full_output: opts.json_stream_full_output,
            verbose: opts.verbose,
            format: opts.format.unwrap_or('a'),
            prog: opts.prog,
            forceflush: opts.forceflush,
            version: opts.version,
            system_info: opts.system_info,
            title: opts.title,
            extra_data: opts.extra_data,
            sink: Sink::new(out, err, if json { None } else { title }, opts.timestamp),
            connect: None,
            layout: None,
            started: false,
            streams: Vec::new(),
            intervals: IntervalHistory::default(),
            intervals_printed: 0,
            end: None,
            error: None,
            server_output: None,
            server_output_shown: false,
            server_output_requested: false,
            finished: false,
        }
    }

    fn text_mode(&self) -> bool {
        !self.json
    }

    fn print(&mut self, chunks: Vec<String>) {
        for c in chunks {
            self.sink.text(&c);
        }
    }

    /// Server, text mode: the "Server listening on P (test #N)" banner.
    pub fn server_banner(&mut self, port: u16, test_number: u64) {
        if self.text_mode() {
            self.print(text::banner(port, test_number));
            self.sink.flush();
        }
    }

    /// `-V` text: the version and uname lines.
    pub fn preamble(&mut self) {
        if self.text_mode() && self.verbose {
            self.print(text::preamble(&self.version, &self.system_info));
        }
    }

    /// Client `-V` text: "Control connection MSS N".
    pub fn control_mss(&mut self, mss: u32) {
        if self.text_mode() && self.verbose {
            self.sink.text(&format!("Control connection MSS {mss}\n"));
        }
    }

    /// A line the driver words itself (text mode only), e.g. `-V` notes such as
    /// "Setting UDP block size to N". A newline is added if missing.
    pub fn message(&mut self, line: &str) {
        if self.text_mode() {
            let mut s = line.to_string();
            if !s.ends_with('\n') {
                s.push('\n');
            }
            self.sink.text(&s);
        }
    }

    /// Server: the client asked for `--get-server-output`. Call before
    /// [`Reporter::control_connected`] so the text copy starts with
    /// "Accepted connection".
    pub fn set_server_output_requested(&mut self, on: bool) {
        self.server_output_requested = on;
    }

    /// Server: `title` / `extra_data` received in the parameters (JSON keys).
    pub fn set_peer_labels(&mut self, title: Option<String>, extra_data: Option<String>) {
        self.title = title;
        self.extra_data = extra_data;
    }

    /// The control connection is up and the parameters are known (iperf3's
    /// `on_connect`): "Connecting to host" / "Accepted connection", and with `-V`
    /// the time, cookie and MSS. `start`'s buffer sizes may still be zero on
    /// the client; [`Reporter::start`] passes the final ones.
    pub fn control_connected(&mut self, start: &StartInfo, test: &TestInfo) {
        self.layout = Some(Layout::new(self.side, test));
        self.connect = Some((start.clone(), test.clone()));
        if self.side == Side::Server && self.server_output_requested && self.text_mode() {
            self.sink.start_capture();
        }
        if self.text_mode() {
            let time = start::rfc1123(start.timestamp_millis / 1000);
            self.print(text::on_connect(
                self.side,
                start,
                test,
                &time,
                self.verbose,
            ));
        }
    }

    /// A data stream is set up (`start.connected[]`, text `[  4] local ...`).
    /// Streams must be announced in the order the samples will use.
    pub fn stream_connected(&mut self, s: &StreamInfo) {
        self.streams.push(s.clone());
        if self.text_mode() {
            self.sink.text(&text::stream_connected(s));
        }
    }

    /// TEST_START: `start.test_start`, the `start` event, `-V` "Starting Test".
    pub fn start(&mut self, start: &StartInfo, test: &TestInfo) {
        self.layout = Some(Layout::new(self.side, test));
        self.connect = Some((start.clone(), test.clone()));
        self.started = true;
        if self.text_mode() {
            if self.verbose {
                self.sink.text(&text::starting_test(test));
            }
        } else if self.json_stream {
            let data = self.start_json();
            self.event("start", data);
        }
    }

    fn event(&mut self, name: &str, data: Value) {
        let line = cjson::to_compact(&json!({ "event": name, "data": data })) + "\n";
        self.sink.raw(&line);
        self.sink.flush();
    }

    fn start_json(&self) -> Value {
        start::to_json(&StartParts {
            side: self.side,
            version: &self.version,
            system_info: &self.system_info,
            streams: &self.streams,
            connect: self.connect.as_ref().map(|(s, t)| (s, t)),
            started: self.started,
        })
    }

    /// One reporting interval (also the last, short one before [`Reporter::end`]).
    pub fn interval(&mut self, iv: &IntervalInput) {
        let (Some(layout), Some((_, test))) = (&self.layout, &self.connect) else {
            return;
        };
        if !interval::should_report(iv, test.interval) {
            return;
        }
        if self.json {
            let keep = !self.json_stream
                || self.full_output
                || (self.side == Side::Server && self.server_output_requested);
            if keep {
                // Kept as samples; the JSON is built when the document is.
                self.intervals.push(layout, &self.streams, iv);
            }
            if self.json_stream {
                let report = interval::build(layout, &self.streams, iv);
                self.event("interval", interval::to_json(&report));
            }
        } else {
            let report = interval::build(layout, &self.streams, iv);
            let chunks = text::interval(layout, &report, self.intervals_printed == 0, self.format);
            self.print(chunks);
        }
        self.intervals_printed += 1;
        if self.forceflush {
            self.sink.flush();
        }
    }

    /// The final summary. A server calls it before the results exchange, with
    /// `peer: None`.
    pub fn end(&mut self, fin: &FinalInput) {
        let Some(layout) = &self.layout else {
            return;
        };
        let report = end::build(layout, &self.streams, fin);
        if self.json {
            self.end = Some(end::to_json(&report));
        } else {
            let chunks = text::end(&report, self.format, self.verbose);
            self.print(chunks);
            self.end = Some(Value::Object(Map::new()));
            self.show_server_output();
        }
        self.sink.flush();
    }

    fn show_server_output(&mut self) {
        if self.side != Side::Client || self.server_output_shown || self.end.is_none() {
            return;
        }
        let chunk = match &self.server_output {
            Some(ServerOutput::Json(v)) => {
                format!("\nServer JSON output:\n{}\n", cjson::to_pretty(v))
            }
            Some(ServerOutput::Text(t)) => format!("\nServer output:\n{t}\n"),
            None => return,
        };
        self.server_output_shown = true;
        self.sink.text(&chunk);
    }

    /// Client: the server's output received with the results.
    pub fn server_output(&mut self, out: ServerOutput) {
        self.server_output = Some(out);
        if self.text_mode() {
            self.show_server_output();
        }
    }

    /// A warning: `warning: <msg>` on the error writer.
    pub fn warning(&mut self, msg: &str) {
        self.sink.err_line(&format!("warning: {msg}\n"));
    }

    /// A failure outside any test (a server's connection that never became
    /// one): `<prog>: error - msg` on the error writer in every mode; a JSON
    /// document is not touched.
    pub fn log_error(&mut self, msg: &str) {
        let line = format!("{}: error - {msg}\n", self.prog);
        self.sink.err_line(&line);
    }

    /// A failure: JSON `"error": msg`; text `<prog>: error - msg` on the error writer.
    pub fn error(&mut self, msg: &str) {
        if self.json {
            self.error = Some(msg.to_string());
        } else {
            self.error = Some(msg.to_string());
            let line = format!("{}: error - {msg}\n", self.prog);
            self.sink.flush();
            self.sink.err_line(&line);
        }
    }

    /// Ended by a signal: JSON `"error": "interrupt - msg"`; text
    /// `<prog>: interrupt - msg`.
    pub fn interrupted(&mut self, msg: &str) {
        self.ended_without_error(&format!("interrupt - {msg}"));
    }

    /// A test cut short that iperf3 does not count as an error (a signal, a
    /// client gone mid-test): JSON `"error": text`; text `<prog>: text`.
    pub fn ended_without_error(&mut self, text: &str) {
        if !self.json {
            let line = format!("{}: {text}\n", self.prog);
            self.sink.flush();
            self.sink.err_line(&line);
        }
        self.error = Some(text.to_string());
    }

    fn core_document(&self) -> Map<String, Value> {
        let mut top = Map::new();
        top.insert("start".into(), self.start_json());
        top.insert(
            "intervals".into(),
            Value::Array(self.intervals.to_json(&self.streams)),
        );
        top.insert(
            "end".into(),
            self.end
                .clone()
                .unwrap_or_else(|| Value::Object(Map::new())),
        );
        top
    }

    /// The `-J` document as it stands (what [`Reporter::finish`] prints).
    pub fn document(&self) -> Value {
        let mut top = self.core_document();
        if let Some(e) = &self.error {
            top.insert("error".into(), json!(e));
        }
        if let Some(t) = &self.title {
            top.insert("title".into(), json!(t));
        }
        if let Some(x) = &self.extra_data {
            top.insert("extra_data".into(), json!(x));
        }
        match &self.server_output {
            Some(ServerOutput::Json(v)) => {
                top.insert("server_output_json".into(), v.clone());
            }
            Some(ServerOutput::Text(t)) => {
                top.insert("server_output_text".into(), json!(t));
            }
            None => {}
        }
        Value::Object(top)
    }

    /// Ends the output: prints the JSON document (or the closing events), or
    /// the client's "iperf Done.". Returns the first write error, if any.
    pub fn finish(&mut self) -> io::Result<()> {
        if !self.finished {
            self.finished = true;
            if self.json {
                if self.json_stream {
                    if let Some(e) = self.error.clone() {
                        self.event("error", json!(e));
                    }
                    match self.server_output.clone() {
                        Some(ServerOutput::Json(v)) => self.event("server_output_json", v),
                        Some(ServerOutput::Text(t)) => self.event("server_output_text", json!(t)),
                        None => {}
                    }
                    let end = self
                        .end
                        .clone()
                        .unwrap_or_else(|| Value::Object(Map::new()));
                    self.event("end", end);
                }
                if !self.json_stream || self.full_output {
                    let doc = cjson::to_pretty(&self.document()) + "\n";
                    self.sink.raw(&doc);
                }
            } else if self.side == Side::Client && self.error.is_none() && self.end.is_some() {
                self.sink.text("\n");
                self.sink.text("iperf Done.\n");
            }
            self.sink.flush();
        }
        match self.sink.take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Server: what to send as `server_output_json` / `server_output_text` when
    /// the client asked for it: the JSON document without title, extra data or
    /// error (as built at TEST_END), or the text lines from "Accepted
    /// connection" on.
    pub fn server_output_for_peer(&self) -> Option<ServerOutput> {
        if self.json {
            Some(ServerOutput::Json(Value::Object(self.core_document())))
        } else {
            self.sink
                .captured()
                .map(|t| ServerOutput::Text(t.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{Protocol, SampleExtra, StreamSample};
    use crate::testutil::{reporter, start_info, stream, test_info};

    fn sample() -> IntervalInput {
        IntervalInput {
            latency: None,
            bounceback: None,
            streams: vec![StreamSample {
                start: 0.0,
                end: 1.0,
                bytes: 10,
                omitted: false,
                extra: SampleExtra::None,
            }],
        }
    }

    #[test]
    fn json_stream_server_keeps_intervals_only_for_the_client_copy() {
        for requested in [false, true] {
            let (mut r, out, _) = reporter(|o| o.json_stream = true, Side::Server);
            r.set_server_output_requested(requested);
            let t = test_info(Side::Server, Protocol::Tcp);
            let si = start_info(Side::Server, true);
            r.control_connected(&si, &t);
            r.stream_connected(&stream(5, 1, false, "127.0.0.1:5201", "127.0.0.1:40000"));
            r.start(&si, &t);
            r.interval(&sample());
            let Some(ServerOutput::Json(copy)) = r.server_output_for_peer() else {
                panic!()
            };
            assert_eq!(
                copy["intervals"].as_array().unwrap().len(),
                usize::from(requested)
            );
            r.finish().unwrap();
            let events = crate::testutil::json_lines(&out.text());
            let names: Vec<_> = events
                .iter()
                .map(|e| e["event"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(names, ["start", "interval", "end"]);
        }
    }

    #[test]
    fn interrupt_reads_as_iperf3_in_both_modes() {
        let (mut r, out, err) = reporter(|_| {}, Side::Client);
        r.interrupted("the client has terminated");
        r.finish().unwrap();
        assert_eq!(
            err.text(),
            "iperf3: interrupt - the client has terminated\n"
        );
        assert_eq!(out.text(), "");
        let (mut r, out, err) = reporter(|o| o.json = true, Side::Client);
        r.interrupted("the client has terminated");
        r.warning("something");
        r.finish().unwrap();
        let doc: Value = serde_json::from_str(&out.text()).unwrap();
        assert_eq!(doc["error"], "interrupt - the client has terminated");
        assert_eq!(err.text(), "warning: something\n");
    }

    #[test]
    fn finish_is_idempotent_and_json_ends_with_newline() {
        let (mut r, out, _) = reporter(|o| o.json = true, Side::Client);
        r.finish().unwrap();
        r.finish().unwrap();
        let text = out.text();
        assert!(text.ends_with("}\n"));
        assert_eq!(text.matches("\"start\"").count(), 1);
    }
}
