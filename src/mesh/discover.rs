//! Who the members are: a peers file, a DNS name, or a Kubernetes Service,
//! looked at again before every cycle.
//!
//! A look that fails (the file is gone, the name resolves to nothing, the API
//! refuses) is reported and the last good membership is used, so the mesh
//! goes on with the fleet it knew.

use std::net::{IpAddr, ToSocketAddrs, UdpSocket};

use rperf3_mesh::peers::{parse_peers, sort_members, Member};

use super::args::{MeshArgs, PeerSource};

/// The current membership and this agent's place in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    /// Sorted by name.
    pub(crate) members: Vec<Member>,
    /// This agent's index, when it is a member.
    pub(crate) me: Option<usize>,
}

/// Looks up the members.
pub(crate) struct Discovery {
    source: PeerSource,
    name: String,
    /// The peers file's complaints last time (said again only when they change).
    said: Vec<String>,
    k8s: Option<rperf3_k8s::Endpoints>,
    last: Option<View>,
}

/// The host's name, as the kernel has it.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// Whether `ip` is one of this host's addresses (it can be bound).
fn is_local(ip: IpAddr) -> bool {
    UdpSocket::bind((ip, 0)).is_ok()
}

impl Discovery {
    pub(crate) fn new(args: &MeshArgs) -> Self {
        Self {
            source: args.peers.clone(),
            name: args.name.clone().unwrap_or_else(host_name),
            said: Vec::new(),
            k8s: None,
            last: None,
        }
    }

    /// This agent's name (in DNS mode, its address once it has been seen).
    pub(crate) fn name(&self) -> String {
        match (&self.last, &self.source) {
            (
                Some(View {
                    members,
                    me: Some(i),
                }),
                PeerSource::Dns(_),
            ) => members[*i].name.clone(),
            _ => self.name.clone(),
        }
    }

    /// The membership now, or the last good one with the reason this look failed.
    pub(crate) fn look(&mut self) -> (Option<View>, Option<String>) {
        match self.fetch() {
            Ok(mut members) => {
                sort_members(&mut members);
                let me = match &self.source {
                    PeerSource::Dns(_) => members
                        .iter()
                        .position(|m| m.host.parse().is_ok_and(is_local)),
                    _ => members.iter().position(|m| m.name == self.name),
                };
                let v = View { members, me };
                self.last = Some(v.clone());
                (Some(v), None)
            }
            Err(e) => (self.last.clone(), Some(e)),
        }
    }

    fn fetch(&mut self) -> Result<Vec<Member>, String> {
        match self.source.clone() {
            PeerSource::File(path) => {
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    format!("unable to read the peers file {}: {e}", path.display())
                })?;
                let (members, errors) = parse_peers(&text);
                let said: Vec<String> = errors
                    .iter()
                    .map(|e| format!("peers file {}: {e}; line left out", path.display()))
                    .collect();
                if said != self.said {
                    for s in &said {
                        log::warn!("{s}");
                    }
                    self.said = said;
                }
                Ok(members)
            }
            PeerSource::Dns(name) => {
                let addrs = (name.as_str(), 0)
                    .to_socket_addrs()
                    .map_err(|e| format!("unable to resolve {name}: {e}"))?;
                let mut ips: Vec<IpAddr> = addrs.map(|a| a.ip()).collect();
                ips.sort();
                ips.dedup();
                if ips.is_empty() {
                    return Err(format!("{name} resolves to no address"));
                }
                Ok(ips
                    .into_iter()
                    .map(|ip| Member {
                        name: ip.to_string(),
                        host: ip.to_string(),
                        port: None,
                    })
                    .collect())
            }
            PeerSource::K8s { service, namespace } => {
                if self.k8s.is_none() {
                    self.k8s = Some(rperf3_k8s::Endpoints::connect(namespace.as_deref())?);
                }
                let eps = self
                    .k8s
                    .as_ref()
                    .map_or(Ok(Vec::new()), |k| k.ready(&service))?;
                Ok(eps
                    .into_iter()
                    .map(|e| Member {
                        name: e.node,
                        host: e.address,
                        port: None,
                    })
                    .collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::args::{parse_mesh, MeshCommand};
    use std::ffi::OsString;

    fn discovery(a: &[&str]) -> Discovery {
        let v: Vec<OsString> = a.iter().map(OsString::from).collect();
        match parse_mesh("rperf3", &v).unwrap() {
            MeshCommand::Run(m) => Discovery::new(&m),
            MeshCommand::Help(_) => panic!(),
        }
    }

    #[test]
    fn a_peers_file_names_this_agent_and_a_lost_file_keeps_the_last_view() {
        let dir = std::env::temp_dir().join(format!("rperf3-mesh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("peers");
        std::fs::write(&f, "b 10.0.0.2\na 10.0.0.1\n").unwrap();
        let p = f.to_string_lossy().into_owned();
        let mut d = discovery(&["--peers", &p, "--name", "b"]);
        let (v, e) = d.look();
        let v = v.unwrap();
        assert_eq!(e, None);
        assert_eq!(v.me, Some(1));
        assert_eq!(v.members[0].name, "a");
        std::fs::remove_file(&f).unwrap();
        let (v2, e) = d.look();
        assert_eq!(v2, Some(v));
        assert!(e.unwrap().starts_with("unable to read the peers file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dns_members_are_named_by_address_and_this_host_is_found_by_its_own() {
        let mut d = discovery(&["--peers-dns", "localhost"]);
        let (v, e) = d.look();
        assert_eq!(e, None);
        let v = v.unwrap();
        assert!(v.members.iter().any(|m| m.name == "127.0.0.1"), "{v:?}");
        let me = v.me.expect("127.0.0.1 is local");
        assert!(v.members[me].host.parse::<IpAddr>().unwrap().is_loopback());
        assert_eq!(d.name(), v.members[me].name);
        let mut d = discovery(&["--peers-dns", "no-such-name.invalid"]);
        let (v, e) = d.look();
        assert_eq!(v, None);
        assert!(e
            .unwrap()
            .starts_with("unable to resolve no-such-name.invalid"));
    }
}
