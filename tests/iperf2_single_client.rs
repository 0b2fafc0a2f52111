//! `-1` on a UDP server, ours and 2.2.1's: one flow at a time, and the server
//! keeps running after it (ours used to exit after its first flow, and its
//! help said so). Two clients one after the other each get their Server
//! Report, and the server is still there to be stopped. The second client
//! starts while the first flow still waits out its FIN: ours holds its
//! datagrams on the socket until then and loses none; 2.2.1's server misses
//! most of them (26 of 28 in a 0.3 s test), on a busy host sometimes the
//! last one too, and then our client has no Server Report from it.

use std::path::Path;

use crate::common::iperf2::{iperf2_221, ours, server_report, Server2};

fn serves_one_after_another(server: &Path) {
    let mut srv = Server2::start(server, &["-u", "-1"]);
    for n in 1..=2 {
        let c = srv.client(&ours(), &["-u", "-t", "0.3", "-b", "1M"]);
        assert_eq!(c.code(), Some(0), "client {n}\n{c}");
        match server_report(&c.stdout) {
            Some(r) if server == ours() => assert_eq!(r.lost, Some(0), "client {n}\n{c}"),
            Some(_) => {}
            // 2.2.1's server may miss the second flow's last datagram too
            // (it misses most of them while the first flow waits out its
            // FIN): then its client says why it has no report, and only that.
            None if server != ours() && n == 2 => assert!(
                format!("{}{}", c.stdout, c.stderr)
                    .contains("WARNING: did not receive ack of last datagram after"),
                "client {n} has neither a Server Report nor the missing ack's warning\n{c}"
            ),
            None => panic!("client {n} has no Server Report\n{c}"),
        }
        assert!(srv.is_running(), "the server exited after client {n}");
    }
    let s = srv.stop();
    assert_eq!(s.code(), Some(0), "{s}");
}

#[test]
fn iperf2_udp_single_client_server_keeps_serving_ours() {
    serves_one_after_another(&ours());
}

#[test]
fn iperf2_udp_single_client_server_keeps_serving_221() {
    if let Some(p) = iperf2_221() {
        serves_one_after_another(&p);
    }
}
