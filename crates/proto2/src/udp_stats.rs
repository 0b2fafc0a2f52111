//! iperf 2's UDP receiver statistics, as iperf 2 computes them, without
//! sockets or clocks: the caller hands in each message and its arrival time.
//! Jitter and transit figures are the latency core's.

use std::time::Duration;

use rperf3_latency::{Jitter, Transit};

use crate::{DatagramHeader, Timeval};

/// What a receiver made of one message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Datagrams counted.
    pub blocks: u64,
    /// Bytes counted.
    pub bytes: u64,
    /// The FIN came: the flow has ended.
    pub done: bool,
}

/// A UDP receiver's counters, as iperf 2 computes them. Loss and reordering
/// come from sequence numbers only: a forward gap counts as lost, a datagram
/// at or below the highest number seen as out of order (a duplicate too), and
/// every out-of-order datagram cancels one loss. The FIN counts as a received
/// datagram and its number as the highest seen, as iperf 2's totals show.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Udp2Stats {
    /// Datagrams carry 64-bit sequence numbers.
    pub seq64: bool,
    /// Bytes received, the FIN included.
    pub bytes: u64,
    /// Datagrams received, the FIN included.
    pub datagrams: u64,
    /// Highest sequence number seen (the FIN's absolute value included):
    /// the datagrams the sender sent up to there.
    pub highest: u64,
    /// Sum of forward gaps in the sequence.
    pub gaps: u64,
    /// Datagrams at or below the highest number seen.
    pub out_of_order: u64,
    /// RFC 1889 jitter estimate over the transits of consecutive datagrams
    /// (2.2.1 reports its mean).
    pub jitter: Jitter,
    /// Transit times of the whole flow.
    pub transit: Transit,
    /// Transit times since [`Udp2Stats::take_interval`] last ran.
    pub interval: Transit,
    /// The FIN arrived.
    pub fin: bool,
    /// The reader's buffer (`-l`) when it is a limit: a datagram longer
    /// than it counts as truncated, as 2.2.1's reads of it would be (they
    /// return `-l` bytes; rperf3 counts every byte that arrived). 0: none.
    pub read_len: usize,
    /// Datagrams longer than `read_len`.
    pub truncated: u64,
    /// Wall clock (µs since the epoch) at the first datagram's arrival.
    pub first_us: i64,
    /// Wall clock (µs since the epoch) at the last datagram's arrival.
    pub last_us: i64,
    /// Keep every data datagram's (send stamp, arrival) in `samples`, µs
    /// since the epoch (iperf 2's `--histograms`); the owner drains them.
    pub keep_samples: bool,
    /// Samples kept since the owner last drained them.
    pub samples: Vec<(i64, i64)>,
}

impl Udp2Stats {
    /// Fresh counters for a flow whose datagrams have 64-bit numbers or not.
    pub fn new(seq64: bool) -> Self {
        Self {
            seq64,
            ..Self::default()
        }
    }

    /// Lost datagrams: gaps less reordering, never below 0.
    pub fn lost(&self) -> u64 {
        self.gaps.saturating_sub(self.out_of_order)
    }

    /// Datagrams expected so far (iperf 2's "Total"): the highest number seen.
    pub fn total(&self) -> u64 {
        self.highest
    }

    /// Accounts one datagram: its sequence number and send stamp, the local
    /// wall clock at arrival (µs since the epoch) and its size. Returns whether
    /// it was the FIN.
    pub fn on_datagram(&mut self, seq: i64, sent: Timeval, arrival_us: i64, size: usize) -> bool {
        if self.datagrams == 0 {
            self.first_us = arrival_us;
        }
        self.last_us = arrival_us;
        self.bytes += size as u64;
        self.datagrams += 1;
        let fin = seq < 0;
        let n = seq.unsigned_abs();
        let in_order = n > self.highest;
        if in_order {
            self.gaps += n - self.highest - 1;
            self.highest = n;
        } else if !fin {
            self.out_of_order += 1;
        }
        // Transit, jitter and latency take every datagram in order, the FIN
        // too (2.2.1 reads its number as positive and times it like data),
        // and no late one; 2.2.1's histograms hold the data only.
        if in_order {
            self.on_transit(sent, arrival_us, !fin);
        }
        if fin {
            self.fin = true;
            return true;
        }
        false
    }

    fn on_transit(&mut self, sent: Timeval, arrival_us: i64, sample: bool) {
        let transit_us = arrival_us - sent.as_micros();
        self.jitter.add(transit_us);
        if self.keep_samples && sample {
            self.samples.push((sent.as_micros(), arrival_us));
        }
        let transit = transit_us as f64 / 1e6;
        self.transit.add(transit);
        self.interval.add(transit);
    }

    /// Accounts one received message: a datagram (`seg` 0) or a UDP_GRO train
    /// cut every `seg` bytes. Pieces shorter than a datagram header are not
    /// test data; anything after the FIN is ignored. Returns the datagrams and
    /// bytes counted and whether the FIN came.
    pub fn on_message(&mut self, msg: &[u8], seg: usize, arrival_us: i64) -> Counted {
        let mut b = Counted::default();
        for d in msg.chunks(if seg == 0 { msg.len().max(1) } else { seg }) {
            let Some(h) = DatagramHeader::decode(d, self.seq64) else {
                continue;
            };
            b.blocks += 1;
            b.bytes += d.len() as u64;
            if self.read_len > 0 && d.len() > self.read_len {
                self.truncated += 1;
            }
            if self.on_datagram(h.seq, h.sent, arrival_us, d.len()) {
                b.done = true;
                break;
            }
        }
        b
    }

    /// The transit statistics since the last call, restarting them.
    pub fn take_interval(&mut self) -> Transit {
        std::mem::take(&mut self.interval)
    }

    /// From the first datagram's arrival to the last's.
    pub fn span(&self) -> Duration {
        Duration::from_micros((self.last_us - self.first_us).max(0) as u64)
    }

    /// The mean of the jitter estimate over the flow (2.2.1's report value).
    pub fn jitter_mean(&self) -> f64 {
        self.jitter.mean()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tv(us: i64) -> Timeval {
        Timeval::from_since_epoch(Duration::from_micros(us as u64))
    }

    #[test]
    fn gaps_are_lost_until_late_datagrams_fill_them() {
        let mut s = Udp2Stats::new(true);
        for seq in [1, 2, 5, 3] {
            s.on_datagram(seq, tv(0), 10, 100);
        }
        assert_eq!((s.highest, s.gaps, s.out_of_order, s.lost()), (5, 2, 1, 1));
        // A duplicate is out of order too, and cancels a loss as iperf 2 does.
        s.on_datagram(3, tv(0), 10, 100);
        assert_eq!((s.out_of_order, s.lost()), (2, 0));
        assert_eq!(s.datagrams, 5);
    }

    #[test]
    fn the_fin_counts_as_a_datagram_and_the_highest_number() {
        let mut s = Udp2Stats::new(true);
        for seq in 1..=101 {
            assert!(!s.on_datagram(seq, tv(0), 5, 1470));
        }
        assert!(s.on_datagram(-102, tv(0), 5, 1470));
        // As the 2.2.1 server printed for data 1..101 and FIN -102: 0/102.
        assert_eq!((s.lost(), s.total(), s.datagrams), (0, 102, 102));
        // 2.2.1 reads the FIN's number as positive and times it like data.
        assert_eq!(s.transit.count, 102);
        assert!(s.fin);
    }

    #[test]
    fn a_late_datagram_is_counted_but_not_timed() {
        let mut s = Udp2Stats::new(true);
        // Transits 1, 2, 3 and 9 ms (3, late): only the datagrams in order
        // make differences, |2-1| and |3-2|, and the latency.
        for (seq, at) in [(1, 1_000), (2, 2_000), (4, 3_000), (3, 9_000)] {
            s.on_datagram(seq, tv(0), at, 100);
        }
        assert_eq!((s.transit.count, s.out_of_order), (3, 1));
        assert_eq!(s.transit.max, 0.003);
        let j1 = 0.001 / 16.0;
        let j2 = j1 + (0.001 - j1) / 16.0;
        assert!(
            (s.jitter.seconds - j2).abs() < 1e-15,
            "{}",
            s.jitter.seconds
        );
    }

    #[test]
    fn a_late_joiner_counts_what_it_missed_as_lost() {
        let mut s = Udp2Stats::new(true);
        for seq in 87..=171 {
            s.on_datagram(seq, tv(0), 5, 1470);
        }
        assert_eq!((s.lost(), s.total()), (86, 171));
    }

    #[test]
    fn jitter_is_rfc1889_smoothing_of_transit_differences() {
        let mut s = Udp2Stats::new(true);
        // Transits 100, 300, 200 µs: |D| = 200 then 100.
        s.on_datagram(1, tv(1_000_000), 1_000_100, 10);
        assert_eq!(s.jitter.seconds, 0.0);
        s.on_datagram(2, tv(1_000_000), 1_000_300, 10);
        let j1 = 200e-6 / 16.0;
        assert!((s.jitter.seconds - j1).abs() < 1e-12);
        s.on_datagram(3, tv(1_000_000), 1_000_200, 10);
        let j2 = j1 + (100e-6 - j1) / 16.0;
        assert!((s.jitter.seconds - j2).abs() < 1e-12);
        assert!((s.jitter_mean() - (j1 + j2) / 2.0).abs() < 1e-12);
        assert!((s.transit.mean - 200e-6).abs() < 1e-12);
        assert!((s.transit.min - 100e-6).abs() < 1e-12);
        assert!((s.transit.max - 300e-6).abs() < 1e-12);
        assert!((s.transit.stdev() - 100e-6).abs() < 1e-9);
        assert_eq!(s.take_interval().count, 3);
        assert_eq!(s.interval.count, 0);
    }

    #[test]
    fn trains_are_split_and_nothing_after_the_fin_counts() {
        let mut s = Udp2Stats::new(true);
        let mut msg = vec![0u8; 4 * 64];
        for (i, seq) in [1i64, 2, -3, 4].iter().enumerate() {
            DatagramHeader {
                seq: *seq,
                sent: tv(0),
            }
            .encode(&mut msg[i * 64..], true);
        }
        let b = s.on_message(&msg, 64, 0);
        assert_eq!(
            b,
            Counted {
                blocks: 3,
                bytes: 192,
                done: true
            }
        );
        // A piece too short for a header is not a datagram.
        let mut t = Udp2Stats::new(true);
        assert_eq!(t.on_message(&msg[..70], 64, 0).blocks, 1);
    }
}
