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
use crate::netns::queue::{between, median, median_queue_delay_ms, Fifo, QueueRig};
use crate::netns::{self, with_retries, Attempt, Pair, Side};
use crate::rel;

const PORT2: &str = "5001";
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// The load, as for iperf3 (16 sockets at 7 Mbit/s), for 5 s.
const LOAD_SECS: u64 = 5;
const CLIENT: [&str; 12] = [
    "-u",
    "-b",
    "7M",
    "-P",
    "16",
    "--trip-times",
    "-e",
    "-i",
    "1",
    "-l",
    "1400",
    "-p",
];
/// Intervals that start this late see the full queue (it fills in about a
/// second).
const FULL_FROM: f64 = 2.0;

/// Starts `program -s -u -e -i 1` in the server namespace; returns once its
/// socket is in the kernel's table.
fn start_server(pair: &Pair, program: &Path) -> Bg {
    let prog = program.to_str().expect("utf-8 path");
    let mut srv = pair.spawn(
        Side::Server,
        &[prog, "-s", "-u", "-e", "-i", "1", "-p", PORT2],
    );
    let filter = format!("sport = :{PORT2}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while pair
        .on(Side::Server, &["ss", "-Hlun", &filter])
        .trim()
        .is_empty()
    {
        if srv.try_status().is_some() || Instant::now() > deadline {
            panic!(
                "iperf 2 server did not start: {}",
                srv.finish(Duration::ZERO)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    srv
}

/// One per-stream interval row of an iperf 2 UDP server's `-e` report:
/// `(start, end, latency avg, latency min)` in seconds and milliseconds.
fn latency_rows(text: &str) -> Vec<(f64, f64, f64, f64)> {
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

/// `client` sends 16 UDP streams with `--trip-times` to `server` through the
/// long FIFO: the median of the server's per-stream latency averages over the
/// intervals after the queue filled is the median backlog over the rate,
/// within 10%; no latency is negative (one clock).
fn trip_times_against_the_queue(server: &Path, client: &Path) -> Attempt {
    let Some(rig) = QueueRig::new(Fifo::Long, Side::Client) else {
        return Attempt::Skip;
    };
    let srv = start_server(&rig.pair, server);
    let prog = client.to_str().expect("utf-8 path");
    let mut args = vec![prog, "-c", &rig.pair.server_ip];
    let secs = LOAD_SECS.to_string();
    args.extend(CLIENT);
    args.extend([PORT2, "-t", &secs]);
    if client != ours() {
        // 2.2.1 sends each datagram alone, so its default send buffer parks
        // too few in the qdisc to hold the long FIFO full (it swung between
        // 80 and 155 ms, where a mean and a median part).
        args.extend(["-w", "1M"]);
    }
    let started = Instant::now();
    let cli = rig.pair.spawn(Side::Client, &args);
    let sampler = rig.sample_backlog();
    sampler.wait_full(Duration::from_secs(4));
    let from = Instant::now();
    let cli = cli.finish(RUN_TIMEOUT);
    let samples = sampler.stop();
    assert!(cli.success(), "iperf 2 client failed: {cli}");
    srv.interrupt();
    let srv = srv.finish(Duration::from_secs(5));

    // From full to the end of the load (the client may wait for the
    // server's reports after it, with the queue empty).
    let until = started + Duration::from_secs(LOAD_SECS);
    let full = between(&samples, from, until);
    let queue = median_queue_delay_ms(&full);
    let rows = latency_rows(&srv.stdout);
    let late: Vec<f64> = rows
        .iter()
        .filter(|r| r.0 >= FULL_FROM && r.1 - r.0 <= 1.0 + 1e-9)
        .map(|r| r.2)
        .collect();
    let ctx = format!(
        "{} -> {}: one-way median {:.3} ms over {} interval rows from {FULL_FROM} s vs queue \
         {queue:.3} ms (median of {} backlog samples once full)\n--- server ---\n{}",
        client.display(),
        server.display(),
        if late.is_empty() {
            f64::NAN
        } else {
            median(&late)
        },
        late.len(),
        full.len(),
        srv.stdout
    );
    assert!(
        rows.iter().all(|r| r.3 >= 0.0),
        "a negative one-way delay between namespaces on one clock\n{ctx}"
    );
    assert!(
        late.len() >= 16 * 2 && full.len() >= 30,
        "too few interval rows or backlog samples\n{ctx}"
    );
    let measured = median(&late);
    eprintln!("{}", ctx.lines().next().unwrap_or(""));
    if rel(measured, queue).abs() > 0.10 {
        return Attempt::Disturbed(format!("one-way delay is off by more than 10%\n{ctx}"));
    }
    Attempt::Pass
}

fn trip_times(server: Option<PathBuf>, client: Option<PathBuf>, what: &str) {
    let _one_at_a_time = netns::serial();
    let (Some(server), Some(client)) = (server, client) else {
        return;
    };
    with_retries(what, || trip_times_against_the_queue(&server, &client));
}

#[test]
fn iperf2_trip_times_18_one_way_delay_is_the_queue_delay() {
    trip_times(
        Some(ours()),
        Some(ours()),
        "iperf 2 --trip-times, rperf3 both ends",
    );
}

#[test]
fn iperf2_trip_times_18_our_server_reads_stock_timestamps_as_the_queue_delay() {
    trip_times(Some(ours()), stock_221(), "--trip-times, 2.2.1 client");
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
