//! Kubernetes discovery for the mesh: the ready endpoints of a Service, read
//! from its EndpointSlices, each with the node it runs on.
//!
//! The agent asks only for `list` on EndpointSlices in one namespace (its
//! Role grants get, list and watch). kube-rs needs an async runtime; it lives
//! here, in a runtime of this crate's own driven only while a look is under
//! way, and every look has an absolute deadline, so an API server that
//! stalls or goes away costs the agent one slow look, never a hang.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::path::Path;
use std::time::Duration;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Longest a look at the API may take (connect, TLS, the list).
pub const LOOK_DEADLINE: Duration = Duration::from_secs(10);

/// One ready endpoint of the Service.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Endpoint {
    /// The node it runs on (`nodeName`).
    pub node: String,
    /// Its address.
    pub address: String,
}

/// A connection to the API for one namespace.
pub struct Endpoints {
    rt: tokio::runtime::Runtime,
    api: Api<EndpointSlice>,
}

impl std::fmt::Debug for Endpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Endpoints")
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("unable to start the Kubernetes client: {e}"))
}

impl Endpoints {
    /// Credentials from the pod's service account, or else from the
    /// kubeconfig (`KUBECONFIG`, `~/.kube/config`); `namespace`, or the
    /// credentials' own (the pod's namespace), or "default".
    pub fn connect(namespace: Option<&str>) -> Result<Self, String> {
        Self::connect_with(None, namespace)
    }

    /// [`Endpoints::connect`], with the credentials of this kubeconfig file.
    pub fn connect_with(
        kubeconfig: Option<&Path>,
        namespace: Option<&str>,
    ) -> Result<Self, String> {
        let rt = runtime()?;
        let client = rt.block_on(async {
            let infer = async {
                match kubeconfig {
                    None => kube::Config::infer()
                        .await
                        .map_err(|e| format!("no Kubernetes credentials: {e}")),
                    Some(p) => {
                        let kc = Kubeconfig::read_from(p)
                            .map_err(|e| format!("unable to read {}: {e}", p.display()))?;
                        kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                            .await
                            .map_err(|e| format!("unable to use {}: {e}", p.display()))
                    }
                }
            };
            let config = tokio::time::timeout(LOOK_DEADLINE, infer)
                .await
                .map_err(|_| "the Kubernetes configuration took too long to read".to_string())??;
            kube::Client::try_from(config)
                .map_err(|e| format!("unable to make a Kubernetes client: {e}"))
        })?;
        let ns = namespace.map_or_else(|| client.default_namespace().to_string(), str::to_string);
        let api = Api::namespaced(client, &ns);
        Ok(Self { rt, api })
    }

    /// The Service's ready endpoints, one per node, sorted by node.
    pub fn ready(&self, service: &str) -> Result<Vec<Endpoint>, String> {
        let params = ListParams::default().labels(&format!("kubernetes.io/service-name={service}"));
        let list = self.rt.block_on(async {
            tokio::time::timeout(LOOK_DEADLINE, self.api.list(&params))
                .await
                .map_err(|_| {
                    format!(
                        "the Kubernetes API did not answer within {} s",
                        LOOK_DEADLINE.as_secs()
                    )
                })?
                .map_err(|e| format!("unable to list the EndpointSlices of {service}: {e}"))
        })?;
        Ok(ready_endpoints(&list.items))
    }
}

/// The ready endpoints of these slices: one per node (the lowest address
/// when a node has several), sorted by node; endpoints without a node or
/// with a name instead of an address are left out.
pub fn ready_endpoints(slices: &[EndpointSlice]) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = Vec::new();
    for s in slices {
        if !matches!(s.address_type.as_str(), "IPv4" | "IPv6") {
            continue;
        }
        for e in &s.endpoints {
            // No condition known: ready, as the API says to read it.
            let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
            let (Some(node), Some(addr)) = (&e.node_name, e.addresses.iter().min()) else {
                continue;
            };
            if ready {
                out.push(Endpoint {
                    node: node.clone(),
                    address: addr.clone(),
                });
            }
        }
    }
    out.sort();
    out.dedup_by(|b, a| a.node == b.node);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::discovery::v1::{Endpoint as Ep, EndpointConditions};

    fn ep(node: Option<&str>, addrs: &[&str], ready: Option<bool>) -> Ep {
        Ep {
            node_name: node.map(str::to_string),
            addresses: addrs.iter().map(|a| a.to_string()).collect(),
            conditions: Some(EndpointConditions {
                ready,
                ..EndpointConditions::default()
            }),
            ..Ep::default()
        }
    }

    fn slice(kind: &str, eps: Vec<Ep>) -> EndpointSlice {
        EndpointSlice {
            address_type: kind.to_string(),
            endpoints: eps,
            ..EndpointSlice::default()
        }
    }

    #[test]
    fn ready_endpoints_become_one_member_per_node() {
        let slices = [
            slice(
                "IPv4",
                vec![
                    ep(Some("n2"), &["198.19.130.5"], Some(true)),
                    ep(Some("n1"), &["198.19.129.7", "198.19.129.3"], None),
                    ep(Some("n3"), &["198.19.131.2"], Some(false)),
                    ep(None, &["198.19.132.2"], Some(true)),
                ],
            ),
            slice("IPv4", vec![ep(Some("n2"), &["198.19.130.9"], Some(true))]),
            slice("FQDN", vec![ep(Some("n4"), &["x.example"], Some(true))]),
        ];
        assert_eq!(
            ready_endpoints(&slices),
            [
                Endpoint {
                    node: "n1".into(),
                    address: "198.19.129.3".into()
                },
                Endpoint {
                    node: "n2".into(),
                    address: "198.19.130.5".into()
                },
            ]
        );
    }

    #[test]
    fn no_credentials_or_no_api_is_a_message() {
        // A kubeconfig naming a closed port: a message, within the deadline.
        let dir = std::env::temp_dir().join(format!("rperf3-k8s-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = dir.join("kubeconfig");
        std::fs::write(
            &cfg,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n\
             users:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\n\
             current-context: x\n",
        )
        .unwrap();
        let started = std::time::Instant::now();
        let e = Endpoints::connect_with(Some(&cfg), Some("default"))
            .and_then(|k| k.ready("rperf3"))
            .unwrap_err();
        assert!(
            e.starts_with("unable to list the EndpointSlices of rperf3"),
            "{e}"
        );
        assert!(started.elapsed() < LOOK_DEADLINE + Duration::from_secs(2));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
