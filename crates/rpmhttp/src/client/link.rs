//! The stage loop's [`Link`] over HTTP/2: load connections as endless
//! downloads and uploads, foreign probes on new connections (TCP, TLS and a
//! 1-byte GET, each timed), self probes as 1-byte GETs on the loaded
//! connections, behind their queued data.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rperf3_app::rpm::Link;
use rperf3_latency::{Histogram, IntervalData, Kind, Load, Samples};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

use super::conn::{self, Dialer};
use super::load::{self, Tally};
use super::target::Target;

/// Idle round trips timed before each stage's load.
const IDLE_PROBES: usize = 10;
/// Longest a connection may take to open, and a probe to finish: a probe
/// later than this is lost, not timed.
const PROBE_LIMIT: Duration = Duration::from_secs(20);
/// Probes in flight at most (each holds a connection or a stream).
const MAX_IN_FLIGHT: usize = 256;

/// The resources a stage uses.
#[derive(Clone)]
pub struct Resources {
    /// The 1-byte object.
    pub small: Target,
    /// The large object.
    pub large: Target,
    /// The sink.
    pub upload: Target,
}

/// What the stage's tasks share.
struct Shared {
    dialer: Dialer,
    res: Resources,
    tally: Tally,
    samples: Mutex<Samples>,
    /// Probe pairs per second, as f64 bits.
    rate: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    fn record(&self, kind: Kind, d: Duration) {
        lock(&self.samples).record(kind, u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }
}

/// The client's side of the stages over HTTP/2.
pub struct HttpLink {
    rt: Arc<Runtime>,
    dialer: Dialer,
    res: Resources,
    /// The current stage's state and tasks.
    stage: Arc<Shared>,
    tasks: JoinSet<()>,
    prober: bool,
}

impl HttpLink {
    /// A link to the server `dialer` reaches, for `res`, on `rt`.
    pub(crate) fn new(rt: Arc<Runtime>, dialer: Dialer, res: Resources) -> Self {
        let stage = Self::fresh(&dialer, &res);
        Self {
            rt,
            dialer,
            res,
            stage,
            tasks: JoinSet::new(),
            prober: false,
        }
    }

    fn fresh(dialer: &Dialer, res: &Resources) -> Arc<Shared> {
        Arc::new(Shared {
            dialer: dialer.clone(),
            res: res.clone(),
            tally: Tally::default(),
            samples: Mutex::new(Samples::default()),
            rate: AtomicU64::new(0f64.to_bits()),
        })
    }

    fn spawn(&mut self, f: impl std::future::Future<Output = ()> + Send + 'static) {
        self.tasks.spawn_on(f, self.rt.handle());
    }
}

impl Link for HttpLink {
    fn idle(&mut self) -> io::Result<Histogram> {
        let s = self.stage.clone();
        self.rt.block_on(async move {
            let c = tokio::time::timeout(PROBE_LIMIT, s.dialer.connect())
                .await
                .map_err(|_| io::Error::other("connecting took too long"))??;
            let mut idle = Histogram::new();
            for _ in 0..IDLE_PROBES {
                let (_, took) = tokio::time::timeout(PROBE_LIMIT, conn::get(&c.send, &s.res.small))
                    .await
                    .map_err(|_| io::Error::other("an idle probe took too long"))??;
                idle.record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            }
            Ok(idle)
        })
    }

    fn open(&mut self, load: Load, count: u32) -> io::Result<()> {
        for _ in 0..count {
            let s = self.stage.clone();
            self.spawn(async move {
                let r = load_conn(&s, load).await;
                if let Err(e) = r {
                    s.tally.fail(e);
                }
            });
        }
        if !self.prober {
            self.prober = true;
            let s = self.stage.clone();
            self.spawn(probe_loop(s));
        }
        Ok(())
    }

    fn probe_rate(&mut self, pairs_per_sec: f64) {
        self.stage
            .rate
            .store(pairs_per_sec.to_bits(), Ordering::Relaxed);
    }

    fn take_interval(&mut self) -> io::Result<IntervalData> {
        if let Some(e) = self.stage.tally.failure() {
            return Err(e);
        }
        let (down_bytes, up_bytes) = self.stage.tally.take();
        Ok(IntervalData {
            down_bytes,
            up_bytes,
            samples: std::mem::take(&mut *lock(&self.stage.samples)),
        })
    }

    fn end_stage(&mut self) {
        self.tasks.abort_all();
        // The aborted tasks drop their connections on the runtime's threads.
        let mut tasks = std::mem::take(&mut self.tasks);
        self.rt
            .block_on(async move { while tasks.join_next().await.is_some() {} });
        self.stage = Self::fresh(&self.dialer, &self.res);
        self.prober = false;
    }
}

/// One load connection, for the rest of the stage.
async fn load_conn(s: &Arc<Shared>, load: Load) -> io::Result<()> {
    let c = tokio::time::timeout(PROBE_LIMIT, s.dialer.connect())
        .await
        .map_err(|_| io::Error::other("a load connection took too long to open"))??;
    s.tally.add_loaded(c.send.clone());
    match load {
        Load::Down => {
            s.tally.add_download(c.sock);
            load::download(c.send, &s.res.large).await
        }
        Load::Up => {
            s.tally.add_upload(c.sock);
            load::upload(c.send, &s.res.upload).await
        }
    }
}

/// Sends probe pairs at the planner's rate until the stage ends. The probes
/// are this task's own: when the stage aborts it, the set drops and ends
/// every probe still waiting, with its connection.
async fn probe_loop(s: Arc<Shared>) {
    let mut probes = JoinSet::new();
    let mut n = 0usize;
    loop {
        while probes.try_join_next().is_some() {}
        let rate = f64::from_bits(s.rate.load(Ordering::Relaxed));
        if rate <= 0.0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        let next = tokio::time::Instant::now() + Duration::from_secs_f64(1.0 / rate);
        if probes.len() + 2 <= MAX_IN_FLIGHT {
            let f = s.clone();
            probes.spawn(async move {
                let _ = tokio::time::timeout(PROBE_LIMIT, foreign(&f)).await;
            });
            let l = s.clone();
            probes.spawn(async move {
                let _ = tokio::time::timeout(PROBE_LIMIT, self_probe(&l, n)).await;
            });
            n = n.wrapping_add(1);
        }
        tokio::time::sleep_until(next).await;
    }
}

/// A foreign probe: a new connection's TCP and TLS handshakes and a 1-byte GET
/// on it, each timed.
async fn foreign(s: &Shared) {
    let Ok(c) = s.dialer.connect().await else {
        return;
    };
    let Ok((_, took)) = conn::get(&c.send, &s.res.small).await else {
        return;
    };
    s.record(Kind::ForeignConnect, c.times.tcp);
    s.record(Kind::ForeignTls, c.times.tls);
    s.record(Kind::ForeignRequest, took);
}

/// A self probe: a 1-byte GET on the `n`th loaded connection.
async fn self_probe(s: &Shared, n: usize) {
    let Some(send) = s.tally.loaded(n) else {
        return;
    };
    if let Ok((_, took)) = conn::get(&send, &s.res.small).await {
        s.record(Kind::SelfLoaded, took);
    }
}
