//! `--rpm` and its options: which stages of the responsiveness test run and for how
//! long, and the throughput-test options it cannot honour (it chooses its own load:
//! TCP connections added until the path is full, in the directions of its stages).

use std::time::Duration;

use rperf3_app::config::{RpmConfig, RpmHttpConfig, RpmUrlConfig};

use super::error::ParamError;
use super::raw::RawArgs;
use super::table::Opt;

/// Each stage's budget when `--rpm-time` is not given (seconds): the latency
/// core's `rpm_plan::DEFAULT_BUDGET`.
pub(super) const DEFAULT_STAGE_SECS: u64 = 15;
/// The longest `--rpm-time`: a stage that has not settled in this long will not.
const MAX_STAGE_SECS: f64 = 300.0;

/// Options that shape a throughput test, which `--rpm` decides itself.
const CONFLICTS: &[Opt] = &[
    Opt::Udp,
    Opt::Sctp,
    Opt::Reverse,
    Opt::Bidir,
    Opt::Time,
    Opt::Bytes,
    Opt::BlockCount,
    Opt::Parallel,
    Opt::File,
    Opt::Omit,
    Opt::Bitrate,
    Opt::GetServerOutput,
    Opt::JsonStream,
    Opt::JsonStreamFullOutput,
    // It measures round trips its own way.
    Opt::Latency,
];

fn err(text: impl Into<String>) -> ParamError {
    ParamError::Rpm(text.into())
}

fn stages(list: &str) -> Result<RpmConfig, ParamError> {
    let mut c = RpmConfig {
        downlink: false,
        uplink: false,
        bidirectional: false,
        stage_budget: Duration::from_secs(DEFAULT_STAGE_SECS),
    };
    for word in list.split(',') {
        match word.trim() {
            "down" | "downlink" => c.downlink = true,
            "up" | "uplink" => c.uplink = true,
            "bidir" | "bidirectional" => c.bidirectional = true,
            other => {
                return Err(err(format!(
                    "--rpm-stages takes a list of down, up and bidir, not \"{other}\""
                )))
            }
        }
    }
    Ok(c)
}

fn budget(text: &str) -> Result<Duration, ParamError> {
    match text.trim().parse::<f64>() {
        Ok(s) if (1.0..=MAX_STAGE_SECS).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(err(format!(
            "--rpm-time must be a number of seconds from 1 to {MAX_STAGE_SECS}, not \"{text}\""
        ))),
    }
}

/// The responsiveness test's settings, `None` without `--rpm` or `--rpm-url`.
pub(super) fn config(raw: &RawArgs) -> Result<Option<RpmConfig>, ParamError> {
    let name = if raw.has(Opt::RpmUrl) {
        "--rpm-url"
    } else {
        "--rpm"
    };
    if !raw.has(Opt::Rpm) && !raw.has(Opt::RpmUrl) {
        if let Some(o) = raw.first_of(&[Opt::RpmStages, Opt::RpmTime]) {
            return Err(err(format!("{} needs --rpm", o.spelled)));
        }
        return Ok(None);
    }
    if let Some(o) = raw.first_of(CONFLICTS) {
        return Err(err(format!(
            "{name} chooses its own load and directions: {} cannot be used with it",
            o.spelled
        )));
    }
    let mut c = stages(&raw.text(Opt::RpmStages).unwrap_or("down,up,bidir".into()))?;
    if let Some(t) = raw.text(Opt::RpmTime) {
        c.stage_budget = budget(&t)?;
    }
    Ok(Some(c))
}

/// `--rpm-url` and `--insecure`; `None` without `--rpm-url`.
pub(super) fn url_client(raw: &RawArgs) -> Result<Option<RpmUrlConfig>, ParamError> {
    let Some(url) = raw.text(Opt::RpmUrl) else {
        if let Some(o) = raw.first_of(&[Opt::Insecure]) {
            return Err(err(format!("{} needs --rpm-url", o.spelled)));
        }
        return Ok(None);
    };
    if let Some(o) = raw.first_of(&[Opt::Client, Opt::Rpm]) {
        return Err(err(format!(
            "--rpm-url names its server and runs the responsiveness test over HTTP/2: \
             {} cannot be used with it",
            o.spelled
        )));
    }
    rperf3_rpm_http::client::target::parse(&url).map_err(|e| err(format!("--rpm-url: {e}")))?;
    Ok(Some(RpmUrlConfig {
        url,
        insecure: raw.has(Opt::Insecure),
    }))
}

/// The host `--rpm-url` names (the client's `host` for its output).
pub(super) fn url_host(url: &str) -> String {
    rperf3_rpm_http::client::target::parse(url).map_or_else(|_| String::new(), |t| t.host)
}

/// `--rpm-http` with its certificate; `None` without `--rpm-http`.
pub(super) fn http_server(raw: &RawArgs) -> Result<Option<RpmHttpConfig>, ParamError> {
    let Some(addr) = raw.text(Opt::RpmHttp) else {
        if let Some(o) = raw.first_of(&[Opt::TlsCert, Opt::TlsKey]) {
            return Err(err(format!("{} needs --rpm-http", o.spelled)));
        }
        return Ok(None);
    };
    let addr = match addr.parse::<std::net::SocketAddr>() {
        Ok(a) if a.port() != 0 => a,
        _ => {
            return Err(err(format!(
                "--rpm-http takes <addr>:<port> (such as 0.0.0.0:4443 or [::]:4443), not \"{addr}\""
            )))
        }
    };
    let cert = match (raw.os(Opt::TlsCert), raw.os(Opt::TlsKey)) {
        (Some(c), Some(k)) => Some((c.into(), k.into())),
        (None, None) => None,
        _ => return Err(err("--tls-cert and --tls-key go together")),
    };
    Ok(Some(RpmHttpConfig { addr, cert }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{client, fails, param_usage};
    use super::*;

    #[test]
    fn rpm_runs_every_stage_for_15_seconds_by_default() {
        assert_eq!(client(&["-c", "h"]).rpm, None);
        let c = client(&["-c", "h", "--rpm"]).rpm.unwrap();
        assert_eq!(
            (c.downlink, c.uplink, c.bidirectional, c.stage_budget),
            (true, true, true, Duration::from_secs(15))
        );
    }

    #[test]
    fn stages_and_budget_are_chosen() {
        let c = client(&[
            "-c",
            "h",
            "--rpm",
            "--rpm-stages",
            "up,down",
            "--rpm-time=7.5",
        ])
        .rpm
        .unwrap();
        assert_eq!(
            (c.downlink, c.uplink, c.bidirectional, c.stage_budget),
            (true, true, false, Duration::from_millis(7500))
        );
        let c = client(&["-c", "h", "--rpm", "--rpm-stages", "bidirectional"])
            .rpm
            .unwrap();
        assert_eq!(
            (c.downlink, c.uplink, c.bidirectional),
            (false, false, true)
        );
    }

    #[test]
    fn bad_values_say_what_is_wanted() {
        assert_eq!(
            fails(&["-c", "h", "--rpm", "--rpm-stages", "down,sideways"]),
            param_usage("--rpm-stages takes a list of down, up and bidir, not \"sideways\"")
        );
        assert_eq!(
            fails(&["-c", "h", "--rpm", "--rpm-stages", ""]),
            param_usage("--rpm-stages takes a list of down, up and bidir, not \"\"")
        );
        for t in ["0.5", "301", "x"] {
            assert_eq!(
                fails(&["-c", "h", "--rpm", "--rpm-time", t]),
                param_usage(&format!(
                    "--rpm-time must be a number of seconds from 1 to 300, not \"{t}\""
                ))
            );
        }
    }

    #[test]
    fn its_options_need_it() {
        assert_eq!(
            fails(&["-c", "h", "--rpm-time", "5"]),
            param_usage("--rpm-time needs --rpm")
        );
        assert_eq!(
            fails(&["-c", "h", "--rpm-st=up"]),
            param_usage("--rpm-stages needs --rpm")
        );
    }

    #[test]
    fn throughput_test_options_are_refused() {
        for (opt, typed) in [
            (&["-u"][..], "-u"),
            (&["-R"], "-R"),
            (&["--bidir"], "--bidir"),
            (&["-t", "5"], "-t"),
            (&["-P", "4"], "-P"),
            (&["-b", "1M"], "-b"),
            (&["--json-stream"], "--json-stream"),
            (&["--latency"], "--latency"),
        ] {
            let mut line = vec!["-c", "h", "--rpm"];
            line.extend(opt);
            assert_eq!(
                fails(&line),
                param_usage(&format!(
                    "--rpm chooses its own load and directions: {typed} cannot be used with it"
                )),
                "{line:?}"
            );
        }
        // Options of the connections and the output still apply.
        let c = client(&["-c", "h", "--rpm", "-C", "reno", "-w", "1M", "-J"]);
        assert!(c.rpm.is_some());
    }

    #[test]
    fn a_server_refuses_it_as_a_client_option() {
        let argv = super::super::tests::argv(&["-s", "--rpm"]);
        assert_eq!(super::super::parse("p", &argv).unwrap_err().code, Some(4));
    }

    #[test]
    fn rpm_url_names_its_server_and_takes_the_stages() {
        let argv = super::super::tests::argv(&[
            "--rpm-url",
            "https://[fd00::2]:4443/api/v1/config",
            "--insecure",
            "--rpm-stages",
            "down",
        ]);
        let c = match super::super::parse("p", &argv).unwrap() {
            crate::cli::Command::Run(inv) => match inv.config.role {
                rperf3_app::config::Role::Client(c) => c,
                r => panic!("{r:?}"),
            },
            c => panic!("{c:?}"),
        };
        assert_eq!(c.host, "fd00::2");
        let u = c.rpm_url.unwrap();
        assert_eq!(u.url, "https://[fd00::2]:4443/api/v1/config");
        assert!(u.insecure);
        let r = c.rpm.unwrap();
        assert!(r.downlink && !r.uplink && !r.bidirectional);
    }

    #[test]
    fn rpm_url_refuses_what_it_cannot_use() {
        let fails = |line: &[&str]| {
            super::super::parse("p", &super::super::tests::argv(line))
                .unwrap_err()
                .message
        };
        assert!(fails(&["--rpm-url", "http://h/config"])
            .contains("--rpm-url: \"http://h/config\" is not an https URL"));
        assert!(fails(&["--rpm-url", "https://h/c", "-c", "h"])
            .contains("--rpm-url names its server and runs the responsiveness test over HTTP/2: -c cannot be used with it"));
        assert!(fails(&["--rpm-url", "https://h/c", "-P", "2"])
            .contains("--rpm-url chooses its own load and directions: -P cannot be used with it"));
        assert!(fails(&["-c", "h", "--insecure"]).contains("--insecure needs --rpm-url"));
    }

    #[test]
    fn rpm_http_takes_an_address_and_a_certificate_pair() {
        let s = super::super::tests::server(&["-s", "--rpm-http", "[::]:4443"]);
        let h = s.rpm_http.unwrap();
        assert_eq!(h.addr, "[::]:4443".parse().unwrap());
        assert_eq!(h.cert, None);
        let s = super::super::tests::server(&[
            "-s",
            "--rpm-http",
            "10.0.0.1:4443",
            "--tls-cert",
            "c.pem",
            "--tls-key",
            "k.pem",
        ]);
        assert_eq!(
            s.rpm_http.unwrap().cert,
            Some(("c.pem".into(), "k.pem".into()))
        );
        for (line, want) in [
            (
                &["-s", "--rpm-http", "4443"][..],
                "--rpm-http takes <addr>:<port>",
            ),
            (
                &["-s", "--rpm-http", "1.2.3.4:0"],
                "--rpm-http takes <addr>:<port>",
            ),
            (
                &["-s", "--rpm-http", "1.2.3.4:1", "--tls-cert", "c"],
                "--tls-cert and --tls-key go together",
            ),
            (&["-s", "--tls-key", "k"], "--tls-key needs --rpm-http"),
        ] {
            let e = super::super::parse("p", &super::super::tests::argv(line)).unwrap_err();
            assert!(e.message.contains(want), "{line:?}: {}", e.message);
        }
    }
}
