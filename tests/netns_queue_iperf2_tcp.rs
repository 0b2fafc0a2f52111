//! iperf 2 TCP `--trip-times` against the queue rig's long FIFO (see
//! `netns/queue.rs`). A TCP write's trip time is its wait in the sender's
//! socket plus its wait in the network, so the measured flow is one that
//! never waits in its socket: small Nagle-free writes (`-N -l 1400`) paced
//! at 1 Mbit/s, far below what its window allows, with autocorking off
//! and Reno (BBR would pace the flow at its own rate).
//! Beside it, four BBR streams of rperf3's iperf3 personality keep the
//! queue, loss-free (TCP small queues hold it to about 100 KB of the FIFO's
//! 1.9 MB), so no write waits behind a retransmission either; the tbf cuts
//! their GSO trains into packets (see `QueueRig::cut_trains`). Each write's
//! trip time is then the backlog over the rate when it reached the qdisc,
//! plus its own transmission and microseconds of stack; the server's
//! per-second averages are compared with the mean backlog of the same
//! second, to the rig's precision. Both namespaces share one clock. Run
//! with rperf3 at both ends and against iperf 2.2.1 in either role, so each
//! side's timestamps are read by the reference.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::netns::iperf2::{ours, stock_221};
use crate::netns::queue::{
    between, check_lines, judge, load_evidence, median, queue_delay_ms, Fifo, QueueRig,
    LOADED_FROM, TOLERANCE,
};
use crate::netns::{self, json_doc, with_retries, Attempt, Listen, Side, DEV};
use crate::netns_queue::near;
use crate::netns_queue_iperf2::latency_rows;

const PORT2: u16 = 5001;
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// The measured flow's seconds; the load runs two more around it.
const SECS: u64 = 6;
/// The measured flow's first seconds are left out: it starts in the load's
/// start-up overshoot (its first second reads 100-200 ms). Under BBR, the
/// host's default, it paced itself at its own 1 Mbit/s and the next second
/// too read 200-500 ms (a busy CI host), and every later one 1.2 ms above
/// the queue; the flow now runs Reno (no pacing), settled from its second.
const SETTLED_S: f64 = 2.0;
/// A second's mean trip time was seen within 0.15 ms of its backlog's at
/// both ends' stacks' noise (the queue is about 8 ms, so 3% is 0.24 ms).
const NOISE_MS: f64 = 0.25;
/// One 1400-byte write's own time through the 100 Mbit/s bottleneck, ms.
const OWN_TX_MS: f64 = (1400.0 + 52.0 + 14.0) * 8.0 / 100e6 * 1e3;

/// The qdisc's drop count in `tc -s qdisc show` ("(dropped N, ...").
fn dropped(tc: &str) -> u64 {
    tc.split_whitespace()
        .skip_while(|w| w.trim_start_matches('(') != "dropped")
        .nth(1)
        .and_then(|w| w.trim_end_matches(',').parse().ok())
        .unwrap_or(0)
}

fn tcp_trip_times_against_the_queue(server: &Path, client: &Path) -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    // Whole GSO trains, so that TCP small queues let the load keep a
    // queue of milliseconds (see netns_queue_tcp.rs).
    rig.pair.on(
        Side::Client,
        &["ip", "link", "set", DEV, "gso_max_segs", "65535"],
    );
    rig.cut_trains();
    // With a queue longer than the writes' spacing, the kernel would hold
    // each small write until the one before has left the qdisc (TCP
    // autocorking): a wait in the socket, not in the network.
    rig.pair.on(
        Side::Client,
        &["sysctl", "-qw", "net.ipv4.tcp_autocorking=0"],
    );
    // The measured flow without pacing: the host's default here is BBR,
    // which paces a flow at its own delivery rate, and a flow of 1 Mbit/s
    // paced near 1 Mbit/s has writes waiting in its socket. The load names
    // BBR itself.
    rig.pair.on(
        Side::Client,
        &["sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"],
    );
    let port = PORT2.to_string();
    let srv_prog = server.to_str().expect("utf-8 path");
    // A stock server writes to a pipe in blocks; line by line, its rows
    // are all out once the connection has closed.
    let srv = rig.pair.spawn_listening(
        Side::Server,
        &[
            "stdbuf", "-oL", srv_prog, "-s", "-e", "-i", "1", "-p", &port,
        ],
        &[Listen::Tcp(PORT2)],
    );
    let load_srv = rig.pair.start_server();
    let load_secs = (SECS + 2).to_string();
    // BBR named, not the host's default, so the queue's shape is the same
    // on every machine.
    let load = rig
        .pair
        .spawn_client(&["-P", "4", "-C", "bbr", "-t", &load_secs]);
    let sampler = rig.sample_backlog();
    sampler.wait_backlog(LOADED_FROM, Duration::from_secs(4));
    let started = Instant::now();
    let secs = SECS.to_string();
    let cli = rig.pair.spawn(
        Side::Client,
        &[
            client.to_str().expect("utf-8 path"),
            "-c",
            &rig.pair.server_ip,
            "-p",
            &port,
            "-e",
            "--trip-times",
            "-i",
            "1",
            "-N",
            "-l",
            "1400",
            "-b",
            "1M",
            "-t",
            &secs,
        ],
    );
    let cli = cli.finish(RUN_TIMEOUT);
    let ended = Instant::now();
    let samples = sampler.stop();
    let late = samples.wake_late;
    let tc = rig
        .pair
        .on(Side::Client, &["tc", "-s", "qdisc", "show", "dev", DEV]);
    assert!(cli.success(), "iperf 2 client failed: {cli}");
    json_doc(&load.finish(RUN_TIMEOUT));
    json_doc(&load_srv.finish(Duration::from_secs(5)));
    srv.interrupt();
    let srv = srv.finish(Duration::from_secs(5));

    // Each whole second once the flow has settled against the mean backlog
    // of that second.
    let rows = latency_rows(&srv.stdout);
    assert!(
        rows.iter().all(|r| r.3 >= 0.0),
        "a negative trip time between namespaces on one clock\n{}",
        srv.stdout
    );
    let (mut measured, mut queue) = (Vec::new(), Vec::new());
    for r in rows
        .iter()
        .filter(|r| r.0 >= SETTLED_S && r.1 - r.0 <= 1.0 + 1e-9)
    {
        let window = between(
            &samples,
            started + Duration::from_secs_f64(r.0),
            started + Duration::from_secs_f64(r.1),
        );
        if window.len() < 20 {
            continue;
        }
        let delays: Vec<f64> = window
            .iter()
            .map(|b| queue_delay_ms(b.bytes as f64))
            .collect();
        measured.push(r.2);
        queue.push(delays.iter().sum::<f64>() / delays.len() as f64 + OWN_TX_MS);
    }
    let checks = if measured.len() >= 3 {
        vec![near(
            "trip time vs the mean backlog of the same second",
            median(&measured),
            median(&queue),
            TOLERANCE,
            NOISE_MS,
        )]
    } else {
        vec![Err(format!(
            "only {} whole seconds with trip times and backlog samples",
            measured.len()
        ))]
    };
    let ctx = format!(
        "{} -> {} TCP --trip-times beside 4 BBR streams through the long FIFO\n\
         per second: trip times {measured:.3?} ms, queue + own transmission {queue:.3?} ms\n\
         {}\n--- client ---\n{}\n--- server ---\n{}",
        client.display(),
        server.display(),
        check_lines(&checks),
        cli.stdout,
        srv.stdout
    );
    eprintln!("{ctx}\nnaps ended {late:?} late (90th percentile)");
    let off: Vec<String> = checks.into_iter().filter_map(Result::err).collect();
    let window = between(&samples, started, ended);
    let mut evidence = load_evidence(&samples, &window, false);
    // A drop means a retransmission some writes waited behind: the rig,
    // not the figure, went wrong.
    let drops = dropped(&tc);
    if drops > 0 {
        evidence.push(format!("the FIFO dropped {drops} packets"));
    }
    judge(&off, &evidence, &ctx)
}

fn tcp_trip_times(server: Option<std::path::PathBuf>, client: Option<std::path::PathBuf>) {
    let _one_at_a_time = netns::serial();
    let (Some(server), Some(client)) = (server, client) else {
        return;
    };
    with_retries("iperf 2 TCP --trip-times", || {
        tcp_trip_times_against_the_queue(&server, &client)
    });
}

#[test]
fn iperf2_tcp_trip_times_are_the_queue_delay() {
    tcp_trip_times(Some(ours()), Some(ours()));
}

#[test]
fn iperf2_tcp_trip_times_our_server_reads_stock_timestamps_as_the_queue_delay() {
    tcp_trip_times(Some(ours()), stock_221());
}

#[test]
fn iperf2_tcp_trip_times_a_stock_server_reads_ours_as_the_queue_delay() {
    tcp_trip_times(stock_221(), Some(ours()));
}

#[cfg(test)]
mod tests {
    use super::dropped;

    #[test]
    fn drops_of_a_tbf() {
        let tc = "qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 64Kb lat 150ms\n \
                  Sent 1234 bytes 12 pkt (dropped 7, overlimits 3 requeues 0)\n \
                  backlog 0b 0p requeues 0";
        assert_eq!(dropped(tc), 7);
        assert_eq!(dropped("qdisc noqueue 0: root"), 0);
    }
}
