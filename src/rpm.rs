//! `--rpm` and `--rpm-url` on the client: runs the stages (over iperf3's
//! protocol against an rperf3 server, or over HTTP/2 against any RPM server)
//! and prints the responsiveness report (text, or one `-J` document at the
//! end) instead of iperf3's.

use std::io::Write;

use rperf3_app::config::{ClientConfig, Config};
use rperf3_app::Interrupt;
use rperf3_report::rpm::{self, RpmStart};

use crate::cli::LoadedAuth;
use crate::output::Sink;

/// Runs the test; the exit status (1 when it failed).
pub(crate) fn run(
    prog: &str,
    cfg: &Config,
    cc: &ClientConfig,
    auth: &LoadedAuth,
    sink: &Sink,
    intr: &mut Interrupt,
) -> i32 {
    let start = RpmStart {
        host: cc.host.clone(),
        port: cc
            .rpm_url
            .as_ref()
            .and_then(|u| rperf3_rpm_http::client::target::parse(&u.url).ok())
            .map_or(cfg.common.port, |t| t.port),
        version: rperf3_app::version_string(),
        system_info: rperf3_sys::system::uname_line(),
        timestamp_millis: rperf3_sys::time::unix_millis(),
        url: cc.rpm_url.as_ref().map(|u| u.url.clone()),
    };
    let (run, error) = match (&cc.rpm_url, &cc.rpm) {
        (Some(u), Some(rc)) => {
            let o = rperf3_rpm_http::client::run(&u.url, u.insecure, rc, intr);
            (o.run, o.error)
        }
        _ => {
            let o = rperf3_app::rpm::stage::run(cc, &cfg.common, intr, auth.client.as_ref());
            (o.run, o.error)
        }
    };
    let (mut out, mut err) = sink.writers();
    if cfg.output.json {
        let doc = rpm::json(&start, &run, error.as_deref());
        let _ = writeln!(out, "{}", rperf3_report::cjson::to_pretty(&doc));
    } else {
        let format = cfg.output.format.unwrap_or('a');
        for line in rpm::text(&start, &run, format) {
            let _ = writeln!(out, "{line}");
        }
        if let Some(e) = &error {
            let _ = writeln!(err, "{prog}: error - {e}");
        }
    }
    let _ = out.flush();
    let _ = err.flush();
    i32::from(error.is_some())
}
