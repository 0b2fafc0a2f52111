//! One test at a time on a node, whatever role it plays in it.
//!
//! A mesh agent is a server and a client: while it runs its own test as the
//! client its server must refuse newcomers as busy, and while its server
//! serves, its own test must wait. Both hold the same [`Exclusive`]; the hold
//! is a value released on drop, never a flag cleared by hand.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The node's single test slot.
#[derive(Debug, Default)]
pub struct Exclusive {
    busy: AtomicBool,
}

/// The slot, held until dropped.
#[derive(Debug)]
pub struct Held(Arc<Exclusive>);

impl Exclusive {
    /// A free slot.
    pub fn new() -> Arc<Self> {
        Arc::default()
    }

    /// Takes the slot if it is free.
    pub fn try_hold(self: &Arc<Self>) -> Option<Held> {
        self.busy
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Held(self.clone()))
    }

    /// Whether someone holds it now.
    pub fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_until_it_drops() {
        let x = Exclusive::new();
        let a = x.try_hold().expect("free");
        assert!(x.is_busy());
        assert!(x.try_hold().is_none());
        drop(a);
        assert!(!x.is_busy());
        assert!(x.try_hold().is_some());
    }
}
