//! The iperf 2 personality's process edges: which argv means iperf 2, its
//! messages on stderr, `-o`, `-D`, the printer, signals, the exit status.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use rperf3_app::iperf2::config::{Config2, Format2, Output2, Role2};
use rperf3_report::iperf2::model::{Event2, Layout2, Side2};
use rperf3_report::iperf2::{Printer2, Report2};
use rperf3_report::queue::OutputQueue;

use crate::cli2::{self, Action};
use crate::output;

/// The sub-command that selects iperf 2's command line (`rperf3 iperf2 -s`).
pub(crate) const SUBCOMMAND: &str = "iperf2";

/// Program names that mean iperf 2 (a link, as Debian installs iperf 2).
const NAMES: &[&str] = &["iperf", "iperf2"];

/// If `args` (the whole argv) asks for iperf 2: the name for its messages and
/// the arguments after it. iperf 2 names itself by argv\[0\] as typed.
pub(crate) fn select(args: &[OsString]) -> Option<(String, &[OsString])> {
    let argv0 = args.first()?;
    let typed = argv0.to_string_lossy().into_owned();
    let base = std::path::Path::new(argv0)
        .file_name()
        .map(|b| b.to_string_lossy().into_owned())
        .unwrap_or_default();
    if NAMES.contains(&base.as_str()) {
        return Some((typed, &args[1..]));
    }
    if args.get(1).is_some_and(|a| a == SUBCOMMAND) {
        return Some((format!("{typed} {SUBCOMMAND}"), &args[2..]));
    }
    None
}

fn stderr_lines(lines: &[String]) {
    let mut err = std::io::stderr().lock();
    for l in lines {
        let _ = writeln!(err, "{l}");
    }
}

/// Runs the iperf 2 personality; `prog` and `args` from [`select`].
pub(crate) fn main(prog: &str, args: &[OsString]) -> ExitCode {
    let parsed = cli2::parse(prog, args);
    stderr_lines(&parsed.stderr);
    match parsed.action {
        Action::Print(text) => crate::print_and_exit(&text, 0),
        Action::Exit(n) => ExitCode::from(n.clamp(0, 255) as u8),
        Action::Run(cfg) => ExitCode::from(run(*cfg).clamp(0, 255) as u8),
    }
}

/// The printer's layout from the output options and the local `zone`
/// (ignored with `--utc`).
pub(crate) fn layout(cfg: &Config2, zone: (i32, Option<String>)) -> Layout2 {
    let out: &Output2 = &cfg.output;
    Layout2 {
        enhanced: cfg.common.enhanced,
        csv: out.csv,
        format: match out.format {
            Format2::AdaptiveBits => None,
            Format2::AdaptiveBytes => Some('A'),
            Format2::Fixed(c) => Some(c),
        },
        hide_ips: out.hide_ips,
        sum_only: out.sum_only,
        no_connection: out.exclude.connection,
        no_data: out.exclude.data,
        no_multicast: out.exclude.multicast,
        no_settings: out.exclude.settings,
        no_server_report: out.exclude.server_report,
        utc_offset_secs: if out.utc { 0 } else { zone.0 },
        tz_name: if out.utc { None } else { zone.1 },
    }
}

/// The local zone now: its offset east of UTC in seconds (from strftime's
/// `%z`, `+hhmm`) and its abbreviation (`%Z`).
fn local_zone() -> (i32, Option<String>) {
    let z = rperf3_sys::time::strftime_now("%z");
    let offset = parse_utc_offset(&z).unwrap_or(0);
    let name = rperf3_sys::time::strftime_now("%Z");
    (offset, Some(name).filter(|n| !n.is_empty()))
}

/// `+hhmm` / `-hhmm` as seconds.
fn parse_utc_offset(z: &str) -> Option<i32> {
    let (sign, digits) = match z.as_bytes().first()? {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        _ => return None,
    };
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let h: i32 = digits[..2].parse().ok()?;
    let m: i32 = digits[2..].parse().ok()?;
    Some(sign * (h * 3600 + m * 60))
}

fn line_unit(line: &str) -> Vec<u8> {
    let mut unit = Vec::with_capacity(line.len() + 1);
    unit.extend_from_slice(line.as_bytes());
    unit.push(b'\n');
    unit
}

/// iperf 2 writes its warnings and errors (`tcp connect ... failed`,
/// `WARNING: ...`) on stderr and its reports on stdout (or `-o`): messages go
/// to stderr here, everything else to the printer.
struct Routed {
    printer: Printer2,
    err: OutputQueue,
}

impl Report2 for Routed {
    fn event(&self, e: Event2) {
        match e {
            Event2::Message(m) => {
                self.err.push(line_unit(&m));
            }
            other => self.printer.event(other),
        }
    }
}

/// strerror's words, without Rust's ` (os error N)`.
fn os_error_text(e: &std::io::Error) -> String {
    let t = e.to_string();
    match t.find(" (os error") {
        Some(i) => t[..i].to_string(),
        None => t,
    }
}

fn run(mut cfg: Config2) -> i32 {
    let mut file: Option<PathBuf> = cfg.output.file.as_ref().map(PathBuf::from);
    if let Some(f) = &file {
        // iperf 2 says so on stdout, then appends its stdout to the file.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "Output from stdout (but not from stderr) will be redirected to file {}",
            f.display()
        );
        let _ = out.flush();
    }
    let daemon = matches!(&cfg.role, Role2::Server(s) if s.daemon);
    if daemon {
        eprintln!("Running Iperf Server as a daemon");
        // The daemon works in `/`: a relative -o must still mean the same file.
        if let Some(abs) = file.as_ref().and_then(|f| std::path::absolute(f).ok()) {
            cfg.output.file = Some(abs.display().to_string());
            file = Some(abs);
        }
        if let Err(e) = rperf3_sys::process::daemonize() {
            eprintln!("daemon: {e}");
        }
    }
    let sink = match output::Sink::open2(file.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("freopen stdout\n failed: {}", os_error_text(&e));
            return 1;
        }
    };
    let intr = match crate::install_signals() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("unable to install signal handlers: {e}");
            return 1;
        }
    };
    let side = match cfg.role {
        Role2::Client(_) => Side2::Client,
        Role2::Server(_) => Side2::Server,
    };
    let queue = sink.out().clone();
    let printer = Printer2::new(
        side,
        layout(&cfg, local_zone()),
        Box::new(move |line: &str| {
            queue.push(line_unit(line));
        }),
    );
    let report = Routed {
        printer,
        err: sink.log(),
    };
    let outcome = rperf3_app::iperf2::run(&cfg, Arc::new(report), intr);
    crate::drain_at_exit(&sink);
    outcome.status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_offsets() {
        assert_eq!(parse_utc_offset("+0000"), Some(0));
        assert_eq!(parse_utc_offset("+0530"), Some(19_800));
        assert_eq!(parse_utc_offset("-0800"), Some(-28_800));
        assert_eq!(parse_utc_offset("Z"), None);
    }

    #[test]
    fn utc_flag_prints_utc() {
        let mut cfg = match cli2::parse("iperf", &["-c".into(), "h".into(), "--utc".into()]).action
        {
            Action::Run(c) => *c,
            a => panic!("{a:?}"),
        };
        let l = layout(&cfg, (3600, Some("CET".into())));
        assert_eq!((l.utc_offset_secs, l.tz_name), (0, None));
        cfg.output.utc = false;
        let l = layout(&cfg, (3600, Some("CET".into())));
        assert_eq!(
            (l.utc_offset_secs, l.tz_name.as_deref()),
            (3600, Some("CET"))
        );
    }
}
