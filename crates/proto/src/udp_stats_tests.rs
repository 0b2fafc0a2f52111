//! Tests for the UDP receiver statistics: iperf3's loss/reordering arithmetic, its
//! jitter filter, the omit reset, and robustness against hostile sequence numbers.

use super::*;
use proptest::prelude::*;

fn at(us: u64) -> Duration {
    Duration::from_micros(us)
}

/// Feeds sequence numbers with a constant transit time of 1 ms.
fn feed(s: &mut UdpRecvStats, seqs: &[u64]) {
    for &q in seqs {
        s.on_datagram(q, 10, 0, at(10_001_000), 100);
    }
}

#[test]
fn in_order_stream_has_no_loss() {
    let mut s = UdpRecvStats::new();
    feed(&mut s, &[1, 2, 3, 4]);
    assert_eq!((s.packets, s.lost, s.out_of_order, s.bytes), (4, 0, 0, 400));
    assert_eq!(s.jitter.seconds, 0.0);
}

#[test]
fn gap_counts_loss_and_late_packets_cancel_it() {
    let mut s = UdpRecvStats::new();
    feed(&mut s, &[1, 2, 5]);
    assert_eq!((s.packets, s.lost, s.out_of_order), (5, 2, 0));
    feed(&mut s, &[3]);
    assert_eq!((s.packets, s.lost, s.out_of_order), (5, 1, 1));
    feed(&mut s, &[4]);
    assert_eq!((s.packets, s.lost, s.out_of_order), (5, 0, 2));
    // A duplicate is out of order too, and loss cannot go below zero.
    feed(&mut s, &[4]);
    assert_eq!((s.packets, s.lost, s.out_of_order), (5, 0, 3));
    assert_eq!(UdpRecvStats::loss_percent(1, 4), 25.0);
    assert_eq!(UdpRecvStats::loss_percent(0, 0), 0.0);
}

#[test]
fn first_datagram_lost_counts_from_one() {
    let mut s = UdpRecvStats::new();
    feed(&mut s, &[3]);
    assert_eq!((s.packets, s.lost), (3, 2));
    // Sequence 0 is never "forward" from an empty state.
    let mut s = UdpRecvStats::new();
    feed(&mut s, &[0]);
    assert_eq!((s.packets, s.lost, s.out_of_order), (0, 0, 1));
}

#[test]
fn jitter_follows_rfc1889_on_absolute_transit() {
    let mut s = UdpRecvStats::new();
    // Transits: 1 ms, 3 ms, 2 ms, then the receiver clock is *behind* the sender
    // by 2 ms (absolute difference: 2 ms again).
    s.on_datagram(1, 100, 0, at(100_001_000), 50);
    assert_eq!(s.jitter.seconds, 0.0);
    s.on_datagram(2, 100, 0, at(100_003_000), 50);
    let j1 = 0.002 / 16.0;
    assert!((s.jitter.seconds - j1).abs() < 1e-15);
    s.on_datagram(3, 100, 0, at(100_002_000), 50);
    let j2 = j1 + (0.001 - j1) / 16.0;
    assert!((s.jitter.seconds - j2).abs() < 1e-15);
    s.on_datagram(4, 100, 2000, at(99_998_000), 50);
    // |99.998 - 100.002| = 0.004 s transit; d = |0.004 - 0.002| = 0.002.
    let j3 = j2 + (0.002 - j2) / 16.0;
    assert!(
        (s.jitter.seconds - j3).abs() < 1e-12,
        "{} vs {}",
        s.jitter.seconds,
        j3
    );
    assert_eq!(s.jitter.prev_us(), Some(4000));
}

#[test]
fn omit_reset_snapshots_and_restarts() {
    let mut s = UdpRecvStats::new();
    s.on_datagram(1, 0, 0, at(1000), 100);
    s.on_datagram(4, 0, 0, at(5000), 100);
    assert!(s.jitter.seconds > 0.0);
    s.reset_at_omit_end();
    assert_eq!(
        (s.omitted_packets, s.omitted_lost, s.omitted_out_of_order),
        (4, 2, 0)
    );
    assert_eq!((s.bytes, s.jitter.seconds), (0, 0.0));
    assert_eq!((s.packets, s.lost), (4, 2), "totals keep running");
    // The next datagram is "first" again: its transit seeds prev_transit_us.
    s.on_datagram(5, 0, 0, at(900_000), 100);
    assert_eq!(s.jitter.seconds, 0.0);
    assert_eq!(s.jitter.prev_us(), Some(900_000));
    assert_eq!(s.bytes, 100);
}

#[test]
fn extreme_sequence_numbers_saturate() {
    let mut s = UdpRecvStats::new();
    feed(&mut s, &[u64::MAX]);
    assert_eq!(s.packets, u64::MAX);
    assert_eq!(s.lost, i64::MAX);
    feed(&mut s, &[u64::MAX, 5, 0]);
    assert_eq!(s.out_of_order, 3);
    assert_eq!(s.lost, i64::MAX - 3);
    // A 32-bit sender wrapping to 0 looks like a backward jump, as in iperf3.
    let mut s = UdpRecvStats::new();
    feed(&mut s, &[u64::from(u32::MAX), 0, 1]);
    assert_eq!((s.packets, s.out_of_order), (u64::from(u32::MAX), 2));
}

proptest! {
    /// Any arrival order of any subset of 1..=n, without duplicates: loss is exactly
    /// what is missing below the highest sequence seen.
    #[test]
    fn loss_plus_received_is_highest(
        order in (1usize..200).prop_flat_map(|n| {
            Just((1..=n as u64).collect::<Vec<_>>()).prop_shuffle()
        }),
        keep in proptest::collection::vec(any::<bool>(), 200),
    ) {
        let seqs: Vec<u64> =
            order.into_iter().zip(&keep).filter(|(_, k)| **k).map(|(q, _)| q).collect();
        let mut s = UdpRecvStats::new();
        let mut forward = 0u64;
        let mut highest = 0u64;
        for &q in &seqs {
            if q > highest { forward += 1; highest = q; }
            s.on_datagram(q, 0, 0, at(q * 10), 10);
        }
        prop_assert_eq!(s.packets, highest);
        prop_assert_eq!(s.lost as u64 + seqs.len() as u64, highest);
        prop_assert_eq!(s.out_of_order, seqs.len() as u64 - forward);
        prop_assert_eq!(s.bytes, 10 * seqs.len() as u64);
    }

    /// With duplicates mixed in, loss stays within [0, packets] and every datagram
    /// is either forward or out of order.
    #[test]
    fn duplicates_keep_counters_consistent(seqs in proptest::collection::vec(1u64..50, 0..300)) {
        let mut s = UdpRecvStats::new();
        let mut forward = 0u64;
        for &q in &seqs {
            if q > s.packets { forward += 1; }
            s.on_datagram(q, 0, 0, at(0), 1);
            prop_assert!(s.lost >= 0);
            prop_assert!(s.lost as u64 <= s.packets);
        }
        prop_assert_eq!(forward + s.out_of_order, seqs.len() as u64);
    }

    /// Hostile headers: any sequence, any time stamps, any clock.
    #[test]
    fn arbitrary_input_never_panics(
        input in proptest::collection::vec((any::<u64>(), any::<u32>(), any::<u32>(), any::<u64>(), any::<usize>()), 0..100),
    ) {
        let mut s = UdpRecvStats::new();
        for (i, (q, sec, usec, now_us, size)) in input.into_iter().enumerate() {
            s.on_datagram(q, sec, usec, Duration::from_micros(now_us), size);
            prop_assert!(s.lost >= 0);
            prop_assert!(s.jitter.seconds.is_finite() && s.jitter.seconds >= 0.0);
            if i == 50 { s.reset_at_omit_end(); }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Raw datagrams as they come off the socket, headers decoded as the
    /// receiver decodes them, arriving at any time (to the end of `Duration`)
    /// with any claimed size. The counters stay consistent: every datagram is
    /// either forward or out of order, loss stays within [0, packets], jitter
    /// stays a finite non-negative number, and bytes add up (saturating).
    #[test]
    fn raw_datagrams_keep_counters_consistent(
        datagrams in proptest::collection::vec(
            (proptest::collection::vec(any::<u8>(), 0..20), any::<u64>(), 0u32..1_000_000_000, any::<usize>()),
            0..120,
        ),
        wide in any::<bool>(),
        reset_at in proptest::option::of(0usize..120),
    ) {
        let mut s = UdpRecvStats::new();
        let (mut forward, mut counted, mut bytes) = (0u64, 0u64, 0u64);
        for (i, (d, secs, nanos, size)) in datagrams.iter().enumerate() {
            if reset_at == Some(i) {
                s.reset_at_omit_end();
                bytes = 0;
            }
            // Short datagrams are dropped by the receiver before the statistics.
            let Some(h) = UdpHeader::decode(d, wide) else { continue };
            if h.seq > s.packets { forward += 1; }
            counted += 1;
            bytes = bytes.saturating_add(*size as u64);
            s.on_datagram(h.seq, h.sec, h.usec, Duration::new(*secs, *nanos), *size);
            prop_assert!(s.lost >= 0 && s.lost as u64 <= s.packets);
            prop_assert!(s.jitter.seconds.is_finite() && s.jitter.seconds >= 0.0);
        }
        prop_assert_eq!(forward + s.out_of_order, counted);
        prop_assert_eq!(s.bytes, bytes);
        prop_assert!(UdpRecvStats::loss_percent(s.lost, s.packets).is_finite());
    }
}

/// Datagrams of `seg` bytes back to back, the last one `tail` bytes, each with
/// its header: sequence `q` sent at `q` ms.
fn train(seqs: &[u64], seg: usize, tail: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, &q) in seqs.iter().enumerate() {
        let mut d = vec![0u8; if i + 1 == seqs.len() { tail } else { seg }];
        UdpHeader::new(Duration::from_millis(q), q).encode(&mut d, false);
        v.extend_from_slice(&d);
    }
    v
}

#[test]
fn trains_count_per_datagram_like_single_reads() {
    // Two trains of 20-byte datagrams, the second with an odd 15-byte tail:
    // seqs 1,2,4 then 3,3,5 (4 lost until 3 arrives late, then 3 again, a
    // duplicate). Fed as trains or one datagram at a time, the same result.
    let (a, b) = (train(&[1, 2, 4], 20, 20), train(&[3, 3, 5], 20, 15));
    let now = Duration::from_secs(1);
    let mut whole = UdpRecvStats::new();
    assert_eq!(whole.on_message(&a, 20, false, now), (3, 60));
    assert_eq!(whole.on_message(&b, 20, false, now), (3, 55));
    let mut single = UdpRecvStats::new();
    for d in a.chunks(20).chain(b.chunks(20)) {
        assert_eq!(single.on_message(d, 0, false, now).0, 1);
    }
    assert_eq!(whole, single);
    assert_eq!(
        (whole.bytes, whole.packets, whole.out_of_order),
        (115, 5, 2)
    );
    assert_eq!(whole.lost, 0);
    assert!(whole.jitter.seconds > 0.0);
}

#[test]
fn message_pieces_too_short_for_a_header_are_not_counted() {
    let now = Duration::from_secs(1);
    let mut s = UdpRecvStats::new();
    // A stray 4-byte handshake datagram, and a train whose 5-byte tail
    // cannot hold a header.
    assert_eq!(s.on_message(b"9876", 0, false, now), (0, 0));
    let t = train(&[1, 2, 3], 20, 5);
    assert_eq!(s.on_message(&t, 20, false, now), (2, 40));
    assert_eq!(s.on_message(&[], 0, false, now), (0, 0));
    assert_eq!((s.packets, s.bytes), (2, 40));
}

#[test]
fn microsecond_jitter_survives_a_wall_clock_arrival_against_a_monotonic_stamp() {
    // A sender's monotonic stamps (hours of uptime) read against the
    // receiver's wall clock: transits of about 1.8e9 s that differ by 1 us
    // alternately. Each difference is exactly 1 us, so the estimate climbs
    // to it without the tenths of a microsecond an f64 of seconds loses.
    let mut s = UdpRecvStats::new();
    let wall = 1_795_000_000_123_456u64;
    for i in 0..400u64 {
        let sent_us = 20_000_000_000 + i * 1000;
        let arrival = wall + i * 1000 + (i % 2);
        s.on_datagram(
            i + 1,
            (sent_us / 1_000_000) as u32,
            (sent_us % 1_000_000) as u32,
            Duration::from_micros(arrival),
            100,
        );
    }
    let want = 1e-6 * (1.0 - (15.0f64 / 16.0).powi(399));
    assert!(
        (s.jitter.seconds - want).abs() < 1e-15,
        "{} vs {want}",
        s.jitter.seconds
    );
}
