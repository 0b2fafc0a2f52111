//! UDP against ourselves: `-n` is exact, the receiver's counts reconcile with
//! the sender's, many streams set up, and the receive buffer. The pacer's rate
//! is judged by counters rperf3 does not own: the stock iperf3 receiver's
//! (`interop_udp.rs`) and iptables' in the namespace ground truth.

use crate::common;

use common::json::{assert_no_error, num};
use common::Server;

/// `-n` sends exactly that many bytes in whole datagrams, and the receiver's
/// packets + loss account for every one of them.
#[test]
fn udp_byte_limit_is_exact_and_counts_reconcile() {
    let srv = Server::start(&["-1", "-J"]);
    let out = srv.client(&["-u", "-b", "50M", "-l", "1000", "-n", "1M", "-J"]);
    out.assert_ok();
    let doc = out.json();
    assert_no_error(&doc);
    let sent_packets = num(&doc, "end.sum_sent.packets");
    // 1M = 1048576 bytes: 1049 datagrams of 1000 bytes (the last one claimed whole).
    assert_eq!(num(&doc, "end.sum_sent.bytes"), 1_049_000.0, "{doc:#}");
    assert_eq!(sent_packets, 1049.0, "{doc:#}");
    let recv_packets = num(&doc, "end.sum_received.packets");
    let lost = num(&doc, "end.sum_received.lost_packets");
    let recv_bytes = num(&doc, "end.sum_received.bytes");
    assert_eq!(recv_bytes / 1000.0 + lost, recv_packets, "{doc:#}");
    assert!(recv_packets <= sent_packets, "{doc:#}");
}

/// 128 UDP streams each way, several times: every stream is set up with its
/// own port (two client sockets once shared an ephemeral port and the 100th
/// stream's handshake failed) and carries data.
#[test]
fn udp_with_128_streams_sets_up_every_stream() {
    let _gate = common::load::heavy();
    let srv = Server::start(&[]);
    for args in [&[][..], &["-R"], &[], &["-R"]] {
        let mut a = vec!["-u", "-P", "128", "-b", "1M", "-t", "1", "-J"];
        a.extend_from_slice(args);
        let out = srv.client(&a);
        out.assert_ok();
        let doc = out.json();
        assert_no_error(&doc);
        let streams = doc["end"]["streams"].as_array().unwrap();
        assert_eq!(streams.len(), 128, "{args:?}");
        let ports: std::collections::HashSet<_> = doc["start"]["connected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["local_port"].as_u64().unwrap())
            .collect();
        assert_eq!(ports.len(), 128, "{args:?}: local ports shared");
        for s in streams {
            assert!(num(s, "udp.packets") > 0.0, "{args:?}: {s}");
        }
    }
}

/// The receive buffer of the server's UDP stream socket, from `ss` while
/// the test runs (the kernel reports twice the size asked for).
fn server_udp_rcvbuf(extra: &[&str]) -> u64 {
    let srv = Server::start(&["-1"]);
    let mut args = vec!["-u", "-b", "10M", "-t", "3", "--forceflush"];
    args.extend_from_slice(extra);
    let c = srv.spawn_client(&args);
    assert!(
        c.wait_stdout("0.00-1.", std::time::Duration::from_secs(10)),
        "no first interval:\n{}",
        c.stdout()
    );
    let out = std::process::Command::new("ss")
        .args([
            "-uamnH",
            "state",
            "established",
            "sport",
            "=",
            &format!(":{}", srv.port),
        ])
        .output()
        .expect("ss");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let rb = text
        .split(['(', ',', ')'])
        .find_map(|f| f.strip_prefix("rb").and_then(|v| v.parse().ok()))
        .unwrap_or_else(|| panic!("no skmem rb in ss output:\n{text}"));
    c.finish(std::time::Duration::from_secs(20)).assert_ok();
    rb
}

/// Without `-w`, a UDP stream asks for a 4 MiB receive buffer (the kernel
/// caps it at `net.core.rmem_max`), so a burst of offloaded trains is not
/// lost in the socket while the receiver thread wakes up; with `-w` the
/// buffer is what was asked, as in iperf3.
#[test]
fn udp_receive_buffer_is_raised_unless_w_is_given_issue_9() {
    if !common::require_tool("ss") {
        return;
    }
    let rmem_max: u64 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .expect("rmem_max")
        .trim()
        .parse()
        .expect("a number");
    let want = 2 * rmem_max.clamp(212_992, 4 << 20);
    assert!(server_udp_rcvbuf(&[]) >= want, "want at least {want}");
    assert_eq!(server_udp_rcvbuf(&["-w", "100K"]), 2 * 102_400);
}

/// A server that takes the parameters and asks for the streams, then never
/// answers the UDP stream's hello (lost on the way, say): Ctrl-C still ends
/// the client at once, not after the 30 s the setup may take.
#[test]
fn a_client_waiting_for_the_udp_hello_stops_on_sigint_issue23() {
    let _gate = common::load::timed();
    use crate::common::raw::{read_json, CREATE_STREAMS, PARAM_EXCHANGE};
    use crate::common::{rperf3, Proc, Signal};
    use std::io::{Read, Write};
    use std::time::Duration;
    let control = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = control.local_addr().unwrap().port();
    let udp = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
    let p = port.to_string();
    let client = Proc::spawn(rperf3(), &["-c", "127.0.0.1", "-p", &p, "-u", "-t", "1"]);
    let (mut c, _) = control.accept().unwrap();
    let mut cookie = [0u8; 37];
    c.read_exact(&mut cookie).unwrap();
    c.write_all(&[PARAM_EXCHANGE]).unwrap();
    let params = read_json(&mut c);
    assert_eq!(params["udp"], true, "{params}");
    c.write_all(&[CREATE_STREAMS]).unwrap();
    // The hello arrives, and is not answered.
    let mut buf = [0u8; 64];
    udp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (n, _) = udp.recv_from(&mut buf).expect("the client's hello");
    assert_eq!(&buf[..n], b"9876");
    let asked = std::time::Instant::now();
    client.signal(Signal::SIGINT);
    let out = client.finish(Duration::from_secs(10));
    assert!(
        asked.elapsed() < Duration::from_secs(2),
        "took {:?}",
        asked.elapsed()
    );
    assert!(
        out.stderr.contains("interrupt - the client has terminated"),
        "{out}"
    );
}
