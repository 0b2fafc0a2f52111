//! Nodes of a fleet in network namespaces: node `i` is namespace
//! `r3mesh<pid>-<k>-n<i>` with `veth0` at 10.98.<k>.<i>, plugged into a bridge
//! in a namespace of its own (port `p<i>`). A tbf on a node's bridge port
//! shapes what it receives, an htb class there what one other node sends it
//! (the queues sit in the switch, as on a real path); iptables in a node's
//! namespace drops what it is told to. The small buckets and queues keep the
//! receiver's count over a one-second test at the shaper's rate within a
//! fraction of a percent. Dropping the rig kills what
//! runs inside and deletes every namespace.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::cmd::{run, Bg};
use super::unavailable;

const TOOL: Duration = Duration::from_secs(10);
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The bridge and its nodes.
pub(crate) struct MeshRig {
    id: String,
    net: u32,
    /// Nodes 1..=n.
    pub(crate) n: u32,
}

fn sh(args: &[&str]) -> String {
    run(args, TOOL)
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"))
        .ok()
}

impl MeshRig {
    /// `n` nodes on a bridge, or `None` (after a skip note) where namespaces
    /// cannot be made.
    pub(crate) fn new(n: u32) -> Option<Self> {
        let k = COUNTER.fetch_add(1, Ordering::Relaxed);
        let rig = Self {
            id: format!("r3mesh{}-{k}", std::process::id()),
            net: k % 256,
            n,
        };
        match run(&["ip", "netns", "add", &rig.bridge_ns()], TOOL) {
            Ok(d) if d.success() => {}
            Ok(d) => return unavailable(&format!("cannot create a network namespace: {d}")),
            Err(e) => return unavailable(&format!("`ip` is missing: {e}")),
        }
        let br = rig.bridge_ns();
        sh(&["ip", "-n", &br, "link", "add", "br0", "type", "bridge"]);
        sh(&["ip", "-n", &br, "link", "set", "br0", "up"]);
        for i in 1..=n {
            let ns = rig.ns(i);
            sh(&["ip", "netns", "add", &ns]);
            let port = format!("p{i}");
            sh(&[
                "ip", "-n", &br, "link", "add", &port, "type", "veth", "peer", "name", "veth0",
                "netns", &ns,
            ]);
            sh(&["ip", "-n", &br, "link", "set", &port, "master", "br0", "up"]);
            let addr = format!("{}/16", rig.ip(i));
            sh(&["ip", "-n", &ns, "addr", "add", &addr, "dev", "veth0"]);
            sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            // Segments on the wire one by one, so a drop rule loses one.
            sh(&["ip", "-n", &ns, "link", "set", "veth0", "gso_max_segs", "1"]);
            sh(&["ip", "-n", &br, "link", "set", &port, "gso_max_segs", "1"]);
            sh(&["ip", "-n", &ns, "link", "set", "veth0", "up"]);
        }
        Some(rig)
    }

    fn bridge_ns(&self) -> String {
        format!("{}-br", self.id)
    }

    /// Node `i`'s namespace.
    pub(crate) fn ns(&self, i: u32) -> String {
        format!("{}-n{i}", self.id)
    }

    /// Node `i`'s address.
    pub(crate) fn ip(&self, i: u32) -> String {
        format!("10.98.{}.{i}", self.net)
    }

    /// Runs a tool in node `i`'s namespace (it must succeed); its stdout.
    pub(crate) fn exec(&self, i: u32, args: &[&str]) -> String {
        let ns = self.ns(i);
        let mut all = vec!["ip", "netns", "exec", &ns];
        all.extend_from_slice(args);
        sh(&all)
    }

    /// Starts a program in node `i`'s namespace.
    pub(crate) fn spawn(&self, i: u32, args: &[&str]) -> Bg {
        let ns = self.ns(i);
        let mut all = vec!["ip", "netns", "exec", &ns];
        all.extend_from_slice(args);
        Bg::spawn(&all).unwrap_or_else(|e| panic!("cannot start {args:?}: {e}"))
    }

    /// Runs `tc ARGS` in the bridge's namespace.
    fn bridge_tc(&self, args: &[&str]) {
        let br = self.bridge_ns();
        let mut all = vec!["ip", "netns", "exec", &br, "tc"];
        all.extend_from_slice(args);
        sh(&all);
    }

    /// A tbf of `rate` on what node `i` receives (its bridge port: the queue
    /// sits on the way, as in a switch; on the sender's own interface TCP's
    /// small queues would keep it nearly empty, and a sender a busy machine
    /// delays would then leave the link idle).
    pub(crate) fn shape_ingress(&self, i: u32, rate: &str) {
        let port = format!("p{i}");
        self.bridge_tc(&[
            "qdisc", "add", "dev", &port, "root", "tbf", "rate", rate, "burst", "16kb", "latency",
            "20ms",
        ]);
    }

    /// Shapes only what node `src` sends to node `dst` to `rate`: an htb on
    /// `dst`'s bridge port with one limited class for `src`'s address (a FIFO
    /// of 20 ms at that rate) and everything else unlimited.
    pub(crate) fn shape_pair(&self, src: u32, dst: u32, rate_mbit: u32) {
        let port = format!("p{dst}");
        let rate = format!("{rate_mbit}mbit");
        let from = format!("{}/32", self.ip(src));
        // 20 ms of full frames at the rate.
        let limit = (rate_mbit * 1_000_000 / 8 / 50 / 1514).max(2).to_string();
        self.bridge_tc(&[
            "qdisc", "add", "dev", &port, "root", "handle", "1:", "htb", "default", "20",
        ]);
        self.bridge_tc(&[
            "class", "add", "dev", &port, "parent", "1:", "classid", "1:10", "htb", "rate", &rate,
            "ceil", &rate, "burst", "16kb", "cburst", "16kb",
        ]);
        self.bridge_tc(&[
            "class", "add", "dev", &port, "parent", "1:", "classid", "1:20", "htb", "rate",
            "10gbit",
        ]);
        self.bridge_tc(&[
            "qdisc", "add", "dev", &port, "parent", "1:10", "handle", "10:", "pfifo", "limit",
            &limit,
        ]);
        self.bridge_tc(&[
            "filter", "add", "dev", &port, "parent", "1:", "protocol", "ip", "u32", "match", "ip",
            "src", &from, "flowid", "1:10",
        ]);
    }

    /// `tc -s qdisc` of both ends of node `i`'s link, for messages.
    pub(crate) fn qdiscs(&self, i: u32) -> String {
        let br = self.bridge_ns();
        let port = format!("p{i}");
        format!(
            "{}{}",
            self.exec(i, &["tc", "-s", "qdisc", "show", "dev", "veth0"]),
            sh(&["ip", "netns", "exec", &br, "tc", "-s", "qdisc", "show", "dev", &port])
        )
    }
}

impl Drop for MeshRig {
    fn drop(&mut self) {
        for ns in (1..=self.n).map(|i| self.ns(i)).chain([self.bridge_ns()]) {
            if let Ok(d) = run(&["ip", "netns", "pids", &ns], TOOL) {
                for pid in d.stdout.split_whitespace() {
                    let _ = run(&["kill", "-9", pid], TOOL);
                }
            }
            let _ = run(&["ip", "netns", "del", &ns], TOOL);
        }
    }
}
