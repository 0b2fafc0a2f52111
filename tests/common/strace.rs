//! Counting a program's system calls with `strace -f -c`: the summary's
//! rows, and a traced server that is stopped as a person stops it.

use std::path::Path;
use std::time::{Duration, Instant};

use super::{await_listening, free_port, Output, Proc, Signal};

/// The calls of `name` in an `strace -f -c` summary (its `calls` column;
/// `total` is every call of every thread); `None` without such a row.
pub(crate) fn calls(log: &Path, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.last() == Some(&name) && w.len() >= 5)
        .and_then(|w| w[3].parse().ok())
}

/// `program -s -p PORT extra...` under `strace -f -c -o log`, listening on
/// TCP; returns it and its port.
pub(crate) fn traced_server(program: &Path, extra: &[&str], log: &Path) -> (Proc, u16) {
    let port = free_port();
    let p = port.to_string();
    let mut args = vec![
        "-f",
        "-c",
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
/// reads, it counts fewer reads than the test made, or holds its thread
/// past the second signal and strace dies without its summary.
pub(crate) fn stop_traced_after_report(tracer: Proc) -> Output {
    tracer.wait_stdout_until(Duration::from_secs(20), |s| {
        s.lines()
            .any(|l| l.contains(" sec ") && l.ends_with("bits/sec"))
    });
    stop_traced(tracer)
}

/// Interrupts a traced server: strace holds SIGINT back from itself, so the
/// server, its child, gets it, and strace writes the summary when it exits.
/// A 2.2.1 server that still counts a thread running waits for it until a
/// second signal ("Interrupt again to force quit"); traced on a busy host it
/// was seen to wait past 10 s, so after 5 s it gets that second one.
pub(crate) fn stop_traced(mut tracer: Proc) -> Output {
    let child = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", tracer.pid()))
        .expect("strace's children");
    let child: i32 = child.trim().parse().expect("one child: the server");
    let interrupt = || {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(child), Signal::SIGINT);
    };
    interrupt();
    let deadline = Instant::now() + Duration::from_secs(5);
    while tracer.is_running() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if tracer.is_running() {
        interrupt();
    }
    tracer.finish(Duration::from_secs(10))
}
