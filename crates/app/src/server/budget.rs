//! The data streams (threads) all tests of a server may have together.
//!
//! A test holds its share as a [`StreamPermit`], which gives it back when
//! dropped: however a session ends, its streams are free again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Streams the server may still open, shared by its sessions.
#[derive(Debug)]
pub(crate) struct StreamBudget(AtomicUsize);

/// `n` streams taken from a [`StreamBudget`], returned on drop.
#[derive(Debug)]
pub(crate) struct StreamPermit {
    budget: Arc<StreamBudget>,
    n: usize,
}

impl StreamBudget {
    /// Room for `n` streams.
    pub(crate) fn new(n: usize) -> Arc<Self> {
        Arc::new(Self(AtomicUsize::new(n)))
    }

    /// Takes `n` if that many are left.
    pub(crate) fn take(self: &Arc<Self>, n: usize) -> Option<StreamPermit> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(n)
            })
            .ok()
            .map(|_| StreamPermit {
                budget: self.clone(),
                n,
            })
    }

    #[cfg(test)]
    fn left(&self) -> usize {
        self.0.load(Ordering::Acquire)
    }
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        self.budget.0.fetch_add(self.n, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_permit_gives_its_streams_back_when_dropped() {
        let b = StreamBudget::new(10);
        let p = b.take(6).expect("6 of 10");
        assert!(b.take(5).is_none(), "only 4 left");
        let q = b.take(4).expect("the last 4");
        assert_eq!(b.left(), 0);
        drop(p);
        assert_eq!(b.left(), 6);
        drop(q);
        assert_eq!(b.left(), 10);
    }
}
