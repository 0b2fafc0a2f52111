//! CLOCK_MONOTONIC as iperf3 puts it on the wire in UDP datagrams.
#![forbid(unsafe_code)]

use std::time::Duration;

use nix::time::{clock_gettime, ClockId};

/// Time since boot (CLOCK_MONOTONIC). iperf3 stamps UDP datagrams with it.
pub fn monotonic() -> Duration {
    match clock_gettime(ClockId::CLOCK_MONOTONIC) {
        Ok(ts) => Duration::new(ts.tv_sec() as u64, ts.tv_nsec() as u32),
        // CLOCK_MONOTONIC cannot fail on Linux; a zero keeps callers total.
        Err(_) => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_never_goes_back() {
        let a = monotonic();
        let b = monotonic();
        assert!(b >= a);
        assert!(a > Duration::ZERO);
    }
}
