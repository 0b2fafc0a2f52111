//! The logger behind the `log` facade: `-d[=level]` turns it on.
//!
//! Log lines never go to stdout, where scripts parse iperf3's report layout:
//! they go to stderr, or with `--logfile` to that file, through the same
//! queue as the reports there (each line one unit, so they do not split the
//! report's lines, and logging never waits for the reader). Each line starts
//! with the local time to the millisecond and the level.

use log::{Level, LevelFilter, Log, Metadata, Record};
use rperf3_report::queue::OutputQueue;

struct Logger {
    out: OutputQueue,
    level: LevelFilter,
}

/// iperf3's debug levels 1-4: errors, warnings, information, everything.
fn filter(debug: u8) -> LevelFilter {
    match debug {
        0 => LevelFilter::Off,
        1 => LevelFilter::Error,
        2 => LevelFilter::Warn,
        3 => LevelFilter::Info,
        _ => LevelFilter::Debug,
    }
}

impl Log for Logger {
    fn enabled(&self, m: &Metadata<'_>) -> bool {
        m.level() <= self.level
    }

    fn log(&self, r: &Record<'_>) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let time = utc(rperf3_sys::time::unix_millis());
        let level = match r.level() {
            Level::Error => "error",
            Level::Warn => "warning",
            Level::Info => "info",
            Level::Debug | Level::Trace => "debug",
        };
        let line = format!("{time} {level}: {}\n", r.args());
        // A line that does not fit is dropped and counted: logging never
        // holds a test.
        self.out.push(line.into_bytes());
    }

    /// The queue's writer flushes whenever it has caught up.
    fn flush(&self) {}
}

/// RFC 3339 UTC time of a Unix time in milliseconds (one clock read, so the
/// seconds and the milliseconds always agree).
pub(crate) fn utc(ms: u64) -> String {
    let (secs, milli) = (ms / 1000, ms % 1000);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (year, month, day) = rperf3_report::start::civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Installs the logger for `-d` level `debug` (0: none), writing to `out`
/// (stderr's queue, or the log file's).
pub(crate) fn init(debug: u8, out: OutputQueue) {
    let level = filter(debug);
    if level == LevelFilter::Off {
        return;
    }
    let logger = Logger { out, level };
    // Only fails if a logger is already set: the first one stays.
    if log::set_logger(Box::leak(Box::new(logger))).is_ok() {
        log::set_max_level(level);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_levels_map_to_log_levels() {
        assert_eq!(filter(0), LevelFilter::Off);
        assert_eq!(filter(1), LevelFilter::Error);
        assert_eq!(filter(3), LevelFilter::Info);
        assert_eq!(filter(4), LevelFilter::Debug);
    }

    #[test]
    fn utc_times_match_date() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        // As `date -u -d @951782400` (a leap day) and `@1795432213`.
        assert_eq!(utc(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(utc(1_795_432_213_296), "2026-11-23T11:10:13.296Z");
    }
}
