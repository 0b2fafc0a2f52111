//! Tests for the results document: both −1 spellings, required keys, the
//! `omitted_*` pair, and the exact 3.14+ form we write.

use super::*;
use proptest::prelude::*;
use serde_json::json;

const FROM_3_12: &str = r#"{"cpu_util_total":44.960160076097836,"cpu_util_user":0.50824758064997577,"cpu_util_system":44.451912495447857,"sender_has_retransmits":1,"congestion_used":"bbr","streams":[{"id":1,"bytes":3686924288,"retransmits":14,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.003371}]}"#;

const SERVER_3_12: &str = r#"{"cpu_util_total":1.5,"cpu_util_user":0.25,"cpu_util_system":1.25,"sender_has_retransmits":18446744073709551615,"streams":[{"id":1,"bytes":3686924288,"retransmits":18446744073709551615,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":2.0}]}"#;

#[test]
fn reads_3_12_client_results() {
    let r = TestResults::from_json(FROM_3_12.as_bytes()).unwrap();
    assert_eq!(r.sender_has_retransmits, 1);
    assert_eq!(r.congestion_used.as_deref(), Some("bbr"));
    assert!((r.cpu_util_total - 44.960160076097836).abs() < 1e-12);
    let s = &r.streams[0];
    assert_eq!(
        (s.id, s.bytes, s.retransmits, s.errors, s.packets),
        (1, 3686924288, 14, 0, 0)
    );
    assert_eq!((s.omitted_errors, s.omitted_packets), (None, None));
    assert_eq!(s.end_time, 2.003371);
}

#[test]
fn unsigned_minus_one_reads_as_minus_one() {
    let r = TestResults::from_json(SERVER_3_12.as_bytes()).unwrap();
    assert_eq!(r.sender_has_retransmits, -1);
    assert_eq!(r.streams[0].retransmits, -1);
    // The same value written as a double.
    let r = TestResults::from_json(
        SERVER_3_12
            .replace("18446744073709551615", "1.8446744073709552e19")
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(r.sender_has_retransmits, -1);
    assert_eq!(r.streams[0].retransmits, -1);
}

#[test]
fn writes_3_14_form_in_iperf3_key_order() {
    let r = TestResults {
        cpu_util_total: 62.5,
        cpu_util_user: 1.0,
        cpu_util_system: 61.5,
        sender_has_retransmits: -1,
        congestion_used: Some("bbr".into()),
        server_output_json: None,
        server_output_text: None,
        streams: vec![StreamResult {
            id: 1,
            bytes: 3892576256,
            retransmits: -1,
            jitter: 0.0,
            errors: 0,
            omitted_errors: Some(0),
            packets: 0,
            omitted_packets: Some(0),
            start_time: 0.0,
            end_time: 2.001212,
        }],
        rperf3_bounceback: None,
    };
    assert_eq!(
        serde_json::to_string(&r.to_json()).unwrap(),
        r#"{"cpu_util_total":62.5,"cpu_util_user":1,"cpu_util_system":61.5,"sender_has_retransmits":-1,"congestion_used":"bbr","streams":[{"id":1,"bytes":3892576256,"retransmits":-1,"jitter":0,"errors":0,"omitted_errors":0,"packets":0,"omitted_packets":0,"start_time":0,"end_time":2.001212}]}"#
    );
    let back = TestResults::from_json(&r.encode()[4..]).unwrap();
    assert_eq!(back, r);
}

#[test]
fn server_output_sits_before_streams() {
    let r = TestResults {
        server_output_json: Some(json!({"start": {}})),
        server_output_text: Some("line\n".into()),
        ..TestResults::default()
    };
    let v = r.to_json();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "cpu_util_total",
            "cpu_util_user",
            "cpu_util_system",
            "sender_has_retransmits",
            "server_output_json",
            "server_output_text",
            "streams"
        ]
    );
    let back = TestResults::from_value(&v).unwrap();
    assert_eq!(back.server_output_text.as_deref(), Some("line\n"));
    assert_eq!(back.server_output_json, Some(json!({"start": {}})));
}

#[test]
fn an_rperf3_clients_bounceback_round_trips_follow_streams_issue18() {
    let r = TestResults {
        rperf3_bounceback: Some("00ff".into()),
        ..TestResults::default()
    };
    let s = serde_json::to_string(&r.to_json()).unwrap();
    assert!(
        s.ends_with(r#""streams":[],"rperf3_bounceback":"00ff"}"#),
        "{s}"
    );
    assert_eq!(TestResults::from_json(&r.encode()[4..]).unwrap(), r);
    // A stock peer's document has none.
    let plain = TestResults::default();
    assert!(!serde_json::to_string(&plain.to_json())
        .unwrap()
        .contains("rperf3"));
}

#[test]
fn a_lone_omitted_value_is_never_written() {
    let r = TestResults {
        streams: vec![StreamResult {
            omitted_errors: Some(3),
            ..StreamResult::default()
        }],
        ..TestResults::default()
    };
    let s = serde_json::to_string(&r.to_json()).unwrap();
    assert!(!s.contains("omitted"), "{s}");
}

#[test]
fn every_required_key_is_required() {
    let full: Value = serde_json::from_str(FROM_3_12).unwrap();
    for k in [
        "cpu_util_total",
        "cpu_util_user",
        "cpu_util_system",
        "sender_has_retransmits",
        "streams",
    ] {
        let mut v = full.clone();
        v.as_object_mut().unwrap().remove(k);
        assert_eq!(
            TestResults::from_value(&v).unwrap_err().code,
            117,
            "without {k}"
        );
        let mut v = full.clone();
        v[k] = json!("1");
        assert_eq!(
            TestResults::from_value(&v).unwrap_err().code,
            117,
            "{k} as string"
        );
    }
    for k in ["id", "bytes", "retransmits", "jitter", "errors", "packets"] {
        let mut v = full.clone();
        v["streams"][0].as_object_mut().unwrap().remove(k);
        assert_eq!(
            TestResults::from_value(&v).unwrap_err().code,
            117,
            "without {k}"
        );
        let mut v = full.clone();
        v["streams"][0][k] = json!(null);
        assert_eq!(
            TestResults::from_value(&v).unwrap_err().code,
            117,
            "{k} null"
        );
    }
    for k in ["start_time", "end_time", "congestion_used"] {
        let mut v = full.clone();
        v.as_object_mut().unwrap().remove(k);
        v["streams"][0].as_object_mut().unwrap().remove(k);
        assert!(TestResults::from_value(&v).is_ok(), "{k} is optional");
    }
}

#[test]
fn omitted_values_come_in_pairs() {
    let mut v: Value = serde_json::from_str(FROM_3_12).unwrap();
    v["streams"][0]["omitted_errors"] = json!(2);
    assert_eq!(TestResults::from_value(&v).unwrap_err().code, 117);
    v["streams"][0]["omitted_packets"] = json!(40);
    let r = TestResults::from_value(&v).unwrap();
    assert_eq!(
        (r.streams[0].omitted_errors, r.streams[0].omitted_packets),
        (Some(2), Some(40))
    );
    v["streams"][0]
        .as_object_mut()
        .unwrap()
        .remove("omitted_errors");
    assert_eq!(TestResults::from_value(&v).unwrap_err().code, 117);
}

#[test]
fn floats_and_junk() {
    let r = TestResults::from_json(
        br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":0.0,"streams":[{"id":3.0,"bytes":1000.0,"retransmits":-1.0,"jitter":0.000123,"errors":2.0,"packets":50.0}],"extra":[1,2]}"#,
    )
    .unwrap();
    let s = &r.streams[0];
    assert_eq!(
        (s.id, s.bytes, s.retransmits, s.errors, s.packets),
        (3, 1000, -1, 2, 50)
    );
    assert_eq!(s.jitter, 0.000123);
    assert_eq!(r.streams.len(), 1);
    for bad in [&b""[..], b"[]", b"{", b"{\"streams\":{}}"] {
        assert_eq!(TestResults::from_json(bad).unwrap_err().code, 117);
    }
    // streams may be empty.
    let empty = br#"{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":-1,"streams":[]}"#;
    assert!(TestResults::from_json(empty).unwrap().streams.is_empty());
}

prop_compose! {
    fn any_stream()(
        id in 1..1000i32, bytes in any::<u64>(), retransmits in -1..i64::MAX,
        jitter in 0.0..10.0f64, errors in 0..i64::MAX, omitted in proptest::option::of((0..i64::MAX, any::<u64>())),
        packets in any::<u64>(), end_time in 0.0..100000.0f64,
    ) -> StreamResult {
        StreamResult {
            id, bytes, retransmits, jitter, errors,
            omitted_errors: omitted.map(|o| o.0), packets, omitted_packets: omitted.map(|o| o.1),
            start_time: 0.0, end_time,
        }
    }
}

proptest! {
    #[test]
    fn results_round_trip(
        cpu in proptest::array::uniform3(0.0..10000.0f64),
        shr in -1..2i64,
        cong in proptest::option::of("[a-z]{1,10}"),
        streams in proptest::collection::vec(any_stream(), 0..10),
    ) {
        let r = TestResults {
            cpu_util_total: cpu[0], cpu_util_user: cpu[1], cpu_util_system: cpu[2],
            sender_has_retransmits: shr, congestion_used: cong,
            server_output_json: None, server_output_text: None, streams,
            rperf3_bounceback: None,
        };
        let back = TestResults::from_json(&r.encode()[4..]).unwrap();
        prop_assert_eq!(back, r);
    }

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,300}") {
        let _ = TestResults::from_json(s.as_bytes());
    }
}

/// A results document as any peer might write it: the keys 3.x sends, each
/// usually a number and sometimes anything, with up to a few streams.
fn results_doc() -> BoxedStrategy<String> {
    use crate::json_gen::{deep_text, field, number_text, object, string_text, value_text};
    // Odds that keep most documents with a few streams acceptable.
    let num = || field(80, number_text().boxed());
    let stream = object(vec![
        ("id", num()),
        ("bytes", num()),
        ("retransmits", num()),
        ("jitter", num()),
        ("errors", num()),
        ("packets", num()),
        ("start_time", num()),
        ("end_time", num()),
    ]);
    // The omitted pair: usually both or neither, sometimes a lone one.
    let omitted = prop_oneof![
        3 => Just(String::new()),
        3 => (number_text(), number_text())
            .prop_map(|(e, p)| format!("\"omitted_errors\":{e},\"omitted_packets\":{p}")),
        1 => number_text().prop_map(|e| format!("\"omitted_errors\":{e}")),
        1 => number_text().prop_map(|p| format!("\"omitted_packets\":{p}")),
    ];
    let stream = (stream, omitted).prop_map(|(s, o)| match (o.is_empty(), s.as_str()) {
        (true, _) => s,
        (false, "{}") => format!("{{{o}}}"),
        (false, _) => format!("{{{o},{}", &s[1..]),
    });
    let streams = proptest::collection::vec(stream, 0..6)
        .prop_map(|s| format!("[{}]", s.join(",")))
        .boxed();
    let server_json = prop_oneof![
        6 => Just(None),
        3 => value_text().prop_map(Some),
        1 => deep_text().prop_map(Some),
    ]
    .boxed();
    object(vec![
        ("cpu_util_total", num()),
        ("cpu_util_user", num()),
        ("cpu_util_system", num()),
        ("sender_has_retransmits", num()),
        ("congestion_used", field(80, string_text().boxed())),
        ("server_output_json", server_json),
        (
            "server_output_text",
            proptest::option::of(string_text()).boxed(),
        ),
        ("streams", field(80, streams)),
    ])
}

fn any_results_bytes() -> impl Strategy<Value = Vec<u8>> {
    use crate::json_gen::{damaged, deep_text, value_text};
    damaged(
        prop_oneof![
            8 => results_doc(),
            1 => deep_text().boxed(),
            1 => value_text().boxed(),
        ]
        .boxed(),
    )
}

/// Framed documents, state bytes and noise back to back, as one byte stream.
fn results_stream() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => any_results_bytes().prop_map(|b| {
            let mut v = (b.len() as u32).to_be_bytes().to_vec();
            v.extend(b);
            v
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..16),
        1 => any::<u32>().prop_map(|n| n.to_be_bytes().to_vec()),
    ];
    proptest::collection::vec(piece, 0..4).prop_map(|p| p.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever the peer sends: no panic; any failure is error 117; what is
    /// accepted is a JSON object with as many streams as it lists, and our
    /// own encoding of it reads back the same.
    #[test]
    fn any_document_reads_back_or_fails_117(body in any_results_bytes()) {
        match TestResults::from_json(&body) {
            Ok(r) => {
                let v: Value = decode_json(&body).unwrap();
                prop_assert_eq!(v["streams"].as_array().map(Vec::len), Some(r.streams.len()));
                let back = TestResults::from_json(&r.encode()[4..]);
                prop_assert_eq!(back.as_ref().ok(), Some(&r));
            }
            Err(e) => prop_assert_eq!(e.code, 117),
        }
    }

    /// Read as the machines read: after every chunk, cut documents and state
    /// bytes until one is incomplete. What stays buffered is never more than
    /// one document within the limit, and a bad prefix fails at once.
    #[test]
    fn results_or_state_buffers_at_most_one_document(
        stream in results_stream(),
        cuts in proptest::collection::vec(1usize..600, 1..16),
        max_len in prop_oneof![Just(1u32), 2u32..4096, Just(0x00FF_FFFF), Just(0x0AFF_FFFF)],
    ) {
        let mut d = ControlDecoder::new();
        let mut rest = &stream[..];
        let mut cut = cuts.iter().cycle();
        'read: while !rest.is_empty() {
            let n = (*cut.next().unwrap()).min(rest.len());
            d.push(&rest[..n]);
            rest = &rest[n..];
            loop {
                match read_results_or_state(&mut d, max_len) {
                    Ok(None) => break,
                    Ok(Some(ResultsOrState::State(b))) => {
                        prop_assert!(u32::from(b) > max_len >> 24);
                    }
                    Ok(Some(ResultsOrState::Results(_))) => {}
                    Err(e) => {
                        prop_assert_eq!(e.code, 117);
                        break 'read;
                    }
                }
            }
            prop_assert!(d.buffered() < 4 + max_len as usize);
        }
    }
}
