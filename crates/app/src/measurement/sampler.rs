//! Turns live counters into interval samples and end totals (the reporter's input).
//!
//! Counters only ever grow; the sampler keeps the values at the last tick and at the
//! stream's (post-omit) start, and reads TCP_INFO for local TCP senders.

use std::time::Instant;

use rperf3_engine::counters::CounterSnapshot;
use rperf3_proto::UdpRecvStats;
use rperf3_report::input::{
    IntervalInput, SampleExtra, StreamFinal, StreamSample, TcpSample, TcpTotals, UdpRecvSample,
    UdpTotals,
};
use rperf3_sys::tcp_info::TcpInfo;

use crate::measurement::streams::LiveStream;

#[derive(Debug, Default, Clone)]
struct Track {
    base: CounterSnapshot,
    last: CounterSnapshot,
    retrans_base: u32,
    retrans_last: u32,
    tcp: TcpTotals,
    rtt_sum: u64,
    rtt_n: u64,
    /// UDP receiver (lost, highest seq, out-of-order) at the last tick.
    udp_last: (i64, u64, u64),
    /// UDP sender: datagrams sent when the omit period ended.
    sent_omitted: u64,
    /// UDP receiver: statistics as of the last sample (totals come from here, so
    /// they agree with the byte count of the same instant).
    udp_snap: Option<UdpRecvStats>,
}

/// Interval and total bookkeeping for the streams of one test.
#[derive(Debug)]
pub(crate) struct Sampler {
    start: Instant,
    last_tick: Instant,
    omitting: bool,
    tracks: Vec<Track>,
}

impl Sampler {
    /// Starts sampling at `start` (TEST_START); `omitting` while `-O` runs.
    pub(crate) fn new(streams: &[LiveStream], start: Instant, omitting: bool) -> Self {
        let tracks = streams
            .iter()
            .map(|s| {
                let r = s.tcp_info().map(|i| i.total_retrans).unwrap_or(0);
                Track {
                    retrans_base: r,
                    retrans_last: r,
                    ..Track::default()
                }
            })
            .collect();
        Self {
            start,
            last_tick: start,
            omitting,
            tracks,
        }
    }

    /// Whether the omit period is still running.
    pub(crate) fn omitting(&self) -> bool {
        self.omitting
    }

    /// When the last interval ended.
    pub(crate) fn last_tick(&self) -> Instant {
        self.last_tick
    }

    /// Ends the omit period at `now`: totals and times restart from here.
    pub(crate) fn end_omit(&mut self, streams: &[LiveStream], now: Instant) {
        self.omitting = false;
        self.start = now;
        self.last_tick = now;
        for (t, s) in self.tracks.iter_mut().zip(streams) {
            let mut snap = s.counters.snapshot();
            s.with_udp_stats(|u, c| {
                u.reset_at_omit_end();
                t.udp_last = (u.lost, u.packets, u.out_of_order);
                t.udp_snap = Some(u.clone());
                snap = c;
            });
            t.base = snap;
            t.last = snap;
            let r = s
                .tcp_info()
                .map(|i| i.total_retrans)
                .unwrap_or(t.retrans_last);
            t.retrans_base = r;
            t.retrans_last = r;
            t.tcp = TcpTotals::default();
            t.rtt_sum = 0;
            t.rtt_n = 0;
            t.sent_omitted = snap.blocks;
        }
    }

    /// Closes the interval that ends at `now`.
    pub(crate) fn sample(&mut self, streams: &[LiveStream], now: Instant) -> IntervalInput {
        let rel = |t: Instant| t.saturating_duration_since(self.start).as_secs_f64();
        let (start, end) = (rel(self.last_tick), rel(now));
        let omitted = self.omitting;
        let mut out = Vec::with_capacity(streams.len());
        for (t, s) in self.tracks.iter_mut().zip(streams) {
            let (snap, udp) = match s.udp_snapshot() {
                Some((c, u)) => (c, Some(u)),
                None => (s.counters.snapshot(), None),
            };
            let bytes = snap.bytes - t.last.bytes;
            let blocks = snap.blocks - t.last.blocks;
            t.last = snap;
            let extra = if let Some(info) = s.tcp_info() {
                SampleExtra::TcpSender(track_tcp(t, &info))
            } else if let Some(u) = udp {
                let (lost, packets, ooo) = t.udp_last;
                t.udp_last = (u.lost, u.packets, u.out_of_order);
                let sample = UdpRecvSample {
                    jitter: u.jitter.seconds,
                    lost: u.lost - lost,
                    packets: u.packets as i64 - packets as i64,
                    out_of_order: u.out_of_order.saturating_sub(ooo),
                };
                t.udp_snap = Some(u);
                SampleExtra::UdpReceiver(sample)
            } else if s.is_udp() {
                SampleExtra::UdpSender { packets: blocks }
            } else {
                SampleExtra::None
            };
            out.push(StreamSample {
                start,
                end,
                bytes,
                omitted,
                extra,
            });
        }
        self.last_tick = now;
        IntervalInput {
            latency: None,
            bounceback: None,
            streams: out,
        }
    }

    /// Totals at the end of the test (call after the last [`Sampler::sample`]).
    pub(crate) fn finals(&self, streams: &[LiveStream]) -> Vec<StreamFinal> {
        let duration = self
            .last_tick
            .saturating_duration_since(self.start)
            .as_secs_f64();
        self.tracks
            .iter()
            .zip(streams)
            .map(|(t, s)| StreamFinal {
                bytes: t.last.bytes - t.base.bytes,
                duration,
                tcp: s.tcp_info().map(|_| {
                    let mut tot = t.tcp;
                    tot.mean_rtt = t.rtt_sum.checked_div(t.rtt_n).unwrap_or(0);
                    tot
                }),
                udp: s.is_udp().then(|| udp_totals(t)),
            })
            .collect()
    }

    /// Counters moved on all streams since the (post-omit) start, by direction:
    /// (sent, received).
    pub(crate) fn totals(&self, streams: &[LiveStream]) -> (CounterSnapshot, CounterSnapshot) {
        let mut sent = CounterSnapshot::default();
        let mut recv = CounterSnapshot::default();
        for (t, s) in self.tracks.iter().zip(streams) {
            let now = s.counters.snapshot();
            let side = if s.info.sender { &mut sent } else { &mut recv };
            side.bytes += now.bytes - t.base.bytes;
            side.blocks += now.blocks - t.base.blocks;
        }
        (sent, recv)
    }
}

/// UDP totals as of the last sample: the receiver's statistics, or the sender's
/// datagram counts.
fn udp_totals(t: &Track) -> UdpTotals {
    match &t.udp_snap {
        Some(s) => UdpTotals {
            packets: s.packets,
            omitted_packets: s.omitted_packets,
            lost: s.lost,
            omitted_lost: s.omitted_lost,
            out_of_order: s.out_of_order,
            omitted_out_of_order: s.omitted_out_of_order,
            jitter: s.jitter.seconds,
        },
        None => UdpTotals {
            packets: t.last.blocks,
            omitted_packets: t.sent_omitted,
            ..UdpTotals::default()
        },
    }
}

fn track_tcp(t: &mut Track, info: &TcpInfo) -> TcpSample {
    let retransmits = u64::from(info.total_retrans.saturating_sub(t.retrans_last));
    t.retrans_last = info.total_retrans;
    let tot = &mut t.tcp;
    tot.retransmits = u64::from(info.total_retrans.saturating_sub(t.retrans_base));
    tot.reorder = info.reord_seen;
    tot.max_snd_cwnd = tot.max_snd_cwnd.max(info.snd_cwnd_bytes);
    tot.max_snd_wnd = tot.max_snd_wnd.max(u64::from(info.snd_wnd));
    tot.max_rtt = tot.max_rtt.max(u64::from(info.rtt));
    tot.min_rtt = if t.rtt_n == 0 {
        u64::from(info.rtt)
    } else {
        tot.min_rtt.min(u64::from(info.rtt))
    };
    t.rtt_sum += u64::from(info.rtt);
    t.rtt_n += 1;
    TcpSample {
        retransmits,
        snd_cwnd: info.snd_cwnd_bytes,
        snd_wnd: u64::from(info.snd_wnd),
        rtt: u64::from(info.rtt),
        rttvar: u64::from(info.rttvar),
        pmtu: u64::from(info.pmtu),
        reorder: info.reord_seen,
    }
}
