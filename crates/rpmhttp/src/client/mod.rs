//! `--rpm-url`: the responsiveness method against any standard RPM server.
//! The config names the resources; each stage runs through the same loop as
//! `--rpm` ([`rperf3_app::rpm::run`]) over an [`link::HttpLink`].

mod conn;
pub mod link;
mod load;
pub mod target;

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rperf3_app::config::RpmConfig;
use rperf3_app::rpm::{Ending, Ticks};
use rperf3_app::Interrupt;
use rperf3_latency::{Params, RpmRun};

use crate::endpoints;
use link::{HttpLink, Resources};

/// Longest the config may take to arrive.
const CONFIG_LIMIT: Duration = Duration::from_secs(10);
/// Longest a wait goes without looking for an interrupt.
const STEP: Duration = Duration::from_millis(20);

/// What the test measured, and how it ended.
pub struct Outcome {
    /// The stages that ran.
    pub run: RpmRun,
    /// Why it stopped early, if it did.
    pub error: Option<String>,
    /// SIGINT/SIGTERM cut it short.
    pub interrupted: bool,
}

/// Real time, cut short by an interrupt.
struct IntrTicks<'a>(&'a mut Interrupt);

impl Ticks for IntrTicks<'_> {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn wait_until(&mut self, t: Instant) -> bool {
        loop {
            if self.0.triggered() {
                return false;
            }
            let now = Instant::now();
            if now >= t {
                return true;
            }
            // A signal makes the fd readable; the next turn reads it.
            let _ = rperf3_sys::poll::readable(&self.0.fd(), (t - now).min(STEP));
        }
    }
}

fn resolve(base: &target::Target, url: &str) -> Result<target::Target, String> {
    // A config names absolute URLs; a relative one is taken from the config's server.
    if url.starts_with('/') {
        let auth = base.uri.authority().map_or("", |a| a.as_str());
        return target::parse(&format!("https://{auth}{url}"));
    }
    target::parse(url)
}

/// Fetches the config at `url` and the resources it names.
async fn configure(url: &target::Target, insecure: bool) -> io::Result<(conn::Dialer, Resources)> {
    let dialer = conn::Dialer::new(url, insecure).await?;
    let c = dialer.connect().await?;
    let (body, _) = conn::get(&c.send, url).await?;
    let urls = endpoints::parse_config(&body).map_err(io::Error::other)?;
    let pick = |u: &str| resolve(url, u).map_err(io::Error::other);
    let res = Resources {
        small: pick(&urls.small)?,
        large: pick(&urls.large)?,
        upload: pick(&urls.upload)?,
    };
    Ok((dialer, res))
}

/// Runs the stages of `cfg` against the server whose config is at `url`.
pub fn run(url: &str, insecure: bool, cfg: &RpmConfig, intr: &mut Interrupt) -> Outcome {
    let params = Params::default();
    let mut out = Outcome {
        run: RpmRun {
            params,
            budget: cfg.stage_budget,
            stages: Vec::new(),
        },
        error: None,
        interrupted: false,
    };
    let fail = |mut out: Outcome, e: String| {
        out.error = Some(e);
        out
    };
    let target = match target::parse(url) {
        Ok(t) => t,
        Err(e) => return fail(out, e),
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("rpm-url")
        .enable_all()
        .build()
    {
        Ok(rt) => Arc::new(rt),
        Err(e) => return fail(out, format!("unable to start: {e}")),
    };
    let configured = rt.block_on(async {
        tokio::time::timeout(CONFIG_LIMIT, configure(&target, insecure))
            .await
            .unwrap_or_else(|_| Err(io::Error::other("no config within 10 s")))
    });
    let (dialer, res) = match configured {
        Ok(c) => c,
        Err(e) => return fail(out, format!("unable to read the config at {url}: {e}")),
    };
    let mut link = HttpLink::new(rt.clone(), dialer, res);
    let (run, ending) = rperf3_app::rpm::run(&mut link, &mut IntrTicks(intr), cfg, params);
    drop(link);
    out.run = run;
    match ending {
        Ending::Complete => {}
        Ending::Interrupted => out.interrupted = true,
        Ending::Failed(e) => out.error = Some(format!("a load connection failed: {e}")),
    }
    if let Ok(rt) = Arc::try_unwrap(rt) {
        rt.shutdown_timeout(Duration::from_secs(1));
    }
    out
}
