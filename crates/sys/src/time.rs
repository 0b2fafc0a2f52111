//! Wall-clock formatting: `--timestamps` (strftime) and RFC 1123 dates.

use std::ffi::CString;
use std::time::{SystemTime, UNIX_EPOCH};

/// Formats the current local time with a C strftime format (as `--timestamps`).
/// An empty string if the format is invalid or expands to nothing.
pub fn strftime_now(format: &str) -> String {
    let Ok(fmt) = CString::new(format) else {
        return String::new();
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: `tm` is zero-initialised plain data; localtime_r fills it from `now`,
    // both pointers are valid for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: see above; localtime_r is the thread-safe variant.
    if unsafe { libc::localtime_r(&now, &mut tm) }.is_null() {
        return String::new();
    }
    let mut buf = vec![0u8; 256];
    // SAFETY: `buf` is writable for `buf.len()` bytes, `fmt` is NUL-terminated and `tm`
    // was filled above; strftime writes at most `buf.len()` bytes including the NUL.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm) };
    buf.truncate(n);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Unix time in milliseconds.
pub fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn strftime_formats_the_year() {
        let y = super::strftime_now("%Y");
        assert_eq!(y.len(), 4, "{y}");
        assert!(y.starts_with('2'));
    }

    #[test]
    fn bad_format_with_nul_is_empty() {
        assert_eq!(super::strftime_now("a\0b"), "");
    }
}
