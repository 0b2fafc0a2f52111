//! Hundreds of tests back to back against one server, some of their clients
//! killed mid-test: the server's descriptors, threads and memory stay flat,
//! and the test after a kill is served at once.

use crate::common;

use std::time::{Duration, Instant};

use common::{fd_count, require_tool, rss_kib, thread_count, Proc, Server, Signal};

const TESTS: usize = 240;
/// Every this many tests, a client is killed in the middle of a long test.
const KILL_EVERY: usize = 25;
/// Tests before the baseline is taken: allocator arenas and the like settle.
const WARM_UP: usize = 40;
/// The server's memory is sampled this often (between tests).
const SAMPLE_EVERY: usize = 20;

/// The short tests cycled through: every mode, both protocols.
const SHORT: &[&[&str]] = &[
    &["-n", "1M"],
    &["-u", "-b", "1G", "-n", "200K"],
    &["-R", "-n", "1M"],
    &["--bidir", "-n", "1M"],
    &["-u", "-R", "-b", "1G", "-n", "200K", "-P", "2"],
    &["-P", "4", "-n", "2M"],
];

/// The long tests whose clients get killed.
const KILLED: &[&[&str]] = &[
    &["-t", "10"],
    &["-t", "10", "-u", "-R", "-b", "100M"],
    &["-t", "10", "--bidir"],
    &["-t", "10", "-u", "-b", "100M", "-P", "3"],
];

struct Usage {
    fds: usize,
    threads: usize,
    rss: u64,
}

fn usage(srv: &Server) -> Usage {
    let pid = srv.proc().pid();
    Usage {
        fds: fd_count(pid),
        threads: thread_count(pid),
        rss: rss_kib(pid),
    }
}

/// Waits (with a deadline) until the server's descriptors and threads are
/// back to `base`: a session's last thread may still be closing its control
/// connection gracefully (up to 2 s) after the client has finished.
fn settle(srv: &Server, base: &Usage) -> Usage {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let now = usage(srv);
        if (now.fds <= base.fds && now.threads <= base.threads) || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hundreds_of_tests_with_killed_clients_leave_nothing_behind() {
    // Without iperf3 (outside CI) every killed client is an rperf3 one.
    let stock = require_tool("iperf3");
    // One slot: the test after a kill can only run once the killed client's
    // session has let go of it (queued meanwhile rather than refused).
    let srv = Server::start(&["--queue", "4"]);
    let mut base = None;
    let mut after_kill = Vec::new();
    let mut rss = Vec::new();
    let t0 = Instant::now();
    for i in 0..TESTS {
        if i == WARM_UP {
            base = Some(settle(&srv, &usage(&srv)));
        }
        if i >= WARM_UP && i % SAMPLE_EVERY == 0 {
            let b = base.as_ref().expect("taken first");
            rss.push(settle(&srv, b).rss);
        }
        if i % KILL_EVERY == KILL_EVERY - 1 {
            let args = KILLED[(i / KILL_EVERY) % KILLED.len()];
            // Every other killed client is a stock iperf3 one.
            let victim = if stock && (i / KILL_EVERY) % 2 == 1 {
                // Its stdout is a pipe: without --forceflush iperf3 holds
                // the interval lines back until it exits.
                let mut a = srv.args(args);
                a.push("--forceflush".into());
                Proc::spawn("iperf3", &a)
            } else {
                srv.spawn_client(args)
            };
            // Its second interval is printed (it may start or end at x.01 s
            // on a loaded machine).
            assert!(
                victim.wait_stdout_until(Duration::from_secs(10), |out| out
                    .lines()
                    .any(|l| l.contains("  1.0") && l.contains("-2.") && l.contains(" sec "))),
                "{}",
                victim.stdout()
            );
            victim.signal(Signal::SIGKILL);
            let t = Instant::now();
            srv.client(&["-n", "1M"]).assert_ok();
            after_kill.push(t.elapsed());
            continue;
        }
        let out = srv.client(SHORT[i % SHORT.len()]);
        assert_eq!(out.code(), Some(0), "test {i}:\n{out}");
    }
    let took = t0.elapsed();
    let base = base.expect("taken after the warm-up");
    let end = settle(&srv, &base);
    eprintln!(
        "{TESTS} tests in {took:?}; after warm-up fds {} threads {}; at the end fds {} \
         threads {}; next test after a kill: {after_kill:?}",
        base.fds, base.threads, end.fds, end.threads
    );
    assert_eq!(end.fds, base.fds, "descriptors leaked");
    assert_eq!(end.threads, base.threads, "threads left running");
    // Freed memory stays in the allocator's arenas, so RSS moves within a
    // band (here 7.5 to 11.5 MiB, in 2 MiB steps); it must not trend upwards:
    // the second half of the run stays within the first half's band plus
    // 2.5 MiB (a leak of 15 KiB per test would pass that).
    eprintln!("RSS every {SAMPLE_EVERY} tests, KiB: {rss:?}");
    let (first, second) = rss.split_at(rss.len() / 2);
    let band = first.iter().max().copied().unwrap_or(0);
    let top = second.iter().max().copied().unwrap_or(0);
    assert!(top <= band + 2560, "RSS grew: {rss:?}");
    // The killed client's session ends as soon as its connections reset, so
    // the next client (which may queue behind nothing) runs at once.
    for t in &after_kill {
        assert!(
            *t < Duration::from_secs(2),
            "next test took {t:?} after a kill"
        );
    }
}
