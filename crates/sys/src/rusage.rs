//! CPU time of the process and of single threads, for iperf3's CPU utilisation
//! figures. A server hosting several tests gives each test the time of its own
//! threads (its control thread and stream workers), not the whole process's.
#![forbid(unsafe_code)]

use std::ops::Add;
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

impl Add for CpuTimes {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            user: self.user + o.user,
            system: self.system + o.system,
        }
    }
}

impl CpuTimes {
    /// `self - earlier`, never negative.
    pub fn since(self, earlier: Self) -> Self {
        Self {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Reads this process's CPU times (all threads).
pub fn cpu_times() -> CpuTimes {
    usage(UsageWho::RUSAGE_SELF)
}

/// Reads the calling thread's CPU times (microsecond resolution).
pub fn thread_cpu_times() -> CpuTimes {
    usage(UsageWho::RUSAGE_THREAD)
}

/// The calling thread's kernel id, for [`task_cpu_times`] from another thread.
pub fn current_tid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// CPU times of a live thread of this process, from another thread, read from
/// `/proc/self/task/<tid>/stat` (clock-tick resolution). `None` once the thread
/// has exited.
pub fn task_cpu_times(tid: i32) -> Option<CpuTimes> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    parse_task_stat(&stat, clock_ticks())
}

fn clock_ticks() -> u64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as u64,
        _ => 100,
    }
}

/// utime and stime are fields 14 and 15; the command name (field 2) is in
/// parentheses and may itself contain spaces or parentheses, so fields are
/// counted after its last ')'.
fn parse_task_stat(stat: &str, ticks_per_sec: u64) -> Option<CpuTimes> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut f = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = f.next()?.parse().ok()?;
    let stime: u64 = f.next()?.parse().ok()?;
    let d = |t: u64| Duration::from_nanos(t.saturating_mul(1_000_000_000) / ticks_per_sec.max(1));
    Some(CpuTimes {
        user: d(utime),
        system: d(stime),
    })
}

fn usage(who: UsageWho) -> CpuTimes {
    match getrusage(who) {
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
    use super::*;

    #[test]
    fn task_stat_fields_after_the_command_name() {
        let line = "1234 (str (a) b) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0";
        let t = parse_task_stat(line, 100).unwrap();
        assert_eq!(t.user, Duration::from_millis(2500));
        assert_eq!(t.system, Duration::from_millis(750));
        assert_eq!(parse_task_stat("garbage", 100), None);
    }

    #[test]
    fn a_busy_thread_is_seen_from_outside_and_from_inside() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let total = |c: CpuTimes| c.user + c.system;
        let h = std::thread::spawn(move || {
            let tid = current_tid();
            // Spin for CPU time, not wall time: a loaded machine only stretches it.
            let mut x = 0u64;
            while total(thread_cpu_times()) < Duration::from_millis(200) {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_add(1));
                }
            }
            let own = thread_cpu_times();
            tx.send((tid, own)).unwrap();
            done_rx.recv().unwrap();
            own
        });
        // The thread is parked in recv() now: its times no longer grow.
        let (tid, own) = rx.recv().unwrap();
        let seen = task_cpu_times(tid).unwrap();
        done_tx.send(()).unwrap();
        assert_eq!(h.join().unwrap(), own);
        // Seen from outside in clock ticks (10 ms): at most one tick short.
        assert!(
            total(seen) + Duration::from_millis(20) >= total(own),
            "{seen:?} {own:?}"
        );
        // This (idle) test thread's own time is not in it.
        assert!(total(thread_cpu_times()) < total(own));
        assert_eq!(task_cpu_times(tid), None);
    }

    #[test]
    fn cpu_time_grows_with_work() {
        let a = cpu_times();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = cpu_times();
        assert!(b.user + b.system > a.user + a.system);
    }
}
