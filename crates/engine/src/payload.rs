//! The bytes a sender writes: random once per stream, or iperf3's repeating pattern.

/// A send buffer of `len` bytes: random, or "0123456789" repeated
/// (`--repeating-payload`).
pub fn make(len: usize, repeating: bool) -> Vec<u8> {
    if repeating {
        b"0123456789".iter().copied().cycle().take(len).collect()
    } else {
        let mut v = vec![0u8; len];
        rperf3_sys::random::fill(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeating_pattern() {
        assert_eq!(super::make(12, true), b"012345678901");
    }

    #[test]
    fn random_has_the_length() {
        assert_eq!(super::make(100, false).len(), 100);
    }
}
