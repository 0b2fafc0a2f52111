//! The process itself: detaching as a daemon, CPU affinity, and the pid file.

use std::io;
use std::path::{Path, PathBuf};

/// Detaches from the terminal as daemon(3) does: fork (the parent exits 0),
/// setsid, chdir to `/`, stdin/stdout/stderr to /dev/null. Only the calling
/// thread survives the fork, so call it before any thread starts.
pub fn daemonize() -> io::Result<()> {
    nix::unistd::daemon(false, false).map_err(io::Error::from)
}

/// Pins the calling thread, and every thread it starts from now on, to one
/// CPU. EINVAL for a CPU this machine does not have.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).map_err(io::Error::from)?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(io::Error::from)
}

/// A file that holds this process's id while it runs; removed when dropped.
#[derive(Debug)]
pub struct PidFile {
    path: PathBuf,
}

impl PidFile {
    /// Writes the id (decimal, no newline, as iperf3). A file that names a
    /// process still running is left alone: `EEXIST`, so two servers started
    /// with one pid file do not both claim it.
    pub fn create(path: &Path) -> io::Result<Self> {
        if let Ok(old) = std::fs::read_to_string(path) {
            if let Ok(pid) = old.trim().parse::<i32>() {
                let me = std::process::id() as i32;
                if pid > 0 && pid != me && alive(pid) {
                    return Err(io::Error::from_raw_os_error(libc::EEXIST));
                }
            }
        }
        std::fs::write(path, std::process::id().to_string())?;
        Ok(Self {
            path: path.to_path_buf(),
        })
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Does process `pid` exist (signal 0 reaches it, or it is not ours to signal)?
fn alive(pid: i32) -> bool {
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e != nix::errno::Errno::ESRCH,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pid_file_holds_the_id_and_goes_away() {
        let path = std::env::temp_dir().join(format!("rperf3-pid-{}", std::process::id()));
        let f = PidFile::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            std::process::id().to_string()
        );
        drop(f);
        assert!(!path.exists());
    }

    #[test]
    fn a_live_process_keeps_its_pid_file() {
        let path = std::env::temp_dir().join(format!("rperf3-pid1-{}", std::process::id()));
        std::fs::write(&path, "1").unwrap(); // init is always running
        let e = PidFile::create(&path).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EEXIST));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_cpu_the_machine_lacks_is_einval() {
        let e = pin_to_cpu(100_000).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
        // On a thread of its own, so the test runner's threads stay unpinned.
        std::thread::spawn(|| {
            pin_to_cpu(0).unwrap();
            let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
            assert!(status.contains("Cpus_allowed_list:\t0\n"), "{status}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let e = PidFile::create(Path::new("/nonexistent-dir/x.pid")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
