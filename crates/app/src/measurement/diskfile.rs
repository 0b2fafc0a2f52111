//! The `-F` file of a test: opened once, shared by the streams that carry it.

use std::fs::File;
use std::sync::Arc;

use rperf3_proto::{IperfError, IE_FILE};

/// The `-F` file of a test, opened once and shared by its streams.
#[derive(Debug, Clone)]
pub(crate) struct DiskFile {
    /// The name as given, for the report.
    pub(crate) name: String,
    /// Open for reading (sending) or writing (receiving).
    pub(crate) file: Arc<File>,
    /// Whether this side sends the file (its receiving streams, with
    /// `--bidir`, then store nothing).
    pub(crate) sending: bool,
}

impl DiskFile {
    /// Opens `name` to send it, or creates (truncates) it, private to the
    /// user as iperf3 makes it, to store what arrives. Fails with error 14.
    pub(crate) fn open(name: &str, sending: bool) -> Result<Self, IperfError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = if sending {
            File::open(name)
        } else {
            File::options()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(name)
        }
        .map_err(|e| IperfError::from_io(IE_FILE, &e))?;
        Ok(Self {
            name: name.to_string(),
            file: Arc::new(file),
            sending,
        })
    }

    /// The file's size now.
    pub(crate) fn size(&self) -> u64 {
        self.file.metadata().map_or(0, |m| m.len())
    }
}
