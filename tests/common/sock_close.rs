//! The kernel's last word on each TCP socket of a namespace: `ss -E` prints a
//! socket's figures as it is destroyed, when no program can change them any
//! more. What a program read is what its kernel received less what was still
//! queued unread (Recv-Q); what it wrote is what the peer acknowledged plus
//! what was still queued to send (Send-Q). These are exact, and nothing rperf3
//! or iperf3 reports about themselves goes into them.

use std::path::Path;
use std::time::{Duration, Instant};

use super::lo_ns::LoNs;
use super::Proc;

/// One TCP socket's figures at its destruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Closed {
    pub local_port: u16,
    pub peer_port: u16,
    /// Received but never read by its program.
    pub recv_q: u64,
    /// Written by its program but not acknowledged by the peer.
    pub send_q: u64,
    /// Payload the kernel received in sequence (`bytes_received`).
    pub bytes_received: u64,
    /// Sequence space the peer acknowledged, SYN and any FIN included
    /// (`bytes_acked`).
    pub bytes_acked: u64,
}

impl Closed {
    /// Payload its program read.
    pub(crate) fn read(&self) -> u64 {
        self.bytes_received - self.recv_q
    }

    /// Payload its program wrote, give or take the FIN's one unit of
    /// sequence space (there when the socket was closed, not reset).
    pub(crate) fn written(&self) -> u64 {
        (self.bytes_acked + self.send_q).saturating_sub(1)
    }
}

/// `ss -E` running inside a namespace, listening for TCP sockets' destruction.
pub(crate) struct CloseWatch {
    proc: Proc,
}

/// Up to this long for `ss` to subscribe, and for the last socket to go.
const DEADLINE: Duration = Duration::from_secs(10);

impl CloseWatch {
    /// Starts the watch and returns once `ss` has subscribed to the events
    /// (its netlink socket shows a group in the namespace's table).
    pub(crate) fn start(ns: &LoNs) -> Self {
        // Line-buffered: each event is on the pipe as soon as it is printed.
        let mut proc = ns.spawn(Path::new("stdbuf"), &["-oL", "ss", "-E", "-tinH"]);
        let table = format!("/proc/{}/net/netlink", proc.pid());
        let deadline = Instant::now() + DEADLINE;
        while !subscribed(&std::fs::read_to_string(&table).unwrap_or_default()) {
            if !proc.is_running() || Instant::now() > deadline {
                proc.kill();
                panic!("`ss -E` did not start listening:\n{}", proc.collect());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Self { proc }
    }

    /// Waits until every socket of the connections from `client_ports` to
    /// `server_port` has been destroyed (both ends of each), and returns all
    /// the sockets seen so far; fails the test after `DEADLINE`, with the
    /// sockets `ns` still holds then (a socket still there is a program's or
    /// the kernel's; one gone is an event `ss` missed).
    pub(crate) fn wait(&self, ns: &LoNs, server_port: u16, client_ports: &[u16]) -> Vec<Closed> {
        let all_seen = |text: &str| {
            let seen = parse(text);
            client_ports.iter().all(|&c| {
                [(c, server_port), (server_port, c)]
                    .iter()
                    .all(|&(l, p)| seen.iter().any(|s| (s.local_port, s.peer_port) == (l, p)))
            })
        };
        if !self.proc.wait_stdout_until(DEADLINE, all_seen) {
            let left = ns.run(Path::new("ss"), &["-tanieomH"]);
            panic!(
                "not every socket of ports {client_ports:?} to {server_port} was destroyed \
                 within {DEADLINE:?}; the namespace's sockets now:\n{left}\nseen:\n{}",
                self.proc.stdout()
            );
        }
        parse(&self.proc.stdout())
    }

    /// What `ss` printed, for failure messages.
    pub(crate) fn text(&self) -> String {
        self.proc.stdout()
    }
}

/// Whether a `/proc/net/netlink` table holds a sock_diag socket (protocol 4)
/// bound to a multicast group: `ss -E` once it listens.
fn subscribed(table: &str) -> bool {
    table.lines().skip(1).any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.get(1) == Some(&"4")
            && f.get(3)
                .is_some_and(|g| !g.trim_start_matches('0').is_empty())
    })
}

/// The sockets of `ss -E -tinH` output: a line "STATE RQ SQ LOCAL PEER", then
/// an indented line of `key:value` figures. Only whole lines count, and only
/// sockets whose figures are there too (`ss` prints each line as it goes).
pub(crate) fn parse(text: &str) -> Vec<Closed> {
    let port = |a: &str| a.rsplit_once(':').and_then(|(_, p)| p.parse::<u16>().ok());
    let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
    let mut out = Vec::new();
    let mut lines = whole.lines().peekable();
    while let Some(head) = lines.next() {
        if head.starts_with(char::is_whitespace) {
            continue;
        }
        let info = match lines.peek() {
            Some(l) if l.starts_with(char::is_whitespace) => lines.next().unwrap_or(""),
            _ => continue,
        };
        let f: Vec<&str> = head.split_whitespace().collect();
        let (Some(rq), Some(sq), Some(local), Some(peer)) = (
            f.get(1).and_then(|v| v.parse().ok()),
            f.get(2).and_then(|v| v.parse().ok()),
            f.get(3).and_then(|a| port(a)),
            f.get(4).and_then(|a| port(a)),
        ) else {
            continue; // a listener ("*:*"), or a line cut short
        };
        let field = |key: &str| {
            info.split_whitespace()
                .find_map(|t| t.strip_prefix(key)?.strip_prefix(':')?.parse().ok())
                .unwrap_or(0)
        };
        out.push(Closed {
            local_port: local,
            peer_port: peer,
            recv_q: rq,
            send_q: sq,
            bytes_received: field("bytes_received"),
            bytes_acked: field("bytes_acked"),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destroyed_sockets_parsed() {
        let t = "UNCONN 139245 0      [::ffff:127.0.0.1]:5201 [::ffff:127.0.0.1]:48424\n\t wscale:10,10 rto:204 mss:32768 bytes_received:6430738 segs_out:61 rcv_space:124010\nUNCONN 0      4055059          127.0.0.1:48424          127.0.0.1:5201 \n\t wscale:10,10 bytes_sent:6430738 bytes_acked:6430739 notsent:4055059\nUNCONN 0      0                        *:5201                   *:*    \n\t rto:1000 mss:536 cwnd:10\n";
        let s = parse(t);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].local_port, s[0].peer_port), (5201, 48424));
        assert_eq!(s[0].read(), 6430738 - 139245);
        assert_eq!((s[1].local_port, s[1].peer_port), (48424, 5201));
        assert_eq!(s[1].written(), 6430738 + 4055059);
        let table = "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode\n0000000000000000 4   1234       00000000 0        0        0     2        0        1\n";
        assert!(!subscribed(table));
        assert!(subscribed(&table.replace(" 00000000 ", " 00000001 ")));
        // A socket whose figures are not printed yet, or a line cut short, is
        // not one yet.
        let second = t.find("UNCONN 0      4055059").unwrap();
        assert_eq!(parse(&t[..second + 60]).len(), 1);
        assert_eq!(parse(&t[..t.find("bytes_sent").unwrap()]).len(), 1);
    }
}
