//! `--rpm-http` on the server: the RPM protocol's endpoints over HTTP/2 on a
//! second address, started by the host once its iperf3 port listens, its
//! visitors taking the host's test slots.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rperf3_app::config::{Config, ServerConfig};
use rperf3_app::SideService;
use rperf3_rpm_http::server::{self, Limits, Notes, Options};
use rperf3_rpm_http::tls::CertSource;

use crate::output::Sink;

/// The names a self-signed certificate carries when the address is a wildcard.
const LOCAL_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The service `--rpm-http` asks for, if it does.
pub(crate) fn side(
    prog: &str,
    cfg: &Config,
    sc: &ServerConfig,
    sink: &Sink,
) -> Option<SideService> {
    let h = sc.rpm_http.clone()?;
    let cert = match &h.cert {
        Some((cert, key)) => CertSource::Files {
            cert: cert.clone(),
            key: key.clone(),
        },
        None => {
            let mut names: Vec<String> = LOCAL_NAMES.iter().map(ToString::to_string).collect();
            if !h.addr.ip().is_unspecified() {
                names.insert(0, h.addr.ip().to_string());
            }
            if let Some(host) = rperf3_sys::system::hostname() {
                names.push(host);
            }
            CertSource::SelfSigned(names)
        }
    };
    let self_signed = h.cert.is_none();
    let limits = Limits {
        // A visit is a test: --server-max-duration bounds its connections too.
        life: sc
            .max_duration
            .map_or(Limits::default().life, |s| Duration::from_secs(s.into())),
        ..Limits::default()
    };
    let opts = Options {
        addr: h.addr,
        cert,
        limits,
    };
    // A -J server keeps stdout for its JSON documents.
    let (out, err) = sink.writers();
    let (_, notes_to) = sink.writers();
    let say = Mutex::new(if cfg.output.json { err } else { out });
    // Clients that misbehave are said on stderr as the iperf3 port's are.
    let prog = prog.to_string();
    let notes_to = Mutex::new(notes_to);
    let notes: Notes = Arc::new(move |line: String| {
        let mut w = notes_to.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(w, "{prog}: rpm-http: {line}");
        let _ = w.flush();
    });
    Some(SideService(Arc::new(move |gate| {
        let running = server::start(&opts, Arc::new(gate), notes.clone())?;
        let kind = if self_signed { "self-signed " } else { "" };
        let mut w = say.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(
            w,
            "RPM over HTTP/2 on https://{}/config ({kind}certificate SHA-256 {})",
            running.addr, running.fingerprint
        );
        let _ = w.flush();
        Ok(Box::new(running))
    })))
}
