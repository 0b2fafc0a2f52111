//! Tests for the parameters document: exact client output, iperf3 server reading
//! rules, and the server's checks.

use super::*;
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

fn code_of(p: &TestParams, l: &ServerLimits) -> i32 {
    p.validate(l).err().map_or(0, |e| e.code)
}

#[test]
fn range_checks_and_boundaries() {
    let l = ServerLimits::default();
    let base = TestParams::default();
    let udp = TestParams {
        protocol: Protocol::Udp,
        len: 1400,
        ..base.clone()
    };
    let cases: Vec<(TestParams, i32)> = vec![
        (
            TestParams {
                len: 0,
                ..base.clone()
            },
            7,
        ),
        (
            TestParams {
                len: -1,
                ..base.clone()
            },
            7,
        ),
        (
            TestParams {
                len: 1,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                len: 1048576,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                len: 1048577,
                ..base.clone()
            },
            7,
        ),
        (
            TestParams {
                len: 15,
                ..udp.clone()
            },
            20,
        ),
        (
            TestParams {
                len: 16,
                ..udp.clone()
            },
            0,
        ),
        (
            TestParams {
                len: 65507,
                ..udp.clone()
            },
            0,
        ),
        (
            TestParams {
                len: 65508,
                ..udp.clone()
            },
            20,
        ),
        (
            TestParams {
                len: 0,
                ..udp.clone()
            },
            20,
        ),
        (
            TestParams {
                len: 2_000_000,
                ..udp.clone()
            },
            7,
        ),
        (
            TestParams {
                time: -1,
                ..base.clone()
            },
            5,
        ),
        (
            TestParams {
                time: 0,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                time: 86400,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                time: 86401,
                ..base.clone()
            },
            5,
        ),
        (
            TestParams {
                parallel: 0,
                ..base.clone()
            },
            6,
        ),
        (
            TestParams {
                parallel: 128,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                parallel: 129,
                ..base.clone()
            },
            6,
        ),
        (
            TestParams {
                omit: 600,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                omit: 601,
                ..base.clone()
            },
            12,
        ),
        (
            TestParams {
                omit: -1,
                ..base.clone()
            },
            12,
        ),
        (
            TestParams {
                burst: 1000,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                burst: 1001,
                ..base.clone()
            },
            15,
        ),
        (
            TestParams {
                mss: 32767,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                mss: 32768,
                ..base.clone()
            },
            10,
        ),
        (
            TestParams {
                window: 536870912,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                window: 536870913,
                ..base.clone()
            },
            8,
        ),
        (
            TestParams {
                tos: 255,
                ..base.clone()
            },
            0,
        ),
        (
            TestParams {
                tos: 256,
                ..base.clone()
            },
            21,
        ),
        (
            TestParams {
                tos: -1,
                ..base.clone()
            },
            21,
        ),
    ];
    for (p, want) in cases {
        assert_eq!(code_of(&p, &l), want, "{p:?}");
    }
}

#[test]
fn checks_run_in_iperf3_order() {
    let l = ServerLimits::default();
    let all_bad = TestParams {
        len: 0,
        time: -1,
        parallel: 0,
        omit: -1,
        burst: -1,
        mss: -1,
        window: -1,
        tos: -1,
        ..TestParams::default()
    };
    let mut p = all_bad;
    for want in [7, 5, 6, 12, 15, 10, 8, 21] {
        assert_eq!(code_of(&p, &l), want);
        match want {
            7 => p.len = 1000,
            5 => p.time = 1,
            6 => p.parallel = 1,
            12 => p.omit = 0,
            15 => p.burst = 0,
            10 => p.mss = 0,
            8 => p.window = 0,
            _ => p.tos = 0,
        }
    }
    assert_eq!(code_of(&p, &l), 0);
}

#[test]
fn server_settings_checks() {
    let p = TestParams {
        time: 10,
        omit: 2,
        ..TestParams::default()
    };
    let max = |d| ServerLimits {
        max_duration: Some(d),
        ..ServerLimits::default()
    };
    assert_eq!(code_of(&p, &max(12)), 0);
    assert_eq!(code_of(&p, &max(11)), 37);
    assert_eq!(
        code_of(
            &TestParams {
                time: 0,
                ..p.clone()
            },
            &max(100)
        ),
        37
    );

    let rate = |r| ServerLimits {
        total_rate_limit: Some(r),
        ..ServerLimits::default()
    };
    let p = TestParams {
        parallel: 2,
        bandwidth: 10_000_000,
        ..TestParams::default()
    };
    assert_eq!(code_of(&p, &rate(20_000_000)), 0);
    assert_eq!(code_of(&p, &rate(19_999_999)), 27);
    let bidir = TestParams {
        bidirectional: true,
        ..p.clone()
    };
    assert_eq!(code_of(&bidir, &rate(20_000_000)), 27);
    assert_eq!(code_of(&bidir, &rate(40_000_000)), 0);
    let fq = TestParams {
        bandwidth: 0,
        fqrate: 30_000_000,
        ..p.clone()
    };
    assert_eq!(code_of(&fq, &rate(50_000_000)), 27);
    let huge = TestParams {
        parallel: 128,
        bandwidth: u64::MAX,
        bidirectional: true,
        ..p
    };
    assert_eq!(code_of(&huge, &rate(u64::MAX)), 27, "no overflow");

    let no_sendfile = ServerLimits {
        sendfile_supported: false,
        ..ServerLimits::default()
    };
    let zc = TestParams {
        zerocopy: true,
        ..TestParams::default()
    };
    assert_eq!(
        code_of(&zc, &no_sendfile),
        0,
        "a receiving server does not send"
    );
    assert_eq!(
        code_of(
            &TestParams {
                reverse: true,
                ..zc
            },
            &no_sendfile
        ),
        11
    );

    let sctp = TestParams {
        protocol: Protocol::Sctp,
        ..TestParams::default()
    };
    assert_eq!(code_of(&sctp, &ServerLimits::default()), 18);
    let with_sctp = ServerLimits {
        sctp_supported: true,
        ..ServerLimits::default()
    };
    assert_eq!(code_of(&sctp, &with_sctp), 0);

    let file = ServerLimits {
        file_transfer: true,
        ..ServerLimits::default()
    };
    let udp = TestParams {
        protocol: Protocol::Udp,
        len: 1400,
        ..TestParams::default()
    };
    assert_eq!(code_of(&udp, &file), 34);
    assert_eq!(code_of(&TestParams::default(), &file), 0);
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
