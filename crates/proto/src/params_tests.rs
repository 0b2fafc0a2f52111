//! Tests for the parameters document: exact client output, iperf3 server reading
//! rules, and the server's checks.

use super::*;
use crate::params_check::ServerLimits;
use proptest::prelude::*;
use serde_json::json;

fn text(p: &TestParams) -> String {
    serde_json::to_string(&p.to_json()).unwrap()
}

fn parse(s: &str) -> TestParams {
    TestParams::from_json(s.as_bytes()).unwrap()
}

#[test]
fn default_tcp_matches_reference_client() {
    let p = TestParams {
        time: 2,
        ..TestParams::default()
    };
    assert_eq!(
        text(&p),
        r#"{"tcp":true,"omit":0,"time":2,"num":0,"blockcount":0,"parallel":1,"len":131072,"pacing_timer":1000,"client_version":"3.21"}"#
    );
    // Framed: big-endian length, then the same text.
    let framed = p.encode();
    assert_eq!(
        u32::from_be_bytes(framed[..4].try_into().unwrap()) as usize,
        framed.len() - 4
    );
}

#[test]
fn udp_always_carries_gsro_keys() {
    let p = TestParams {
        protocol: Protocol::Udp,
        time: 1,
        len: 16332,
        bandwidth: 1_000_000,
        ..TestParams::default()
    };
    assert_eq!(
        text(&p),
        r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":1,"len":16332,"bandwidth":1000000,"pacing_timer":1000,"gso":0,"gso_dg_size":0,"gso_bf_size":65507,"gro":0,"gro_bf_size":65507,"client_version":"3.21"}"#
    );
}

#[test]
fn many_options_round_trip_in_reference_order() {
    let wire = r#"{"tcp":true,"omit":1,"server_affinity":1,"time":1,"num":0,"blockcount":0,"MSS":1400,"nodelay":true,"parallel":1,"window":1048576,"len":131072,"pacing_timer":1000,"TOS":16,"title":"mytitle","extra_data":"mydata","congestion":"cubic","get_server_output":1,"udp_counters_64bit":1,"repeating_payload":1,"zerocopy":1,"dont_fragment":1,"client_version":"3.12"}"#;
    let p = parse(wire);
    assert_eq!(p.omit, 1);
    assert_eq!(p.server_affinity, Some(1));
    assert_eq!(p.mss, 1400);
    assert!(p.nodelay && p.get_server_output && p.udp_counters_64bit);
    assert!(p.repeating_payload && p.zerocopy && p.dont_fragment);
    assert_eq!(p.window, 1048576);
    assert_eq!(p.tos, 16);
    assert_eq!(p.title.as_deref(), Some("mytitle"));
    assert_eq!(p.extra_data.as_deref(), Some("mydata"));
    assert_eq!(p.congestion.as_deref(), Some("cubic"));
    assert_eq!(p.client_version.as_deref(), Some("3.12"));
    assert_eq!(text(&p), wire);
}

#[test]
fn every_optional_key_has_its_place() {
    let p = TestParams {
        protocol: Protocol::Udp,
        reverse: true,
        bidirectional: true,
        mptcp: true,
        fqrate: 20_000_000,
        burst: 5,
        flowlabel: 7,
        congestion_used: Some("bbr".into()),
        authtoken: Some("tok".into()),
        skip_rx_copy: true,
        ..TestParams::default()
    };
    let v = p.to_json();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "udp",
            "omit",
            "time",
            "num",
            "blockcount",
            "parallel",
            "reverse",
            "bidirectional",
            "mptcp",
            "len",
            "fqrate",
            "pacing_timer",
            "burst",
            "gso",
            "gso_dg_size",
            "gso_bf_size",
            "gro",
            "gro_bf_size",
            "flowlabel",
            "congestion_used",
            "authtoken",
            "skip_rx_copy",
            "client_version"
        ]
    );
    assert_eq!(v["reverse"], json!(true));
    assert_eq!(v["skip_rx_copy"], json!(1));
}

#[test]
fn never_sends_false_or_zero_flags() {
    let s = text(&TestParams::default());
    assert!(!s.contains("false"));
    for k in [
        "nodelay",
        "reverse",
        "get_server_output",
        "zerocopy",
        "MSS",
        "window",
        "TOS",
    ] {
        assert!(!s.contains(k), "{k} in {s}");
    }
}

#[test]
fn udp_burst_from_3_12_client() {
    let p = parse(
        r#"{"udp":true,"omit":0,"time":1,"num":0,"blockcount":0,"parallel":2,"len":1000,"bandwidth":10000000,"fqrate":20000000,"pacing_timer":1000,"burst":5,"client_version":"3.12"}"#,
    );
    assert_eq!(p.protocol, Protocol::Udp);
    assert_eq!((p.parallel, p.len, p.burst), (2, 1000, 5));
    assert_eq!((p.bandwidth, p.fqrate), (10_000_000, 20_000_000));
    assert_eq!(p.streams_expected(), 2);
    assert_eq!(p.validate(&ServerLimits::default()), Ok(()));
}

#[test]
fn booleans_mean_present() {
    let p = parse(r#"{"tcp":true,"reverse":false,"nodelay":false}"#);
    assert!(p.reverse && p.nodelay);
    assert_eq!(p.direction(), Direction::Reverse);
    // 3.18+ type check: a number is not a boolean.
    let p = parse(r#"{"nodelay":1,"reverse":"yes","bidirectional":null}"#);
    assert!(!p.nodelay && !p.reverse && !p.bidirectional);
}

#[test]
fn number_flags_follow_their_rules() {
    let p = parse(
        r#"{"get_server_output":0,"udp_counters_64bit":0,"repeating_payload":0,"zerocopy":0,"dont_fragment":0,"skip_rx_copy":0}"#,
    );
    assert!(p.get_server_output && p.udp_counters_64bit && p.repeating_payload);
    assert!(!p.zerocopy && !p.dont_fragment && !p.skip_rx_copy);
    let p = parse(r#"{"get_server_output":true,"zerocopy":2,"skip_rx_copy":1.5}"#);
    assert!(!p.get_server_output, "a boolean is not a number");
    assert!(p.zerocopy && p.skip_rx_copy);
}

#[test]
fn wrong_types_and_unknown_keys_are_ignored() {
    let p = parse(r#"{"time":"5","parallel":[2],"title":7,"len":1400.0,"whatever":{"a":1}}"#);
    assert_eq!(p.time, 10);
    assert_eq!(p.parallel, 1);
    assert_eq!(p.title, None);
    assert_eq!(p.len, 1400);
}

#[test]
fn missing_keys_take_server_defaults() {
    let p = parse("{}");
    assert_eq!(p, TestParams::default());
    assert_eq!(p.protocol, Protocol::Tcp);
    assert_eq!((p.time, p.parallel, p.len), (10, 1, 131072));
    assert_eq!(p.validate(&ServerLimits::default()), Ok(()));
}

#[test]
fn numbers_follow_c_int_conversion() {
    let p = parse(r#"{"parallel":2.9,"time":-3.7,"omit":1e20,"num":5e9,"bandwidth":-4}"#);
    assert_eq!(p.parallel, 2);
    assert_eq!(p.time, -3);
    assert_eq!(p.omit, i32::MAX);
    assert_eq!(p.num, 5_000_000_000);
    assert_eq!(p.bandwidth, 0);
}

#[test]
fn last_protocol_key_wins() {
    assert_eq!(parse(r#"{"tcp":true,"udp":true}"#).protocol, Protocol::Udp);
    assert_eq!(
        parse(r#"{"udp":true,"sctp":true,"tcp":true}"#).protocol,
        Protocol::Sctp
    );
}

#[test]
fn non_objects_are_error_114() {
    for bad in ["", "[]", "3", "{", "\"x\"", "null"] {
        assert_eq!(
            TestParams::from_json(bad.as_bytes()).unwrap_err().code,
            114,
            "{bad:?}"
        );
    }
}

#[test]
fn direction_and_stream_count() {
    let mut p = TestParams {
        parallel: 3,
        ..TestParams::default()
    };
    assert_eq!(
        (p.direction(), p.streams_expected()),
        (Direction::Normal, 3)
    );
    assert!(!p.server_sends() && p.server_receives());
    p.reverse = true;
    assert_eq!(
        (p.direction(), p.streams_expected()),
        (Direction::Reverse, 3)
    );
    assert!(p.server_sends() && !p.server_receives());
    p.bidirectional = true;
    assert_eq!((p.direction(), p.streams_expected()), (Direction::Bidir, 6));
    assert!(p.server_sends() && p.server_receives());
    p.parallel = -1;
    assert_eq!(p.streams_expected(), 0);
}

fn opt_string() -> impl Strategy<Value = Option<String>> {
    proptest::option::of("[ -~]{0,20}")
}

prop_compose! {
    fn any_params()(
        proto in 0..3u8,
        ints in proptest::array::uniform8(any::<i32>()),
        nonzero in proptest::array::uniform2(1..i32::MAX),
        u64s in proptest::array::uniform4(any::<u64>()),
        affinity in proptest::option::of(any::<i32>()),
        bools in proptest::array::uniform12(any::<bool>()),
        strings in (opt_string(), opt_string(), opt_string(), opt_string(), opt_string()),
        gsro in proptest::array::uniform5(any::<i32>()),
    ) -> TestParams {
        let protocol = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp][proto as usize];
        let d = TestParams::default();
        let udp = protocol == Protocol::Udp;
        TestParams {
            protocol,
            omit: ints[0], time: ints[1], mss: ints[2], parallel: ints[3], window: ints[4],
            burst: ints[5], tos: ints[6], flowlabel: ints[7],
            len: nonzero[0], pacing_timer: nonzero[1],
            num: u64s[0], blockcount: u64s[1], bandwidth: u64s[2], fqrate: u64s[3],
            server_affinity: affinity,
            nodelay: bools[0], reverse: bools[1], bidirectional: bools[2], mptcp: bools[3],
            get_server_output: bools[4], udp_counters_64bit: bools[5],
            repeating_payload: bools[6], zerocopy: bools[7], dont_fragment: bools[8],
            skip_rx_copy: bools[9],
            title: strings.0, extra_data: strings.1, congestion: strings.2,
            congestion_used: strings.3, authtoken: strings.4,
            gso: if udp { gsro[0] } else { d.gso },
            gso_dg_size: if udp { gsro[1] } else { d.gso_dg_size },
            gso_bf_size: if udp { gsro[2] } else { d.gso_bf_size },
            gro: if udp { gsro[3] } else { d.gro },
            gro_bf_size: if udp { gsro[4] } else { d.gro_bf_size },
            client_version: if bools[10] { Some("3.21".into()) } else { None },
            latency: None,
            bounceback: None,
        }
    }
}

proptest! {
    #[test]
    fn client_output_reads_back_identically(p in any_params()) {
        let wire = p.encode();
        let back = TestParams::from_json(&wire[4..]).unwrap();
        let want = TestParams { client_version: Some(
            p.client_version.clone().unwrap_or_else(|| CLIENT_VERSION.to_owned())), ..p };
        prop_assert_eq!(back, want);
    }

    #[test]
    fn any_json_object_parses_and_validates_without_panic(
        pairs in proptest::collection::vec(("[a-zA-Z_]{1,16}", any::<i64>(), any::<f64>(), 0..5u8), 0..40),
    ) {
        let mut m = Map::new();
        let keys = ["tcp", "udp", "omit", "time", "len", "parallel", "bandwidth", "window",
                    "MSS", "TOS", "burst", "reverse", "bidirectional", "title", "num"];
        for (i, (k, n, f, kind)) in pairs.iter().enumerate() {
            let key = if i % 2 == 0 { keys[i % keys.len()].to_owned() } else { k.clone() };
            let v = match kind {
                0 => json!(n),
                1 => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
                2 => json!(true),
                3 => json!(k),
                _ => json!([n]),
            };
            m.insert(key, v);
        }
        let p = TestParams::from_map(&m);
        let limits = ServerLimits { max_duration: Some(100), total_rate_limit: Some(1 << 30),
                                    ..ServerLimits::default() };
        let _ = p.validate(&limits);
        let _ = p.streams_expected();
    }
}

/// A parameters document as any peer might write it: every key a 3.x client
/// sends, each usually of its right type and sometimes of any other.
fn params_doc() -> BoxedStrategy<String> {
    use crate::json_gen::{field, number_text, object, string_text};
    let num = || field(25, number_text().boxed());
    let flag = || {
        field(
            25,
            prop_oneof![Just("true".to_owned()), Just("false".to_owned())].boxed(),
        )
    };
    let text = || field(25, string_text().boxed());
    let mut fields = vec![("tcp", flag()), ("udp", flag()), ("sctp", flag())];
    for k in [
        "omit",
        "server_affinity",
        "time",
        "num",
        "blockcount",
        "MSS",
        "parallel",
        "window",
        "len",
        "bandwidth",
        "fqrate",
        "pacing_timer",
        "burst",
        "gso",
        "gso_dg_size",
        "gso_bf_size",
        "gro",
        "gro_bf_size",
        "TOS",
        "flowlabel",
        "get_server_output",
        "udp_counters_64bit",
        "repeating_payload",
        "zerocopy",
        "dont_fragment",
        "skip_rx_copy",
    ] {
        fields.push((k, num()));
    }
    for k in ["nodelay", "reverse", "bidirectional", "mptcp"] {
        fields.push((k, flag()));
    }
    for k in [
        "title",
        "extra_data",
        "congestion",
        "congestion_used",
        "authtoken",
        "client_version",
    ] {
        fields.push((k, text()));
    }
    object(fields)
}

fn any_params_bytes() -> impl Strategy<Value = Vec<u8>> {
    use crate::json_gen::{damaged, deep_text, value_text};
    damaged(
        prop_oneof![
            8 => params_doc(),
            1 => deep_text().boxed(),
            1 => value_text().boxed(),
        ]
        .boxed(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Whatever the peer sends: no panic; accepted exactly when it is a JSON
    /// object (string bytes that are not UTF-8 taken as cJSON takes them), else
    /// error 114; what was accepted passes through the checks and
    /// our own encoder, and that encoding reads back.
    #[test]
    fn any_document_reads_as_iperf3_or_fails_114(body in any_params_bytes()) {
        let parsed = decode_json(&body);
        match TestParams::from_json(&body) {
            Ok(p) => {
                prop_assert!(matches!(parsed, Ok(Value::Object(_))));
                let limits = ServerLimits {
                    max_duration: Some(100),
                    total_rate_limit: Some(1 << 30),
                    ..ServerLimits::default()
                };
                let _ = p.validate(&limits);
                let _ = p.validate(&ServerLimits::default());
                let _ = (p.direction(), p.streams_expected());
                let wire = p.encode();
                prop_assert!(TestParams::from_json(&wire[4..]).is_ok());
            }
            Err(e) => {
                prop_assert_eq!(e.code, 114);
                prop_assert!(!matches!(parsed, Ok(Value::Object(_))));
            }
        }
    }
}

#[test]
fn latency_key_only_when_asked_and_read_back() {
    let plain = TestParams {
        time: 2,
        ..TestParams::default()
    };
    let asked = TestParams {
        latency: Some(LatencyOffer {
            version: 1,
            rate: 10,
            rpm: false,
            owd: false,
        }),
        ..plain.clone()
    };
    // Without --latency the bytes are exactly a 3.21 client's.
    let without = text(&plain);
    assert!(!without.contains("rperf3"));
    let with = text(&asked);
    assert_eq!(
        with,
        format!(
            "{},\"rperf3_latency\":{{\"v\":1,\"rate\":10}}}}",
            &without[..without.len() - 1]
        )
    );
    assert_eq!(parse(&with).latency, asked.latency);
    assert_eq!(parse(&without).latency, None);
    // Not an object, or no version: no offer.
    assert_eq!(parse(r#"{"tcp":true,"rperf3_latency":1}"#).latency, None);
    assert_eq!(
        parse(r#"{"tcp":true,"rperf3_latency":{"rate":5}}"#).latency,
        None
    );
    let v2 = parse(r#"{"tcp":true,"rperf3_latency":{"v":2}}"#).latency;
    assert_eq!(
        v2,
        Some(LatencyOffer {
            version: 2,
            rate: 0,
            rpm: false,
            owd: false,
        })
    );
}

#[test]
fn rpm_rides_in_the_latency_offer_only_when_set() {
    let offer = |rpm| TestParams {
        time: 2,
        latency: Some(LatencyOffer {
            version: 1,
            rate: 10,
            rpm,
            owd: false,
        }),
        ..TestParams::default()
    };
    let with = text(&offer(true));
    assert!(
        with.ends_with(",\"rperf3_latency\":{\"v\":1,\"rate\":10,\"rpm\":1}}"),
        "{with}"
    );
    assert_eq!(parse(&with).latency, offer(true).latency);
    assert!(!text(&offer(false)).contains("rpm"));
    let zero = parse(r#"{"tcp":true,"rperf3_latency":{"v":1,"rpm":0}}"#).latency;
    assert_eq!(zero.map(|l| l.rpm), Some(false));
}

#[test]
fn bounceback_offer_is_sent_only_when_asked_and_read_back() {
    let plain = TestParams {
        time: 2,
        ..TestParams::default()
    };
    let offer = BouncebackOffer {
        version: 1,
        request: 100,
        reply: 200,
        hold_us: 0,
        period_us: 50_000,
        load: None,
    };
    let asked = TestParams {
        bounceback: Some(offer),
        ..plain.clone()
    };
    let without = text(&plain);
    assert!(!without.contains("rperf3"));
    let with = text(&asked);
    assert_eq!(
        with,
        format!(
            "{},\"rperf3_bounceback\":{{\"v\":1,\"request\":100,\"reply\":200,\"hold_us\":0,\"period_us\":50000}}}}",
            &without[..without.len() - 1]
        )
    );
    assert_eq!(parse(&with).bounceback, Some(offer));
    assert_eq!(parse(&without).bounceback, None);
}

#[test]
fn owd_rides_in_the_latency_offer_only_when_set_issue18() {
    let offer = |owd| TestParams {
        time: 2,
        latency: Some(LatencyOffer {
            version: 1,
            rate: 10,
            rpm: false,
            owd,
        }),
        ..TestParams::default()
    };
    let with = text(&offer(true));
    assert!(
        with.ends_with(",\"rperf3_latency\":{\"v\":1,\"rate\":10,\"owd\":1}}"),
        "{with}"
    );
    assert_eq!(parse(&with).latency, offer(true).latency);
    assert!(!text(&offer(false)).contains("owd"));
    assert_eq!(
        parse(r#"{"tcp":true,"rperf3_latency":{"v":1,"owd":0}}"#)
            .latency
            .map(|l| l.owd),
        Some(false)
    );
}
