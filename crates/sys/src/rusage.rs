//! Process CPU time, for iperf3's CPU utilisation figures.
#![forbid(unsafe_code)]

use std::time::Duration;

use nix::sys::resource::{getrusage, UsageWho};

/// User and system CPU time consumed by this process so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// User time.
    pub user: Duration,
    /// System time.
    pub system: Duration,
}

/// Reads this process's CPU times (all threads).
pub fn cpu_times() -> CpuTimes {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let tv = |t: nix::sys::time::TimeVal| {
                Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
            };
            CpuTimes {
                user: tv(u.user_time()),
                system: tv(u.system_time()),
            }
        }
        Err(_) => CpuTimes::default(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cpu_time_grows_with_work() {
        let a = super::cpu_times();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = super::cpu_times();
        assert!(b.user + b.system > a.user + a.system);
    }
}
