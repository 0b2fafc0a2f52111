//! From configuration to protocol parameters and report facts, both directions.

use rperf3_proto::{LatencyOffer, TestParams, LATENCY_VERSION};
use rperf3_proto::{
    DEFAULT_PACING_TIMER, DEFAULT_SCTP_BLKSIZE, DEFAULT_TCP_BLKSIZE, DEFAULT_UDP_BLKSIZE,
    DEFAULT_UDP_RATE, MAX_UDP_BLOCKSIZE,
};
use rperf3_report::input::{Side, TestInfo};
use std::time::Duration;

use crate::measurement::run::IdleLimits;

use crate::config::{ClientConfig, CommonConfig, Direction, EndCondition, Protocol};

/// The version string of `start.version` and `-V`.
pub fn version_string() -> String {
    // "iperf <version>" is the form tools parse; the suffix names the implementation.
    format!("iperf 3.21 (rperf3 {})", env!("CARGO_PKG_VERSION"))
}

/// UDP datagram size without `-l`: the control connection's MSS, else 1460.
pub(crate) fn default_udp_len(ctrl_mss: u32) -> u32 {
    if ctrl_mss > 0 && ctrl_mss <= MAX_UDP_BLOCKSIZE {
        ctrl_mss
    } else {
        DEFAULT_UDP_BLKSIZE
    }
}

/// The parameters document a client sends. `len` is 0 for UDP without `-l`
/// (filled from the control MSS once connected).
pub fn client_params(cc: &ClientConfig) -> TestParams {
    let udp = cc.protocol == Protocol::Udp;
    let default_len = match cc.protocol {
        Protocol::Tcp => DEFAULT_TCP_BLKSIZE as i32,
        Protocol::Udp => 0,
        Protocol::Sctp => DEFAULT_SCTP_BLKSIZE as i32,
    };
    let mut p = TestParams {
        server_affinity: cc.server_affinity.map(|c| c as i32),
        protocol: cc.protocol,
        omit: cc.omit as i32,
        parallel: cc.parallel as i32,
        reverse: cc.direction == Direction::Reverse,
        bidirectional: cc.direction == Direction::Bidir,
        len: cc.length.map_or(default_len, |l| l as i32),
        bandwidth: cc.bitrate.unwrap_or(if udp { DEFAULT_UDP_RATE } else { 0 }),
        burst: cc.burst.unwrap_or(0) as i32,
        window: cc.window.unwrap_or(0) as i32,
        title: cc.title.clone(),
        extra_data: cc.extra_data.clone(),
        get_server_output: cc.get_server_output,
        udp_counters_64bit: cc.udp_counters_64bit,
        repeating_payload: cc.repeating_payload,
        dont_fragment: cc.dont_fragment,
        zerocopy: cc.zerocopy,
        skip_rx_copy: cc.skip_rx_copy,
        latency: cc.latency.map(|rate| LatencyOffer {
            version: LATENCY_VERSION,
            rate,
            rpm: cc.rpm.is_some(),
            // The data is timed whenever latency is measured (UDP datagrams
            // and TCP blocks; not during the responsiveness test's stages).
            owd: cc.rpm.is_none(),
        }),
        bounceback: cc.bounceback,
        congestion: cc.congestion.clone(),
        mss: cc.mss.unwrap_or(0),
        nodelay: cc.nodelay,
        tos: cc.tos.map_or(0, i32::from),
        fqrate: cc.fq_rate,
        mptcp: cc.mptcp && cc.protocol == Protocol::Tcp,
        flowlabel: cc.flowlabel.map_or(0, |l| l as i32),
        pacing_timer: cc.pacing_timer.unwrap_or(DEFAULT_PACING_TIMER as i32),
        ..TestParams::default()
    };
    match cc.end {
        EndCondition::Time(t) => p.time = t as i32,
        EndCondition::Bytes(n) => {
            p.time = 0;
            p.num = n;
        }
        EndCondition::Blocks(n) => {
            p.time = 0;
            p.blockcount = n;
        }
    }
    if cc.gsro {
        p.gso = 1;
        p.gro = 1;
    }
    p
}

/// What sending workers need, from the parameters in effect.
pub(crate) fn send_spec(p: &TestParams) -> crate::measurement::choice::SendSpec {
    crate::measurement::choice::SendSpec {
        blksize: p.len.max(1) as usize,
        pacer: (p.bandwidth > 0).then(|| rperf3_engine::pacing::Pacer::new(p.bandwidth)),
        repeating: p.repeating_payload,
        burst: p.burst.max(1) as u32,
        counters_64bit: p.udp_counters_64bit,
        skip_rx_copy: p.skip_rx_copy,
        file: None,
        zerocopy: p.zerocopy,
        bounceback: p
            .bounceback
            .as_ref()
            .filter(|b| b.version == rperf3_proto::bounceback::BOUNCEBACK_VERSION)
            .map(crate::measurement::bounceback::BbSpec::of),
        pace_end: None,
        window_given: p.window > 0,
    }
}

/// How long each direction may go without progress: `--rcv-timeout`, or for
/// sending, two paced blocks if `-b` spaces them further apart than that.
pub(crate) fn idle_limits(p: &TestParams, rcv_timeout: Duration) -> IdleLimits {
    let block_gap = (p.bandwidth > 0)
        .then(|| Duration::from_secs_f64(p.len.max(1) as f64 * 8.0 / p.bandwidth as f64));
    IdleLimits {
        recv: rcv_timeout,
        send: block_gap.map_or(rcv_timeout, |g| rcv_timeout.max(g * 2)),
    }
}

/// This side's stream roles in setup order (true = sends). The client creates
/// its senders first, then (bidir) its receivers; the server takes the streams
/// in arrival order as receivers first, then senders. Both orders describe the
/// same connections, and stream ids follow the same order on both sides.
pub(crate) fn stream_roles(p: &TestParams, side: Side) -> Vec<bool> {
    let n = p.parallel.max(1) as usize;
    let client = side == Side::Client;
    match (p.reverse, p.bidirectional) {
        (_, true) => std::iter::repeat_n(client, n)
            .chain(std::iter::repeat_n(!client, n))
            .collect(),
        (true, false) => vec![!client; n],
        (false, false) => vec![client; n],
    }
}

/// The report's `test_start` facts from the parameters in effect.
pub(crate) fn test_info(p: &TestParams, common: &CommonConfig, side: Side) -> TestInfo {
    let udp = p.protocol == Protocol::Udp;
    let off = rperf3_sys::udp_io::offload();
    let roles = stream_roles(p, side);
    TestInfo {
        side,
        protocol: p.protocol,
        num_streams: p.parallel.max(1) as u32,
        blksize: p.len.max(0) as u32,
        omit: p.omit.max(0) as u32,
        duration: p.time.max(0) as u32,
        bytes: p.num,
        blocks: p.blockcount,
        reverse: p.reverse,
        bidir: p.bidirectional,
        tos: p.tos.max(0) as u32,
        target_bitrate: p.bandwidth,
        fq_rate: p.fqrate,
        interval: common.interval.map_or(0.0, |d| d.as_secs_f64()),
        // What is in effect here, whatever the peer asked for: the offloads this
        // kernel has, for the directions this side runs.
        gso: udp && off.gso && roles.contains(&true),
        gro: udp && off.gro && roles.contains(&false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slow_paced_senders_get_two_blocks_before_they_count_as_stalled() {
        let mut p = TestParams {
            len: 128 * 1024,
            bandwidth: 1024 * 1024,
            ..TestParams::default()
        };
        let idle = Duration::from_secs(2);
        assert_eq!(idle_limits(&p, idle).send, idle);
        p.bandwidth = 8 * 1024; // one 128 KiB block every 128 s
        assert_eq!(idle_limits(&p, idle).send, Duration::from_secs(256));
        assert_eq!(idle_limits(&p, idle).recv, idle);
    }

    #[test]
    fn roles_mirror_each_other() {
        let mut p = TestParams {
            parallel: 2,
            ..TestParams::default()
        };
        assert_eq!(stream_roles(&p, Side::Client), [true, true]);
        assert_eq!(stream_roles(&p, Side::Server), [false, false]);
        p.reverse = true;
        assert_eq!(stream_roles(&p, Side::Client), [false, false]);
        p.bidirectional = true;
        assert_eq!(stream_roles(&p, Side::Client), [true, true, false, false]);
        assert_eq!(stream_roles(&p, Side::Server), [false, false, true, true]);
    }

    #[test]
    fn udp_len_falls_back_to_1460() {
        assert_eq!(default_udp_len(0), 1460);
        assert_eq!(default_udp_len(32768), 32768);
        assert_eq!(default_udp_len(70000), 1460);
    }
}
