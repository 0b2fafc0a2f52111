//! What an rperf3 client adds around iperf3's exchange, only when asked:
//! `--latency`'s prober and its idle round trips, `--rpm`'s and
//! `--bounceback`'s refusal of a stock server before any data stream, and
//! `--bounceback-load`'s connections.

use std::time::{Duration, Instant};

use rperf3_latency::Kind;
use rperf3_proto::{IperfError, IE_INIT_TEST, IE_MESSAGE, IE_STREAM_CONNECT};

use super::{Client, Stop, NOT_RPERF3_BOUNCEBACK, NOT_RPERF3_RPM};
use crate::latency::prober::{ProbeSetup, Prober, IDLE_BUDGET};
use crate::measurement::driver::Test;

impl Client<'_> {
    /// `--latency`: starts the prober; `with_server` once the server said it
    /// answers probes (its idle round trips begin now).
    pub(super) fn start_prober(&mut self, with_server: bool) {
        let Some(rate) = self.cc.latency else {
            return;
        };
        let rpm = self.rpm.is_some();
        let setup = ProbeSetup {
            server: self.server,
            bind: self.common.bind.clone(),
            cookie: self.cookie,
            rate,
            with_server,
        };
        match (Prober::start(setup), self.d.plan_mut()) {
            // The stage's loop takes the round trips, not the test's intervals.
            (Ok(p), _) if rpm => {
                if let Some(r) = self.rpm.as_deref_mut() {
                    r.take_prober(p);
                }
            }
            (Ok(p), Some(plan)) => plan.latency = Some(p),
            (Ok(_), None) => {}
            (Err(e), _) => log::warn!("latency: no prober thread: {e}"),
        }
    }

    /// CREATE_STREAMS with `--latency`: after the idle round trips with an
    /// rperf3 server; a stock server never said it answers probes, so the client
    /// measures alone (its control connection's handshake is the first idle
    /// round trip).
    pub(super) fn before_streams(&mut self) -> Result<(), Stop> {
        if let Some(r) = self.rpm.as_deref_mut() {
            // No LATENCY_READY before CREATE_STREAMS: a stock server.
            let Some(p) = r.prober() else {
                r.fail(NOT_RPERF3_RPM.to_string());
                return Err(Stop::Error(IperfError::new(IE_MESSAGE)));
            };
            p.wait_idle(Instant::now() + IDLE_BUDGET + Duration::from_millis(500));
            return Ok(());
        }
        if self.cc.bounceback.is_some() && !self.rperf3_server {
            // Before any data connection: a stock server would take the
            // transactions for bulk data.
            return Err(Stop::Error(IperfError::with_detail(
                IE_INIT_TEST,
                NOT_RPERF3_BOUNCEBACK,
            )));
        }
        if self.cc.latency.is_none() {
            return Ok(());
        }
        if self.d.plan().is_some_and(|p| p.latency.is_none()) {
            log::debug!("latency: the server does not answer probes: measuring alone");
            self.start_prober(false);
            self.alone_idle(self.ctrl_connect);
        }
        if let Some(p) = self.d.plan_mut().and_then(|p| p.latency.as_mut()) {
            p.wait_idle(Instant::now() + IDLE_BUDGET + Duration::from_millis(500));
        }
        Ok(())
    }

    /// `--bounceback-load`: the load connections, once the streams run.
    pub(super) fn start_bounceback_load(&mut self) -> Result<(), Stop> {
        let Some(load) = self.cc.bounceback.and_then(|b| b.load) else {
            return Ok(());
        };
        let set = crate::measurement::bounceback::open_load(self.server, self.cookie, load)
            .map_err(|e| IperfError::from_io(IE_STREAM_CONNECT, &e))?;
        if let Test::Running(run) = &mut self.d.test {
            run.attach_bounceback_load(set);
        }
        Ok(())
    }

    /// A connection's handshake, as an idle round trip when measuring alone.
    pub(super) fn alone_idle(&self, took: Duration) {
        if let Some(p) = self.d.plan().and_then(|p| p.latency.as_ref()) {
            if !p.with_server() {
                p.record(Kind::Idle, took);
            }
        }
    }
}
