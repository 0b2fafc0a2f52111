//! Tests for the client machine, fed with the server's side of the Appendix A
//! captures, whole and one byte at a time.

use super::*;
use crate::deadline::PhaseLimits;
use std::time::{Duration, Instant};

/// A fixed instant: deadlines are relative to it.
fn t0() -> Instant {
    static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *T0.get_or_init(Instant::now)
}
use crate::cookie::make_cookie;
use crate::json_gen::{control_tail, frame};
use proptest::prelude::*;

const SERVER_RESULTS_3_12: &str = r#"{"cpu_util_total":2.5,"cpu_util_user":0.5,"cpu_util_system":2,"sender_has_retransmits":18446744073709551615,"congestion_used":"bbr","streams":[{"id":1,"bytes":3892576256,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.001212}]}"#;

fn machine() -> ClientMachine {
    let p = TestParams {
        time: 2,
        ..TestParams::default()
    };
    ClientMachine::new(make_cookie(&[7; 36]), &p, PhaseLimits::default(), t0())
}

/// Every write the machine has queued, as (bytes, error code).
fn sent(m: &mut ClientMachine) -> Vec<(Vec<u8>, i32)> {
    std::iter::from_fn(|| m.poll_transmit())
        .map(|t| (t.bytes, t.error))
        .collect()
}

/// Feeds `bytes` either at once or one at a time; collects all events.
fn feed(
    m: &mut ClientMachine,
    bytes: &[u8],
    bytewise: bool,
) -> Result<Vec<ClientEvent>, IperfError> {
    if !bytewise {
        return m.on_bytes(bytes, t0());
    }
    let mut all = Vec::new();
    for b in bytes {
        all.extend(m.on_bytes(std::slice::from_ref(b), t0())?);
    }
    Ok(all)
}

#[test]
fn full_tcp_test_a1() {
    for bytewise in [false, true] {
        let mut m = machine();
        assert_eq!(m.cookie().len(), 37);
        assert_eq!(m.cookie()[36], 0);
        assert_eq!(m.phase(), ClientPhase::AwaitParamExchange);
        assert_eq!(sent(&mut m), []);

        let ev = feed(&mut m, &[0x09], bytewise).unwrap();
        assert_eq!(ev, [ClientEvent::Accepted]);
        let out = sent(&mut m);
        let [(p, 113)] = &out[..] else {
            panic!("{out:?}")
        };
        assert_eq!(
            &p[4..],
            TestParams {
                time: 2,
                ..TestParams::default()
            }
            .to_json()
            .to_string()
            .as_bytes()
        );
        assert_eq!(m.phase(), ClientPhase::AwaitCreateStreams);

        assert_eq!(
            feed(&mut m, &[0x0a], bytewise).unwrap(),
            [ClientEvent::CreateStreams]
        );
        assert_eq!(
            feed(&mut m, &[0x01, 0x02], bytewise).unwrap(),
            [ClientEvent::TestStart, ClientEvent::TestRunning]
        );
        assert_eq!(m.phase(), ClientPhase::Running);
        assert_eq!(sent(&mut m), []);
        m.end_test(t0());
        assert_eq!(sent(&mut m), [(vec![0x04], 111)]);
        assert_eq!(m.phase(), ClientPhase::AwaitExchangeResults);
        assert_eq!(
            feed(&mut m, &[0x0d], bytewise).unwrap(),
            [ClientEvent::ExchangeResults]
        );
        let ours = TestResults::default();
        m.send_results(&ours);
        assert_eq!(sent(&mut m), [(ours.encode(), 116)]);

        let mut tail = frame(SERVER_RESULTS_3_12);
        tail.push(0x0e);
        let ev = feed(&mut m, &tail, bytewise).unwrap();
        assert_eq!(ev.len(), 2);
        let ClientEvent::PeerResults(r) = &ev[0] else {
            panic!("{ev:?}")
        };
        assert_eq!(r.sender_has_retransmits, -1);
        assert_eq!(r.streams[0].retransmits, -1);
        assert_eq!(ev[1], ClientEvent::DisplayResults);
        assert_eq!(m.phase(), ClientPhase::Finished);
        m.done();
        assert_eq!(sent(&mut m), [(vec![0x10], 111)]);

        // 3.21 may still send SERVER_ERROR 205 after DISPLAY_RESULTS: ignored.
        let late = [0xFE, 0, 0, 0, 0xCD, 0, 0, 0, 0, 0x33];
        assert_eq!(feed(&mut m, &late, bytewise).unwrap(), []);
        assert_eq!(m.on_eof().unwrap(), []);
    }
}

#[test]
fn whole_server_stream_in_one_read() {
    // Everything the server sends in a test, as if it all arrived together.
    let mut bytes = vec![0x09, 0x0a, 0x01, 0x02, 0x0d];
    bytes.extend(frame(SERVER_RESULTS_3_12));
    bytes.push(0x0e);
    let mut m = machine();
    let ev = m.on_bytes(&bytes, t0()).unwrap();
    let kinds: Vec<&str> = ev
        .iter()
        .map(|e| match e {
            ClientEvent::Accepted => "params",
            ClientEvent::CreateStreams => "create",
            ClientEvent::TestStart => "start",
            ClientEvent::TestRunning => "running",
            ClientEvent::ExchangeResults => "exchange",
            ClientEvent::PeerResults(_) => "results",
            ClientEvent::DisplayResults => "display",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["params", "create", "start", "running", "exchange", "results", "display"]
    );
}

#[test]
fn busy_server_a5() {
    let mut m = machine();
    let ev = m.on_bytes(&[0xFF], t0()).unwrap();
    assert_eq!(ev, [ClientEvent::AccessDenied]);
    assert_eq!(ev[0].error().unwrap().code, 121);
    assert_eq!(m.phase(), ClientPhase::Closed);
    assert_eq!(m.on_eof().unwrap(), []);
}

#[test]
fn server_rate_limit_a6() {
    for bytewise in [false, true] {
        let mut m = machine();
        let ev = feed(&mut m, &[0x09, 0xFE, 0, 0, 0, 0x1B, 0, 0, 0, 0], bytewise).unwrap();
        assert_eq!(ev[0], ClientEvent::Accepted);
        assert_eq!(ev[1], ClientEvent::ServerError { code: 27, errno: 0 });
        assert_eq!(
            ev[1].error().unwrap().to_string(),
            "total required bandwidth is larger than server limit"
        );
    }
}

#[test]
fn server_error_without_errno_at_eof_3_12_auth() {
    let mut m = machine();
    let ev = m.on_bytes(&[0x09, 0xFE, 0, 0, 0, 0x8E], t0()).unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(m.phase(), ClientPhase::AwaitErrorCodes);
    assert_eq!(
        m.on_eof().unwrap(),
        [ClientEvent::ServerError {
            code: 142,
            errno: 0
        }]
    );
    // Fewer than 4 bytes of the code: just a closed connection.
    let mut m = machine();
    m.on_bytes(&[0xFE, 0, 0], t0()).unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 109);
}

#[test]
fn server_sigint_a8() {
    let mut m = machine();
    m.on_bytes(&[0x09, 0x0a, 0x01, 0x02], t0()).unwrap();
    let ev = m.on_bytes(&[0x0b], t0()).unwrap();
    assert_eq!(ev, [ClientEvent::ServerTerminate]);
    assert_eq!(ev[0].error().unwrap().code, 120);
    sent(&mut m);
    m.done();
    assert_eq!(sent(&mut m), [(vec![0x10], 111)]);
    assert_eq!(m.on_bytes(&[0x99], t0()).unwrap(), []);
}

#[test]
fn client_terminate_a7() {
    let mut m = machine();
    m.on_bytes(&[0x09, 0x0a, 0x01, 0x02], t0()).unwrap();
    sent(&mut m);
    m.terminate();
    assert_eq!(sent(&mut m), [(vec![0x0c], 111)]);
    assert_eq!(m.phase(), ClientPhase::Closed);
    assert_eq!(m.on_eof().unwrap(), []);
}

#[test]
fn unknown_and_misplaced_messages_are_110() {
    for bad in [
        &[0x11u8][..],
        &[0x00],
        &[0x0a],
        &[0x09, 0x09],
        &[0x09, 0x0a, 0x02],
        &[0x09, 0x0a, 0x01, 0x02, 0x0e],
        &[0x09, 0x0a, 0x01, 0x02, 0x01],
        &[0x09, 0x0a, 0x01, 0x02, 0x10],
        &[0x03],
    ] {
        let mut m = machine();
        assert_eq!(m.on_bytes(bad, t0()).unwrap_err().code, 110, "{bad:02x?}");
        assert_eq!(m.phase(), ClientPhase::Closed);
        assert_eq!(
            m.on_bytes(&[0x0a], t0()).unwrap(),
            [],
            "ignores input after an error"
        );
    }
}

#[test]
fn eof_before_the_end_is_109_or_117() {
    let mut m = machine();
    assert_eq!(m.on_eof().unwrap_err().code, 109);
    let mut m = machine();
    m.on_bytes(&[0x09, 0x0a, 0x01, 0x02], t0()).unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 109);
    let mut m = machine();
    m.on_bytes(&[0x09, 0x0a, 0x01, 0x02, 0x0d, 0, 0], t0())
        .unwrap();
    assert_eq!(m.on_eof().unwrap_err().code, 117);
}

#[test]
fn state_bytes_instead_of_server_results() {
    let start = [0x09, 0x0a, 0x01, 0x02, 0x0d];
    let mut m = machine();
    m.on_bytes(&start, t0()).unwrap();
    let ev = m
        .on_bytes(&[0xFE, 0, 0, 0, 0x75, 0, 0, 0, 0], t0())
        .unwrap();
    assert_eq!(
        ev,
        [ClientEvent::ServerError {
            code: 117,
            errno: 0
        }]
    );
    let mut m = machine();
    m.on_bytes(&start, t0()).unwrap();
    assert_eq!(
        m.on_bytes(&[0x0b], t0()).unwrap(),
        [ClientEvent::ServerTerminate]
    );
    let mut m = machine();
    m.on_bytes(&start, t0()).unwrap();
    assert_eq!(m.on_bytes(&[0x0e], t0()).unwrap_err().code, 110);
}

#[test]
fn bad_server_results_are_117() {
    for doc in [
        frame("[]"),
        frame("{\"streams\":[]}"),
        frame("{"),
        vec![0, 0, 0, 0],
    ] {
        let mut m = machine();
        m.on_bytes(&[0x09, 0x0a, 0x01, 0x02, 0x0d], t0()).unwrap();
        assert_eq!(m.on_bytes(&doc, t0()).unwrap_err().code, 117, "{doc:?}");
    }
}

#[test]
fn exchange_results_accepted_before_end_test() {
    // The server decides nothing, but a client that has not sent TEST_END yet
    // (e.g. a race with its own timer) still follows along.
    let mut m = machine();
    let ev = m.on_bytes(&[0x09, 0x0a, 0x01, 0x02, 0x0d], t0()).unwrap();
    assert_eq!(ev.last(), Some(&ClientEvent::ExchangeResults));
    assert_eq!(m.phase(), ClientPhase::AwaitServerResults);
}

#[test]
fn deadlines_by_phase() {
    let sec = Duration::from_secs;
    // By default the client waits for PARAM_EXCHANGE as long as the server keeps
    // it (a queue), as iperf3 does.
    let mut m = machine();
    assert_eq!(m.poll_timeout(), None);
    assert!(m.handle_timeout(t0() + sec(3600)).is_ok());
    // With a limit, the wait for the first reply ends with a clear error.
    let limits = PhaseLimits {
        first_reply: Some(sec(5)),
        ..PhaseLimits::default()
    };
    let p = TestParams::default();
    let mut m = ClientMachine::new(make_cookie(&[7; 36]), &p, limits, t0());
    assert_eq!(m.poll_timeout(), Some(t0() + sec(5)));
    assert!(m.handle_timeout(t0() + sec(4)).is_ok());
    let e = m.handle_timeout(t0() + sec(5)).unwrap_err();
    assert_eq!(e.code, 112);
    assert!(
        e.to_string().ends_with(
            "etc.: timed out after 5 s waiting for the server to start the test \
             (it may be busy or queueing)"
        ),
        "{e}"
    );
    assert_eq!(m.phase(), ClientPhase::Closed);
    assert_eq!(m.poll_timeout(), None);

    // Bytes do not move a deadline: a server trickling its results is cut 30 s
    // after EXCHANGE_RESULTS, however often it sends.
    let mut m = machine();
    m.on_bytes(&[0x09, 0x0a, 0x01, 0x02], t0()).unwrap();
    assert_eq!(m.phase(), ClientPhase::Running);
    assert_eq!(m.poll_timeout(), None, "the driver ends the test");
    m.end_test(t0());
    m.on_bytes(&[0x0d], t0() + sec(1)).unwrap();
    let at = m.poll_timeout().unwrap();
    assert_eq!(at, t0() + sec(31));
    let results = frame(SERVER_RESULTS_3_12);
    for (i, b) in results.iter().take(20).enumerate() {
        m.on_bytes(&[*b], t0() + sec(2 + i as u64)).unwrap();
        assert_eq!(m.poll_timeout(), Some(at));
    }
    assert_eq!(m.handle_timeout(at).unwrap_err().code, 117);
}

proptest! {
    #[test]
    fn arbitrary_server_bytes_never_panic(
        prefix_len in 0usize..6,
        chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..20),
        end in any::<bool>(),
    ) {
        let mut m = machine();
        let good = [0x09, 0x0a, 0x01, 0x02, 0x0d];
        let _ = m.on_bytes(&good[..prefix_len], t0());
        for c in &chunks {
            let _ = m.on_bytes(c, t0());
            if end && m.phase() == ClientPhase::Running {
                m.end_test(t0());
            }
        }
        let _ = m.on_eof();
        prop_assert_eq!(m.phase(), ClientPhase::Closed);
    }
}

/// What the decoder may hold between reads in each phase: nothing where only
/// state bytes are due, less than the error codes while they are due, and
/// once a results length is in, less than that document.
fn check_buffered(m: &ClientMachine, closed_at: Option<usize>) -> Result<(), TestCaseError> {
    let have = m.decoder.buffered();
    let rest = m.decoder.rest();
    match m.phase() {
        ClientPhase::AwaitErrorCodes => prop_assert!(have < 8),
        ClientPhase::AwaitServerResults => {
            if let Some(b) = rest.get(..4) {
                let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                prop_assert!(len <= MAX_SERVER_RESULTS_LEN && have < 4 + len as usize);
            }
        }
        // Input after the end is not even buffered.
        ClientPhase::Finished | ClientPhase::Closed => {
            if let Some(at_close) = closed_at {
                prop_assert_eq!(have, at_close);
            }
        }
        _ => prop_assert_eq!(have, 0),
    }
    Ok(())
}

/// A server's byte stream after a valid start: state bytes (SERVER_ERROR and
/// its codes among them), framed documents (some long, some cut short),
/// hostile length prefixes and noise.
fn server_tail() -> impl Strategy<Value = Vec<u8>> {
    let state = prop_oneof![0u8..20, Just(0xFE), Just(0xFF)].prop_map(|b| vec![b]);
    control_tail(state, SERVER_RESULTS_3_12)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Any server stream in any chunking keeps the decoder within its phase's
    /// bound after every read, and input after the end is dropped.
    #[test]
    fn buffered_bytes_stay_within_the_phase_unit(
        start in 0usize..6,
        tail in server_tail(),
        cuts in proptest::collection::vec(1usize..700, 1..16),
    ) {
        let good = [0x09, 0x0a, 0x01, 0x02, 0x0d];
        let mut bytes = good[..start.min(good.len())].to_vec();
        bytes.extend(tail);
        let mut m = machine();
        let mut closed_at = None;
        let mut rest = &bytes[..];
        let mut cut = cuts.iter().cycle();
        while !rest.is_empty() {
            let n = (*cut.next().unwrap()).min(rest.len());
            let r = m.on_bytes(&rest[..n], t0());
            rest = &rest[n..];
            if r.is_err() {
                prop_assert_eq!(m.phase(), ClientPhase::Closed);
            }
            if m.phase() == ClientPhase::Running {
                m.end_test(t0());
            }
            check_buffered(&m, closed_at)?;
            if matches!(m.phase(), ClientPhase::Finished | ClientPhase::Closed) {
                closed_at.get_or_insert(m.decoder.buffered());
            }
        }
    }
}

fn latency_machine(asked: bool) -> ClientMachine {
    let p = TestParams {
        time: 2,
        latency: asked.then_some(crate::LatencyOffer {
            version: 1,
            rate: 10,
            rpm: false,
            owd: false,
        }),
        ..TestParams::default()
    };
    ClientMachine::new(make_cookie(&[7; 36]), &p, PhaseLimits::default(), t0())
}

#[test]
fn latency_ready_only_when_asked_once_and_before_create_streams() {
    let mut m = latency_machine(true);
    assert_eq!(feed(&mut m, &[9], false).unwrap(), [ClientEvent::Accepted]);
    let ev = feed(&mut m, &[LATENCY_READY, 10], false).unwrap();
    assert_eq!(ev, [ClientEvent::LatencyReady, ClientEvent::CreateStreams]);
    assert_eq!(m.phase(), ClientPhase::AwaitTestStart);
    // Twice: the second is an unknown message.
    let mut m = latency_machine(true);
    feed(&mut m, &[9], false).unwrap();
    let e = feed(&mut m, &[LATENCY_READY, LATENCY_READY], false).unwrap_err();
    assert_eq!(e.code, IE_MESSAGE);
    // After CREATE_STREAMS: too late.
    let mut m = latency_machine(true);
    let e = feed(&mut m, &[9, 10, LATENCY_READY], false).unwrap_err();
    assert_eq!(e.code, IE_MESSAGE);
    // Not asked for: error 110 as for any byte iperf3 does not define.
    let mut m = latency_machine(false);
    let e = feed(&mut m, &[9, LATENCY_READY], false).unwrap_err();
    assert_eq!(e.code, IE_MESSAGE);
}

#[test]
fn latency_ready_is_no_iperf3_state() {
    assert_eq!(Msg::from_byte(LATENCY_READY), None);
}

#[test]
fn bounceback_alone_waits_for_latency_ready_as_an_rperf3_server_sign() {
    let p = TestParams {
        time: 2,
        bounceback: Some(crate::bounceback::BouncebackOffer {
            version: 1,
            request: 100,
            reply: 100,
            hold_us: 0,
            period_us: 0,
            load: None,
        }),
        ..TestParams::default()
    };
    let mut m = ClientMachine::new(make_cookie(&[7; 36]), &p, PhaseLimits::default(), t0());
    assert_eq!(feed(&mut m, &[9], false).unwrap(), [ClientEvent::Accepted]);
    let ev = feed(&mut m, &[LATENCY_READY, 10], false).unwrap();
    assert_eq!(ev, [ClientEvent::LatencyReady, ClientEvent::CreateStreams]);
}
