//! A bottleneck with a known queue, for latency under load: a 100 Mbit/s tbf on
//! the load sender's veth egress (the client's, or the server's for `-R`), with
//! a long FIFO (`latency 150ms`) or a short one (`latency 5ms`), kept full by
//! rperf3's own UDP load above the rate over many sockets. The queueing delay is then the qdisc's own backlog divided by the
//! rate (`tc -s qdisc`, sampled in the background during the run), plus the
//! idle round trip `ping` measures before the load starts. Both namespaces run
//! on one clock, so one-way delays between them are exact too.
//!
//! One UDP socket alone cannot fill the long FIFO: its send buffer caps what it
//! parks in the qdisc. Sixteen sockets at 7 Mbit/s (112 Mbit/s in all) can.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cmd::{run, Bg};
use super::wake_probe::WakeProbe;
use super::{unavailable, Pair, Side, DEV};

/// The bottleneck's rate, bits per second (tbf counts the Ethernet header).
pub(crate) const RATE: f64 = 100e6;
/// The load: rperf3's UDP client above the rate over many sockets.
pub(crate) const LOAD: [&str; 5] = ["-u", "-b", "7M", "-P", "16"];
const TOOL_TIMEOUT: Duration = Duration::from_secs(10);
/// A backlog at least this big means a load is running.
pub(crate) const LOADED_FROM: u64 = 3000;
/// The tbf's bucket, bytes (`burst 64kb`).
const BURST: u64 = 64 * 1024;

/// How long the queue in front of the bottleneck is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fifo {
    /// tbf `latency 150ms`: about 1.9 MB, a bloated buffer.
    Long,
    /// tbf `latency 5ms`: about 125 KB.
    Short,
}

impl Fifo {
    /// tbf's `latency` argument.
    pub(crate) fn latency(self) -> &'static str {
        match self {
            Self::Long => "150ms",
            Self::Short => "5ms",
        }
    }

    /// The bytes the tbf queues at most: the rate times the latency plus
    /// the bucket.
    pub(crate) fn limit(self) -> u64 {
        let secs = match self {
            Self::Long => 0.150,
            Self::Short => 0.005,
        };
        (RATE / 8.0 * secs) as u64 + BURST
    }
}

/// Two namespaces with the shaped bottleneck and the idle round trip measured.
pub(crate) struct QueueRig {
    pub(crate) pair: Pair,
    pub(crate) fifo: Fifo,
    /// The side whose egress holds the queue, and that sends the load.
    pub(crate) sender: Side,
    /// `ping`'s round trips across the idle rig, milliseconds.
    pub(crate) idle_ping_ms: Vec<f64>,
}

impl QueueRig {
    /// Builds the pair with the tbf on `sender`'s egress, then measures the
    /// idle round trip with `ping` (the queue is empty, so the tbf adds only
    /// its own tiny transmission time). `None` after a skip note when the
    /// machine cannot.
    pub(crate) fn new(fifo: Fifo, sender: Side) -> Option<Self> {
        match run(&["ping", "-V"], TOOL_TIMEOUT) {
            Ok(d) if d.success() => {}
            Ok(d) => return unavailable(&format!("`ping` does not work: {d}")),
            Err(e) => return unavailable(&format!("`ping` is missing (iputils-ping): {e}")),
        }
        let pair = Pair::new()?;
        shape(&pair, sender, fifo);
        let mut rig = Self {
            pair,
            fifo,
            sender,
            idle_ping_ms: Vec::new(),
        };
        // The first echo also waits for neighbour discovery; the median
        // ignores it.
        rig.idle_ping_ms = rig.ping(50, Duration::from_millis(10)).finish_rtts();
        Some(rig)
    }

    /// The median idle round trip, milliseconds.
    pub(crate) fn base_ms(&self) -> f64 {
        median(&self.idle_ping_ms)
    }

    /// Starts `count` echo requests, one every `every`, from the load's sender
    /// to the other side, so each waits in the queue on the way out.
    pub(crate) fn ping(&self, count: u32, every: Duration) -> Ping {
        let peer = match self.sender {
            Side::Client => &self.pair.server_ip,
            Side::Server => &self.pair.client_ip,
        };
        let n = count.to_string();
        let i = format!("{:.3}", every.as_secs_f64());
        // -W: an echo lost in a full queue is not waited for past the run.
        let bg = self.pair.spawn(
            self.sender,
            &["ping", "-n", "-c", &n, "-i", &i, "-W", "2", peer],
        );
        Ping {
            bg,
            within: every * count + Duration::from_secs(5),
        }
    }

    /// rperf3's client arguments for the load (`-R` when the server sends).
    pub(crate) fn load_args(&self, secs: &'static str) -> Vec<&'static str> {
        let mut args = LOAD.to_vec();
        args.extend(["-t", secs]);
        if self.sender == Side::Server {
            args.push("-R");
        }
        args
    }

    /// The TCP goodput the shaper allows, bits per second: it counts whole
    /// frames, and TCP/IP headers with timestamps are 20 + 20 + 12 bytes of
    /// each `sender`-side MTU.
    pub(crate) fn tcp_goodput(&self) -> f64 {
        let link = self
            .pair
            .on(self.sender, &["ip", "link", "show", "dev", DEV]);
        let mtu: u32 = link
            .split_whitespace()
            .skip_while(|w| *w != "mtu")
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or_else(|| panic!("no mtu in {link}"));
        RATE * f64::from(mtu - 52) / f64::from(mtu + super::ETH_HEADER)
    }

    /// Starts sampling the bottleneck's backlog in the background.
    pub(crate) fn sample_backlog(&self) -> Sampler {
        self.sample_backlog_on(self.sender, self.fifo)
    }

    /// A second bottleneck, `fifo` long, on the egress of `side` (the other
    /// side of the load's), for loads both ways.
    pub(crate) fn shape_too(&self, side: Side, fifo: Fifo) {
        assert_ne!(side, self.sender, "{side:?} is already shaped");
        shape(&self.pair, side, fifo);
    }

    /// Shrinks the tbf's bucket below a GSO train, so that it cuts a TCP
    /// load's 64 KB trains into packets as they enter. Whole, the train at
    /// the head of the queue has paid part of its way in tokens already
    /// (half of its 5 ms on average), so a packet behind it waits less than
    /// the backlog says: one-way trips read 5-12% under the backlog then,
    /// and within 1% of it with the trains cut.
    pub(crate) fn cut_trains(&self) {
        tbf(&self.pair, self.sender, "change", SMALL_BURST, self.fifo);
    }

    /// Starts sampling the backlog of the bottleneck on `side`'s egress,
    /// `fifo` long.
    pub(crate) fn sample_backlog_on(&self, side: Side, fifo: Fifo) -> Sampler {
        Sampler::start(self.pair.ns(side).to_string(), fifo.limit() / 2)
    }
}

/// The tbf's bucket: 64 KB, whole GSO trains pass.
const BURST_ARG: &str = "64kb";
/// The tbf's bucket when a TCP load's GSO trains are cut into packets.
const SMALL_BURST: &str = "10kb";

/// The 100 Mbit/s tbf with `fifo`'s queue on `side`'s egress.
fn shape(pair: &Pair, side: Side, fifo: Fifo) {
    tbf(pair, side, "add", BURST_ARG, fifo);
}

/// `tc qdisc add|change` of the rig's 100 Mbit/s tbf on `side`'s egress.
fn tbf(pair: &Pair, side: Side, verb: &str, burst: &str, fifo: Fifo) {
    pair.on(
        side,
        &[
            "tc",
            "qdisc",
            verb,
            "dev",
            DEV,
            "root",
            "tbf",
            "rate",
            "100mbit",
            "burst",
            burst,
            "latency",
            fifo.latency(),
        ],
    );
}

/// A running `ping`.
pub(crate) struct Ping {
    bg: Bg,
    within: Duration,
}

impl Ping {
    /// Waits for it to end; the round trips it printed, milliseconds.
    pub(crate) fn finish_rtts(self) -> Vec<f64> {
        let d = self.bg.finish(self.within);
        assert!(d.status.is_some(), "ping did not end: {d}");
        let rtts = ping_rtts(&d.stdout);
        assert!(!rtts.is_empty(), "no round trips from ping: {d}");
        rtts
    }
}

/// One look at the qdisc.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Backlog {
    pub(crate) at: Instant,
    pub(crate) bytes: u64,
    pub(crate) packets: u64,
}

/// A background thread that runs `tc -s qdisc show` in the bottleneck's
/// namespace over and over and keeps every backlog it saw; beside it, how
/// late the host wakes a sleeping thread (a round trip ends at a read).
pub(crate) struct Sampler {
    /// The least backlog that counts as a full queue.
    full_from: u64,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Backlog>>>,
    thread: Option<JoinHandle<()>>,
    wake: Option<WakeProbe>,
}

/// What a [`Sampler`] saw over a run: its backlog samples (the struct reads
/// as them) and the 90th percentile of how late its probe's naps ended.
pub(crate) struct Sampled {
    pub(crate) backlog: Vec<Backlog>,
    pub(crate) wake_late: Duration,
}

impl std::ops::Deref for Sampled {
    type Target = Vec<Backlog>;
    fn deref(&self) -> &Vec<Backlog> {
        &self.backlog
    }
}

impl Sampler {
    fn start(ns: String, full_from: u64) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, v) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let args = [
                "ip", "netns", "exec", &ns, "tc", "-s", "qdisc", "show", "dev", DEV,
            ];
            while !s.load(Ordering::Relaxed) {
                let at = Instant::now();
                let out = run(&args, TOOL_TIMEOUT)
                    .unwrap_or_else(|e| panic!("cannot run tc: {e}"))
                    .ok();
                let (bytes, packets) = backlog(&out);
                v.lock().unwrap().push(Backlog { at, bytes, packets });
                // Each look costs a process or two; this keeps them to a
                // share of one core the load hardly notices.
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Self {
            full_from,
            stop,
            seen,
            thread: Some(thread),
            wake: Some(WakeProbe::start()),
        }
    }

    /// Everything seen so far.
    pub(crate) fn seen(&self) -> Vec<Backlog> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits until the queue is full: it holds at least half the tbf's limit
    /// and grew by less than 2% over the last 300 ms. Panics with the samples
    /// after `within`.
    pub(crate) fn wait_full(&self, within: Duration) -> u64 {
        const WINDOW: Duration = Duration::from_millis(300);
        let deadline = Instant::now() + within;
        loop {
            let seen = self.seen();
            if let Some(last) = seen.last() {
                let max_between = |from: Duration, to: Duration| {
                    seen.iter()
                        .filter(|b| {
                            let age = last.at.saturating_duration_since(b.at);
                            age >= from && age < to
                        })
                        .map(|b| b.bytes)
                        .max()
                };
                if let (Some(now), Some(before)) = (
                    max_between(Duration::ZERO, WINDOW),
                    max_between(WINDOW, 2 * WINDOW),
                ) {
                    if before >= self.full_from && now * 100 <= before * 102 {
                        return now;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "the queue did not fill within {within:?}; backlog samples (bytes): {:?}",
                seen.iter().map(|b| b.bytes).collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until a sample shows a backlog of at least `bytes` (a load has
    /// started to queue). Panics with the samples after `within`.
    pub(crate) fn wait_backlog(&self, bytes: u64, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.seen().iter().any(|b| b.bytes >= bytes) {
            assert!(
                Instant::now() < deadline,
                "no backlog of {bytes} bytes within {within:?}: {:?}",
                self.seen().iter().map(|b| b.bytes).collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops sampling and returns every sample.
    pub(crate) fn stop(mut self) -> Sampled {
        self.stop.store(true, Ordering::Relaxed);
        let wake_late = self.wake.take().map(WakeProbe::stop).unwrap_or_default();
        if let Some(t) = self.thread.take() {
            t.join().expect("backlog sampler panicked");
        }
        Sampled {
            backlog: self.seen(),
            wake_late,
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How a queue-rig run is judged: every figure is held to the rig's own
/// precision, and a run with figures off is tried again only when the rig
/// itself shows what a busy machine does to it.
pub(crate) const TOLERANCE: f64 = 0.03;

/// The longest pause between two backlog samples of a run the machine left
/// alone (a sample every 20 ms plus two `ip netns exec tc` processes).
const SAMPLER_STALL: Duration = Duration::from_millis(150);

/// What in a run's samples can explain a figure off by more than
/// [`TOLERANCE`] without rperf3 being wrong: too few samples for a median,
/// a sampler that stalled or naps that ended late (the machine was busy),
/// or, with `steady` (a UDP load above the rate keeps the FIFO at its
/// limit), a queue that drained while it was measured (the load's sender was
/// starved). Empty when the queue was full and watched throughout and the
/// host prompt: then a figure off is rperf3's.
pub(crate) fn load_evidence(samples: &Sampled, window: &[Backlog], steady: bool) -> Vec<String> {
    let mut seen = Vec::new();
    if samples.wake_late > super::wake_probe::LATE {
        seen.push(format!(
            "the host woke a sleeping thread {:?} late (90th percentile)",
            samples.wake_late
        ));
    }
    if window.len() < 30 {
        seen.push(format!(
            "only {} backlog samples in the window",
            window.len()
        ));
    }
    let stall = samples
        .windows(2)
        .map(|w| w[1].at.saturating_duration_since(w[0].at))
        .max()
        .unwrap_or_default();
    if stall > SAMPLER_STALL {
        seen.push(format!("the backlog sampler stalled for {stall:?}"));
    }
    if steady && !window.is_empty() {
        let bytes: Vec<f64> = window.iter().map(|b| b.bytes as f64).collect();
        let mid = median(&bytes);
        let low = bytes.iter().copied().fold(f64::MAX, f64::min);
        if low < 0.9 * mid {
            seen.push(format!(
                "the queue drained to {low:.0} bytes (median {mid:.0}) while measured"
            ));
        }
    }
    seen
}

/// Every check's line, passed or not, one per line (for the context).
pub(crate) fn check_lines(checks: &[Result<String, String>]) -> String {
    checks
        .iter()
        .map(|c| c.as_ref().unwrap_or_else(|e| e).as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Pass when nothing is `off`; try again when the rig shows `evidence` of a
/// disturbed load; otherwise panic at once: the queue was full and steady,
/// so the figures off are rperf3's error, however often it is tried.
pub(crate) fn judge(off: &[String], evidence: &[String], ctx: &str) -> super::Attempt {
    if off.is_empty() {
        return super::Attempt::Pass;
    }
    assert!(
        !evidence.is_empty(),
        "off with the queue full and watched throughout (nothing a busy machine does \
         explains it):\n{}\n{ctx}",
        off.join("\n")
    );
    super::Attempt::Disturbed(format!(
        "{}\nexplained by: {}\n{ctx}",
        off.join("\n"),
        evidence.join("; ")
    ))
}

/// The samples taken between `from` and `to`.
pub(crate) fn between(samples: &[Backlog], from: Instant, to: Instant) -> Vec<Backlog> {
    samples
        .iter()
        .filter(|b| b.at >= from && b.at <= to)
        .copied()
        .collect()
}

/// The queueing delay a backlog of `bytes` means at the bottleneck's rate, ms.
pub(crate) fn queue_delay_ms(bytes: f64) -> f64 {
    bytes * 8.0 / RATE * 1e3
}

/// The median backlog of `samples` as a queueing delay, milliseconds.
pub(crate) fn median_queue_delay_ms(samples: &[Backlog]) -> f64 {
    let bytes: Vec<f64> = samples.iter().map(|b| b.bytes as f64).collect();
    queue_delay_ms(median(&bytes))
}

/// The responsiveness method's TM(): the mean of the best 95%.
pub(crate) fn trimmed_mean(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let keep = ((s.len() as f64) * 0.95).ceil().max(1.0) as usize;
    s[..keep].iter().sum::<f64>() / keep as f64
}

/// Where the median of `n` round trips taken at random moments of a run may
/// fall, given the delays the backlog showed over that run: between its
/// quantiles 0.5 -+ 3 * 0.5 / sqrt(n) (the order statistics' bound, 99.7%
/// of the time for probes that see the queue as the samples do), each
/// widened by the rig's [`TOLERANCE`]. A steady queue gives a narrow band;
/// a TCP-held one that swings by milliseconds, a wide one for few probes.
pub(crate) fn median_band(delays: &[f64], n: f64) -> (f64, f64) {
    assert!(!delays.is_empty() && n >= 1.0, "a band of nothing");
    let mut s = delays.to_vec();
    s.sort_by(f64::total_cmp);
    let half = (1.5 / n.sqrt()).min(0.5);
    let at = |q: f64| s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)];
    (
        at(0.5 - half) * (1.0 - TOLERANCE),
        at(0.5 + half) * (1.0 + TOLERANCE),
    )
}

/// Whether `measured`, the median of `n` independent round trips, lies in
/// [`median_band`] of `delays`; the comparison as a line either way.
pub(crate) fn in_band(what: &str, measured: f64, delays: &[f64], n: f64) -> Result<String, String> {
    let (lo, hi) = median_band(delays, n);
    let line = format!(
        "{what}: {measured:.3} vs {:.3} (allowed {lo:.3}-{hi:.3} for {n:.0} probes)",
        median(delays)
    );
    if (lo..=hi).contains(&measured) {
        Ok(line)
    } else {
        Err(line)
    }
}

/// The median of `v` (the mean of the middle two for an even count).
pub(crate) fn median(v: &[f64]) -> f64 {
    assert!(!v.is_empty(), "median of nothing");
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// `(bytes, packets)` of the `backlog 1120578b 753p` line of `tc -s qdisc
/// show` (iproute2 may print the size with a K or M prefix, in 1024s).
pub(crate) fn backlog(tc: &str) -> (u64, u64) {
    let mut words = tc.split_whitespace();
    while let Some(w) = words.next() {
        if w != "backlog" {
            continue;
        }
        let size = words.next().unwrap_or("");
        let packets = words.next().unwrap_or("");
        let bytes = size.strip_suffix('b').and_then(|s| {
            let (digits, scale) = match s.chars().last()? {
                'K' => (&s[..s.len() - 1], 1024),
                'M' => (&s[..s.len() - 1], 1024 * 1024),
                _ => (s, 1),
            };
            Some(digits.parse::<u64>().ok()? * scale)
        });
        let packets = packets.strip_suffix('p').and_then(|p| p.parse().ok());
        if let (Some(b), Some(p)) = (bytes, packets) {
            return (b, p);
        }
        break;
    }
    panic!("no backlog in tc output:\n{tc}")
}

/// The round trips (`time=0.061 ms`) of `ping`'s replies, milliseconds.
pub(crate) fn ping_rtts(out: &str) -> Vec<f64> {
    out.lines()
        .filter(|l| l.contains("bytes from"))
        .map(|l| {
            l.split_whitespace()
                .find_map(|w| w.strip_prefix("time="))
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("no time= in ping line {l:?}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backlog_in_bytes_and_packets() {
        let tc = "qdisc tbf 80c4: root refcnt 3 rate 100Mbit burst 64Kb lat 150ms \n Sent \
                  95012 bytes 64 pkt (dropped 0, overlimits 3 requeues 0) \n backlog 1120578b \
                  753p requeues 0\n";
        assert_eq!(backlog(tc), (1_120_578, 753));
        assert_eq!(backlog(" backlog 0b 0p requeues 0"), (0, 0));
        assert_eq!(backlog(" backlog 12Kb 9p requeues 0"), (12 * 1024, 9));
    }

    #[test]
    #[should_panic(expected = "no backlog")]
    fn backlog_missing_is_an_error() {
        backlog("qdisc noqueue 0: root refcnt 2");
    }

    #[test]
    fn ping_round_trips_from_replies_only() {
        let out = "PING 10.77.0.1 (10.77.0.1) 56(84) bytes of data.\n64 bytes from 10.77.0.1: \
                   icmp_seq=1 ttl=64 time=0.061 ms\n64 bytes from 10.77.0.1: icmp_seq=2 ttl=64 \
                   time=151 ms\n\n--- 10.77.0.1 ping statistics ---\n2 packets transmitted, 2 \
                   received, 0% packet loss, time 504ms\nrtt min/avg/max/mdev = \
                   0.061/75.5/151/75.4 ms\n";
        assert_eq!(ping_rtts(out), vec![0.061, 151.0]);
    }

    #[test]
    fn median_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!((queue_delay_ms(1_875_000.0) - 150.0).abs() < 1e-9);
    }

    #[test]
    fn a_median_band_narrows_with_more_probes_and_a_steadier_queue() {
        let swinging: Vec<f64> = (0..=100).map(f64::from).collect();
        let (lo, hi) = median_band(&swinging, 9.0);
        assert_eq!((lo, hi), (0.0, 100.0 * 1.03));
        let (lo, hi) = median_band(&swinging, 100.0);
        assert!((lo - 35.0 * 0.97).abs() < 1e-9 && (hi - 65.0 * 1.03).abs() < 1e-9);
        let steady = vec![10.0; 50];
        let (lo, hi) = median_band(&steady, 100.0);
        assert!((lo - 9.7).abs() < 1e-9 && (hi - 10.3).abs() < 1e-9);
        assert!(in_band("x", 10.2, &steady, 100.0).is_ok());
        assert!(in_band("x", 10.4, &steady, 100.0).is_err());
    }

    #[test]
    fn trimmed_mean_drops_the_worst_five_percent() {
        let mut v: Vec<f64> = (1..=19).map(f64::from).collect();
        v.push(1000.0);
        assert_eq!(trimmed_mean(&v), 10.0);
    }
}
