//! Shared builders for the tests of this crate.

use crate::input::{Proto, Side, StreamInfo, TestInfo};

pub(crate) fn test_info(side: Side, protocol: Proto) -> TestInfo {
    TestInfo {
        side,
        protocol,
        num_streams: 1,
        blksize: 131072,
        omit: 0,
        duration: 2,
        bytes: 0,
        blocks: 0,
        reverse: false,
        bidir: false,
        tos: 0,
        target_bitrate: 0,
        fq_rate: 0,
        interval: 1.0,
        gso: false,
        gro: false,
    }
}

#[allow(dead_code)]
pub(crate) fn stream(socket: i32, id: u32, sender: bool, local: &str, remote: &str) -> StreamInfo {
    StreamInfo {
        socket,
        id,
        sender,
        local: local.parse().unwrap(),
        remote: remote.parse().unwrap(),
    }
}
