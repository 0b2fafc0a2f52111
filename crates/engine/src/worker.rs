//! One OS thread per stream; a failure is recorded for the control thread.

use std::io;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::control::RunControl;

/// A running stream worker.
#[derive(Debug)]
pub struct Worker {
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts `body` on a new thread named `name`; an error it returns is recorded in
    /// `ctl` unless the run was already stopping (teardown errors are expected).
    pub fn spawn<F>(name: String, ctl: Arc<RunControl>, body: F) -> io::Result<Self>
    where
        F: FnOnce(&RunControl) -> io::Result<()> + Send + 'static,
    {
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            if let Err(e) = body(&ctl) {
                if !ctl.stopped() {
                    ctl.fail(e);
                }
            }
        })?;
        Ok(Self {
            handle: Some(handle),
        })
    }

    /// Whether the thread has returned.
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits for the thread.
    pub fn join(mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_before_stop_is_recorded() {
        let ctl = Arc::new(RunControl::new(None));
        let w = Worker::spawn("t".into(), ctl.clone(), |_| Err(io::Error::other("boom"))).unwrap();
        w.join();
        assert_eq!(ctl.take_error().unwrap().to_string(), "boom");
    }

    #[test]
    fn error_after_stop_is_ignored() {
        let ctl = Arc::new(RunControl::new(None));
        ctl.stop();
        let w = Worker::spawn("t".into(), ctl.clone(), |_| Err(io::Error::other("late"))).unwrap();
        w.join();
        assert!(ctl.take_error().is_none());
    }
}
