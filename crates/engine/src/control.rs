//! What a test's control thread shares with its workers: stop flag, budget, errors.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use crate::budget::Budget;

/// Shared run state of one test.
#[derive(Debug, Default)]
pub struct RunControl {
    stop: AtomicBool,
    budget: Option<Budget>,
    error: Mutex<Option<io::Error>>,
}

impl RunControl {
    /// A run with an optional `-n`/`-k` budget for senders.
    pub fn new(budget: Option<Budget>) -> Self {
        Self {
            stop: AtomicBool::new(false),
            budget,
            error: Mutex::new(None),
        }
    }

    /// Tells workers to finish their current block and return.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
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
    pub fn fail(&self, e: io::Error) {
        let mut g = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
    }

    /// Takes the first recorded worker failure.
    pub fn take_error(&self) -> Option<io::Error> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_error_wins() {
        let c = RunControl::new(None);
        c.fail(io::Error::other("a"));
        c.fail(io::Error::other("b"));
        assert_eq!(c.take_error().unwrap().to_string(), "a");
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
