//! The `-n` / `-k` limit, shared by all sending streams of a test.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What the limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetUnit {
    /// `-n`: bytes.
    Bytes,
    /// `-k`: blocks.
    Blocks,
}

/// A total that senders draw from until it is used up. Senders claim before they
/// send, so the total sent is exact: the last block is cut short for `-n`.
#[derive(Debug)]
pub struct Budget {
    unit: BudgetUnit,
    total: u64,
    remaining: AtomicU64,
    /// While false (the `-O` period) sending is not metered.
    metering: AtomicBool,
}

impl Budget {
    /// A budget of `total` units.
    pub fn new(unit: BudgetUnit, total: u64) -> Self {
        Self {
            unit,
            total,
            remaining: AtomicU64::new(total),
            metering: AtomicBool::new(true),
        }
    }

    /// Claims room for one block of up to `block` bytes. Returns how many bytes
    /// may be sent (0 when the budget is used up).
    pub fn claim(&self, block: usize) -> usize {
        if !self.metering.load(Ordering::Acquire) {
            return block;
        }
        let want = match self.unit {
            BudgetUnit::Bytes => block as u64,
            BudgetUnit::Blocks => 1,
        };
        let mut cur = self.remaining.load(Ordering::Relaxed);
        loop {
            if cur == 0 {
                return 0;
            }
            let take = want.min(cur);
            match self.remaining.compare_exchange_weak(
                cur,
                cur - take,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return match self.unit {
                        BudgetUnit::Bytes => take as usize,
                        BudgetUnit::Blocks => block,
                    }
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Stops metering until [`Budget::restart`]: during `-O`, what is sent does
    /// not count against the limit, as in iperf3.
    pub fn suspend(&self) {
        self.metering.store(false, Ordering::Release);
    }

    /// Meters again from the whole total (the end of the `-O` period).
    pub fn restart(&self) {
        self.remaining.store(self.total, Ordering::Release);
        self.metering.store(true, Ordering::Release);
    }

    /// Gives back `count` claims of `block` bytes that were not sent.
    pub fn refund(&self, block: usize, count: usize) {
        let units = match self.unit {
            BudgetUnit::Bytes => (block * count) as u64,
            BudgetUnit::Blocks => count as u64,
        };
        self.remaining.fetch_add(units, Ordering::AcqRel);
    }

    /// Whether nothing is left.
    pub fn exhausted(&self) -> bool {
        self.remaining.load(Ordering::Acquire) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn byte_budget_cuts_the_last_block() {
        let b = Budget::new(BudgetUnit::Bytes, 250);
        assert_eq!(b.claim(100), 100);
        assert_eq!(b.claim(100), 100);
        assert_eq!(b.claim(100), 50);
        assert_eq!(b.claim(100), 0);
        assert!(b.exhausted());
    }

    #[test]
    fn refund_returns_unsent_claims() {
        let b = Budget::new(BudgetUnit::Blocks, 3);
        assert_eq!(b.claim(10), 10);
        assert_eq!(b.claim(10), 10);
        b.refund(10, 1);
        assert_eq!(b.claim(10), 10);
        assert_eq!(b.claim(10), 10);
        assert_eq!(b.claim(10), 0);
    }

    #[test]
    fn suspended_budget_does_not_meter_until_restart() {
        let b = Budget::new(BudgetUnit::Bytes, 100);
        b.suspend();
        assert_eq!(b.claim(100), 100);
        assert_eq!(b.claim(100), 100);
        assert!(!b.exhausted());
        b.restart();
        assert_eq!(b.claim(60), 60);
        assert_eq!(b.claim(60), 40);
    }

    #[test]
    fn block_budget_counts_blocks() {
        let b = Budget::new(BudgetUnit::Blocks, 2);
        assert_eq!(b.claim(4096), 4096);
        assert_eq!(b.claim(4096), 4096);
        assert_eq!(b.claim(4096), 0);
    }

    #[test]
    fn concurrent_claims_sum_exactly_to_the_total() {
        let b = Arc::new(Budget::new(BudgetUnit::Bytes, 1_000_003));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let b = b.clone();
                std::thread::spawn(move || {
                    let mut sum = 0u64;
                    loop {
                        let n = b.claim(1000);
                        if n == 0 {
                            return sum;
                        }
                        sum += n as u64;
                    }
                })
            })
            .collect();
        let total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
        assert_eq!(total, 1_000_003);
    }
}
