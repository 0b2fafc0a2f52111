//! Tests for the server-side parameter checks: boundaries, order, server settings.

use super::*;

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
