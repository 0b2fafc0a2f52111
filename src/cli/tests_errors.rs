//! Command lines that fail: iperf3's messages, and which error wins.

use std::time::Duration;

use super::table::{self, Opt, OPTIONS};
use super::tests::{argv, client, config, err, param, server};
use super::*;

#[test]
fn full_stderr_text_of_a_parameter_error() {
    let e = parse("rperf3", &argv(&["-c", "h", "-s"])).unwrap_err();
    assert_eq!(
        e.message,
        "rperf3: parameter error - cannot be both server and client\n\n\
         Usage: rperf3 [-s|-c host] [options]\n\
         Try `rperf3 --help' for more information.\n"
    );
    assert_eq!((e.status, e.code), (1, Some(1)));
}

#[test]
fn role_errors() {
    assert_eq!(
        err(&["-s", "-c", "h"]),
        param("cannot be both server and client")
    );
    assert_eq!(
        err(&[]),
        param("must either be a client (-c) or server (-s)")
    );
    assert_eq!(
        err(&["-p", "1"]),
        param("must either be a client (-c) or server (-s)")
    );
    assert_eq!(
        err(&["-c", "h", "-1"]),
        param("some option you are trying to set is server only")
    );
    for opt in [
        "-u",
        "-t5",
        "-n1",
        "-k1",
        "-l1",
        "-P2",
        "-R",
        "--bidir",
        "-w1",
        "-O1",
        "-Tx",
        "--extra-data=x",
        "--get-server-output",
        "--connect-timeout=1",
        "-b1",
        "--repeating-payload",
        "--dont-fragment",
        "--gsro",
    ] {
        assert_eq!(
            err(&["-s", opt]),
            param("some option you are trying to set is client only"),
            "{opt}"
        );
    }
    // Not checked by iperf3 on the server side.
    server(&["-s", "--udp-counters-64bit", "-4"]);
}

/// Bad values, each with iperf3 3.21's text (a parameter error).
pub(super) const VALUE_ERRORS: &[(&[&str], &str)] = &[
    (
        &["-c", "h", "-M", "32768"],
        "TCP MSS too large (maximum = 32767 bytes)",
    ),
    (
        &["-c", "h", "--snd-timeout", "-1"],
        "send timeout value is incorrect or not in range: ",
    ),
    (
        &["-c", "h", "--snd-timeout", "86400001"],
        "send timeout value is incorrect or not in range: ",
    ),
    (
        &["-c", "h", "--cntl-ka=1/2/3"],
        "control connection Keepalive period should be larger than the full retry \
             period (interval * count): ",
    ),
    (&["-c", "h", "--pacing-timer", "-5"], "no error"),
    (&["-c", "h", "-L", "0"], "unable to set IPv6 flow label"),
    (
        &["-c", "h", "-L", "0x100000"],
        "unable to set IPv6 flow label",
    ),
    (
        &["-c", "h", "--fq-rate", "abc"],
        "invalid unit value or suffix: 'abc'",
    ),
    (
        &["-c", "h", "--cport", "0"],
        "port number must be between 1 and 65535 inclusive",
    ),
    (
        &["-c", "h", "--cport", "70000"],
        "port number must be between 1 and 65535 inclusive",
    ),
    (
        &["-c", "h", "-S", "256"],
        "bad TOS value (must be between 0 and 255 inclusive)",
    ),
    (
        &["-c", "h", "-S", "-1"],
        "bad TOS value (must be between 0 and 255 inclusive)",
    ),
    (
        &["-c", "h", "--tos", "abc"],
        "bad TOS value (must be between 0 and 255 inclusive)",
    ),
    (
        &["-c", "h", "--dscp", "64"],
        "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, \
             af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])",
    ),
    (
        &["-c", "h", "--dscp", "le"],
        "bad DSCP value (numeric: 0-63 inclusive, symbolic: one of [af11-13, af21-23, \
             af31-33, af41-43, cs1-7, ef, va, lowdelay, throughput, reliability])",
    ),
    (
        &["-c", "h", "-t", "86401"],
        "test duration valid values are 0 to 86400 seconds",
    ),
    (
        &["-c", "h", "-t", "-1"],
        "test duration valid values are 0 to 86400 seconds",
    ),
    (
        &["-c", "h", "-P", "129"],
        "invalid number of parallel streams (min = 1, max = 128)",
    ),
    (
        &["-c", "h", "-P", "0"],
        "invalid number of parallel streams (min = 1, max = 128)",
    ),
    (
        &["-c", "h", "-l", "2M"],
        "block size too large (maximum = 1048576 bytes)",
    ),
    (
        &["-c", "h", "-l", "-1"],
        "block size too large (maximum = 1048576 bytes)",
    ),
    (
        &["-c", "h", "-u", "-l", "2M"],
        "block size too large (maximum = 1048576 bytes)",
    ),
    (
        &["-c", "h", "-u", "-l", "10"],
        "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
    ),
    (
        &["-c", "h", "-u", "-l", "65508"],
        "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
    ),
    (
        &["-c", "h", "-w", "513M"],
        "socket buffer size too large (maximum = 536870912 bytes)",
    ),
    (
        &["-c", "h", "-i", "0.05"],
        "invalid report interval (min = 0.1, max = 60 seconds)",
    ),
    (
        &["-s", "-i", "61"],
        "invalid report interval (min = 0.1, max = 60 seconds)",
    ),
    (
        &["-s", "-i", "-1"],
        "invalid report interval (min = 0.1, max = 60 seconds)",
    ),
    (
        &["-c", "h", "-O", "601"],
        "bogus value for --omit (maximum = 600 seconds)",
    ),
    (
        &["-c", "h", "-O", "-1"],
        "bogus value for --omit (maximum = 600 seconds)",
    ),
    (
        &["-c", "h", "-b", "1M/0"],
        "invalid burst count (maximum = 1000)",
    ),
    (
        &["-c", "h", "-b", "1M/1001"],
        "invalid burst count (maximum = 1000)",
    ),
    (
        &["-c", "h", "-b", "1X/1001"],
        "invalid burst count (maximum = 1000)",
    ),
    (
        &["-c", "h", "-t", "5", "-n", "1M"],
        "only one test end condition (-t, -n, -k) may be specified",
    ),
    (
        &["-c", "h", "-n", "1M", "-k", "5"],
        "only one test end condition (-t, -n, -k) may be specified",
    ),
    (
        &["-c", "h", "-f", "x"],
        "bad format specifier (valid formats are in the set [kmgtKMGT])",
    ),
    (
        &["-c", "h", "-f", ""],
        "bad format specifier (valid formats are in the set [kmgtKMGT])",
    ),
    (
        &["-c", "h", "-R", "--bidir"],
        "cannot be both reverse and bidirectional",
    ),
    (
        &["-c", "h", "--bidir", "-R"],
        "cannot be both reverse and bidirectional",
    ),
    (
        &["-c", "h", "-p", "0"],
        "port number must be between 1 and 65535 inclusive",
    ),
    (
        &["-c", "h", "-p", "70000"],
        "port number must be between 1 and 65535 inclusive",
    ),
    (
        &["-c", "h", "-p", "abc"],
        "port number must be between 1 and 65535 inclusive",
    ),
    (
        &["-s", "--rcv-timeout", "99"],
        "receive timeout value is incorrect or not in range: ",
    ),
    (
        &["-c", "h", "--rcv-timeout", "500"],
        "client receive timeout is valid only in receiving mode: ",
    ),
    (
        &["-c", "h", "-n", "1X"],
        "invalid unit value or suffix: '1X'",
    ),
    (
        &["-c", "h", "-l", "abc"],
        "invalid unit value or suffix: 'abc'",
    ),
    (
        &["-c", "h", "-w", "1q"],
        "invalid unit value or suffix: '1q'",
    ),
    (
        &["-c", "h", "-b", "fast"],
        "invalid unit value or suffix: 'fast'",
    ),
    (
        &["-c", "h", "-b", "1Z/5"],
        "invalid unit value or suffix: '1Z'",
    ),
    (
        &["-c", "h", "--connect-timeout", "1s"],
        "invalid unit value or suffix: '1s'",
    ),
];

#[test]
fn value_errors_with_iperf3_texts() {
    for (args, msg) in VALUE_ERRORS {
        assert_eq!(err(args), param(msg), "{args:?}");
    }
    // rperf3's own refusal: iperf3 3.21 takes a negative -n or -k and starts
    // the test with it.
    assert_eq!(
        err(&["-c", "h", "-k", "-5"]),
        param("invalid unit value or suffix: '-5'")
    );
}

#[test]
fn the_first_error_on_the_line_wins() {
    // In-loop checks fire before the role checks made at the end.
    assert_eq!(
        err(&["-s", "-t", "100000"]),
        param("test duration valid values are 0 to 86400 seconds")
    );
    assert_eq!(
        err(&["-c", "h", "-p", "0", "-Q"]),
        param("port number must be between 1 and 65535 inclusive")
    );
    assert_eq!(err(&["-Q", "-p", "0"]), "rperf3: invalid option -- 'Q'");
    // Block size and end conditions are checked before the missing role.
    assert_eq!(
        err(&["-l", "2M"]),
        param("block size too large (maximum = 1048576 bytes)")
    );
    assert_eq!(
        err(&["-t", "5", "-n", "1"]),
        param("only one test end condition (-t, -n, -k) may be specified")
    );
    // Server-only before client-only.
    assert_eq!(
        err(&["-c", "h", "-u", "-1"]),
        param("some option you are trying to set is server only")
    );
}

#[test]
fn getopt_errors_with_glibc_texts() {
    assert_eq!(err(&["--foo"]), "rperf3: unrecognized option '--foo'");
    assert_eq!(err(&["-Q"]), "rperf3: invalid option -- 'Q'");
    assert_eq!(err(&["-c"]), "rperf3: option requires an argument -- 'c'");
    assert_eq!(
        err(&["--cl"]),
        "rperf3: option '--client' requires an argument"
    );
    assert_eq!(
        err(&["-s", "--one=3"]),
        "rperf3: option '--one-off' doesn't allow an argument"
    );
    assert_eq!(
        err(&["--b"]),
        "rperf3: option '--b' is ambiguous; possibilities: '--bitrate' '--bytes' \
         '--blockcount' '--bidir' '--bind' '--bind-dev'"
    );
    assert_eq!(err(&["-s", "-d2"]), "rperf3: invalid option -- '2'");
    let e = parse("x", &argv(&["--foo"])).unwrap_err();
    assert_eq!(
        e.message,
        "x: unrecognized option '--foo'\n\nUsage: x [-s|-c host] [options]\n\
         Try `x --help' for more information.\n"
    );
}

#[test]
fn every_option_parses() {
    // One command line per option, on its side.
    for s in OPTIONS {
        let mut line: Vec<String> = match s.side {
            table::Side::Server => vec!["-s".into()],
            _ => vec!["-c".into(), "h".into(), "-R".into()],
        };
        let value = match s.id {
            Opt::Format => "m",
            Opt::Logfile | Opt::Bind | Opt::Title | Opt::ExtraData | Opt::Client => "x",
            Opt::RcvTimeout => "1000",
            Opt::Metrics | Opt::RpmHttp => "127.0.0.1:9464",
            Opt::RpmUrl => "https://h/config",
            Opt::Congestion => "reno",
            _ => "1",
        };
        let flag = format!("--{}", s.long);
        line.push(flag);
        if s.arg == table::ArgKind::Required {
            line.push(value.into());
        }
        let line: Vec<&str> = line.iter().map(String::as_str).collect();
        let r = parse("p", &argv(&line));
        match s.id {
            Opt::Help => assert!(matches!(r, Ok(Command::Help(_)))),
            Opt::Version => assert_eq!(r, Ok(Command::Version)),
            Opt::Bidir => assert!(r.is_err(), "-R with --bidir"),
            // --rpm chooses its directions; its options need it (see cli/rpm.rs).
            Opt::Rpm | Opt::RpmStages | Opt::RpmTime => {
                let m = r.unwrap_err().message;
                assert!(m.contains("-R cannot be used with it") || m.contains("needs --rpm"));
            }
            // --bounceback's streams go one way; its options need it (cli/bounceback.rs).
            Opt::Bounceback
            | Opt::BouncebackRequest
            | Opt::BouncebackReply
            | Opt::BouncebackHold
            | Opt::BouncebackPeriod
            | Opt::BouncebackLoad => {
                let m = r.unwrap_err().message;
                assert!(
                    m.contains("-R cannot be used with it") || m.contains("needs --bounceback"),
                    "{m}"
                );
            }
            // --rpm-url names its server (no -c); the others need their option.
            Opt::RpmUrl | Opt::Insecure | Opt::TlsCert | Opt::TlsKey => {
                let m = r.unwrap_err().message;
                assert!(
                    m.contains("cannot be used with it")
                        || m.contains("needs --rpm-url")
                        || m.contains("needs --rpm-http"),
                    "{m}"
                );
            }
            // Each needs its partner (see auth_options_come_in_pairs).
            Opt::Username | Opt::RsaPublicKeyPath => {
                assert_eq!(r.unwrap_err().code, Some(22), "{line:?}")
            }
            Opt::RsaPrivateKeyPath | Opt::AuthorizedUsersPath => {
                assert_eq!(r.unwrap_err().code, Some(23), "{line:?}")
            }
            _ => assert!(matches!(r, Ok(Command::Run(_))), "{line:?}: {r:?}"),
        }
    }
}

#[test]
fn server_counts_are_checked() {
    let at_least =
        |long: &str, min: i64| param(&format!("--{long} must be a whole number, at least {min}"));
    for bad in ["0", "-1", "abc", "2x", "", "100001"] {
        assert_eq!(
            err(&["-s", "--max-tests", bad]),
            at_least("max-tests", 1),
            "{bad:?}"
        );
    }
    for bad in ["-1", "many", "1.5"] {
        assert_eq!(
            err(&["-s", "--queue", bad]),
            at_least("queue", 0),
            "{bad:?}"
        );
    }
    assert_eq!(
        err(&["-c", "h", "--max-tests", "2"]),
        param("some option you are trying to set is server only")
    );
    assert_eq!(
        err(&["-c", "h", "--queue", "2"]),
        param("some option you are trying to set is server only")
    );
    let s = server(&["-s", "--max-tests", "8", "--queue", "0"]);
    assert_eq!((s.max_tests, s.queue), (8, 0));
    let s = server(&["-s"]);
    assert_eq!((s.max_tests, s.queue), (1, 0));
}

#[test]
fn server_operation_values_are_checked() {
    assert_eq!(
        err(&["-s", "--server-max-duration", "-1"]),
        param("test duration valid values are 0 to 86400 seconds")
    );
    for bad in ["0", "-5", "abc", "86401"] {
        assert_eq!(
            err(&["-s", "--idle-timeout", bad]),
            param("idle timeout parameter is not positive or larger than allowed limit"),
            "{bad:?}"
        );
    }
    assert_eq!(
        err(&["-s", "--server-bitrate-limit", "1M/100"]),
        param("invalid time interval for calculating average data rate")
    );
    assert_eq!(
        err(&["-s", "--server-bitrate-limit", "1X"]),
        param("invalid unit value or suffix: '1X'")
    );
    for opt in [
        "--server-max-duration",
        "--idle-timeout",
        "--server-bitrate-limit",
    ] {
        assert_eq!(
            err(&["-c", "h", opt, "5"]),
            param("some option you are trying to set is server only")
        );
    }
    assert_eq!(
        err(&["-c", "h", "-D"]),
        param("some option you are trying to set is server only")
    );
}

#[test]
fn server_operation_values_reach_the_config() {
    let s = server(&["-s", "--server-max-duration", "30", "--idle-timeout", "7"]);
    assert_eq!(s.max_duration, Some(30));
    assert_eq!(s.idle_timeout, Some(Duration::from_secs(7)));
    // 0 means no limit, as in iperf3.
    assert_eq!(
        server(&["-s", "--server-max-duration", "0"]).max_duration,
        None
    );
    let l = server(&["-s", "--server-bitrate-limit", "10M/2.5"])
        .bitrate_limit
        .unwrap();
    assert_eq!(l.bits_per_second, 10_000_000);
    assert_eq!(l.window, Duration::from_millis(2500));
    let l = server(&["-s", "--server-bitrate-limit", "1G"])
        .bitrate_limit
        .unwrap();
    assert_eq!(l.window, Duration::from_secs(5));
    assert_eq!(
        server(&["-s", "--server-bitrate-limit", "0"]).bitrate_limit,
        None
    );
}

#[test]
fn affinity_values_are_checked() {
    for bad in ["x", "-1", "1025", "", "-0x5"] {
        assert_eq!(
            err(&["-c", "h", "-A", bad]),
            param("unable to set CPU affinity: "),
            "{bad:?}"
        );
    }
    // strtol reads what it can: "2/2" is 2, "1.5" is 1, "0x" is 0.
    assert_eq!(config(&["-c", "h", "-A", "2/2"]).process.affinity, Some(2));
    assert_eq!(config(&["-c", "h", "-A", "1.5"]).process.affinity, Some(1));
    assert_eq!(config(&["-c", "h", "-A", "0x"]).process.affinity, Some(0));
    let c = client(&["-c", "h", "-A", "1,0x2"]);
    assert_eq!(c.server_affinity, Some(2));
    // A server CPU that does not parse is 0, as iperf3's strtol gives.
    assert_eq!(client(&["-c", "h", "-A", "1,x"]).server_affinity, Some(0));
    assert_eq!(client(&["-c", "h", "-A", "010"]).server_affinity, None);
    assert_eq!(config(&["-c", "h", "-A", "010"]).process.affinity, Some(8));
    assert_eq!(config(&["-s", "-A", "1"]).process.affinity, Some(1));
}

#[test]
fn auth_options_come_in_pairs() {
    assert_eq!(
        err(&["-c", "h", "--username", "u"]),
        param("you must specify a username, password, and path to a valid RSA public key")
    );
    assert_eq!(
        err(&["-c", "h", "--rsa-public-key-path", "k"]),
        param("you must specify a username, password, and path to a valid RSA public key")
    );
    assert_eq!(
        err(&["-s", "--authorized-users-path", "u"]),
        param("you must specify a path to a valid RSA private key and a user credential file")
    );
    assert_eq!(
        err(&["-s", "--time-skew-threshold", "0"]),
        param("skew threshold must be a positive number")
    );
    assert_eq!(
        err(&["-s", "--time-skew-threshold", "-3"]),
        param("skew threshold must be a positive number")
    );
    // iperf3 3.21's side checks.
    assert_eq!(
        err(&["-c", "h", "--time-skew-threshold", "5"]),
        param("some option you are trying to set is server only")
    );
    assert_eq!(
        err(&["-c", "h", "--rsa-private-key-path", "k"]),
        param("some option you are trying to set is server only")
    );
    assert_eq!(
        err(&["-s", "--username", "u"]),
        param("some option you are trying to set is client only")
    );
}
