//! The UDP receiver's statistics, computed exactly as iperf3 computes them.
//!
//! Loss, reordering and jitter are not measured but inferred from sequence numbers
//! and send times with a constant-memory algorithm (spec §7.2). Reports only agree
//! with iperf3's if we reproduce its quirks: "packets" is the highest sequence seen,
//! a late packet cancels one earlier loss, and jitter uses the absolute transit time.

use std::time::Duration;

use rperf3_latency::Jitter;

use crate::UdpHeader;

/// Per-stream receiver counters. Feed every datagram counted while the test runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UdpRecvStats {
    /// Bytes received since the start (or since the omit reset).
    pub bytes: u64,
    /// Highest sequence number seen: iperf3's receiver "packets".
    pub packets: u64,
    /// Lost packets (never negative).
    pub lost: i64,
    /// Datagrams that arrived with a sequence number not above the highest seen.
    pub out_of_order: u64,
    /// Smoothed jitter (RFC 1889) over transit times in whole microseconds:
    /// a transit between two clocks (the kernel's wall clock at arrival, a
    /// sender's monotonic stamp) is some 1.8e9 s, where an f64 of seconds
    /// keeps only tenths of a microsecond, and jitter is a difference of two.
    pub jitter: Jitter,
    /// `packets` at the end of the omit period.
    pub omitted_packets: u64,
    /// `lost` at the end of the omit period.
    pub omitted_lost: i64,
    /// `out_of_order` at the end of the omit period.
    pub omitted_out_of_order: u64,
}

impl UdpRecvStats {
    /// Fresh counters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Accounts one datagram: its header's sequence number and send time, its
    /// arrival time `now` (any clock a constant apart from the sender's:
    /// jitter reads only differences of transit times), and its size.
    pub fn on_datagram(
        &mut self,
        seq: u64,
        sent_sec: u32,
        sent_usec: u32,
        now: Duration,
        size: usize,
    ) {
        if self.bytes == 0 {
            // The first datagram (of the test, or after the omit period)
            // starts the estimate.
            self.jitter.restart();
        }
        self.bytes = self.bytes.saturating_add(size as u64);

        if seq > self.packets {
            // Forward; a gap counts as loss until late packets fill it.
            let gap = seq - 1 - self.packets;
            self.lost = self
                .lost
                .saturating_add(i64::try_from(gap).unwrap_or(i64::MAX));
            self.packets = seq;
        } else {
            self.out_of_order = self.out_of_order.saturating_add(1);
            if self.lost > 0 {
                self.lost -= 1;
            }
        }

        // Absolute difference between arrival and send time, at microsecond
        // resolution like iperf3's time arithmetic. In u64, not u128: this runs
        // once per datagram and a u128 to f64 conversion is a library call.
        let now_us = u64::try_from(now.as_micros()).unwrap_or(u64::MAX);
        let sent_us = u64::from(sent_sec) * 1_000_000 + u64::from(sent_usec);
        // iperf3 takes the transit's absolute value.
        let transit = now_us.abs_diff(sent_us);
        self.jitter.add(i64::try_from(transit).unwrap_or(i64::MAX));
    }

    /// Accounts one received message: a single datagram (`seg` 0) or a UDP_GRO
    /// train cut every `seg` bytes (the last piece may be shorter). Every
    /// datagram counts on its own, exactly as if it had been read alone; pieces
    /// too short for a header are not test data and are skipped. Returns the
    /// datagrams and bytes counted.
    pub fn on_message(
        &mut self,
        msg: &[u8],
        seg: usize,
        counters_64bit: bool,
        now: Duration,
    ) -> (u64, u64) {
        self.on_message_each(msg, seg, counters_64bit, now, |_| {})
    }

    /// [`UdpRecvStats::on_message`], handing each counted datagram's header to
    /// `each` (the one-way delay of the data reads its send time).
    pub fn on_message_each(
        &mut self,
        msg: &[u8],
        seg: usize,
        counters_64bit: bool,
        now: Duration,
        mut each: impl FnMut(&UdpHeader),
    ) -> (u64, u64) {
        // Work on a local copy: its fields live in registers for the whole
        // train instead of going through memory once per datagram.
        let mut st = self.clone();
        let (mut blocks, mut bytes) = (0u64, 0u64);
        for d in msg.chunks(if seg == 0 { msg.len().max(1) } else { seg }) {
            let Some(h) = UdpHeader::decode(d, counters_64bit) else {
                continue;
            };
            st.on_datagram(h.seq, h.sec, h.usec, now, d.len());
            each(&h);
            blocks += 1;
            bytes += d.len() as u64;
        }
        *self = st;
        (blocks, bytes)
    }

    /// The end of the omit period: snapshot the packet, loss and reordering counts
    /// (results and reports subtract them), restart byte counting and jitter. As in
    /// iperf3, the next datagram is then treated as the first for jitter.
    pub fn reset_at_omit_end(&mut self) {
        self.omitted_packets = self.packets;
        self.omitted_lost = self.lost;
        self.omitted_out_of_order = self.out_of_order;
        self.bytes = 0;
        self.jitter.restart();
    }

    /// Loss percentage as iperf3 reports it: 100 × lost / packets (0 with no packets).
    pub fn loss_percent(lost: i64, packets: u64) -> f64 {
        if packets == 0 {
            0.0
        } else {
            100.0 * lost as f64 / packets as f64
        }
    }
}

#[cfg(test)]
#[path = "udp_stats_tests.rs"]
mod tests;
