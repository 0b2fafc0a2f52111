//! argv -> Config2: what each iperf 2 option becomes, in every getopt form.
//! Expected values come from iperf 2.2.1's behaviour (its `-e` header shows
//! the lengths and TOS it settled on).

use std::ffi::OsString;
use std::time::Duration;

use rperf3_app::iperf2::config::{
    Bind2, Client2, Config2, End2, Format2, Input2, Mode2, Rate2, Role2, Server2, Transport2,
    TIME_FOREVER,
};
use rperf3_sys::net::Family;

use super::units::{self, RateArg};
use super::{parse, Action, Parsed};

pub(super) fn run(args: &str) -> Parsed {
    let v: Vec<OsString> = args.split_whitespace().map(OsString::from).collect();
    parse("iperf", &v)
}

pub(super) fn cfg(args: &str) -> Config2 {
    let p = run(args);
    match p.action {
        Action::Run(c) => *c,
        other => panic!("{args}: {other:?}, stderr {:?}", p.stderr),
    }
}

pub(super) fn client(args: &str) -> Client2 {
    match cfg(args).role {
        Role2::Client(c) => c,
        r => panic!("{args}: {r:?}"),
    }
}

pub(super) fn server(args: &str) -> Server2 {
    match cfg(args).role {
        Role2::Server(s) => s,
        r => panic!("{args}: {r:?}"),
    }
}

#[test]
fn client_defaults_are_iperf2s() {
    let c = cfg("-c host");
    assert_eq!(c.common.port, 5001);
    assert_eq!(c.common.transport, Transport2::Tcp);
    assert_eq!(c.common.len_or_default(false), 128 * 1024);
    assert_eq!(c.common.ttl, 1);
    assert_eq!(c.common.interval, None);
    assert_eq!(c.common.family, Family::Any);
    assert_eq!(c.output.format, Format2::AdaptiveBits);
    let Role2::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.host, "host");
    assert_eq!(cl.end, End2::Time(Duration::from_secs(10)));
    assert_eq!((cl.parallel, cl.rate, cl.mode), (1, None, Mode2::Normal));
    assert_eq!(cl.input, Input2::Pattern);
}

#[test]
fn udp_default_lengths_by_family() {
    assert_eq!(cfg("-c h -u").common.len_or_default(false), 1470);
    assert_eq!(cfg("-c ::1 -u -V").common.len_or_default(true), 1450);
    assert_eq!(cfg("-c h -u").common.len, None);
}

#[test]
fn server_defaults() {
    let c = cfg("-s");
    assert_eq!(c.common.time, None);
    assert_eq!(
        server("-s"),
        Server2 {
            single_client: false,
            max_clients: None,
            single_udp: false,
            only_from: None,
            ssm_source: None,
            daemon: false,
        }
    );
}

#[test]
fn every_getopt_form_of_a_value() {
    for form in [
        "-c h -t2",
        "-c h -t 2",
        "-c h --time=2",
        "-c h --time 2",
        "-c h --ti 2",
        "-t2 -c h",
        "-ct2 -t 2",
    ] {
        let want = if form.starts_with("-ct2") { "t2" } else { "h" };
        let c = client(form);
        assert_eq!(c.end, End2::Time(Duration::from_secs(2)), "{form}");
        assert_eq!(c.host, want, "{form}");
    }
}

#[test]
fn clustered_flags_and_an_attached_value() {
    let c = cfg("-c h -uei0.5 -NmP4");
    assert_eq!(c.common.transport, Transport2::Udp);
    assert!(c.common.enhanced && c.common.nodelay && c.common.print_mss);
    assert_eq!(c.common.interval, Some(Duration::from_millis(500)));
    let Role2::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.parallel, 4);
}

#[test]
fn size_suffixes_k_is_1000_and_upper_k_is_1024() {
    for (arg, want) in [
        ("1K", 1024),
        ("1k", 1000),
        ("1.5K", 1536),
        ("2m", 2_000_000),
        ("1M", 1_048_576),
        ("0x10", 16),
        ("010", 10),
        ("12abc", 12),
        ("1.9", 1),
    ] {
        assert_eq!(
            cfg(&format!("-c h -l {arg}")).common.len,
            Some(want),
            "{arg}"
        );
    }
    assert_eq!(cfg("-c h -w 64K").common.window, Some(65536));
    assert_eq!(client("-c h -n 100M").end, End2::Bytes(104_857_600));
    assert_eq!(client("-c h -n 10m").end, End2::Bytes(10_000_000));
    assert_eq!(client("-c h -n 1G").end, End2::Bytes(1 << 30));
    assert_eq!(cfg("-c h -M 1400").common.mss, Some(1400));
}

#[test]
fn rates_in_bits_or_packets() {
    for (arg, want) in [
        ("10m", Rate2::Bits(10_000_000)),
        ("10M", Rate2::Bits(10_485_760)),
        ("1g", Rate2::Bits(1_000_000_000)),
        ("2000pps", Rate2::Packets(2000)),
        ("1kpps", Rate2::Packets(1000)),
        ("500PPS", Rate2::Packets(500)),
    ] {
        assert_eq!(
            client(&format!("-c h -u -b {arg}")).rate,
            Some(want),
            "{arg}"
        );
    }
    assert_eq!(client("-c h -b 50m").rate, Some(Rate2::Bits(50_000_000)));
}

#[test]
fn last_of_time_and_bytes_wins() {
    assert_eq!(
        client("-c h -n 1M -t 3").end,
        End2::Time(Duration::from_secs(3))
    );
    assert_eq!(client("-c h -t 3 -n 1M").end, End2::Bytes(1 << 20));
    assert_eq!(cfg("-c h -n 1M").common.time, None);
}

#[test]
fn time_zero_means_until_interrupted() {
    let p = run("-c h -t 0");
    let Action::Run(c) = p.action else { panic!() };
    let Role2::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.end, End2::Time(TIME_FOREVER));
    assert_eq!(p.stderr.len(), 1);
    assert!(p.stderr[0].starts_with("WARNING: client will send traffic forever"));
    assert_eq!(cfg("-s -t 0").common.time, None);
    assert_eq!(cfg("-s -t 30").common.time, Some(Duration::from_secs(30)));
}

#[test]
fn intervals_down_to_5_ms() {
    assert_eq!(
        cfg("-c h -i 0.005").common.interval,
        Some(Duration::from_millis(5))
    );
    assert_eq!(
        cfg("-c h -i 0.0125").common.interval,
        Some(Duration::from_micros(12_500))
    );
    let p = run("-c h -i 0.001");
    assert_eq!(
        p.stderr,
        ["WARNING: interval too small, increasing to 5.000 milliseconds."]
    );
    let Action::Run(c) = p.action else { panic!() };
    assert_eq!(c.common.interval, Some(Duration::from_millis(5)));
    assert_eq!(cfg("-c h -i -1").common.interval, None);
}

#[test]
fn format_letters() {
    for (l, want) in [
        ("a", Format2::AdaptiveBits),
        ("A", Format2::AdaptiveBytes),
        ("k", Format2::Fixed('k')),
        ("M", Format2::Fixed('M')),
        ("G", Format2::Fixed('G')),
        ("b", Format2::Fixed('b')),
        ("x", Format2::AdaptiveBits),
    ] {
        assert_eq!(cfg(&format!("-c h -f {l}")).output.format, want, "{l}");
    }
}

#[test]
fn tos_numbers_and_names() {
    for (arg, want) in [
        ("0x10", 0x10),
        ("020", 0x10),
        ("16", 0x10),
        ("af11", 0x28),
        ("AF43", 0x98),
        ("ef", 0xb8),
        ("cs7", 0xe0),
        ("lowdelay", 0x10),
        ("ac_vo", 0xc0),
        ("255", 0xff),
    ] {
        assert_eq!(
            cfg(&format!("-c h -S {arg}")).common.tos,
            Some(want),
            "{arg}"
        );
    }
    for bad in ["bad", "256", "-1", "0x1g", "16x"] {
        let p = run(&format!("-c h -S {bad}"));
        assert_eq!(
            p.stderr,
            [format!("WARN: Invalid --tos value of {bad} ignored")]
        );
        let Action::Run(c) = p.action else { panic!() };
        assert_eq!(c.common.tos, None);
    }
}

#[test]
fn bind_address_port_and_device() {
    let b = |args: &str| cfg(args).common.bind.unwrap();
    assert_eq!(
        b("-c h -B 10.0.0.1:6001"),
        Bind2 {
            host: "10.0.0.1".into(),
            port: Some(6001),
            device: None
        }
    );
    assert_eq!(
        b("-s -u -B 239.1.1.1%eth0"),
        Bind2 {
            host: "239.1.1.1".into(),
            port: None,
            device: Some("eth0".into())
        }
    );
    assert_eq!(
        b("-c ::1 -V -B [::1]:7000"),
        Bind2 {
            host: "::1".into(),
            port: Some(7000),
            device: None
        }
    );
    assert_eq!(b("-s -B fe80::1%eth1").host, "fe80::1");
    assert_eq!(b("-s -B fe80::1%eth1").device.as_deref(), Some("eth1"));
    // The first -B wins, as in iperf 2.
    assert_eq!(b("-s -B 1.1.1.1 -B 2.2.2.2").host, "1.1.1.1");
}

#[test]
fn client_modes_and_flags() {
    assert_eq!(client("-c h -d").mode, Mode2::Dual);
    assert_eq!(client("-c h -r -L 6001").mode, Mode2::Tradeoff);
    assert_eq!(client("-c h -r -L 6001").listen_port, Some(6001));
    assert_eq!(client("-c h -R").mode, Mode2::Reverse);
    assert_eq!(client("-c h --full-duplex").mode, Mode2::FullDuplex);
    assert!(client("-c h -C").compat);
    let c = client("-c h -X -F data.bin --sync-transfer-id --txstart-time 1700000000.25");
    assert!(c.peer_detect && c.sync_transfer_id);
    assert_eq!(c.input, Input2::File("data.bin".into()));
    assert_eq!(c.txstart, Some(1_700_000_000.25));
    assert_eq!(client("-c h -I").input, Input2::Stdin);
    assert!(client("-c h -u --no-udp-fin").no_udp_fin);
    assert_eq!(cfg("-c h -T 3").common.ttl, 3);
    let c = cfg("-c h -z -Z cubic -e --trip-times --permit-key=abcd");
    assert!(c.common.realtime && c.common.enhanced && c.common.trip_times);
    assert_eq!(c.common.congestion.as_deref(), Some("cubic"));
    assert_eq!(c.common.permit_key.as_deref(), Some("abcd"));
}

#[test]
fn server_flags() {
    let s = server("-s -P 2 -1 -c 10.0.0.9 -D");
    assert_eq!(s.max_clients, Some(2));
    assert!(s.single_client && s.daemon);
    assert_eq!(s.only_from.as_deref(), Some("10.0.0.9"));
    let c = cfg("-s -U");
    assert_eq!(c.common.transport, Transport2::Udp);
    let Role2::Server(s) = c.role else { panic!() };
    assert!(s.single_udp && s.single_client);
    assert_eq!(
        server("-s -u -B 232.1.1.1 -H 10.0.0.1")
            .ssm_source
            .as_deref(),
        Some("10.0.0.1")
    );
    let c = cfg("-s --skip-rx-copy");
    assert!(c.common.skip_rx_copy && c.common.enhanced);
    assert_eq!(
        cfg("-s --permit-key").common.permit_key.as_deref(),
        Some("")
    );
}

#[test]
fn address_family() {
    // Only -V sets IPv6 (the UDP default length stays 1470, as in 2.2.1).
    assert_eq!(cfg("-c ::1").common.family, Family::Any);
    assert_eq!(cfg("-c h -V").common.family, Family::V6);
    assert_eq!(cfg("-s -V").common.family, Family::V6);
    assert_eq!(cfg("-c h -4").common.family, Family::V4);
    assert_eq!(client("-c [::1] -V").host, "::1");
    // -c host%dev binds the client to the device; a link-local scope stays.
    let c = cfg("-c 10.0.0.2%eth1");
    assert_eq!(
        c.common.bind,
        Some(Bind2 {
            host: "0.0.0.0".into(),
            port: None,
            device: Some("eth1".into())
        })
    );
    let Role2::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.host, "10.0.0.2");
    let c = cfg("-c 10.0.0.2%eth1 -B 10.0.0.1");
    assert_eq!(c.common.bind.unwrap().device.as_deref(), Some("eth1"));
    assert_eq!(client("-c fe80::1%eth0 -V").host, "fe80::1%eth0");
}

#[test]
fn output_options() {
    let o = cfg("-c h -y C -x mV -o out.txt --hide-ips --sum-only --utc").output;
    assert!(o.csv && o.hide_ips && o.sum_only && o.utc);
    assert_eq!(o.file.as_deref(), Some("out.txt"));
    // CSV drops the settings and connection lines, as in iperf 2.
    assert!(o.exclude.settings && o.exclude.connection);
    assert!(o.exclude.multicast && o.exclude.server_report && !o.exclude.data);
}

#[test]
fn unsupported_iperf2_options_are_refused() {
    for (args, name) in [
        ("-c h --txdelay-time 1 --fq-rate 1m", "--fq-rate"),
        (
            "-c h -t 1 --tcp-rx-window-clamp 1000",
            "--tcp-rx-window-clamp",
        ),
        ("-s --connect-retry-time 1", "--connect-retry-time"),
        ("-c h -A", "--awdl"),
    ] {
        let p = run(args);
        assert_eq!(
            p.stderr,
            [format!("ERROR: option {name} is not supported by rperf3")],
            "{args}"
        );
        assert!(
            matches!(p.action, Action::Exit(1)),
            "{args}: {:?}",
            p.action
        );
    }
}

#[test]
fn the_readme_lists_every_refused_iperf2_option() {
    let readme = include_str!("../../README.md");
    let at = readme
        .find("These iperf 2 options are refused")
        .expect("the README's list of refused iperf 2 options");
    let list = &readme[at..readme[at..].find("\n\n").map_or(readme.len(), |e| at + e)];
    let refused: Vec<String> = super::table::OPTIONS
        .iter()
        .filter(|s| s.id == super::table::O2::Unsupported)
        .map(super::table::display_name)
        .collect();
    for name in &refused {
        assert!(
            list.contains(&format!("`{name}`")),
            "{name} is refused but not in the README's list:\n{list}"
        );
    }
    // And nothing built is still listed.
    let names = &list[list.find("asked:").expect("the list after the error text")..];
    for listed in names.split('`').skip(1).step_by(2) {
        assert!(
            refused.iter().any(|r| r == listed),
            "{listed} is in the README's list but not refused"
        );
    }
}

#[test]
fn incr_dstport_is_a_client_flag() {
    let c = cfg("-c h -P 3 --incr-dstport");
    let Role2::Client(cl) = &c.role else { panic!() };
    assert!(cl.incr_dstport);
    let c = cfg("-c h -P 3");
    let Role2::Client(cl) = &c.role else { panic!() };
    assert!(!cl.incr_dstport);
}

#[test]
fn connect_only_takes_an_attached_count() {
    for (line, want) in [
        ("-c h --connect-only", Some(None)),
        ("-c h --connect-only=3", Some(Some(3))),
        ("-c h --connect-only=0", Some(Some(0))),
        ("-c h", None),
    ] {
        let c = cfg(line);
        let Role2::Client(cl) = &c.role else { panic!() };
        assert_eq!(cl.connect_only, want, "{line}");
    }
    let p = run("-c h -u --connect-only");
    assert_eq!(
        p.stderr,
        ["ERROR: option of --connect-only not supported with -u UDP"]
    );
    assert_eq!(p.action, Action::Exit(1));
    let p = run("-c h --connect-only --txdelay-time 1");
    assert_eq!(
        p.stderr,
        ["ERROR: Fail because --txdelay-time and --connect-only cannot be applied together"]
    );
    let p = run("-s --connect-only");
    assert_eq!(
        p.stderr,
        ["WARN: option of --connect-only is not supported on the server"]
    );
}

#[test]
fn txdelay_is_a_client_wait_in_seconds() {
    let c = cfg("-c h --txdelay-time 1.5");
    let Role2::Client(cl) = &c.role else { panic!() };
    assert_eq!(cl.txdelay, Some(Duration::from_millis(1500)));
    let p = run("-c h --txdelay-time abc");
    assert_eq!(p.stderr, ["Invalid value of 'abc' for --txdelay-time time"]);
    let Action::Run(c) = p.action else { panic!() };
    let Role2::Client(cl) = &c.role else { panic!() };
    assert_eq!(cl.txdelay, None);
    let p = run("-s --txdelay-time 1");
    assert_eq!(
        p.stderr,
        ["WARN: option of --txdelay-time is not supported on the server"]
    );
}

#[test]
fn tcp_quickack_is_for_tcp_in_both_roles() {
    assert!(cfg("-c h --tcp-quickack").common.tcp_quickack);
    assert!(cfg("-s --tcp-quickack").common.tcp_quickack);
    for line in ["-c h -u --tcp-quickack", "-s -u --tcp-quickack"] {
        let p = run(line);
        assert_eq!(
            p.stderr,
            ["WARN: setting of option --tcp-quickack is not supported with -u UDP"],
            "{line}"
        );
        let Action::Run(c) = p.action else { panic!() };
        assert!(!c.common.tcp_quickack, "{line}");
    }
}

#[test]
fn dscp_is_a_decimal_code_point_as_2_2_1_reads_it() {
    for (arg, want, by_dscp) in [
        ("--dscp 46", Some(0xb8), true),
        ("--dscp 8", Some(0x20), true),
        // C's atoi: a name or hex is 0 (no TOS), -1 is all six bits.
        ("--dscp ef", None, true),
        ("--dscp 0x2e", None, true),
        ("--dscp -1", Some(0xfc), true),
        ("--dscp 64", None, true),
        // The last of -S and --dscp wins.
        ("-S ef --dscp 10", Some(0x28), true),
        ("--dscp 10 -S ef", Some(0xb8), false),
    ] {
        let c = cfg(&format!("-c h {arg}"));
        assert_eq!(
            (c.common.tos, c.common.tos_by_dscp),
            (want, by_dscp),
            "{arg}"
        );
    }
}

#[test]
fn help_and_version_act_when_met() {
    let p = run("-q -v -h");
    assert_eq!(p.stderr, ["iperf: invalid option -- q"]);
    assert_eq!(p.action, Action::Print(super::version_text()));
    let p = run("-c h -h -v");
    assert!(
        matches!(p.action, Action::Print(ref t) if t.starts_with("Usage: iperf [-s|-c host] [options]\n"))
    );
}

#[test]
fn numbers_read_as_c_does() {
    assert_eq!(units::strtod_prefix("1.5e3x"), Some((1500.0, 5)));
    assert_eq!(units::strtod_prefix("  -2"), Some((-2.0, 4)));
    assert_eq!(units::strtod_prefix("1e"), Some((1.0, 1)));
    assert_eq!(units::strtod_prefix("abc"), None);
    assert_eq!(units::strtod_prefix("."), None);
    assert_eq!(units::size("inf"), i64::MAX);
    assert_eq!(units::size(""), 0);
    assert_eq!(units::atoi(" 42abc"), 42);
    assert_eq!(units::atoi("-7"), -7);
    assert_eq!(units::atoi("x"), 0);
    assert_eq!(units::strtod_whole("2"), Some(2.0));
    assert_eq!(units::strtod_whole(""), Some(0.0));
    assert_eq!(units::strtod_whole("2s"), None);
    assert_eq!(units::rate("pps"), RateArg::Packets(0));
    assert_eq!(units::rate("1.5kpps"), RateArg::Packets(1500));
}

#[test]
fn help_lists_every_supported_option_in_the_column() {
    let h = super::help::help_text();
    let sections: Vec<&str> = h
        .lines()
        .filter(|l| l.ends_with(':') && !l.starts_with(' '))
        .collect();
    assert_eq!(
        sections,
        [
            "Client/Server:",
            "Server specific:",
            "Client specific:",
            "Miscellaneous:"
        ]
    );
    for s in super::table::OPTIONS.iter().filter(|s| !s.help.is_empty()) {
        let name = format!("--{}", s.long.unwrap());
        assert!(h.contains(&name), "{name}");
    }
    for l in h
        .lines()
        .filter(|l| l.starts_with("  -") || l.starts_with("      --"))
    {
        // Descriptions start at column 27, or two spaces after a long left part.
        let at27 = l.len() > 27 && l.as_bytes()[26] == b' ' && l.as_bytes()[27] != b' ';
        assert!(at27 || l.contains("  "), "{l}");
    }
    assert!(h.contains("  -u, --udp                UDP instead of TCP\n"));
    assert!(h.contains("  -p, --port      #        port"));
    assert!(h.contains("      --permit-key[=<key>]"));
    assert!(h.lines().all(|l| l.len() <= 110), "long line");
}

#[test]
fn version_line() {
    let v = super::version_text();
    assert!(v.starts_with("iperf version 2.2.1 (rperf3 "), "{v}");
    assert!(v.ends_with(") pthreads\n"));
}

#[test]
fn ignored_by_iperf2_when_out_of_order() {
    // -d before -c: iperf 2 has no client mode yet and ignores it.
    let p = run("-d -c h");
    assert_eq!(
        p.stderr,
        ["WARNING: option -d is not valid for server mode"]
    );
    let Action::Run(c) = p.action else { panic!() };
    let Role2::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.mode, Mode2::Normal);
}

#[test]
fn environment_variables_come_first() {
    let env = |name: &str| match name {
        "IPERF_PORT" => Some("6000".to_string()),
        "IPERF_UDP" => Some("0".to_string()),
        "TCP_WINDOW_SIZE" => Some("256K".to_string()),
        "IPERF_TIME" => Some("7".to_string()),
        _ => None,
    };
    let args: Vec<OsString> = ["-c", "h", "-t", "3"].iter().map(OsString::from).collect();
    let p = super::parse_with_env("iperf", &args, &env);
    let Action::Run(c) = p.action else {
        panic!("{p:?}")
    };
    assert_eq!(c.common.port, 6000);
    // A flag is set whatever the variable's value, as iperf 2 does.
    assert_eq!(c.common.transport, Transport2::Udp);
    assert_eq!(c.common.window, Some(256 * 1024));
    let Role2::Client(cl) = c.role else { panic!() };
    assert_eq!(cl.end, End2::Time(Duration::from_secs(3)));
    // IPERF_CLIENT makes a client; a later -s only warns.
    let env = |name: &str| (name == "IPERF_CLIENT").then(|| "h2".to_string());
    let args = [OsString::from("-s")];
    let p = super::parse_with_env("iperf", &args, &env);
    assert_eq!(
        p.stderr,
        ["WARNING: option -s is not valid for client mode"]
    );
    assert!(matches!(p.action, Action::Run(ref c) if matches!(c.role, Role2::Client(_))));
    let env = |name: &str| (name == "IPERF_TIME").then(|| "abc".to_string());
    let p = super::parse_with_env("iperf", &[OsString::from("-s")], &env);
    assert_eq!(p.stderr, ["ERROR: -t value of 'abc' not recognized"]);
    assert_eq!(p.action, Action::Exit(1));
}
