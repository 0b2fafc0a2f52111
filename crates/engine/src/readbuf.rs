//! A TCP receiver's read buffer, placed for each read so that the kernel's
//! copy runs between equally aligned addresses.
//!
//! The kernel copies a read out of the socket's pages with `rep movsb` on
//! CPUs that have fast short `rep movsb` (FSRM, as on AMD Zen 3 and 4), and
//! that copy is slow when the destination sits a little after the source
//! modulo a page: 1 to 15 bytes after, 2-3 GB/s on this machine's Zen 4
//! against 36-48 GB/s; 16 to 63 bytes after, 0.65-0.85x (`rep movsb` of
//! 65483 bytes, a user-space sweep; design notes, "Aligned reads"). A
//! sendfile sender of page-multiple blocks (rperf3's) puts byte `p` of the
//! stream at offset `p` modulo a page in its page; a read that lands byte `p`
//! at an address equal to `p` modulo a page copies between equal offsets,
//! whatever the read sizes were before. A sender that writes (iperf3, iperf 2)
//! leaves its bytes at offsets no receiver can know; placing the buffer by
//! the stream's offset costs it nothing.

/// The page size the placement works modulo.
const PAGE: usize = 4096;

/// A buffer of `len` bytes a read, placed by the stream offset of the read.
pub struct ReadBuf {
    mem: Vec<u8>,
    /// Where in `mem` a page begins.
    base: usize,
    len: usize,
}

impl ReadBuf {
    /// A buffer for reads of up to `len` (at least 1) bytes.
    pub fn new(len: usize) -> Self {
        let len = len.max(1);
        let mem = vec![0u8; len + 2 * PAGE];
        let base = (PAGE - mem.as_ptr() as usize % PAGE) % PAGE;
        Self { mem, base, len }
    }

    /// The buffer for a read whose first byte is byte `at` of the stream:
    /// byte `at + i` lands at an address equal to `at + i` modulo a page.
    pub fn at(&mut self, at: u64) -> &mut [u8] {
        let start = self.base + (at % PAGE as u64) as usize;
        &mut self.mem[start..start + self.len]
    }

    /// The most a read takes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never: a buffer holds at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_lands_each_byte_at_its_stream_offset_modulo_a_page() {
        let mut b = ReadBuf::new(128 << 10);
        for at in [0u64, 1, 37, 4095, 4096, 65483, 130_966, (1 << 40) + 5] {
            let s = b.at(at);
            assert_eq!(s.len(), 128 << 10);
            assert_eq!(s.as_ptr() as usize % PAGE, (at % PAGE as u64) as usize);
        }
    }

    #[test]
    fn a_tiny_buffer_still_reads_a_byte() {
        let mut b = ReadBuf::new(0);
        assert_eq!(b.len(), 1);
        assert_eq!(b.at(4095).len(), 1);
    }
}
