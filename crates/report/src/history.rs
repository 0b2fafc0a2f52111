//! The `-J` interval history, kept as the samples the drivers gave.
//!
//! Every interval of a `-J` run has to stay until the document is printed, and a
//! server may host a day-long test with hundreds of streams. A JSON tree per
//! stream and interval costs kilobytes (a map with string keys); a sample is a
//! few plain numbers. The samples are turned into `intervals[]` elements only
//! when the document is produced, by the same builder as before, so the output
//! does not change.

use crate::input::{IntervalInput, StreamInfo};
use crate::interval;
use crate::model::Layout;
use serde_json::Value;

/// One kept interval: everything `interval::build` reads besides the streams.
#[derive(Debug, Clone)]
struct Kept {
    /// The layout in force when the interval came (`start` may rebuild it).
    layout: Layout,
    /// The samples that had a stream announced; `build` pairs samples with
    /// streams and ignores the rest. Stored with no spare capacity.
    input: IntervalInput,
}

/// The intervals a `-J` document will list, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct IntervalHistory {
    kept: Vec<Kept>,
}

impl IntervalHistory {
    /// Keeps one interval. `streams` is the reporter's list as it stands.
    pub(crate) fn push(&mut self, layout: &Layout, streams: &[StreamInfo], iv: &IntervalInput) {
        let n = iv.streams.len().min(streams.len());
        self.kept.push(Kept {
            layout: layout.clone(),
            input: IntervalInput {
                latency: iv.latency.clone(),
                bounceback: iv.bounceback.clone(),
                streams: iv.streams[..n].to_vec(),
            },
        });
    }

    /// The `intervals[]` elements. `streams` is the reporter's list, which
    /// only grows, so each interval finds the streams it was paired with first.
    pub(crate) fn to_json(&self, streams: &[StreamInfo]) -> Vec<Value> {
        self.kept
            .iter()
            .map(|k| {
                let n = k.input.streams.len().min(streams.len());
                interval::to_json(&interval::build(&k.layout, &streams[..n], &k.input))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cjson;
    use crate::input::{Protocol, SampleExtra, Side, StreamSample, TcpSample, TestInfo};
    use crate::testutil::{plain, stream, tcp_tx, test_info, udp_rx, udp_tx};

    /// Bytes a kept interval costs: the fixed part plus one sample per stream
    /// (96 bytes on 64-bit targets). The JSON tree it replaces held 1.7 KiB per
    /// stream, 3.4 KiB for a TCP sender with tcp_info (counting allocator).
    #[test]
    fn kept_intervals_are_small() {
        assert!(size_of::<StreamSample>() <= 128);
        assert!(size_of::<Kept>() <= 48);
        let t = test_info(Side::Client, Protocol::Tcp);
        let layout = Layout::new(Side::Client, &t);
        let streams: Vec<_> = (0..4)
            .map(|i| stream(5 + i, 1 + i as u32, true, "127.0.0.1:1", "127.0.0.1:2"))
            .collect();
        let mut samples = Vec::with_capacity(64);
        samples.extend((0..6).map(|_| tcp_tx(0.0, 1.0, 10, 1, 2)));
        let mut h = IntervalHistory::default();
        h.push(
            &layout,
            &streams,
            &IntervalInput {
                latency: None,
                bounceback: None,
                streams: samples,
            },
        );
        // Only the paired samples, and no spare capacity from the driver's vector.
        assert_eq!(h.kept[0].input.streams.len(), 4);
        assert_eq!(h.kept[0].input.streams.capacity(), 4);
    }

    fn test(side: Side, protocol: Protocol, reverse: bool, bidir: bool, n: u32) -> TestInfo {
        TestInfo {
            num_streams: n,
            reverse,
            bidir,
            ..test_info(side, protocol)
        }
    }

    /// Streams in announcement order and a sample for each, as the engine
    /// produces them for a test of that shape.
    fn shape(t: &TestInfo, layout: &Layout, k: usize) -> (Vec<StreamInfo>, Vec<StreamSample>) {
        let senders: Vec<bool> = if t.bidir {
            (0..t.num_streams)
                .map(|_| t.side == Side::Client)
                .chain((0..t.num_streams).map(|_| t.side == Side::Server))
                .collect()
        } else {
            vec![layout.local_sender; t.num_streams as usize]
        };
        let (a, b) = (k as f64, k as f64 + 1.000_137 + 0.01 * k as f64);
        let mut streams = Vec::new();
        let mut samples = Vec::new();
        for (i, &sender) in senders.iter().enumerate() {
            let i32_i = i as i32;
            streams.push(stream(
                4 + i32_i,
                1 + i as u32,
                sender,
                "10.0.0.1:1",
                "10.0.0.2:2",
            ));
            let bytes = 1_000_003 * (i as u64 + 1) + k as u64;
            samples.push(match (t.protocol, sender) {
                (Protocol::Tcp, true) if i % 2 == 0 => StreamSample {
                    omitted: k == 0,
                    extra: SampleExtra::TcpSender(TcpSample {
                        retransmits: k as u64,
                        snd_cwnd: 12345,
                        snd_wnd: 65536,
                        rtt: 80,
                        rttvar: 9,
                        pmtu: 1500,
                        reorder: -1,
                    }),
                    ..plain(-a, b, bytes)
                },
                (Protocol::Tcp | Protocol::Sctp, _) => plain(a, b, bytes),
                (Protocol::Udp, true) => udp_tx(a, b, bytes, bytes / 1400),
                (Protocol::Udp, false) => {
                    udp_rx(a, b, bytes, 1.7e-5 * k as f64, bytes as i64 / 1400)
                }
            });
        }
        (streams, samples)
    }

    /// The deferred elements are byte for byte what was built at once before,
    /// in every layout, including a stream list that grows later and more
    /// samples than streams.
    #[test]
    fn deferred_json_is_what_was_built_at_once() {
        for side in [Side::Client, Side::Server] {
            for protocol in [Protocol::Tcp, Protocol::Udp, Protocol::Sctp] {
                for (reverse, bidir) in [(false, false), (true, false), (false, true)] {
                    for n in [1, 3] {
                        let t = test(side, protocol, reverse, bidir, n);
                        let layout = Layout::new(side, &t);
                        let mut h = IntervalHistory::default();
                        let mut want = Vec::new();
                        let (all, _) = shape(&t, &layout, 0);
                        for k in 0..4 {
                            let (_, mut samples) = shape(&t, &layout, k);
                            // Interval 1 came while a stream was not announced
                            // yet; interval 2 had a stray extra sample.
                            let known = if k == 1 {
                                &all[..all.len() - 1]
                            } else {
                                &all[..]
                            };
                            if k == 2 {
                                samples.push(plain(0.0, 1.0, 7));
                            }
                            let iv = IntervalInput {
                                latency: None,
                                bounceback: None,
                                streams: samples,
                            };
                            let built = interval::build(&layout, known, &iv);
                            want.push(cjson::to_compact(&interval::to_json(&built)));
                            h.push(&layout, known, &iv);
                        }
                        let got: Vec<String> =
                            h.to_json(&all).iter().map(cjson::to_compact).collect();
                        assert_eq!(
                            got, want,
                            "{side:?} {protocol:?} R={reverse} bidir={bidir} P={n}"
                        );
                        assert_eq!(h.kept.len(), 4);
                    }
                }
            }
        }
    }
}
