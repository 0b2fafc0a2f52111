//! One OS thread per stream; a failure is recorded for the control thread, and
//! the thread's CPU time stays readable after it has exited.

use std::io;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rperf3_sys::rusage::{current_tid, task_cpu_times, thread_cpu_times, CpuTimes};

use crate::control::{RunControl, WorkerFailure};

/// A running stream worker.
#[derive(Debug)]
pub struct Worker {
    handle: Option<JoinHandle<()>>,
    cpu: Arc<Mutex<ThreadCpu>>,
}

/// A worker thread's CPU time: read live from outside while it runs, taken by
/// the thread itself (exactly) as it exits. The lock makes the two exclusive, so
/// a reader never misses or double-counts a thread that exits meanwhile.
#[derive(Debug, Default)]
struct ThreadCpu {
    tid: Option<i32>,
    done: Option<CpuTimes>,
}

impl Worker {
    /// Starts `body` on a new thread named `name`; an error it returns is recorded in
    /// `ctl` (with whether the stream was `sending`) unless the run was already
    /// stopping (teardown errors are expected).
    pub fn spawn<F>(name: String, ctl: Arc<RunControl>, sending: bool, body: F) -> io::Result<Self>
    where
        F: FnOnce(&RunControl) -> io::Result<()> + Send + 'static,
    {
        let cpu = Arc::new(Mutex::new(ThreadCpu::default()));
        let mine = cpu.clone();
        // The tid is known before the caller can ask for the thread's CPU time.
        let (tid_tx, tid_rx) = std::sync::mpsc::sync_channel(1);
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            let _ = tid_tx.send(current_tid());
            if let Err(error) = body(&ctl) {
                if !ctl.stopped() {
                    ctl.fail(WorkerFailure { sending, error });
                }
            }
            lock(&mine).done = Some(thread_cpu_times());
        })?;
        lock(&cpu).tid = tid_rx.recv().ok();
        Ok(Self {
            handle: Some(handle),
            cpu,
        })
    }

    /// Whether the thread has returned.
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// CPU time the thread has used so far (all of it once it has exited).
    pub fn cpu_times(&self) -> CpuTimes {
        let g = lock(&self.cpu);
        match (g.done, g.tid) {
            (Some(t), _) => t,
            (None, Some(tid)) => task_cpu_times(tid).unwrap_or_default(),
            (None, None) => CpuTimes::default(),
        }
    }

    /// Waits for the thread.
    pub fn join(mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn lock(m: &Mutex<ThreadCpu>) -> std::sync::MutexGuard<'_, ThreadCpu> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn error_before_stop_is_recorded_with_the_direction() {
        let ctl = Arc::new(RunControl::new(None));
        let w = Worker::spawn("t".into(), ctl.clone(), true, |_| {
            Err(io::Error::other("boom"))
        })
        .unwrap();
        w.join();
        let f = ctl.take_error().unwrap();
        assert_eq!(f.error.to_string(), "boom");
        assert!(f.sending);
    }

    #[test]
    fn error_after_stop_is_ignored() {
        let ctl = Arc::new(RunControl::new(None));
        ctl.stop();
        let w = Worker::spawn("t".into(), ctl.clone(), false, |_| {
            Err(io::Error::other("late"))
        })
        .unwrap();
        w.join();
        assert!(ctl.take_error().is_none());
    }

    #[test]
    fn cpu_time_is_the_workers_own_live_and_after_exit() {
        let ctl = Arc::new(RunControl::new(None));
        let w = Worker::spawn("spin".into(), ctl.clone(), true, |c| {
            let mut x = 0u64;
            while !c.stopped() {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            Ok(())
        })
        .unwrap();
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(300) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let live = w.cpu_times();
        ctl.stop();
        while !w.finished() {
            std::thread::sleep(Duration::from_millis(1));
        }
        let after = w.cpu_times();
        let total = |c: CpuTimes| c.user + c.system;
        assert!(total(live) >= Duration::from_millis(100), "{live:?}");
        assert!(total(after) + Duration::from_millis(20) >= total(live));
        // The sleeping test thread itself is not counted.
        assert!(total(after) < t.elapsed() + Duration::from_millis(100));
        w.join();
    }
}
