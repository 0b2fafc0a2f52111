//! CPU utilisation over a test, as iperf3 reports it: process CPU time over wall time.

use std::time::Instant;

use rperf3_report::input::Cpu;
use rperf3_sys::rusage::{cpu_times, CpuTimes};

/// Started at TEST_START, read at the end.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    wall: Instant,
    cpu: CpuTimes,
}

impl CpuMeter {
    /// Starts measuring now.
    pub fn start() -> Self {
        Self {
            wall: Instant::now(),
            cpu: cpu_times(),
        }
    }

    /// Percentages of one core since the start (may exceed 100 with threads).
    pub fn read(&self) -> Cpu {
        let now = cpu_times();
        let wall = self.wall.elapsed().as_secs_f64();
        if wall <= 0.0 {
            return Cpu::default();
        }
        let user = now.user.saturating_sub(self.cpu.user).as_secs_f64() / wall * 100.0;
        let system = now.system.saturating_sub(self.cpu.system).as_secs_f64() / wall * 100.0;
        Cpu {
            total: user + system,
            user,
            system,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn busy_loop_shows_user_time() {
        let m = super::CpuMeter::start();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let c = m.read();
        assert!(c.total > 20.0 && c.total < 250.0, "{c:?}");
        assert!((c.total - c.user - c.system).abs() < 1e-9);
    }
}
