//! Which RPM client holds a test slot, sans IO.
//!
//! An RPM client opens many connections: its load, and a new one for every
//! foreign probe (up to 100 a second). One client address is one visit, and a
//! visit is one test in the server's accounting: the first connection from an
//! address asks the host for a slot, the connections that arrive while it asks
//! wait for the same answer, later ones join the visit, and the visit ends
//! [`LINGER`] after its last connection closed (a client opens its next
//! stage's connections after closing the last stage's). A refusal is kept for
//! [`REFUSAL_HOLD`], so a busy server is not asked again for each probe.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// How long a visit outlives its last connection.
pub const LINGER: Duration = Duration::from_secs(3);
/// How long a refusal stands (the `Retry-After` the client is given).
pub const REFUSAL_HOLD: Duration = Duration::from_secs(1);

/// What a new connection does.
#[derive(Debug, PartialEq, Eq)]
pub enum Join {
    /// Ask the host for a slot (this connection is the first waiter).
    Ask,
    /// Wait: the address's first connection is asking.
    Wait,
    /// The visit's test number, or `None`: refused.
    Now(Option<u64>),
}

#[derive(Debug)]
enum Visit<W> {
    /// The host was asked; these connections wait for its answer.
    Asking(Vec<W>),
    /// Holds test `id`; `conns` open, idle since when the last closed.
    Admitted {
        id: u64,
        conns: usize,
        idle_since: Option<Instant>,
        received: u64,
        sent: u64,
    },
    /// Refused until then.
    Refused(Instant),
}

/// Every address's visit. `W` is how a waiting connection is told its answer.
#[derive(Debug)]
pub struct Visitors<W> {
    by_ip: HashMap<IpAddr, Visit<W>>,
}

impl<W> Default for Visitors<W> {
    fn default() -> Self {
        Self {
            by_ip: HashMap::new(),
        }
    }
}

/// A visit that ended: its test and what it moved (server's view).
#[derive(Debug, PartialEq, Eq)]
pub struct Ended {
    /// The test number.
    pub id: u64,
    /// Bytes received.
    pub received: u64,
    /// Bytes sent.
    pub sent: u64,
}

impl<W> Visitors<W> {
    /// Nobody.
    pub fn new() -> Self {
        Self::default()
    }

    /// A connection from `ip` arrives; `waiter` is kept when it must wait.
    pub fn join(&mut self, ip: IpAddr, waiter: W, now: Instant) -> Join {
        match self.by_ip.get_mut(&ip) {
            Some(Visit::Asking(w)) => {
                w.push(waiter);
                Join::Wait
            }
            Some(Visit::Admitted {
                id,
                conns,
                idle_since,
                ..
            }) => {
                *conns += 1;
                *idle_since = None;
                Join::Now(Some(*id))
            }
            Some(Visit::Refused(until)) if now < *until => Join::Now(None),
            _ => {
                self.by_ip.insert(ip, Visit::Asking(vec![waiter]));
                Join::Ask
            }
        }
    }

    /// The host answered `ip`: the waiters to tell, each now holding a
    /// connection of the visit when admitted.
    pub fn answered(&mut self, ip: IpAddr, id: Option<u64>, now: Instant) -> Vec<W> {
        let waiters = match self.by_ip.remove(&ip) {
            Some(Visit::Asking(w)) => w,
            Some(other) => {
                self.by_ip.insert(ip, other);
                return Vec::new();
            }
            None => Vec::new(),
        };
        let visit = match id {
            Some(id) => Visit::Admitted {
                id,
                conns: waiters.len(),
                idle_since: waiters.is_empty().then_some(now),
                received: 0,
                sent: 0,
            },
            None => Visit::Refused(now + REFUSAL_HOLD),
        };
        self.by_ip.insert(ip, visit);
        waiters
    }

    /// An admitted connection from `ip` closed after moving these bytes.
    pub fn left(&mut self, ip: IpAddr, received: u64, sent: u64, now: Instant) {
        if let Some(Visit::Admitted {
            conns,
            idle_since,
            received: r,
            sent: s,
            ..
        }) = self.by_ip.get_mut(&ip)
        {
            *conns = conns.saturating_sub(1);
            *r += received;
            *s += sent;
            if *conns == 0 {
                *idle_since = Some(now);
            }
        }
    }

    /// The visits over at `now` (no connection for [`LINGER`]); refusals
    /// past their hold are forgotten.
    pub fn expire(&mut self, now: Instant) -> Vec<Ended> {
        let mut ended = Vec::new();
        self.by_ip.retain(|_, v| match v {
            Visit::Admitted {
                id,
                idle_since: Some(t),
                received,
                sent,
                ..
            } if now >= *t + LINGER => {
                ended.push(Ended {
                    id: *id,
                    received: *received,
                    sent: *sent,
                });
                false
            }
            Visit::Refused(until) => now < *until,
            _ => true,
        });
        ended.sort_by_key(|e| e.id);
        ended
    }

    /// Every visit holding a slot now, ended (the server stops).
    pub fn end_all(&mut self) -> Vec<Ended> {
        let mut ended: Vec<Ended> = self
            .by_ip
            .drain()
            .filter_map(|(_, v)| match v {
                Visit::Admitted {
                    id, received, sent, ..
                } => Some(Ended { id, received, sent }),
                _ => None,
            })
            .collect();
        ended.sort_by_key(|e| e.id);
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    #[test]
    fn an_address_asks_once_and_its_connections_share_the_answer() {
        let t = Instant::now();
        let mut v = Visitors::new();
        assert_eq!(v.join(ip(1), 'a', t), Join::Ask);
        assert_eq!(v.join(ip(1), 'b', t), Join::Wait);
        assert_eq!(v.join(ip(2), 'c', t), Join::Ask);
        assert_eq!(v.answered(ip(1), Some(7), t), vec!['a', 'b']);
        assert_eq!(v.join(ip(1), 'd', t), Join::Now(Some(7)));
        assert_eq!(v.answered(ip(2), None, t), vec!['c']);
        assert_eq!(v.join(ip(2), 'e', t), Join::Now(None));
        // A refusal stands for its hold, then the host is asked again.
        let later = t + REFUSAL_HOLD;
        assert!(v.expire(later).is_empty());
        assert_eq!(v.join(ip(2), 'f', later), Join::Ask);
    }

    #[test]
    fn a_visit_ends_a_linger_after_its_last_connection() {
        let t = Instant::now();
        let mut v = Visitors::new();
        v.join(ip(1), (), t);
        v.answered(ip(1), Some(3), t);
        v.join(ip(1), (), t);
        v.left(ip(1), 100, 5, t);
        assert!(v.expire(t + LINGER * 2).is_empty(), "one connection open");
        v.left(ip(1), 1, 2_000, t + Duration::from_secs(1));
        // A connection in the gap keeps the visit (the next stage's load).
        let gap = t + Duration::from_secs(2);
        assert_eq!(v.join(ip(1), (), gap), Join::Now(Some(3)));
        v.left(ip(1), 0, 0, gap);
        assert!(v.expire(gap + LINGER - Duration::from_millis(1)).is_empty());
        assert_eq!(
            v.expire(gap + LINGER),
            vec![Ended {
                id: 3,
                received: 101,
                sent: 2_005
            }]
        );
        assert_eq!(v.join(ip(1), (), gap + LINGER), Join::Ask);
    }

    #[test]
    fn stopping_ends_every_admitted_visit() {
        let t = Instant::now();
        let mut v = Visitors::new();
        for (n, id) in [(1, Some(1)), (2, None), (3, Some(2))] {
            v.join(ip(n), (), t);
            v.answered(ip(n), id, t);
        }
        v.join(ip(4), (), t);
        let ids: Vec<u64> = v.end_all().iter().map(|e| e.id).collect();
        assert_eq!(ids, vec![1, 2]);
    }
}
