//! Every complaint, word for word, with what follows it. The texts are what
//! iperf 2.2.1 prints for the same command line (checked side by side).

use super::tests::run;
use super::Action;

const USAGE: [&str; 2] = [
    "Usage: iperf [-s|-c host] [options]",
    "Try `iperf --help' for more information.",
];

/// stderr lines and the exit status of a command line that does not run.
fn stops(args: &str) -> (Vec<String>, i32) {
    let p = run(args);
    match p.action {
        Action::Exit(n) => (p.stderr, n),
        other => panic!("{args}: {other:?}"),
    }
}

fn with_usage(first: &[&str]) -> Vec<String> {
    first
        .iter()
        .chain(USAGE.iter())
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn getopt_complaints_then_usage_exit_0() {
    for (args, msg) in [
        ("--x", "iperf: unrecognized option `--x'"),
        (
            "--no-such-option",
            "iperf: unrecognized option `--no-such-option'",
        ),
        ("--x=1", "iperf: unrecognized option `--x=1'"),
        ("-q", "iperf: invalid option -- q"),
        ("-t", "iperf: option requires an argument -- t"),
        ("-ut", "iperf: option requires an argument -- t"),
        ("--time", "iperf: option `--time' requires an argument"),
        ("--tim", "iperf: option `--tim' requires an argument"),
        ("--udp=1", "iperf: option `--udp' doesn't allow an argument"),
        ("--ut=1", "iperf: option `--utc' doesn't allow an argument"),
        ("--s", "iperf: option `--s' is ambiguous"),
        ("--ud", "iperf: option `--ud' is ambiguous"),
        ("--tcp-w=1", "iperf: option `--tcp-w=1' is ambiguous"),
        ("-W", "The -W option is not available in this release"),
    ] {
        assert_eq!(stops(args), (with_usage(&[msg]), 0), "{args}");
    }
    assert_eq!(stops(""), (with_usage(&[]), 0));
}

#[test]
fn an_unknown_option_with_c_is_only_a_warning() {
    let p = run("-c h --no-such-option");
    assert_eq!(p.stderr, ["iperf: unrecognized option `--no-such-option'"]);
    assert!(matches!(p.action, Action::Run(_)));
}

#[test]
fn operands_are_reported_after_the_options() {
    let p = run("-s foo -p 5002 -- -u");
    assert_eq!(
        p.stderr,
        [
            "iperf: ignoring extra argument -- foo",
            "iperf: ignoring extra argument -- -u"
        ]
    );
    let Action::Run(c) = p.action else { panic!() };
    assert_eq!(c.common.port, 5002);
    assert_eq!(
        stops("--b 1"),
        (
            with_usage(&[
                "iperf: option `--b' is ambiguous",
                "iperf: ignoring extra argument -- 1"
            ]),
            0
        )
    );
}

#[test]
fn bad_values_stop_at_once_exit_1() {
    for (args, msg) in [
        ("-c h -i abc -t x", "Invalid value of 'abc' for -i interval"),
        (
            "-c h -i 5000",
            "Too large value of '5000' for -i interval, max is 4294.967295",
        ),
        ("-c h -t abc", "ERROR: -t value of 'abc' not recognized"),
        ("-c h -n 0", "Invalid value for -n amount of '0'"),
        ("-c h -n abc", "Invalid value for -n amount of 'abc'"),
        ("-c h -l 0", "Invalid value for -l or --len '0'"),
    ] {
        assert_eq!(stops(args), (vec![msg.to_string()], 1), "{args}");
    }
}

#[test]
fn cross_checks_exit_1() {
    for (args, msgs) in [
        (
            "-c h -b abc",
            &["ERROR: option -b and -l of 131072 are incompatible, consider setting -l to 0 or lower"][..],
        ),
        (
            "-c h -b 10m -l 2M",
            &["ERROR: option -b and -l of 2097152 are incompatible, consider setting -l to 1250000 or lower"],
        ),
        ("-c h -b 1pps", &["ERROR: units of pps not supported with TCP"]),
        ("-c h -u -b 100", &["ERROR: IPG delay target of 117.6 secs too large (max value is 60 secs)"]),
        ("-c h -u -b abc", &["Invalid value for -b or --bandwidth 'abc'"]),
        ("-c h -b 0 -u", &["Invalid value for -b or --bandwidth '0'"]),
        ("-c h -u -b -5m", &["Invalid value for -b or --bandwidth '-5m'"]),
        ("-c h -u -b 0pps", &["Invalid value for -b or --bandwidth '0pps'"]),
        ("-c h -T 300", &["ERROR: option of -ttl (-T) must be less than 255"]),
        (
            "-c h -C -d",
            &[
                "WARNING: option -d is not valid in compatibility mode",
                "ERROR: compatibility mode not supported with the requested with options",
            ],
        ),
        ("-c h -C -e", &["ERROR: compatibility mode not supported with the requested with options"]),
        (
            "-c h --permit-key -u",
            &[
                "ERROR: Option of --permit-key not supported with UDP",
                "ERROR: option of --permit-key requires a value on the client",
            ],
        ),
        ("-c h --permit-key=abc", &["ERROR: value for --permit-key must have at least 4 characters"]),
        ("-c h -X -u", &["ERROR: option of -X or --peer-detect not supported with -u UDP"]),
        ("-c h --no-udp-fin", &["ERROR: option --no-udp-fin requires -u UDP"]),
        ("-c h -R -d", &["ERROR: options of --full-duplex, --reverse, -d and -r are mutually exclusive"]),
        ("-c h --txstart-time=-5", &["ERROR: --txstart-time must be a positive value"]),
        (
            "-c h --txdelay-time 4000",
            &["ERROR: --txdelay-time of 4000 seconds is more than the supported delay of 3600 seconds"],
        ),
        (
            "-c h --txdelay-time 1 --txstart-time 1800000000",
            &["ERROR: options of --txstart-time and --txdelay-time are mutually exclusive"],
        ),
        (
            "-c h --trip-times -l 91",
            &["ERROR: payload (-l) size of 91 too small for --trip-times, must be 92 or greater"],
        ),
        (
            "-c h -u --trip-times -l 100 -R",
            &["ERROR: payload (-l) size of 100 too small for --trip-times, must be 128 or greater"],
        ),
        ("-c h -u -B 239.1.1.1", &["WARNING: Client src addr (per -B) must be ip unicast"]),
        (
            "-c 239.1.1.1 -u -d",
            &["ERROR: options of --full-duplex, --reverse, -d and -r not supported with multicast addresses"],
        ),
        (
            "-c 239.1.1.1 -u --sync-transfer-id",
            &["ERROR: option of --sync-transfer-id incompatibile with multicast"],
        ),
        (
            "-s -u -B 239.1.1.1 -H 239.2.2.2",
            &["WARNING: SSM host src address (-H or --ssm-host) must be ip unicast"],
        ),
    ] {
        let want: Vec<String> = msgs.iter().map(|s| s.to_string()).collect();
        assert_eq!(stops(args), (want, 1), "{args}");
    }
}

#[test]
fn a_daemon_client_is_refused_with_exit_0() {
    assert_eq!(
        stops("-c h -D"),
        (vec!["Iperf client cannot be run as a daemon".into()], 0)
    );
}

#[test]
fn warnings_in_iperf2s_order() {
    let p = run("-c h -s -H 1.2.3.4 -x Q -y X -w 100 -S bad -d -C");
    assert_eq!(
        p.stderr,
        [
            "WARNING: option -s is not valid for client mode",
            "WARNING: option -H is not valid for client mode",
            "WARNING: unknown reporting type \"Q\", ignored\n valid options are:\n\t exclude: C(connection) D(data) M(multicast) S(settings) V(server) report\n",
            "WARNING: unknown reporting style \"X\", switching to default",
            "WARNING: TCP window size set to 100 bytes. A small window size\nwill give poor performance. See the Iperf documentation.",
            "WARN: Invalid --tos value of bad ignored",
            "WARNING: option -d is not valid in compatibility mode",
        ]
    );
    assert!(matches!(p.action, Action::Run(_)));
    let p = run(
        "-s -F x -L 5 -X --no-udp-fin -R --full-duplex -d -r -I --trip-times --sync-transfer-id",
    );
    assert_eq!(
        p.stderr,
        [
            "WARNING: option -F is not valid for server mode",
            "WARNING: option -L is not valid for server mode",
            "WARNING: option -d is not valid for server mode",
            "WARNING: option -r is not valid for server mode",
            "WARNING: option -I is not valid for server mode",
            "WARN: setting of option --trip-times is not supported on the server",
            "WARN: option of --full-duplex is not supported on the server",
            "WARN: option of --reverse is not supported on the server",
            "WARN: option of --no-udp-fin is not supported on the server",
            "WARN: option of -X or --peer-detect not supported on the server",
            "WARN: option of --sync-transfer-id is not supported on the server",
        ]
    );
    let p = run("-s -u --skip-rx-copy -B 1.2.3.4:6000 -4 -6");
    assert_eq!(
        p.stderr,
        [
            "WARN: both ipv4 and ipv6 set",
            "WARN: Option of --skip-rx-copy not supported with -u UDP",
            "WARNING: port 6000 ignored - set receive port on server via -p or -L",
        ]
    );
    let p = run("-c h -B 1.2.3.4:6000%eth0");
    assert_eq!(
        p.stderr,
        ["WARNING: Client cannot set bind device eth0 via -B consider using -c"]
    );
}

#[test]
fn without_a_role_the_checks_run_then_the_usage() {
    assert_eq!(
        stops("--trip-times"),
        (
            with_usage(&["WARN: setting of option --trip-times is not supported on the server"]),
            0
        )
    );
}

#[test]
fn what_rperf3_does_not_do_is_said_and_skipped() {
    let p = run("-c h -i f -p 5001-5003 -b 10m,1m");
    assert_eq!(
        p.stderr,
        [
            "WARNING: option -i f (frame intervals) is not supported by rperf3, ignored",
            "WARNING: port ranges (-p) are not supported by rperf3, using port 5001",
            "WARNING: a -b variance is not supported by rperf3, ignored",
        ]
    );
    let Action::Run(c) = p.action else { panic!() };
    assert_eq!((c.common.port, c.common.interval), (5001, None));
    let p = run("-s -p 6000-6002 -b 10m,1m");
    assert_eq!(
        p.stderr,
        [
            "WARN: option of variance per -b is not supported on the server",
            "WARNING: port ranges (-p) are not supported by rperf3, using port 6000",
        ]
    );
}

#[test]
fn the_forever_warning_comes_before_the_refusals() {
    assert_eq!(
        stops("-c h -t 0 -T 300"),
        (
            vec![
                "WARNING: client will send traffic forever or until an external signal (e.g. SIGINT or SIGTERM) occurs to stop it".to_string(),
                "ERROR: option of -ttl (-T) must be less than 255".to_string(),
            ],
            1
        )
    );
}
