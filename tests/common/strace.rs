//! Counting a program's system calls with strace: an `strace -f -c`
//! summary's rows, or the lines of a streamed trace; and a traced server that
//! is stopped as a person stops it.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{await_listening, free_port, Output, Proc, Signal};

/// The calls of `name` in an `strace -f -c` summary (its `calls` column;
/// `total` is every call of every thread), or in a streamed `strace -f`
/// trace (the lines that begin one, resumed halves not counted again);
/// `None` without any.
pub(crate) fn calls(log: &Path, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    if text.contains("% time") {
        return text
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|w| w.last() == Some(&name) && w.len() >= 5)
            .and_then(|w| w[3].parse().ok());
    }
    let start = format!("{name}(");
    let n = text
        .lines()
        .filter(|l| {
            // "PID  name(args) = r", or without a PID for one thread; "total"
            // is every call begun (not "<... resumed>", "+++", "---" lines).
            let call = l
                .split_once(' ')
                .filter(|(pid, _)| pid.parse::<u32>().is_ok());
            let call = call.map_or(*l, |(_, rest)| rest.trim_start());
            match name {
                "total" => call.starts_with(|c: char| c.is_ascii_lowercase()) && call.contains('('),
                _ => call.starts_with(&start),
            }
        })
        .count() as u64;
    (n > 0).then_some(n)
}

/// `program -s -p PORT extra...` under `strace -f -o log`, listening on
/// TCP; returns it and its port. The trace is streamed to the log as the
/// calls are made (not a summary written at the end), so it holds every call
/// up to the server's end, however that comes.
pub(crate) fn traced_server(program: &Path, extra: &[&str], log: &Path) -> (Proc, u16) {
    let port = free_port();
    let p = port.to_string();
    let mut args = vec![
        "-f",
        "-o",
        log.to_str().expect("a UTF-8 log path"),
        program.to_str().expect("a UTF-8 program path"),
        "-s",
        "-p",
        &p,
    ];
    args.extend_from_slice(extra);
    let mut tracer = Proc::spawn("strace", &args);
    await_listening(&mut tracer, port);
    (tracer, port)
}

/// Waits (20 s at most) for a traced iperf 2 server's report of the test
/// it served, the sign that its reads are done, then stops it as
/// [`stop_traced`] does. Interrupted while a slowed, traced server still
/// reads, it would count fewer reads than the test made.
pub(crate) fn stop_traced_after_report(tracer: Proc) -> Output {
    tracer.wait_stdout_until(Duration::from_secs(20), |s| {
        s.lines()
            .any(|l| l.contains(" sec ") && l.ends_with("bits/sec"))
    });
    stop_traced(tracer)
}

/// Interrupts a traced server: strace holds SIGINT back from itself, so the
/// server, its child, gets it. A 2.2.1 server that still counts a thread
/// running waits for it until a second signal ("Interrupt again to force
/// quit"), and traced on a busy host one was seen to outlast both by 10 s:
/// after 5 s it gets the second, after 5 more it is killed (the streamed
/// trace holds its calls either way; the output's status says which end).
pub(crate) fn stop_traced(mut tracer: Proc) -> Output {
    let child = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", tracer.pid()))
        .expect("strace's children");
    let child: i32 = child.trim().parse().expect("one child: the server");
    let signal = |s: Signal| {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), s);
    };
    for s in [Signal::SIGINT, Signal::SIGINT, Signal::SIGKILL] {
        signal(s);
        let deadline = Instant::now() + Duration::from_secs(5);
        while tracer.is_running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        if !tracer.is_running() {
            break;
        }
    }
    tracer.finish(Duration::from_secs(10))
}
