//! `--connect-only[=n]`: the client only connects and closes, timing each
//! three-way handshake, as 2.2.1 does; its connection lines carry each
//! time and a closing `[ CT]` line their spread.
//!
//! 2.2.1's own loop ignores `n` and connects back to back until `-t`
//! (tens of thousands of connects a second on loopback); here `n` is what
//! 2.2.1's help says: the connects each stream makes (10 without a count,
//! 0 for as many as `-t` allows), `-i` apart when given (then unbounded
//! without a count, as in 2.2.1), and never past `-t`.

use std::io;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rperf3_latency::Transit;
use rperf3_report::iperf2::model::{Event2, Tag2};
use rperf3_report::iperf2::{connect_times_line, Report2};

use super::config::End2;
use super::tcp_setup;
use crate::Interrupt;

/// Connects per stream without a count and without `-i`.
const DEFAULT_COUNT: u32 = 10;

/// What the loop is asked to do.
pub(crate) struct Plan<'a> {
    /// `--connect-only`'s count, if given.
    pub(crate) count: Option<u32>,
    /// `-P`.
    pub(crate) streams: u32,
    /// `-i`: the spacing of rounds.
    pub(crate) every: Option<Duration>,
    /// `-t` or `-n` (which makes one round).
    pub(crate) end: End2,
    /// The device the client is bound to (`-e`'s `%dev`).
    pub(crate) device: Option<&'a str>,
}

impl Plan<'_> {
    /// Rounds to make: `None` for as many as the time allows.
    fn rounds(&self) -> Option<u32> {
        if let End2::Bytes(_) = self.end {
            return Some(1);
        }
        match (self.count, self.every) {
            (Some(0), _) | (None, Some(_)) => None,
            (Some(n), _) => Some(n),
            (None, None) => Some(DEFAULT_COUNT),
        }
    }
}

/// Runs the rounds: `connect` makes stream id's connection (with its
/// handshake's time), `failed` reports one that could not. Exit status 0, as 2.2.1's.
pub(crate) fn run(
    plan: &Plan<'_>,
    connect: &dyn Fn(u32) -> io::Result<(TcpStream, Duration)>,
    failed: &dyn Fn(u32, &io::Error),
    report: &dyn Report2,
    intr: &mut Interrupt,
) -> i32 {
    let start = Instant::now();
    let deadline = match plan.end {
        End2::Time(d) => Some(start + d),
        End2::Bytes(_) => None,
    };
    let rounds = plan.rounds();
    let mut times = Transit::default();
    let mut errors = 0u64;
    let mut round = 0u32;
    while rounds.is_none_or(|n| round < n) && !intr.triggered() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        for id in 1..=plan.streams.max(1) {
            match connect(id) {
                Ok((s, ct)) => {
                    times.add(ct.as_secs_f64() * 1e3);
                    if let Ok(mut line) = tcp_setup::connection(Tag2::Id(id), &s, &[], plan.device)
                    {
                        line.connect_time = Some(ct);
                        line.connect_only = true;
                        report.event(Event2::Connected(line));
                    }
                }
                Err(e) => {
                    errors += 1;
                    failed(id, &e);
                }
            }
        }
        round += 1;
        if let Some(every) = plan.every {
            let next = start + every * round;
            let until = deadline.map_or(next, |d| next.min(d));
            tcp_setup::wait_until(until, intr);
        }
    }
    let figures = (times.min, times.mean, times.max, times.stdev());
    if let Some(line) = connect_times_line(figures, times.count, errors) {
        report.event(Event2::Line(line));
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(count: Option<u32>, every: Option<Duration>, end: End2) -> Plan<'static> {
        Plan {
            count,
            streams: 1,
            every,
            end,
            device: None,
        }
    }

    #[test]
    fn rounds_follow_the_count_the_interval_and_the_end() {
        let t = End2::Time(Duration::from_secs(10));
        assert_eq!(plan(None, None, t).rounds(), Some(10));
        assert_eq!(plan(Some(3), None, t).rounds(), Some(3));
        assert_eq!(plan(Some(0), None, t).rounds(), None);
        assert_eq!(plan(None, Some(Duration::from_secs(1)), t).rounds(), None);
        assert_eq!(
            plan(Some(4), Some(Duration::from_secs(1)), t).rounds(),
            Some(4)
        );
        assert_eq!(plan(Some(4), None, End2::Bytes(100)).rounds(), Some(1));
    }
}
