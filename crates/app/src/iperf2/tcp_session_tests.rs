//! A TCP session's acknowledgement: its trip-times stamps only when asked.

use super::*;
use crate::iperf2::client_header::request;
use crate::iperf2::config::{Client2, Common2, End2, Input2, Mode2};

fn req(trip: bool) -> TestRequest {
    let cl = Client2 {
        host: "h".into(),
        end: End2::Bytes(1),
        parallel: 1,
        rate: None,
        mode: Mode2::Normal,
        listen_port: None,
        compat: false,
        peer_detect: true,
        no_udp_fin: false,
        input: Input2::Pattern,
        sync_transfer_id: false,
        txstart: None,
        txdelay: None,
        connect_only: None,
        incr_dstport: false,
        bounceback: None,
        isoch: None,
    };
    let mut r = request(&cl, &Common2::default(), 8);
    r.trip_times = trip;
    r.trip_start = Some(Timeval { sec: 5, usec: 6 });
    r
}

/// §3.3: 28 bytes, or 52 with the client's start echoed when trip-times
/// are on (an `-X --trip-times` client reads 52).
#[test]
fn the_ack_has_the_stamps_only_with_trip_times() {
    let at = Timeval { sec: 7, usec: 8 };
    assert_eq!(ack_for(&req(false), at).encode().len(), 28);
    let a = ack_for(&req(true), at);
    assert_eq!(a.encode().len(), 52);
    let t = a.times.unwrap();
    assert_eq!(
        (t.client_start, t.server_accept),
        (Timeval { sec: 5, usec: 6 }, at)
    );
    assert!(t.server_sent >= at);
}
