//! Tests for the server machine, fed with the client's side of the Appendix A
//! captures, whole and one byte at a time, plus arbitrary input.

use super::*;
use crate::deadline::PhaseLimits;
use std::time::{Duration, Instant};

/// A fixed instant: deadlines are relative to it.
fn t0() -> Instant {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *T0.get_or_init(Instant::now)
}
use crate::json_gen::{control_tail, frame};
use proptest::prelude::*;

const COOKIE: &[u8; 37] = b"ggbj47k5kjkqj4ikskay3k5hnkya4braddmt\0";
const PARAMS_3_12: &str = r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
const CLIENT_RESULTS_3_12: &str = r#"{"cpu_util_total":44.960160076097836,"cpu_util_user":0.50824758064997577,"cpu_util_system":44.451912495447857,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":3686924288,"retransmits":14,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.003371}]}"#;

fn feed(
    m: &mut ServerMachine,
    bytes: &[u8],
    bytewise: bool,
) -> Result<Vec<ServerEvent>, IperfError> {
    if !bytewise {
        return m.on_bytes(bytes, t0());
    }
    let mut all = Vec::new();
    for b in bytes {
        all.extend(m.on_bytes(std::slice::from_ref(b), t0())?);
    }
    Ok(all)
}

fn cookie_and_params(params: &str) -> Vec<u8> {
    let mut v = COOKIE.to_vec();
    v.extend(frame(params));
    v
}

/// Every write the machine has queued, as (bytes, error code).
fn sent(m: &mut ServerMachine) -> Vec<(Vec<u8>, i32)> {
    std::iter::from_fn(|| m.poll_transmit())
        .map(|t| (t.bytes, t.error))
        .collect()
}
#[test]
fn full_tcp_test_a1() {
    assert_eq!(frame(PARAMS_3_12)[..4], [0, 0, 0, 0x7b]);
    for bytewise in [false, true] {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        assert_eq!(m.phase(), ServerPhase::AwaitCookie);
        let ev = feed(&mut m, COOKIE, bytewise).unwrap();
        assert_eq!(ev, [ServerEvent::Cookie(*COOKIE)]);
        assert_eq!(sent(&mut m), [(vec![0x09], 111)]);
        assert_eq!(m.phase(), ServerPhase::AwaitParams);

        let ev = feed(&mut m, &frame(PARAMS_3_12), bytewise).unwrap();
        let [ServerEvent::ParamsReady(p)] = &ev[..] else {
            panic!("{ev:?}")
        };
        assert_eq!((p.time, p.parallel, p.len), (2, 1, 131072));
        assert_eq!(m.streams_expected(), 1);
        assert_eq!(m.params(), Some(p));
        assert_eq!(m.phase(), ServerPhase::CreateStreams);
        assert_eq!(sent(&mut m), []);
        m.begin_create_streams();
        assert_eq!(sent(&mut m), [(vec![0x0a], 111)]);
        m.all_streams_connected(t0());
        assert_eq!(sent(&mut m), [(vec![0x01], 111), (vec![0x02], 111)]);
        assert_eq!(m.phase(), ServerPhase::Running);

        assert_eq!(
            feed(&mut m, &[0x04], bytewise).unwrap(),
            [ServerEvent::TestEnd]
        );
        assert_eq!(m.phase(), ServerPhase::AwaitClientResults);
        m.exchange_results();
        assert_eq!(sent(&mut m), [(vec![0x0d], 111)]);

        let ev = feed(&mut m, &frame(CLIENT_RESULTS_3_12), bytewise).unwrap();
        let [ServerEvent::PeerResults(r)] = &ev[..] else {
            panic!("{ev:?}")
        };
        assert_eq!(r.streams[0].bytes, 3686924288);
        assert_eq!(m.phase(), ServerPhase::AwaitDone);
        let ours = TestResults {
            sender_has_retransmits: -1,
            ..TestResults::default()
        };
        m.send_results(&ours);
        assert_eq!(sent(&mut m), [(ours.encode(), 116), (vec![0x0e], 111)]);

        assert_eq!(
            feed(&mut m, &[0x10], bytewise).unwrap(),
            [ServerEvent::Done]
        );
        assert_eq!(m.phase(), ServerPhase::Done);
        assert_eq!(m.on_eof().unwrap(), []);
    }
}

#[test]
fn whole_client_stream_in_one_read() {
    let mut bytes = cookie_and_params(PARAMS_3_12);
    bytes.push(0x01);
    bytes.push(0x04);
    bytes.extend(frame(CLIENT_RESULTS_3_12));
    bytes.push(0x10);
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    let ev = m.on_bytes(&bytes, t0()).unwrap();
    assert_eq!(ev.len(), 5, "{ev:?}");
    assert!(matches!(ev[1], ServerEvent::ParamsReady(_)));
    assert_eq!(ev[2], ServerEvent::TestEnd);
    assert!(matches!(ev[3], ServerEvent::PeerResults(_)));
    assert_eq!(ev[4], ServerEvent::Done);
    // Only PARAM_EXCHANGE is the machine's own: the rest waits for the driver.
    assert_eq!(sent(&mut m), [(vec![0x09], 111)]);
}

#[test]
fn rate_limit_rejection_a6() {
    let limits = ServerLimits {
        total_rate_limit: Some(1_000_000),
        ..ServerLimits::default()
    };
    let mut m = ServerMachine::new(limits, PhaseLimits::default(), t0());
    let params = r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"bandwidth":10000000,"pacing_timer":1000,"client_version":"3.21"}"#;
    let err = m.on_bytes(&cookie_and_params(params), t0()).unwrap_err();
    assert_eq!(
        err.to_server_error_bytes(),
        [0xFE, 0, 0, 0, 0x1B, 0, 0, 0, 0]
    );
    assert_eq!(m.phase(), ServerPhase::Closed);
    assert_eq!(m.on_bytes(&[0x04], t0()).unwrap(), []);
}

#[test]
fn auth_first_leaves_the_limits_to_the_driver() {
    let limits = ServerLimits {
        total_rate_limit: Some(1_000_000),
        auth_first: true,
        ..ServerLimits::default()
    };
    let mut m = ServerMachine::new(limits.clone(), PhaseLimits::default(), t0());
    let params = r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"bandwidth":10000000,"pacing_timer":1000,"client_version":"3.21"}"#;
    let events = m.on_bytes(&cookie_and_params(params), t0()).unwrap();
    let Some(ServerEvent::ParamsReady(p)) = events.last() else {
        panic!("{events:?}");
    };
    // The driver's check, after the token, finds what the machine left.
    assert_eq!(p.validate(&limits).unwrap_err().code, 27);
}

#[test]
fn parameter_errors() {
    let cases: [(Vec<u8>, i32); 6] = [
        (frame(r#"{"parallel":200}"#), 6),
        (frame(r#"{"udp":true,"len":8}"#), 20),
        (frame("not json"), 114),
        (frame("[1,2]"), 114),
        (vec![0, 0, 0, 0], 114),
        (vec![0, 0, 0x20, 0x01], 114),
    ];
    for (doc, code) in cases {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        m.on_bytes(COOKIE, t0()).unwrap();
        assert_eq!(m.on_bytes(&doc, t0()).unwrap_err().code, code, "{doc:?}");
    }
    // Exactly 8192 bytes is allowed.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(COOKIE, t0()).unwrap();
    let big = format!("{{\"title\":\"{}\"}}", "x".repeat(8192 - 12));
    assert_eq!(big.len(), 8192);
    let ev = m.on_bytes(&frame(&big), t0()).unwrap();
    assert!(
        matches!(&ev[..], [ServerEvent::ParamsReady(p)] if p.title.as_ref().unwrap().len() == 8180)
    );
}

#[test]
fn driver_failures_close_with_server_error() {
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    sent(&mut m);
    m.fail(&IperfError::new(142));
    assert_eq!(sent(&mut m), [(vec![0xFE, 0, 0, 0, 0x8E, 0, 0, 0, 0], 111)]);
    assert_eq!(m.phase(), ServerPhase::Closed);
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    m.all_streams_connected(t0());
    sent(&mut m);
    m.terminate();
    assert_eq!(sent(&mut m), [(vec![0x0b], 111)]);
    assert_eq!(m.on_eof().unwrap(), []);
}

#[test]
fn client_terminate_a7() {
    for at_results in [false, true] {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
        m.all_streams_connected(t0());
        if at_results {
            m.on_bytes(&[0x04], t0()).unwrap();
        }
        let ev = m.on_bytes(&[0x0c], t0()).unwrap();
        assert_eq!(ev, [ServerEvent::ClientTerminated]);
        assert_eq!(m.phase(), ServerPhase::Closed);
    }
}

#[test]
fn which_client_messages_are_allowed() {
    let running = || {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
        m.all_streams_connected(t0());
        m
    };
    // TEST_START from the client is ignored anywhere.
    assert_eq!(running().on_bytes(&[0x01, 0x01], t0()).unwrap(), []);
    for bad in [0x02u8, 0x03, 0x09, 0x0d, 0x0e, 0xFF, 0xFE, 0x00, 0x11] {
        let mut m = running();
        assert_eq!(m.on_bytes(&[bad], t0()).unwrap_err().code, 110, "{bad:#x}");
        assert_eq!(m.phase(), ServerPhase::Closed);
    }
    // IPERF_DONE ends the test in any phase after the parameters.
    assert_eq!(
        running().on_bytes(&[0x10], t0()).unwrap(),
        [ServerEvent::Done]
    );
    // A second TEST_END after the results exchange is out of place.
    let mut m = running();
    m.on_bytes(&[0x04], t0()).unwrap();
    m.on_bytes(&frame(CLIENT_RESULTS_3_12), t0()).unwrap();
    assert_eq!(m.on_bytes(&[0x04], t0()).unwrap_err().code, 110);
    // TEST_END while streams are still being created is accepted, as by iperf3.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    assert_eq!(m.on_bytes(&[0x04], t0()).unwrap(), [ServerEvent::TestEnd]);
}

#[test]
fn bad_client_results_are_117() {
    for doc in [
        frame("{}"),
        frame("x"),
        vec![0, 0, 0, 0],
        vec![0x00, 0x20, 0, 0],
    ] {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
        m.on_bytes(&[0x04], t0()).unwrap();
        assert_eq!(m.on_bytes(&doc, t0()).unwrap_err().code, 117, "{doc:?}");
    }
}

#[test]
fn eof_codes_by_phase() {
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    assert_eq!(m.on_eof().unwrap_err().code, 106);
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&COOKIE[..10], t0()).unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 106);
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(COOKIE, t0()).unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 114);
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 109);
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    m.on_bytes(&[0x04], t0()).unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 117);
    m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    m.on_bytes(&[0x04], t0()).unwrap();
    m.on_bytes(&frame(CLIENT_RESULTS_3_12), t0()).unwrap();
    assert_eq!(
        m.on_eof().unwrap_err().code,
        109,
        "closed without IPERF_DONE"
    );
}

#[test]
fn deadlines_by_phase() {
    let sec = Duration::from_secs;
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    // A trickled cookie is cut 10 s after the connection, however it trickles.
    for i in 0..9 {
        m.on_bytes(&COOKIE[i..=i], t0() + sec(i as u64)).unwrap();
        assert_eq!(m.poll_timeout(), Some(t0() + sec(10)));
    }
    assert!(m.handle_timeout(t0() + sec(9)).is_ok());
    let e = m.handle_timeout(t0() + sec(10)).unwrap_err();
    assert_eq!(e.code, 106);
    assert_eq!(m.phase(), ServerPhase::Closed);
    assert_eq!(m.poll_timeout(), None);

    // Parameters: 10 s from PARAM_EXCHANGE.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(COOKIE, t0() + sec(1)).unwrap();
    assert_eq!(m.poll_timeout(), Some(t0() + sec(11)));
    assert_eq!(m.handle_timeout(t0() + sec(11)).unwrap_err().code, 114);

    // Streams: 30 s plus 250 ms per stream; then the test: time + omit + 40 s;
    // then 30 s for the results and 10 s for IPERF_DONE. TEST_START bytes from
    // the client (ignored, as by iperf3) never move a deadline.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.on_bytes(&cookie_and_params(PARAMS_3_12), t0()).unwrap();
    assert_eq!(m.poll_timeout(), Some(t0() + Duration::from_millis(30_250)));
    m.all_streams_connected(t0() + sec(1));
    assert_eq!(m.poll_timeout(), Some(t0() + sec(1 + 2 + 40)));
    m.on_bytes(&[0x01; 50], t0() + sec(20)).unwrap();
    assert_eq!(m.poll_timeout(), Some(t0() + sec(43)));
    assert_eq!(
        m.clone().handle_timeout(t0() + sec(43)).unwrap_err().code,
        160
    );
    m.on_bytes(&[0x04], t0() + sec(3)).unwrap();
    assert_eq!(m.poll_timeout(), Some(t0() + sec(33)));
    assert_eq!(
        m.clone().handle_timeout(t0() + sec(33)).unwrap_err().code,
        117
    );
    m.on_bytes(&frame(CLIENT_RESULTS_3_12), t0() + sec(4))
        .unwrap();
    assert_eq!(m.poll_timeout(), Some(t0() + sec(14)));
    m.on_bytes(&[0x10], t0() + sec(5)).unwrap();
    assert_eq!(m.poll_timeout(), None);

    // A test without a duration (-n, -k, -t 0) has no limit here.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    let bytes_mode = PARAMS_3_12.replace("\"time\":2,\"num\":0", "\"time\":0,\"num\":1000");
    m.on_bytes(&cookie_and_params(&bytes_mode), t0()).unwrap();
    m.all_streams_connected(t0());
    assert_eq!(m.poll_timeout(), None);
    assert_eq!(ACCESS_DENIED_BYTES, [0xFF]);
}

proptest! {
    /// Fuzz-style: any byte stream, in any chunking, after any valid prefix.
    #[test]
    fn arbitrary_client_bytes_never_panic(
        prefix in 0usize..4,
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..24),
    ) {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        let mut good = cookie_and_params(PARAMS_3_12);
        good.push(0x04);
        let cut = [0, 37, good.len() - 1, good.len()][prefix];
        let _ = m.on_bytes(&good[..cut], t0());
        for c in &chunks {
            if m.on_bytes(c, t0()).is_err() {
                prop_assert_eq!(m.phase(), ServerPhase::Closed);
            }
        }
        let _ = m.on_eof();
        prop_assert_eq!(m.phase(), ServerPhase::Closed);
    }

    /// Structured garbage: plausible length prefixes and JSON fragments.
    #[test]
    fn length_prefixed_garbage_never_panics(
        docs in proptest::collection::vec(("[{}\\[\\]\":,a-z0-9 ]{0,60}", any::<bool>()), 0..8),
    ) {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        let _ = m.on_bytes(COOKIE, t0());
        for (d, state) in &docs {
            if *state {
                let _ = m.on_bytes(&[0x04], t0());
            }
            let _ = m.on_bytes(&frame(d), t0());
        }
    }
}

/// What the decoder may hold between reads in each phase: nothing where only
/// state bytes are due, at most the unit in progress elsewhere, and once a
/// document's length is in, less than that document.
fn check_buffered(m: &ServerMachine, closed_at: Option<usize>) -> Result<(), TestCaseError> {
    let have = m.decoder.buffered();
    let rest = m.decoder.rest();
    let announced = || {
        rest.get(..4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    match m.phase() {
        ServerPhase::AwaitCookie => prop_assert!(have < 37),
        ServerPhase::AwaitParams => {
            prop_assert!(have < 4 + MAX_PARAMS_LEN as usize);
            if let Some(len) = announced() {
                prop_assert!(len <= MAX_PARAMS_LEN && have < 4 + len as usize);
            }
        }
        ServerPhase::AwaitClientResults => {
            if let Some(len) = announced() {
                prop_assert!(len <= MAX_CLIENT_RESULTS_LEN && have < 4 + len as usize);
            }
        }
        ServerPhase::CreateStreams | ServerPhase::Running | ServerPhase::AwaitDone => {
            prop_assert_eq!(have, 0)
        }
        // Input after the end is not even buffered.
        ServerPhase::Done | ServerPhase::Closed => {
            if let Some(at_close) = closed_at {
                prop_assert_eq!(have, at_close);
            }
        }
    }
    Ok(())
}

/// A client's byte stream after a valid start: state bytes, framed documents
/// (some long, some cut short), hostile length prefixes and noise.
fn client_tail() -> impl Strategy<Value = Vec<u8>> {
    control_tail((0u8..20).prop_map(|b| vec![b]), CLIENT_RESULTS_3_12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// A parameters length above MAX_PARAMS_LEN, up to 0xFFFFFFFF, is error
    /// 114 on its fourth byte: none of the announced body is waited for.
    #[test]
    fn oversized_params_fail_on_the_prefix(
        len in prop_oneof![Just(u32::MAX), (MAX_PARAMS_LEN + 1)..=u32::MAX],
        junk in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        m.on_bytes(COOKIE, t0()).unwrap();
        let prefix = len.to_be_bytes();
        for b in &prefix[..3] {
            prop_assert_eq!(m.on_bytes(std::slice::from_ref(b), t0()).unwrap(), []);
        }
        prop_assert_eq!(m.on_bytes(&prefix[3..], t0()).unwrap_err().code, 114);
        prop_assert_eq!(m.phase(), ServerPhase::Closed);
        prop_assert_eq!(m.on_bytes(&junk, t0()).unwrap(), []);
        prop_assert_eq!(m.decoder.buffered(), 4);
    }

    /// Any client stream in any chunking keeps the decoder within its phase's
    /// bound after every read, and input after the end is dropped.
    #[test]
    fn buffered_bytes_stay_within_the_phase_unit(
        start in 0usize..4,
        tail in client_tail(),
        cuts in proptest::collection::vec(1usize..700, 1..16),
    ) {
        let mut bytes = cookie_and_params(PARAMS_3_12);
        bytes.push(0x04);
        let cut_at = [0, 37, bytes.len() - 1, bytes.len()][start];
        bytes.truncate(cut_at);
        bytes.extend(tail);
        let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
        let mut closed_at = None;
        let mut rest = &bytes[..];
        let mut cut = cuts.iter().cycle();
        while !rest.is_empty() {
            let n = (*cut.next().unwrap()).min(rest.len());
            let r = m.on_bytes(&rest[..n], t0());
            rest = &rest[n..];
            if r.is_err() {
                prop_assert_eq!(m.phase(), ServerPhase::Closed);
            }
            check_buffered(&m, closed_at)?;
            if matches!(m.phase(), ServerPhase::Done | ServerPhase::Closed) {
                closed_at.get_or_insert(m.decoder.buffered());
            }
        }
    }
}

#[test]
fn latency_ready_only_for_a_client_that_asked() {
    let asked = r#"{"tcp":true,"time":2,"parallel":1,"len":131072,"client_version":"3.21","rperf3_latency":{"v":1,"rate":10}}"#;
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    feed(&mut m, &cookie_and_params(asked), false).unwrap();
    sent(&mut m);
    m.latency_ready();
    m.begin_create_streams();
    assert_eq!(
        sent(&mut m),
        [(vec![LATENCY_READY], 111), (vec![0x0A], 111)]
    );
    // A stock client's parameters: nothing new on the wire.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    feed(&mut m, &cookie_and_params(PARAMS_3_12), false).unwrap();
    sent(&mut m);
    m.latency_ready();
    m.begin_create_streams();
    assert_eq!(sent(&mut m), [(vec![0x0A], 111)]);
    // Before the parameters: nothing either.
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    m.latency_ready();
    assert_eq!(sent(&mut m), []);
}

#[test]
fn latency_ready_answers_a_bounceback_offer_too() {
    let asked = r#"{"tcp":true,"time":2,"parallel":1,"len":131072,"client_version":"3.21","rperf3_bounceback":{"v":1,"request":100,"reply":100,"hold_us":0,"period_us":0}}"#;
    let mut m = ServerMachine::new(ServerLimits::default(), PhaseLimits::default(), t0());
    feed(&mut m, &cookie_and_params(asked), false).unwrap();
    sent(&mut m);
    m.latency_ready();
    m.begin_create_streams();
    assert_eq!(
        sent(&mut m),
        [(vec![LATENCY_READY], 111), (vec![0x0A], 111)]
    );
}
