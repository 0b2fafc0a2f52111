//! The `rperf3` binary: argv, signals, output files, exit codes.
//!
//! Everything below the binary works from a typed configuration; this file owns
//! the process edges: parsing the command line, installing signal delivery, opening
//! the log file, choosing the exit status.
#![forbid(unsafe_code)]
// Checked on the program only: its test build also links the dev-dependencies.
#![cfg_attr(not(test), warn(unused_crate_dependencies))]

mod cli;
mod cli2;
mod cnum;
mod iperf2;
mod logger;
mod mesh;
mod output;
mod plot;
mod qos;
mod rpm;
mod rpm_http;

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use rperf3_app::config::{Config, Role};
use rperf3_app::Interrupt;
use rperf3_proto::{IperfError, IE_AFFINITY, IE_DAEMON, IE_PID_FILE};
use rperf3_report::input::Side;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if let Some((prog, rest)) = iperf2::select(&args) {
        return iperf2::main(&prog, rest);
    }
    if args.get(1).is_some_and(|a| a == mesh::SUBCOMMAND) {
        let prog = args[0].to_string_lossy();
        let prog = std::path::Path::new(&*prog).file_name().map_or_else(
            || "rperf3".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
        return mesh::main(&prog, &args[2..]);
    }
    let prog = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .map_or_else(
            || "rperf3".to_string(),
            |s| s.to_string_lossy().into_owned(),
        );
    let inv = match cli::parse(&prog, args.get(1..).unwrap_or(&[])) {
        Ok(cli::Command::Run(inv)) => inv,
        Ok(cli::Command::Help(text)) => return print_and_exit(&text, 0),
        Ok(cli::Command::Version) => {
            return print_and_exit(&cli::version_text(&rperf3_sys::system::uname_line()), 0)
        }
        Ok(cli::Command::Generate(text)) => return print_and_exit(&text, 0),
        Ok(cli::Command::Plot(args)) => {
            return match plot::run(&prog, &args) {
                Ok(()) => ExitCode::SUCCESS,
                Err(msg) => {
                    eprintln!("{msg}");
                    ExitCode::from(1)
                }
            }
        }
        Err(e) => {
            let _ = std::io::stderr().write_all(e.message.as_bytes());
            return ExitCode::from(e.status.clamp(0, 255) as u8);
        }
    };
    let auth = match cli::load_auth(&prog, &inv.config) {
        Ok(a) => a,
        Err(e) => {
            let _ = std::io::stderr().write_all(e.message.as_bytes());
            return ExitCode::from(e.status.clamp(0, 255) as u8);
        }
    };
    for w in &auth.warnings {
        eprintln!("{w}");
    }
    for n in &inv.notices {
        println!("{n}");
    }
    for w in &inv.warnings {
        eprintln!("{w}");
    }
    match run(&prog, &inv.config, &auth) {
        Ok(status) => ExitCode::from(status.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("{prog}: error - {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Writes to stdout, ignoring a closed pipe (`rperf3 -h | head` is not a crash).
pub(crate) fn print_and_exit(text: &str, status: u8) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    ExitCode::from(status)
}

fn run(prog: &str, cfg: &Config, auth: &cli::LoadedAuth) -> anyhow::Result<i32> {
    let cfg = &process_setup(cfg)?;
    // After detaching: the writer threads must be the daemon's.
    let sink = output::Sink::open(&cfg.output)?;
    logger::init(cfg.common.debug, sink.log());
    let _pidfile = match &cfg.process.pidfile {
        Some(p) => Some(
            rperf3_sys::process::PidFile::create(p)
                .map_err(|e| anyhow::anyhow!(IperfError::from_io(IE_PID_FILE, &e).text()))?,
        ),
        None => None,
    };
    let result = run_tests(prog, cfg, auth, &sink);
    // While the pid file still names this process: it is still here.
    drain_at_exit(&sink);
    result
}

fn run_tests(
    prog: &str,
    cfg: &Config,
    auth: &cli::LoadedAuth,
    sink: &output::Sink,
) -> anyhow::Result<i32> {
    let mut intr = install_signals().context("unable to install signal handlers")?;
    let outcome = match &cfg.role {
        Role::Client(cc) if cc.rpm.is_some() => {
            return Ok(rpm::run(prog, cfg, cc, auth, sink, &mut intr));
        }
        Role::Client(cc) => {
            let rep = output::reporter_to(prog, cfg, Side::Client, sink, None);
            rperf3_app::run_client(cc, &cfg.common, rep, &mut intr, auth.client.as_ref())
        }
        Role::Server(sc) => {
            // Each test gets a reporter writing to the shared destinations.
            let mut make =
                |label: Option<u64>| output::reporter_to(prog, cfg, Side::Server, sink, label);
            let hooks = rperf3_app::ServeHooks {
                side: rpm_http::side(prog, cfg, sc, sink),
                ..Default::default()
            };
            rperf3_app::serve_with(
                sc,
                &cfg.common,
                &mut make,
                &mut intr,
                auth.server.clone(),
                hooks,
            )
        }
    };
    Ok(outcome.status)
}

/// The tests are over: what is queued is written before the process ends, as
/// a plain write would have been, however slow the reader. A signal during
/// this wait ends it (a supervisor's stop must not hang on a pipe nobody reads).
pub(crate) fn drain_at_exit(sink: &output::Sink) {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // Should registering fail, the wait just cannot be cut short.
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    sink.drain(&|| stop.load(Ordering::Relaxed));
}

/// `-D`: detach before any thread starts. The daemon works in `/`, so the
/// files named on the command line are made absolute first (iperf3 would
/// look for a relative log or pid file in `/`).
fn process_setup(cfg: &Config) -> anyhow::Result<Config> {
    let mut cfg = cfg.clone();
    if cfg.process.daemon {
        for p in [&mut cfg.process.pidfile, &mut cfg.output.logfile]
            .into_iter()
            .flatten()
        {
            if let Ok(abs) = std::path::absolute(&*p) {
                *p = abs;
            }
        }
        rperf3_sys::process::daemonize()
            .map_err(|e| anyhow::anyhow!(IperfError::from_io(IE_DAEMON, &e).text()))?;
    }
    if let Some(cpu) = cfg.process.affinity {
        // Before any thread starts: they all inherit it.
        rperf3_sys::process::pin_to_cpu(cpu as usize)
            .map_err(|e| anyhow::anyhow!(IperfError::from_io(IE_AFFINITY, &e).text()))?;
    }
    Ok(cfg)
}

/// SIGINT, SIGTERM and SIGHUP write a byte to a pipe the control loops poll.
pub(crate) fn install_signals() -> std::io::Result<Interrupt> {
    let (rx, tx) = UnixStream::pair()?;
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::low_level::pipe::register(sig, tx.try_clone()?)?;
    }
    Interrupt::new(rx)
}
