//! CPU utilisation over a test, as iperf3 reports it: CPU time over wall time.
//!
//! iperf3 runs one test per process and reads the whole process's time. A server
//! here may host several tests at once, so a test counts only its own threads:
//! the control thread that created the meter and the test's stream workers.

use std::time::Instant;

use rperf3_engine::worker::Worker;
use rperf3_report::input::Cpu;
use rperf3_sys::rusage::{thread_cpu_times, CpuTimes};

/// Started at TEST_START on the test's control thread, read at the end.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CpuMeter {
    wall: Instant,
    control: CpuTimes,
}

impl CpuMeter {
    /// Starts measuring now; call on the test's control thread.
    pub(crate) fn start() -> Self {
        Self {
            wall: Instant::now(),
            control: thread_cpu_times(),
        }
    }

    /// Percentages of one core since the start (may exceed 100 with threads), for
    /// the calling (control) thread and `workers`.
    pub(crate) fn read(&self, workers: &[Worker]) -> Cpu {
        let own = thread_cpu_times().since(self.control);
        let used = workers
            .iter()
            .map(Worker::cpu_times)
            .fold(own, |a, b| a + b);
        let wall = self.wall.elapsed().as_secs_f64();
        if wall <= 0.0 {
            return Cpu::default();
        }
        let user = used.user.as_secs_f64() / wall * 100.0;
        let system = used.system.as_secs_f64() / wall * 100.0;
        Cpu {
            total: user + system,
            user,
            system,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_engine::control::RunControl;
    use std::sync::Arc;
    use std::time::Duration;

    /// Burns `d` of this thread's CPU time (not wall time: the machine is shared).
    fn spin(d: Duration) {
        let t = thread_cpu_times();
        let mut x = 0u64;
        loop {
            let used = thread_cpu_times().since(t);
            if used.user + used.system >= d {
                return;
            }
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
    }

    #[test]
    fn counts_the_control_thread_and_workers_but_not_other_threads() {
        let ctl = Arc::new(RunControl::new(None));
        // Another test's thread, busy at the same time: not ours.
        let other = std::thread::spawn(|| spin(Duration::from_millis(400)));
        let m = CpuMeter::start();
        let w = Worker::spawn("w".into(), ctl.clone(), true, |_| {
            spin(Duration::from_millis(200));
            Ok(())
        })
        .unwrap();
        spin(Duration::from_millis(200));
        other.join().unwrap();
        while !w.finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let c = m.read(std::slice::from_ref(&w));
        let wall = m.wall.elapsed().as_secs_f64();
        // 400 ms of CPU (ours and the worker's) in `wall`; the other thread's
        // 400 ms would make it 800.
        let ours = c.total / 100.0 * wall;
        assert!((0.38..0.6).contains(&ours), "{c:?} over {wall} s");
        // Both spins count in user mode (a system call every 10,000 additions):
        // user time must carry most of it, so user and system are not swapped.
        assert!(c.user > 3.0 * c.system, "{c:?}");
        w.join();
    }
}
