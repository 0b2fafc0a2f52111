//! Multicast ground truth for the iperf 2 personality: one sender and two
//! receivers in their own namespaces on a bridge. Each receiver's namespace
//! counts the group's data datagrams as they arrive (before any membership
//! check) and as they are delivered, and drops every Nth datagram whose TTL is
//! the sender's `-T`; each receiver's loss must equal what its own kernel
//! counted as not delivered, the late joiner's missed datagrams included.
//!
//! rperf3's three ends run in this process, each on a thread moved into its
//! namespace (a network namespace is per thread, and the threads it starts
//! inherit it).

use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rperf3_app::iperf2::config::*;
use rperf3_app::iperf2::run;
use rperf3_app::Interrupt;
use rperf3_report::iperf2::model::{Event2, RowKind2, Tag2};
use rperf3_report::iperf2::Report2;

use crate::netns::cmd::{run as sh, Bg};
use crate::netns::kernel::iptables_rule_packets;

pub(crate) const GROUP: &str = "239.77.1.1";
pub(crate) const PORT: &str = "5001";
pub(crate) const TTL: u8 = 3;
/// The first word of the UDP payload (sequence number, low half) is
/// non-negative: data, not the FIN.
const DATA_ONLY: &str = "28&0x80000000=0";
pub(crate) const TOOL: Duration = Duration::from_secs(10);

#[derive(Default)]
pub(crate) struct Collect(pub(crate) Mutex<Vec<Event2>>);

impl Report2 for Collect {
    fn event(&self, e: Event2) {
        self.0.lock().unwrap().push(e);
    }
}

/// Namespaces `r3mc<pid>-*`, deleted on drop.
pub(crate) struct Bridge {
    id: String,
}

impl Bridge {
    pub(crate) fn ns(&self, part: &str) -> String {
        format!("{}-{part}", self.id)
    }

    pub(crate) fn ip(&self, args: &[&str]) {
        let d = sh(args, TOOL).unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
        assert!(d.success(), "{d}");
    }

    pub(crate) fn exec(&self, part: &str, args: &[&str]) -> String {
        let ns = self.ns(part);
        let mut all = vec!["ip", "netns", "exec", &ns];
        all.extend_from_slice(args);
        sh(&all, TOOL).unwrap().ok()
    }

    pub(crate) fn new() -> Option<Self> {
        let b = Self {
            id: format!("r3mc{}", std::process::id()),
        };
        for part in ["br", "tx", "rx1", "rx2"] {
            // Through the CI gate: under CI=true a missing `ip` or a refused
            // namespace is a failure, never a silent skip.
            let d = match sh(&["ip", "netns", "add", &b.ns(part)], TOOL) {
                Ok(d) => d,
                Err(e) => return crate::netns::unavailable(&format!("`ip` is missing: {e}")),
            };
            if !d.success() {
                return crate::netns::unavailable(&format!("cannot create a namespace: {d}"));
            }
        }
        let br = b.ns("br");
        b.ip(&[
            "ip",
            "-n",
            &br,
            "link",
            "add",
            "br0",
            "type",
            "bridge",
            "mcast_snooping",
            "0",
        ]);
        b.ip(&["ip", "-n", &br, "link", "set", "br0", "up"]);
        for (i, part) in ["tx", "rx1", "rx2"].iter().enumerate() {
            let ns = b.ns(part);
            let port = format!("p{i}");
            b.ip(&[
                "ip", "-n", &br, "link", "add", &port, "type", "veth", "peer", "name", "veth0",
                "netns", &ns,
            ]);
            b.ip(&["ip", "-n", &br, "link", "set", &port, "master", "br0", "up"]);
            let addr = format!("10.99.0.{}/24", i + 1);
            b.ip(&["ip", "-n", &ns, "addr", "add", &addr, "dev", "veth0"]);
            b.ip(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            b.ip(&["ip", "-n", &ns, "link", "set", "veth0", "up"]);
            // One datagram per packet on the wire, so netfilter counts each.
            b.ip(&["ip", "-n", &ns, "link", "set", "veth0", "gso_max_segs", "1"]);
            b.ip(&[
                "ip",
                "-n",
                &ns,
                "route",
                "add",
                "224.0.0.0/4",
                "dev",
                "veth0",
            ]);
        }
        Some(b)
    }

    /// Counts arriving and delivered data datagrams; drops every `nth` whose
    /// TTL is [`TTL`].
    pub(crate) fn rules(&self, part: &str, nth: u32) {
        let every = nth.to_string();
        let m = [
            "-p", "udp", "--dport", PORT, "-m", "u32", "--u32", DATA_ONLY,
        ];
        let mut pre = vec!["iptables", "-t", "mangle", "-A", "PREROUTING"];
        pre.extend_from_slice(&m);
        self.exec(part, &pre);
        let ttl = TTL.to_string();
        let mut drop = vec!["iptables", "-A", "INPUT"];
        drop.extend_from_slice(&m);
        drop.extend_from_slice(&["-m", "ttl", "--ttl-eq", &ttl, "-m", "statistic"]);
        drop.extend_from_slice(&[
            "--mode", "nth", "--every", &every, "--packet", "0", "-j", "DROP",
        ]);
        self.exec(part, &drop);
        let mut acc = vec!["iptables", "-A", "INPUT"];
        acc.extend_from_slice(&m);
        acc.extend_from_slice(&["-j", "ACCEPT"]);
        self.exec(part, &acc);
    }

    /// (arrived, dropped by the TTL rule, delivered) data datagrams.
    pub(crate) fn counters(&self, part: &str) -> (u64, u64, u64) {
        let pre = self.exec(
            part,
            &[
                "iptables",
                "-t",
                "mangle",
                "-L",
                "PREROUTING",
                "-v",
                "-n",
                "-x",
            ],
        );
        let inp = self.exec(part, &["iptables", "-L", "INPUT", "-v", "-n", "-x"]);
        let p = iptables_rule_packets(&pre);
        let i = iptables_rule_packets(&inp);
        (p[0], i[0], i[1])
    }

    /// Whether namespace `part`'s kernel holds a membership of `group` on
    /// `dev` (`ip maddr`).
    pub(crate) fn member(&self, part: &str, dev: &str, group: &str) -> bool {
        let m = self.exec(part, &["ip", "maddr", "show", "dev", dev]);
        m.lines().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            matches!(w.as_slice(), ["inet" | "inet6", g] if *g == group)
        })
    }

    /// Hands the receiver `rx` in `part` back once it has joined `group` on
    /// `dev` (the kernel's membership) and its socket is bound to [`PORT`]
    /// (`ss`); panics with its output if it ends first or 5 s pass.
    pub(crate) fn await_join(&self, part: &str, dev: &str, group: &str, mut rx: Bg) -> Bg {
        let filter = format!("sport = :{PORT}");
        let deadline = Instant::now() + Duration::from_secs(5);
        let bound = || !self.exec(part, &["ss", "-Huln", &filter]).trim().is_empty();
        while !self.member(part, dev, group) || !bound() {
            let ended = rx.try_status().is_some();
            if ended || Instant::now() > deadline {
                let maddr = self.exec(part, &["ip", "maddr", "show"]);
                panic!(
                    "{part}: no member of {group} on {dev} listening on {PORT} (ended: \
                     {ended})\n{maddr}\n{}",
                    rx.finish(Duration::from_secs(1))
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        rx
    }

    /// Runs `cfg` on a thread inside namespace `part`.
    pub(crate) fn spawn(
        &self,
        part: &str,
        cfg: Config2,
    ) -> (Arc<Collect>, std::thread::JoinHandle<i32>) {
        let path = format!("/run/netns/{}", self.ns(part));
        let rep = Arc::new(Collect::default());
        let r2: Arc<dyn Report2> = rep.clone();
        let h = std::thread::spawn(move || {
            let f = std::fs::File::open(&path).unwrap();
            nix::sched::setns(f.as_fd(), nix::sched::CloneFlags::CLONE_NEWNET).unwrap();
            let (intr, w) = Interrupt::pair().unwrap();
            let _keep = w;
            run(&cfg, r2, intr).status
        });
        (rep, h)
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        for part in ["tx", "rx1", "rx2", "br"] {
            let _ = sh(&["ip", "netns", "del", &self.ns(part)], TOOL);
        }
    }
}

pub(crate) fn receiver() -> Config2 {
    Config2 {
        role: Role2::Server(Server2 {
            single_client: false,
            max_clients: Some(1),
            single_udp: false,
            only_from: None,
            ssm_source: None,
            daemon: false,
        }),
        common: Common2 {
            port: PORT.parse().unwrap(),
            transport: Transport2::Udp,
            bind: Some(Bind2 {
                host: GROUP.into(),
                port: None,
                device: None,
            }),
            time: Some(Duration::from_secs(20)),
            ..Common2::default()
        },
        output: Output2::default(),
    }
}

pub(crate) fn sender() -> Config2 {
    Config2 {
        role: Role2::Client(Client2 {
            host: GROUP.into(),
            end: End2::Time(Duration::from_secs(3)),
            parallel: 1,
            rate: Some(Rate2::Bits(5_000_000)),
            mode: Mode2::Normal,
            listen_port: None,
            compat: false,
            peer_detect: false,
            no_udp_fin: false,
            input: Input2::Pattern,
            sync_transfer_id: false,
            txstart: None,
            txdelay: None,
            connect_only: None,
            incr_dstport: false,
            bounceback: None,
            isoch: None,
        }),
        common: Common2 {
            port: PORT.parse().unwrap(),
            transport: Transport2::Udp,
            ttl: TTL,
            ..Common2::default()
        },
        output: Output2::default(),
    }
}

pub(crate) fn listening(rep: &Collect) {
    for _ in 0..500 {
        if rep
            .0
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event2::Settings(_)))
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("receiver never joined");
}

#[test]
fn each_receivers_multicast_loss_is_its_own_kernels_count() {
    let _serial = crate::netns::serial();
    let Some(b) = Bridge::new() else {
        return;
    };
    b.rules("rx1", 40);
    b.rules("rx2", 25);
    let (r1, h1) = b.spawn("rx1", receiver());
    listening(&r1);
    let (tx, ht) = b.spawn("tx", sender());
    // The second receiver joins a second late: what it missed is loss too.
    std::thread::sleep(Duration::from_secs(1));
    let (r2, h2) = b.spawn("rx2", receiver());
    assert_eq!(ht.join().unwrap(), 0);
    assert_eq!(h1.join().unwrap(), 0);
    assert_eq!(h2.join().unwrap(), 0);
    let tev = tx.0.lock().unwrap().clone();
    assert!(
        !tev.iter().any(|e| matches!(e, Event2::ServerReport(_))),
        "a multicast sender gets no report: {tev:?}"
    );
    let sent = tev
        .iter()
        .find_map(|e| match e {
            Event2::Sent {
                tag: Tag2::Id(1),
                datagrams,
            } => Some(*datagrams),
            _ => None,
        })
        .expect("Sent");
    // 5 Mbit/s of 1470-byte datagrams for 3 s.
    assert!((1260..=1290).contains(&sent), "{sent}");
    for (part, rep, late) in [("rx1", &r1, false), ("rx2", &r2, true)] {
        let ev = rep.0.lock().unwrap().clone();
        let (lost, total) = ev
            .iter()
            .find_map(|e| match e {
                Event2::Final(r) => match r.kind {
                    RowKind2::UdpRecv(u) => Some((u.lost, u.total)),
                    _ => None,
                },
                _ => None,
            })
            .unwrap_or_else(|| panic!("{part}: no final row: {ev:?}"));
        let (arrived, dropped, delivered) = b.counters(part);
        // Every data datagram reached each namespace; the FIN's number is the
        // total, as iperf 2 counts it.
        assert_eq!(arrived, sent - 2, "{part}");
        assert_eq!(total, sent - 1, "{part}");
        assert!(dropped > 0, "{part}: no datagram had TTL {TTL}");
        assert_eq!(lost, arrived - delivered, "{part}: {ev:?}");
        if late {
            assert!(
                lost > dropped + 300,
                "{part}: the late joiner missed ~425: {lost}"
            );
        } else {
            assert_eq!(lost, dropped, "{part}");
        }
    }
}
