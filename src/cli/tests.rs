//! Whole command lines through `parse`: the `Config` they give. The helpers are
//! shared with `tests_errors`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use rperf3_app::config::{
    ClientConfig, Config, Direction, EndCondition, Family, OutputConfig, Protocol, Role,
    ServerConfig,
};

use super::*;

pub(super) fn argv(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

pub(super) fn run(v: &[&str]) -> Invocation {
    match parse("rperf3", &argv(v)) {
        Ok(Command::Run(inv)) => *inv,
        other => panic!("{v:?}: {other:?}"),
    }
}

pub(super) fn config(v: &[&str]) -> Config {
    run(v).config
}

pub(super) fn client(v: &[&str]) -> ClientConfig {
    match config(v).role {
        Role::Client(c) => c,
        Role::Server(_) => panic!("{v:?} is not a client"),
    }
}

pub(super) fn server(v: &[&str]) -> ServerConfig {
    match config(v).role {
        Role::Server(s) => s,
        Role::Client(_) => panic!("{v:?} is not a server"),
    }
}

/// The first stderr line of a failing command line.
pub(super) fn err(v: &[&str]) -> String {
    let e = parse("rperf3", &argv(v)).expect_err(&format!("{v:?} should fail"));
    assert_eq!(e.status, 1);
    e.message.lines().next().unwrap().to_string()
}

pub(super) fn param(msg: &str) -> String {
    format!("rperf3: parameter error - {msg}")
}

/// The whole message of a command line (program "p") that must fail with
/// status 1 and no iperf3 error number.
pub(super) fn fails(args: &[&str]) -> String {
    match parse("p", &argv(args)) {
        Err(e) => {
            assert_eq!((e.status, e.code), (1, None), "{args:?}");
            e.message
        }
        Ok(_) => panic!("{args:?} parsed"),
    }
}

/// A parameter error as [`fails`] returns it, usage lines included.
pub(super) fn param_usage(text: &str) -> String {
    format!(
        "p: parameter error - {text}\n\nUsage: p [-s|-c host] [options]\n\
         Try `p --help' for more information.\n"
    )
}

#[test]
fn client_defaults() {
    let c = config(&["-c", "h"]);
    assert_eq!(c.common.port, 5201);
    assert_eq!(c.common.interval, Some(Duration::from_secs(1)));
    assert_eq!(c.common.rcv_timeout, Duration::from_secs(120));
    assert_eq!(c.common.family, Family::Any);
    assert_eq!(c.common.bind, None);
    assert_eq!(c.common.debug, 0);
    assert_eq!(c.output, OutputConfig::default());
    let Role::Client(cl) = c.role else { panic!() };
    assert_eq!(
        cl,
        ClientConfig {
            host: "h".into(),
            protocol: Protocol::Tcp,
            end: EndCondition::Time(10),
            omit: 0,
            length: None,
            parallel: 1,
            direction: Direction::Normal,
            bitrate: None,
            burst: None,
            title: None,
            extra_data: None,
            get_server_output: false,
            connect_timeout: None,
            udp_counters_64bit: false,
            repeating_payload: false,
            dont_fragment: false,
            window: None,
            gsro: false,
            server_affinity: None,
            zerocopy: false,
            skip_rx_copy: false,
            latency: None,
            congestion: None,
            mss: None,
            nodelay: false,
            tos: None,
            fq_rate: 0,
            pacing_timer: None,
            mptcp: false,
            nstreams: None,
            flowlabel: None,
            cport: None,
            file_ends_test: false,
            auth: None,
            rpm: None,
            rpm_url: None,
            bounceback: None,
        }
    );
}

#[test]
fn socket_options() {
    let c = client(&["-c", "h", "-C", "reno", "-M", "1200", "-N", "-S", "0x20"]);
    assert_eq!(c.congestion.as_deref(), Some("reno"));
    assert_eq!(c.mss, Some(1200));
    assert!(c.nodelay);
    assert_eq!(c.tos, Some(0x20));
    // -S and --dscp set one byte: the last wins.
    assert_eq!(
        client(&["-c", "h", "-S", "8", "--dscp", "ef"]).tos,
        Some(184)
    );
    assert_eq!(
        client(&["-c", "h", "--dscp", "ef", "-S", "010"]).tos,
        Some(8)
    );
    assert_eq!(client(&["-c", "h", "--dscp", "10"]).tos, Some(40));
    assert_eq!(client(&["-c", "h", "-S", "0"]).tos, None);
    assert_eq!(client(&["-c", "h", "--cport", "6300"]).cport, Some(6300));
    assert_eq!(
        client(&["-c", "h", "-L", "0x12345"]).flowlabel,
        Some(0x12345)
    );
    let c = client(&["-c", "h", "--fq-rate", "40M", "--pacing-timer", "2K"]);
    assert_eq!((c.fq_rate, c.pacing_timer), (40_000_000, Some(2048)));
    assert_eq!(
        client(&["-c", "h", "--fq-rate", "40M", "--no-fq-socket-pacing"]).fq_rate,
        0
    );
    assert_eq!(
        client(&["-c", "h", "--no-fq-socket-pacing", "--fq-rate", "1M"]).fq_rate,
        1_000_000
    );
    assert_eq!(
        client(&["-c", "h", "--linux-congestion", "cubic"])
            .congestion
            .as_deref(),
        Some("cubic")
    );
}

#[test]
fn server_options() {
    assert_eq!(server(&["-s"]), ServerConfig::default());
    let one = ServerConfig {
        one_off: true,
        ..ServerConfig::default()
    };
    assert_eq!(server(&["-s", "-1"]), one);
    assert_eq!(server(&["--one-off", "--server"]), one);
    let c = config(&[
        "-s",
        "-p",
        "7000",
        "-B",
        "127.0.0.1",
        "-4",
        "-i",
        "0.5",
        "-V",
    ]);
    assert_eq!(c.common.port, 7000);
    assert_eq!(c.common.bind.as_deref(), Some("127.0.0.1"));
    assert_eq!(c.common.family, Family::V4);
    assert_eq!(c.common.interval, Some(Duration::from_millis(500)));
    assert!(c.output.verbose);
}

#[test]
fn client_options_map_to_config() {
    let c = client(&[
        "-c",
        "h%eth0",
        "-u",
        "-t",
        "3",
        "-O",
        "2",
        "-l",
        "1400",
        "-P",
        "4",
        "-R",
        "-b",
        "1.5M/10",
        "-T",
        "t",
        "--extra-data",
        "x",
        "--get-server-output",
        "--connect-timeout",
        "2500",
        "--udp-counters-64bit",
        "--repeating-payload",
        "--dont-fragment",
        "-w",
        "256K",
        "--gsro",
    ]);
    assert_eq!(c.host, "h%eth0");
    assert_eq!(c.protocol, Protocol::Udp);
    assert_eq!(c.end, EndCondition::Time(3));
    assert_eq!(c.omit, 2);
    assert_eq!(c.length, Some(1400));
    assert_eq!(c.parallel, 4);
    assert_eq!(c.direction, Direction::Reverse);
    assert_eq!(c.bitrate, Some(1_500_000));
    assert_eq!(c.burst, Some(10));
    assert_eq!(c.title.as_deref(), Some("t"));
    assert_eq!(c.extra_data.as_deref(), Some("x"));
    assert!(c.get_server_output);
    assert_eq!(c.connect_timeout, Some(Duration::from_millis(2500)));
    assert!(c.udp_counters_64bit && c.repeating_payload && c.dont_fragment && c.gsro);
    assert_eq!(c.window, Some(256 * 1024));
}

#[test]
fn end_conditions() {
    assert_eq!(
        client(&["-c", "h", "-n", "200M"]).end,
        EndCondition::Bytes(200 << 20)
    );
    assert_eq!(
        client(&["-c", "h", "-k", "1k"]).end,
        EndCondition::Blocks(1024)
    );
    assert_eq!(client(&["-c", "h", "-t", "0"]).end, EndCondition::Time(0));
    // A zero count is "not given", as in iperf3.
    assert_eq!(
        client(&["-c", "h", "-t", "5", "-n", "0"]).end,
        EndCondition::Time(5)
    );
    assert_eq!(client(&["-c", "h", "-n", "0"]).end, EndCondition::Time(10));
}

#[test]
fn bidir_and_sizes() {
    let c = client(&["-c", "h", "--bidir", "-l", "128K", "-b", "0"]);
    assert_eq!(c.direction, Direction::Bidir);
    assert_eq!(c.length, Some(131072));
    assert_eq!(c.bitrate, Some(0), "-b 0 is an explicit 'no limit'");
    assert_eq!(client(&["-c", "h", "-l", "0"]).length, None);
    assert_eq!(client(&["-c", "h", "-w", "0"]).window, None);
    assert_eq!(
        client(&["-c", "h", "--connect-timeout", "-1"]).connect_timeout,
        None
    );
    assert_eq!(
        client(&["-c", "h", "--bandwidth", "10M"]).bitrate,
        Some(10_000_000)
    );
}

#[test]
fn output_options() {
    let o = config(&[
        "-c",
        "h",
        "-f",
        "M",
        "--logfile",
        "/tmp/x.log",
        "--forceflush",
        "--timestamps",
        "--json-stream-full-output",
    ])
    .output;
    assert_eq!(o.format, Some('M'));
    assert_eq!(o.logfile, Some(PathBuf::from("/tmp/x.log")));
    assert!(o.forceflush && o.json_stream_full_output && !o.json && !o.json_stream);
    assert_eq!(o.timestamps.as_deref(), Some("%c "));
    let o = config(&["-s", "--timestamps=%T ", "--json-stream"]).output;
    assert_eq!(o.timestamps.as_deref(), Some("%T "));
    assert!(
        o.json && o.json_stream,
        "--json-stream implies JSON output, as in iperf3"
    );
    assert!(config(&["-s", "-J"]).output.json);
    // iperf3 reads only the first letter of -f.
    assert_eq!(config(&["-s", "-f", "mbits"]).output.format, Some('m'));
}

#[test]
fn debug_levels() {
    assert_eq!(config(&["-s", "-d"]).common.debug, 4);
    assert_eq!(config(&["-s", "--debug=2"]).common.debug, 2);
    assert_eq!(config(&["-s", "--debug=0"]).common.debug, 4);
    assert_eq!(config(&["-s", "--debug=2", "-d"]).common.debug, 4);
    assert_eq!(config(&["-s", "--de=3"]).common.debug, 3);
}

#[test]
fn interval_zero_turns_reports_off() {
    assert_eq!(config(&["-s", "-i", "0"]).common.interval, None);
    assert_eq!(
        config(&["-s", "-i", "60"]).common.interval,
        Some(Duration::from_secs(60))
    );
}

#[test]
fn rcv_timeout_in_ms() {
    let c = config(&["-c", "h", "-R", "--rcv-timeout", "1500"]);
    assert_eq!(c.common.rcv_timeout, Duration::from_millis(1500));
    let c = config(&["-s", "--rcv-timeout", "100"]);
    assert_eq!(c.common.rcv_timeout, Duration::from_millis(100));
    // Bidir receives too.
    config(&["-c", "h", "--bidir", "--rcv-timeout", "1500"]);
}

#[test]
fn last_occurrence_wins() {
    let c = config(&["-c", "a", "-p", "1", "-c", "b", "-p", "2", "-4", "-6"]);
    assert_eq!(c.common.port, 2);
    assert_eq!(c.common.family, Family::V6);
    let Role::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.host, "b");
    // The burst survives a later -b without one, as in iperf3.
    let cl = client(&["-c", "h", "-b", "1M/5", "-b", "2M"]);
    assert_eq!((cl.bitrate, cl.burst), (Some(2_000_000), Some(5)));
}

#[test]
fn getopt_forms() {
    let c = client(&["-c127.0.0.1", "-p5202", "-uV", "--len=1000", "--par", "3"]);
    assert_eq!(c.host, "127.0.0.1");
    assert_eq!(c.length, Some(1000));
    assert_eq!(c.parallel, 3);
    assert_eq!(c.protocol, Protocol::Udp);
}

#[test]
fn operands_are_kept_and_ignored() {
    let inv = run(&["foo", "-s", "--", "-u"]);
    assert_eq!(inv.raw.operands, argv(&["foo", "-u"]));
    assert!(matches!(inv.config.role, Role::Server(_)));
}

#[test]
fn sctp_options() {
    let c = config(&[
        "-c",
        "h",
        "--sctp",
        "--nstreams",
        "7",
        "-X",
        "10.0.0.1",
        "-X",
        "h2",
    ]);
    assert_eq!(c.common.xbind, ["10.0.0.1", "h2"]);
    let Role::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.protocol, Protocol::Sctp);
    assert_eq!(cl.nstreams, Some(7));
    // The parameters carry "sctp": true and SCTP's 64 KiB block, as iperf3's
    // client sends them; like iperf3, nothing of --nstreams or -X goes along.
    let j = rperf3_app::client_params(&cl).to_json();
    assert_eq!(j["sctp"], true);
    assert_eq!(j["len"], 65536);
    assert!(j.get("tcp").is_none() && j.get("nstreams").is_none(), "{j}");
    let p = rperf3_proto::TestParams::from_json(j.to_string().as_bytes()).unwrap();
    assert_eq!(p.protocol, Protocol::Sctp);
    // -m is for TCP only.
    let j = rperf3_app::client_params(&client(&["-c", "h", "--sctp", "-m"])).to_json();
    assert!(j.get("mptcp").is_none(), "{j}");
    // iperf3 reads --nstreams with its unit parser.
    assert_eq!(
        client(&["-c", "h", "--sctp", "--nstreams", "1K"]).nstreams,
        Some(1024)
    );
    // -u and --sctp each set the protocol: the last one wins, as in iperf3.
    assert_eq!(client(&["-c", "h", "--sctp", "-u"]).protocol, Protocol::Udp);
    assert_eq!(
        client(&["-c", "h", "-u", "--sctp"]).protocol,
        Protocol::Sctp
    );
    // Unlike iperf3's, --nstreams does not also set the bitrate.
    assert_eq!(
        client(&["-c", "h", "--sctp", "--nstreams", "5"]).bitrate,
        None
    );
    // -X also names the server's SCTP listener addresses.
    assert_eq!(
        config(&["-s", "-X", "127.0.0.1"]).common.xbind,
        ["127.0.0.1"]
    );
    for bad in ["0", "65536", "abc", "-3", "2.5", ""] {
        assert_eq!(
            err(&["-c", "h", "--sctp", "--nstreams", bad]),
            param("--nstreams must be a whole number from 1 to 65535"),
            "{bad:?}"
        );
    }
    // Client-only, as in iperf3 (error 4).
    assert_eq!(
        err(&["-s", "--sctp"]),
        param("some option you are trying to set is client only")
    );
    assert_eq!(
        err(&["-s", "--nstreams", "3"]),
        param("some option you are trying to set is client only")
    );
}

#[test]
fn help_and_version_act_in_order() {
    assert!(
        matches!(parse("p", &argv(&["-h"])), Ok(Command::Help(t)) if t.starts_with("Usage: p "))
    );
    assert!(matches!(
        parse("p", &argv(&["--help", "--foo"])),
        Ok(Command::Help(_))
    ));
    assert_eq!(parse("p", &argv(&["-v", "-Q"])), Ok(Command::Version));
    assert_eq!(parse("p", &argv(&["--vers"])).unwrap_err().status, 1);
    assert!(parse("p", &argv(&["--foo", "-h"])).is_err());
    assert!(parse("p", &argv(&["-s", "-c", "h", "-v"])).is_err());
    // A bad value ends parsing before a later -v.
    assert_eq!(
        parse("p", &argv(&["-c", "h", "--nstreams", "0", "-v"]))
            .unwrap_err()
            .code,
        None
    );
}

#[test]
fn json_warnings() {
    let inv = run(&["-c", "h", "-J", "-f", "m", "-V", "-d"]);
    assert_eq!(
        inv.warnings,
        vec![
            "warning: Report format (-f) flag ignored with JSON output (-J)",
            "warning: Verbose output (-v) may interfere with JSON output (-J)",
            "warning: Debug output (-d) may interfere with JSON output (-J)",
        ]
    );
    assert!(run(&["-c", "h", "-f", "m", "-V"]).warnings.is_empty());
    assert_eq!(run(&["-s", "--json-stream", "-f", "k"]).warnings.len(), 1);
    // iperf3 prints this one on stdout.
    let inv = run(&["-c", "h", "--no-fq-socket-pacing"]);
    assert!(inv.warnings.is_empty());
    assert_eq!(
        inv.notices,
        ["Warning:  --no-fq-socket-pacing is deprecated"]
    );
}

#[test]
fn metrics_address_is_an_ip_and_a_port() {
    let s = server(&["-s", "--metrics", "127.0.0.1:9464"]);
    assert_eq!(s.metrics, Some("127.0.0.1:9464".parse().unwrap()));
    let s = server(&["-s", "--metrics=[::1]:9100"]);
    assert_eq!(s.metrics, Some("[::1]:9100".parse().unwrap()));
    assert_eq!(server(&["-s"]).metrics, None);
    for bad in [
        "9464",
        "localhost:9464",
        "127.0.0.1:0",
        "127.0.0.1:70000",
        "::1:9464",
        "",
    ] {
        assert_eq!(
            err(&["-s", "--metrics", bad]),
            param(&format!(
                "--metrics wants <addr>:<port> (an IP address and a port 1-65535, e.g. \
                 127.0.0.1:9464 or [::1]:9464), not \"{bad}\""
            )),
            "{bad:?}"
        );
    }
    assert_eq!(
        err(&["-c", "h", "--metrics", "127.0.0.1:9464"]),
        param("some option you are trying to set is server only")
    );
}

#[test]
fn auth_settings() {
    use rperf3_app::config::{ClientAuthConfig, ServerAuthConfig};
    let c = client(&[
        "-c",
        "h",
        "--username",
        "mario",
        "--rsa-public-key-path",
        "pub.pem",
    ]);
    assert_eq!(
        c.auth,
        Some(ClientAuthConfig {
            username: "mario".into(),
            public_key_path: "pub.pem".into(),
            pkcs1: false,
        })
    );
    let c = client(&[
        "-c",
        "h",
        "--use-pkcs1-padding",
        "--user",
        "m",
        "--rsa-pub",
        "k",
    ]);
    assert!(c.auth.unwrap().pkcs1);
    let s = server(&[
        "-s",
        "--rsa-private-key-path",
        "k",
        "--authorized-users-path",
        "u",
    ]);
    assert_eq!(
        s.auth,
        Some(ServerAuthConfig {
            private_key_path: "k".into(),
            users_path: "u".into(),
            skew_threshold: 10,
        })
    );
    // A 3.21 server's command line: the padding flag is accepted (both paddings
    // are always accepted).
    let s = server(&[
        "-s",
        "--rsa-private-key-path",
        "k",
        "--authorized-users-path",
        "u",
        "--time-skew-threshold",
        "3",
        "--use-pkcs1-padding",
    ]);
    assert_eq!(s.auth.unwrap().skew_threshold, 3);
    assert_eq!(server(&["-s", "--time-skew-threshold", "3"]).auth, None);
}

#[test]
fn latency_rate_defaults_and_is_kept_cheap() {
    assert_eq!(client(&["-c", "h"]).latency, None);
    assert_eq!(client(&["-c", "h", "--latency"]).latency, Some(10));
    assert_eq!(client(&["-c", "h", "--latency=50"]).latency, Some(50));
    // The method's most probes a second, at most; at least one.
    assert_eq!(client(&["-c", "h", "--latency=500"]).latency, Some(100));
    assert_eq!(client(&["-c", "h", "--latency=0"]).latency, Some(1));
}
