//! One-way delay of the iperf 2 personality against the queue: UDP with
//! `--trip-times` through the full long FIFO of the queue rig (see
//! `netns/queue.rs`). Both namespaces share one clock, so the latency the
//! server prints per interval is the queueing delay the qdisc's backlog gives,
//! plus a few microseconds of stack. Run with rperf3 at both ends, and with a
//! stock iperf 2.2.1 client, so rperf3's server reads the reference's
//! timestamps too. (A 2.2.1 server takes in one new UDP stream a second once
//! the queue is full, so most of the 16 streams would start after the load
//! ended; it is not used here.)

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::netns::cmd::Bg;
use crate::netns::iperf2::{ours, stock_221};
use crate::netns::queue::{
    between, judge, load_evidence, median, median_queue_delay_ms, Fifo, QueueRig, Sampler,
    TOLERANCE,
};
use crate::netns::{self, json_doc, with_retries, Attempt, Listen, Pair, Side};
use crate::rel;

const PORT2: u16 = 5001;
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// The load, as for iperf3 (16 sockets at 7 Mbit/s), for 5 s.
const LOAD_SECS: u64 = 5;
const CLIENT: [&str; 8] = ["-u", "--trip-times", "-e", "-i", "1", "-l", "1400", "-p"];
/// The load: 16 streams at 7 Mbit/s, above the bottleneck's rate.
const LOAD: [&str; 4] = ["-b", "7M", "-P", "16"];
/// A 2.2.1 client receiving (`-R`) many streams often misses the sender's
/// start timestamp and ignores `--trip-times` (12 of 16 streams between two
/// 2.2.1 ends here), and once crashed; it measures one stream at 1 Mbit/s
/// beside a load of rperf3's own (iperf3's protocol, `-u -b 7M -P 16 -R`).
const ONE: [&str; 4] = ["-b", "1M", "-P", "1"];
/// Intervals that start this late see the full queue (it fills in about a
/// second).
const FULL_FROM: f64 = 2.0;

/// Starts `program -s -u -e -i 1` in the server namespace; returns once its
/// socket is in the kernel's table.
fn start_server(pair: &Pair, program: &Path) -> Bg {
    let prog = program.to_str().expect("utf-8 path");
    let port = PORT2.to_string();
    pair.spawn_listening(
        Side::Server,
        &[prog, "-s", "-u", "-e", "-i", "1", "-p", &port],
        &[Listen::Udp(PORT2)],
    )
}

/// One per-stream interval row of an iperf 2 UDP server's `-e` report:
/// `(start, end, latency avg, latency min)` in seconds and milliseconds.
pub(crate) fn latency_rows(text: &str) -> Vec<(f64, f64, f64, f64)> {
    text.lines()
        .filter(|l| l.starts_with('[') && !l.starts_with("[SUM") && l.contains(" sec "))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let sec = words.iter().position(|w| *w == "sec")?;
            let (a, b) = words[sec - 1].split_once('-')?;
            // avg/min/max/stdev, the only token of four numbers.
            let lat: Vec<f64> = words
                .iter()
                .map(|w| {
                    w.split('/')
                        .map(str::parse)
                        .collect::<Result<Vec<f64>, _>>()
                })
                .find_map(|v| v.ok().filter(|v| v.len() == 4))?;
            Some((a.parse().ok()?, b.parse().ok()?, lat[0], lat[1]))
        })
        .collect()
}

/// Which way the load flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    /// The client sends; the server prints the latency.
    Forward,
    /// `-R`: the server sends; the client prints the latency.
    Reverse,
    /// `--full-duplex`: both send, the client's way through the long FIFO
    /// and the server's through a short one, so a figure read from the
    /// wrong direction is off by 140 ms.
    FullDuplex,
}

/// `client` runs 16 UDP streams with `--trip-times` against `server`
/// through the queue rig: the median of the receiver's per-stream latency
/// averages over the intervals after the queue filled is the median
/// backlog over the rate of the queue that direction crosses, within the
/// rig's tolerance; no latency is negative (one clock).
fn trip_times_against_the_queue(server: &Path, client: &Path, way: Way) -> Attempt {
    let sender = match way {
        Way::Reverse => Side::Server,
        Way::Forward | Way::FullDuplex => Side::Client,
    };
    let Some(rig) = QueueRig::new(Fifo::Long, sender) else {
        return Attempt::Skip;
    };
    if way == Way::FullDuplex {
        rig.shape_too(Side::Server, Fifo::Short);
    }
    let srv = start_server(&rig.pair, server);
    let prog = client.to_str().expect("utf-8 path");
    let mut args = vec![prog, "-c", &rig.pair.server_ip];
    let secs = LOAD_SECS.to_string();
    args.extend(CLIENT);
    let port = PORT2.to_string();
    args.extend([port.as_str(), "-t", &secs]);
    let beside = way == Way::Reverse && client != ours();
    let (streams, beside) = if beside {
        args.extend(ONE);
        let load_srv = rig.pair.start_server();
        let load = rig.pair.spawn_client(&rig.load_args("5"));
        (1, Some((load_srv, load)))
    } else {
        args.extend(LOAD);
        (16, None)
    };
    match way {
        Way::Forward => {}
        Way::Reverse => args.push("-R"),
        Way::FullDuplex => args.push("--full-duplex"),
    }
    if client != ours() && sender == Side::Client {
        // 2.2.1 sends each datagram alone, so its default send buffer parks
        // too few in the qdisc to hold the long FIFO full (it swung between
        // 80 and 155 ms, where a mean and a median part).
        args.extend(["-w", "1M"]);
    }
    let started = Instant::now();
    let cli = rig.pair.spawn(Side::Client, &args);
    let sampler = rig.sample_backlog();
    let back = (way == Way::FullDuplex).then(|| rig.sample_backlog_on(Side::Server, Fifo::Short));
    sampler.wait_full(Duration::from_secs(4));
    if let Some(b) = &back {
        b.wait_full(Duration::from_secs(4));
    }
    let from = Instant::now();
    let cli = cli.finish(RUN_TIMEOUT);
    let samples = sampler.stop();
    let back = back.map(Sampler::stop);
    assert!(cli.success(), "iperf 2 client failed: {cli}");
    srv.interrupt();
    let srv = srv.finish(Duration::from_secs(5));
    if let Some((load_srv, load)) = beside {
        json_doc(&load.finish(RUN_TIMEOUT));
        json_doc(&load_srv.finish(Duration::from_secs(5)));
    }

    // Who prints the rows of each loaded direction, and its queue.
    let mut directions = Vec::new();
    match way {
        Way::Forward => directions.push(("up (server's rows)", &srv.stdout, samples)),
        Way::Reverse => directions.push(("down (client's rows)", &cli.stdout, samples)),
        Way::FullDuplex => {
            directions.push(("up (server's rows)", &srv.stdout, samples));
            let back = back.expect("the way back's samples");
            directions.push(("down (client's rows)", &cli.stdout, back));
        }
    }
    // From full to shortly before the load ends (the queue drains then).
    let until = started + Duration::from_secs(LOAD_SECS) - Duration::from_millis(300);
    let (mut off, mut evidence, mut lines) = (Vec::new(), Vec::new(), Vec::new());
    for (what, text, samples) in &directions {
        let full = between(samples, from, until);
        let queue = median_queue_delay_ms(&full);
        let rows = latency_rows(text);
        let late: Vec<f64> = rows
            .iter()
            .filter(|r| r.0 >= FULL_FROM && r.1 - r.0 <= 1.0 + 1e-9)
            .map(|r| r.2)
            .collect();
        assert!(
            rows.iter().all(|r| r.3 >= 0.0),
            "{what}: a negative one-way delay between namespaces on one clock\n{text}"
        );
        assert!(
            late.len() >= streams * 2,
            "{what}: {} interval rows with latency from {FULL_FROM} s\n{text}",
            late.len()
        );
        let measured = median(&late);
        let line = format!(
            "{what}: one-way median {measured:.3} ms over {} interval rows vs queue \
             {queue:.3} ms (median of {} backlog samples once full)",
            late.len(),
            full.len()
        );
        if rel(measured, queue).abs() > TOLERANCE {
            off.push(line.clone());
        }
        lines.push(line);
        evidence.extend(load_evidence(samples, &full, true));
    }
    let ctx = format!(
        "{} -> {} {way:?}:\n{}\n--- client ---\n{}\n--- server ---\n{}",
        client.display(),
        server.display(),
        lines.join("\n"),
        cli.stdout,
        srv.stdout
    );
    eprintln!("{:?} {way:?}: {}", client.file_name(), lines.join("; "));
    judge(&off, &evidence, &ctx)
}

fn trip_times(server: Option<PathBuf>, client: Option<PathBuf>, way: Way, what: &str) {
    let _one_at_a_time = netns::serial();
    let (Some(server), Some(client)) = (server, client) else {
        return;
    };
    with_retries(what, || trip_times_against_the_queue(&server, &client, way));
}

#[test]
fn iperf2_trip_times_18_one_way_delay_is_the_queue_delay() {
    trip_times(
        Some(ours()),
        Some(ours()),
        Way::Forward,
        "iperf 2 --trip-times, rperf3 both ends",
    );
}

#[test]
fn iperf2_trip_times_18_our_server_reads_stock_timestamps_as_the_queue_delay() {
    trip_times(
        Some(ours()),
        stock_221(),
        Way::Forward,
        "--trip-times, 2.2.1 client",
    );
}

#[test]
fn iperf2_trip_times_reverse_one_way_delay_is_the_queue_delay() {
    trip_times(
        Some(ours()),
        Some(ours()),
        Way::Reverse,
        "iperf 2 --trip-times -R, rperf3 both ends",
    );
}

#[test]
fn iperf2_trip_times_reverse_stock_client_reads_our_timestamps_as_the_queue_delay() {
    trip_times(
        Some(ours()),
        stock_221(),
        Way::Reverse,
        "--trip-times -R, 2.2.1 client",
    );
}

#[test]
fn iperf2_trip_times_full_duplex_each_way_is_its_own_queue_delay() {
    trip_times(
        Some(ours()),
        Some(ours()),
        Way::FullDuplex,
        "iperf 2 --trip-times --full-duplex, rperf3 both ends",
    );
}

#[test]
fn iperf2_trip_times_full_duplex_with_a_stock_client_each_way_is_its_own_queue_delay() {
    trip_times(
        Some(ours()),
        stock_221(),
        Way::FullDuplex,
        "--trip-times --full-duplex, 2.2.1 client",
    );
}

#[cfg(test)]
mod tests {
    use super::latency_rows;

    #[test]
    fn latency_rows_of_a_udp_e_report() {
        let t = "[ ID] Interval        Transfer     Bandwidth        Jitter   Lost/Total  Latency \
                 avg/min/max/stdev PPS  Rx/inP  Read/Timeo/Trunc  NetPwr\n[  1] 4.00-5.00 sec   \
                 790 KBytes  6.47 Mbits/sec   0.860 ms 73/623 (12%) \
                 153.008/142.729/232.026/7.429 ms 550 pps 550/84(4) pkts 550/0/0 5.284022\n\
                 [SUM-16] 4.00-5.00 sec  11.6 MBytes  96.9 Mbits/sec  1723/9962 (17%)  \
                 1.000/0.000/0.000/1.0  8239 pps\n";
        assert_eq!(latency_rows(t), vec![(4.0, 5.0, 153.008, 142.729)]);
    }
}
