//! What a test's control thread shares with its workers: stop flag, budget, errors.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use crate::budget::Budget;

/// A worker's failure.
#[derive(Debug)]
pub struct WorkerFailure {
    /// Whether the stream was sending (iperf3 reports a write error then, else a
    /// read error).
    pub sending: bool,
    /// What went wrong.
    pub error: io::Error,
}

/// Shared run state of one test.
#[derive(Debug, Default)]
pub struct RunControl {
    stop: AtomicBool,
    budget: Option<Budget>,
    error: Mutex<Option<WorkerFailure>>,
    /// Paced workers wait on this until their next block is due or the run stops.
    nap_lock: Mutex<()>,
    wake: Condvar,
}

impl RunControl {
    /// A run with an optional `-n`/`-k` budget for senders.
    pub fn new(budget: Option<Budget>) -> Self {
        Self {
            stop: AtomicBool::new(false),
            budget,
            error: Mutex::new(None),
            nap_lock: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// Tells workers to finish their current block and return.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _g = self.nap_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.wake.notify_all();
    }

    /// Waits up to `d`, returning early when the run stops: a paced worker
    /// sleeps until its next block is due instead of polling the stop flag
    /// (128 streams polling every 5 ms cost a quarter of a core).
    pub fn nap(&self, d: Duration) {
        let g = self.nap_lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.stopped() {
            return;
        }
        let _ = self.wake.wait_timeout(g, d);
    }

    /// Whether workers should return.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    /// The sender budget, if the test has one.
    pub fn budget(&self) -> Option<&Budget> {
        self.budget.as_ref()
    }

    /// Records a worker's failure; the first one wins.
    pub fn fail(&self, f: WorkerFailure) {
        let mut g = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(f);
        }
    }

    /// Takes the first recorded worker failure.
    pub fn take_error(&self) -> Option<WorkerFailure> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_ends_a_nap_at_once() {
        let ctl = std::sync::Arc::new(RunControl::new(None));
        let c = ctl.clone();
        let h = std::thread::spawn(move || {
            let t = std::time::Instant::now();
            c.nap(Duration::from_secs(30));
            t.elapsed()
        });
        // Whether the stop comes before or during the nap, the nap ends.
        ctl.stop();
        assert!(h.join().unwrap() < Duration::from_secs(10));
        let t = std::time::Instant::now();
        ctl.nap(Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn first_error_wins() {
        let c = RunControl::new(None);
        let f = |m: &str| WorkerFailure {
            sending: false,
            error: io::Error::other(m),
        };
        c.fail(f("a"));
        c.fail(f("b"));
        assert_eq!(c.take_error().unwrap().error.to_string(), "a");
        assert!(c.take_error().is_none());
    }

    #[test]
    fn stop_is_seen() {
        let c = RunControl::new(None);
        assert!(!c.stopped());
        c.stop();
        assert!(c.stopped());
    }
}
