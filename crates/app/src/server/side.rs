//! A service the server runs beside its iperf3 port (RPM over HTTP/2), whose
//! visitors take test slots as iperf3 clients do: the host decides through a
//! [`TestGate`], so `--max-tests`, `-1` and the metrics count them alike.
//!
//! The service lives in another crate with its own runtime; all it gets from
//! the host is this gate, and the host keeps what the service returns until it
//! stops serving (dropping it stops the service).

use std::fmt;
use std::io;
use std::net::IpAddr;
use std::sync::Arc;

pub use super::mail::Answer;
use super::mail::{Mailbox, ToHost, VisitMsg};

/// Starts a side service with the gate it admits visitors through; what it
/// returns runs the service until dropped.
pub type StartSide = dyn Fn(TestGate) -> io::Result<Box<dyn Send>> + Send + Sync;

/// A side service for [`super::ServeHooks`].
#[derive(Clone)]
pub struct SideService(pub Arc<StartSide>);

impl fmt::Debug for SideService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SideService")
    }
}

/// What a side service asks of the host.
#[derive(Debug)]
pub struct TestGate {
    to_host: Mailbox<ToHost>,
}

impl TestGate {
    pub(super) fn new(to_host: Mailbox<ToHost>) -> Self {
        Self { to_host }
    }

    /// A visitor from `ip` wants a test slot; `answer` is called (on the host's
    /// thread, so it must not block) with its test number or `None` (busy, or
    /// the server is stopping).
    pub fn arrive(&self, ip: IpAddr, answer: Answer) {
        // A host that is gone cannot answer: the visitor is refused.
        let msg = ToHost::Visit(VisitMsg::Arrive { ip, answer });
        if let Err(ToHost::Visit(VisitMsg::Arrive { answer, .. })) = self.to_host.send_back(msg) {
            answer(None);
        }
    }

    /// Test `id`'s visit is over: `received` and `sent` bytes, the server's view.
    pub fn left(&self, id: u64, received: u64, sent: u64) {
        let _ = self
            .to_host
            .send(ToHost::Visit(VisitMsg::Left { id, received, sent }));
    }
}
