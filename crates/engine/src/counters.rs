//! Per-stream counters, written by one worker and read by the sampler.

use std::sync::atomic::{AtomicU64, Ordering};

/// Monotonic counters of one stream. Cache-line aligned so that neighbouring
/// streams' workers do not contend on one line.
#[repr(align(128))]
#[derive(Debug, Default)]
pub struct StreamCounters {
    bytes: AtomicU64,
    blocks: AtomicU64,
}

/// A point-in-time copy of [`StreamCounters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterSnapshot {
    /// Bytes moved since the stream started.
    pub bytes: u64,
    /// Blocks (writes, reads, datagrams) since the stream started.
    pub blocks: u64,
}

impl StreamCounters {
    /// Records one block of `n` bytes.
    #[inline]
    pub fn add(&self, n: u64) {
        // Relaxed: the sampler only needs eventually-consistent, monotonic values.
        self.bytes.fetch_add(n, Ordering::Relaxed);
        self.blocks.fetch_add(1, Ordering::Relaxed);
    }

    /// Records `blocks` blocks of `bytes` bytes in all.
    #[inline]
    pub fn add_many(&self, blocks: u64, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.blocks.fetch_add(blocks, Ordering::Relaxed);
    }

    /// Reads both counters.
    pub fn snapshot(&self) -> CounterSnapshot {
        CounterSnapshot {
            bytes: self.bytes.load(Ordering::Relaxed),
            blocks: self.blocks.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_counts_bytes_and_blocks() {
        let c = StreamCounters::default();
        c.add(100);
        c.add(28);
        assert_eq!(
            c.snapshot(),
            CounterSnapshot {
                bytes: 128,
                blocks: 2
            }
        );
    }

    #[test]
    fn counters_do_not_share_a_cache_line() {
        assert!(align_of::<StreamCounters>() >= 128);
    }
}
