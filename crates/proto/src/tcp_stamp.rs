//! Send times in a TCP stream's blocks, between rperf3 ends that agreed to time
//! the data (`"owd"` in the latency parameters). The sender writes each block
//! (`-l` bytes) whole, so block `k` starts at byte `k * len` of the stream; it
//! puts a stamp at the start of each: a magic and its wall clock in
//! nanoseconds. The receiver follows the byte offsets of what it reads (it
//! never searches the data) and reads the stamp where a block starts. A block
//! whose start holds no magic (a file sent with `-F`) is not timed.

/// What starts a stamp.
pub const TCP_STAMP_MAGIC: [u8; 4] = *b"RPts";
/// A stamp's length: the magic, then the send time (i64, big endian).
pub const TCP_STAMP_LEN: usize = 12;

/// Writes a stamp of `wall_ns` at the start of `block`; false (nothing
/// written) when the block is too short to hold one.
pub fn write_stamp(block: &mut [u8], wall_ns: i64) -> bool {
    let Some(head) = block.get_mut(..TCP_STAMP_LEN) else {
        return false;
    };
    head[..4].copy_from_slice(&TCP_STAMP_MAGIC);
    head[4..].copy_from_slice(&wall_ns.to_be_bytes());
    true
}

/// Finds the stamps in what a receiver reads, by offset.
#[derive(Debug, Clone)]
pub struct BlockStamps {
    len: usize,
    /// Offset in the current block of the next byte read.
    pos: usize,
    head: [u8; TCP_STAMP_LEN],
}

impl BlockStamps {
    /// For blocks of `len` bytes; `None` when a block cannot hold a stamp.
    pub fn new(len: usize) -> Option<Self> {
        (len >= TCP_STAMP_LEN).then_some(Self {
            len,
            pos: 0,
            head: [0; TCP_STAMP_LEN],
        })
    }

    /// The next bytes of the stream: calls `each` with the send time of every
    /// block whose stamp they complete.
    pub fn feed(&mut self, mut data: &[u8], mut each: impl FnMut(i64)) {
        while !data.is_empty() {
            if self.pos < TCP_STAMP_LEN {
                let take = (TCP_STAMP_LEN - self.pos).min(data.len());
                self.head[self.pos..self.pos + take].copy_from_slice(&data[..take]);
                self.pos += take;
                data = &data[take..];
                if self.pos == TCP_STAMP_LEN && self.head[..4] == TCP_STAMP_MAGIC {
                    let mut t = [0u8; 8];
                    t.copy_from_slice(&self.head[4..]);
                    each(i64::from_be_bytes(t));
                }
            } else {
                let skip = (self.len - self.pos).min(data.len());
                self.pos += skip;
                data = &data[skip..];
            }
            if self.pos == self.len {
                self.pos = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(len: usize, times: &[i64]) -> Vec<u8> {
        let mut all = Vec::new();
        for &t in times {
            let mut b = vec![0xAAu8; len];
            assert!(write_stamp(&mut b, t));
            all.extend(b);
        }
        all
    }

    #[test]
    fn stamps_are_found_by_offset_however_the_reads_split_issue18() {
        let times = [1_795_000_000_123_456_789, -5, 0, i64::MAX];
        for len in [12usize, 13, 100] {
            let bytes = stream(len, &times);
            for cut in [1usize, 5, 11, 12, 13, 64, 1000] {
                let mut s = BlockStamps::new(len).unwrap();
                let mut got = Vec::new();
                for piece in bytes.chunks(cut) {
                    s.feed(piece, |t| got.push(t));
                }
                assert_eq!(got, times, "len {len}, reads of {cut}");
            }
        }
    }

    #[test]
    fn a_block_without_the_magic_is_not_timed_and_the_next_one_is() {
        let mut bytes = stream(20, &[7, 8]);
        bytes[0] = b'x';
        let mut s = BlockStamps::new(20).unwrap();
        let mut got = Vec::new();
        s.feed(&bytes, |t| got.push(t));
        assert_eq!(got, [8]);
        // A short final block (a -n budget's remainder) still starts a block.
        let mut tail = stream(20, &[9]);
        tail.truncate(15);
        s.feed(&tail, |t| got.push(t));
        assert_eq!(got, [8, 9]);
    }

    #[test]
    fn blocks_too_short_for_a_stamp_are_not_stamped() {
        assert!(BlockStamps::new(11).is_none());
        assert!(!write_stamp(&mut [0u8; 11], 1));
    }
}
