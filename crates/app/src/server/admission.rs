//! Who runs, who waits and who is refused: `--max-tests` slots, a `--queue` of
//! waiting clients in arrival order, and fairness between client addresses.
//!
//! Pure bookkeeping, no sockets. Fairness: a free slot goes to the waiting
//! client whose address runs the fewest tests (earliest first among equals), and
//! a client arriving at a full queue takes the place of the newest entry of an
//! address that holds more than its share of the queue. So one address can
//! fill every slot and the whole queue only while nobody else wants them.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;

/// A waiting client's number.
pub(super) type Ticket = u64;

/// What to do with a client whose cookie has arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Decision {
    /// Start its test now.
    Run,
    /// It waits with this ticket.
    Queue(Ticket),
    /// It waits with this ticket, and `evicted` (another address's newest
    /// waiting client) is refused to make room.
    QueueEvicting {
        /// The newcomer's ticket.
        ticket: Ticket,
        /// The refused client's ticket.
        evicted: Ticket,
    },
    /// Busy: ACCESS_DENIED.
    Refuse,
}

/// The slots and the queue.
#[derive(Debug)]
pub(super) struct Admission {
    max_tests: usize,
    max_queue: usize,
    running: HashMap<IpAddr, usize>,
    total_running: usize,
    queue: VecDeque<(Ticket, IpAddr)>,
    next_ticket: Ticket,
}

impl Admission {
    /// `max_tests` ≥ 1 slots and room for `max_queue` waiting clients.
    pub(super) fn new(max_tests: usize, max_queue: usize) -> Self {
        Self {
            max_tests: max_tests.max(1),
            max_queue,
            running: HashMap::new(),
            total_running: 0,
            queue: VecDeque::new(),
            next_ticket: 1,
        }
    }

    /// A new client from `ip`. With a free slot and nobody waiting it runs now;
    /// otherwise it queues behind those already waiting.
    pub(super) fn arrive(&mut self, ip: IpAddr) -> Decision {
        if self.total_running < self.max_tests && self.queue.is_empty() {
            self.start(ip);
            return Decision::Run;
        }
        if self.queue.len() < self.max_queue {
            return Decision::Queue(self.enqueue(ip));
        }
        match self.over_share(ip) {
            Some(evicted) => {
                self.leave_queue(evicted);
                Decision::QueueEvicting {
                    ticket: self.enqueue(ip),
                    evicted,
                }
            }
            None => Decision::Refuse,
        }
    }

    /// A client that cannot wait (an RPM-over-HTTP visitor: its clients give up
    /// on a busy answer and come back): it runs now if a slot is free and
    /// nobody waits for one, and is refused otherwise.
    pub(super) fn arrive_now(&mut self, ip: IpAddr) -> bool {
        if self.total_running < self.max_tests && self.queue.is_empty() {
            self.start(ip);
            return true;
        }
        false
    }

    /// The newest waiting entry of the address with the most entries, if that
    /// address holds at least two more than `ip` would after joining.
    fn over_share(&self, ip: IpAddr) -> Option<Ticket> {
        let mut counts: HashMap<IpAddr, usize> = HashMap::new();
        for (_, a) in &self.queue {
            *counts.entry(*a).or_default() += 1;
        }
        let mine = counts.get(&ip).copied().unwrap_or(0);
        let (&top, &n) = counts.iter().max_by_key(|(_, n)| **n)?;
        if top == ip || n < mine + 2 {
            return None;
        }
        self.queue
            .iter()
            .rev()
            .find(|(_, a)| *a == top)
            .map(|(t, _)| *t)
    }

    fn enqueue(&mut self, ip: IpAddr) -> Ticket {
        let t = self.next_ticket;
        self.next_ticket += 1;
        self.queue.push_back((t, ip));
        t
    }

    fn start(&mut self, ip: IpAddr) {
        *self.running.entry(ip).or_default() += 1;
        self.total_running += 1;
    }

    /// A waiting client left (closed its connection) or was refused.
    pub(super) fn leave_queue(&mut self, t: Ticket) {
        self.queue.retain(|(x, _)| *x != t);
    }

    /// A running test from `ip` ended.
    pub(super) fn finished(&mut self, ip: IpAddr) {
        if let Some(n) = self.running.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                self.running.remove(&ip);
            }
            self.total_running -= 1;
        }
    }

    /// The waiting client to start now, if a slot is free: the one whose
    /// address runs the fewest tests, earliest first.
    pub(super) fn start_next(&mut self) -> Option<(Ticket, IpAddr)> {
        if self.total_running >= self.max_tests {
            return None;
        }
        let (i, &(t, ip)) = self
            .queue
            .iter()
            .enumerate()
            .min_by_key(|(i, (_, ip))| (self.running.get(ip).copied().unwrap_or(0), *i))?;
        self.queue.remove(i);
        self.start(ip);
        Some((t, ip))
    }

    /// Every waiting ticket (the server is shutting down).
    pub(super) fn take_queue(&mut self) -> Vec<Ticket> {
        self.queue.drain(..).map(|(t, _)| t).collect()
    }

    /// Tests running now.
    #[cfg(test)]
    pub(super) fn running(&self) -> usize {
        self.total_running
    }

    /// Clients waiting now.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, n])
    }

    /// The next ticket to start.
    fn next(a: &mut Admission) -> Option<Ticket> {
        a.start_next().map(|(t, _)| t)
    }

    #[test]
    fn default_is_iperf3_one_test_no_queue() {
        let mut a = Admission::new(1, 0);
        assert_eq!(a.arrive(ip(1)), Decision::Run);
        assert_eq!(a.arrive(ip(2)), Decision::Refuse);
        a.finished(ip(1));
        assert_eq!(a.arrive(ip(2)), Decision::Run);
    }

    #[test]
    fn queue_is_served_in_arrival_order_within_an_address() {
        let mut a = Admission::new(1, 3);
        assert_eq!(a.arrive(ip(1)), Decision::Run);
        assert_eq!(a.arrive(ip(1)), Decision::Queue(1));
        assert_eq!(a.arrive(ip(1)), Decision::Queue(2));
        assert_eq!(next(&mut a), None, "no free slot");
        a.finished(ip(1));
        assert_eq!(next(&mut a), Some(1));
        a.finished(ip(1));
        assert_eq!(next(&mut a), Some(2));
        assert_eq!(next(&mut a), None);
        assert_eq!((a.running(), a.waiting()), (1, 0));
    }

    #[test]
    fn newcomers_do_not_jump_the_queue() {
        let mut a = Admission::new(2, 2);
        assert_eq!(a.arrive(ip(1)), Decision::Run);
        assert_eq!(a.arrive(ip(1)), Decision::Run);
        assert_eq!(a.arrive(ip(2)), Decision::Queue(1));
        a.finished(ip(1));
        // A slot is free but someone waits: the newcomer queues behind.
        assert_eq!(a.arrive(ip(3)), Decision::Queue(2));
        assert_eq!(next(&mut a), Some(1));
    }

    #[test]
    fn a_free_slot_goes_to_the_address_running_fewest() {
        let mut a = Admission::new(2, 4);
        a.arrive(ip(1));
        a.arrive(ip(1));
        let t1 = a.arrive(ip(1));
        let t2 = a.arrive(ip(2));
        assert_eq!((t1, t2), (Decision::Queue(1), Decision::Queue(2)));
        a.finished(ip(1));
        // ip(1) still runs one test, ip(2) none: ip(2) first despite arriving later.
        assert_eq!(next(&mut a), Some(2));
        a.finished(ip(1));
        assert_eq!(next(&mut a), Some(1));
    }

    #[test]
    fn one_address_cannot_keep_the_whole_queue_from_others() {
        let mut a = Admission::new(1, 3);
        a.arrive(ip(1));
        for t in 1..=3 {
            assert_eq!(a.arrive(ip(1)), Decision::Queue(t));
        }
        // Full queue, all ip(1): their own extra client is refused...
        assert_eq!(a.arrive(ip(1)), Decision::Refuse);
        // ...but another address takes the place of ip(1)'s newest.
        assert_eq!(
            a.arrive(ip(2)),
            Decision::QueueEvicting {
                ticket: 4,
                evicted: 3
            }
        );
        // 2 of ip(1) against 1 of ip(2): a third address still gets in.
        assert_eq!(
            a.arrive(ip(3)),
            Decision::QueueEvicting {
                ticket: 5,
                evicted: 2
            }
        );
        // Now one each: full, fair, so the next is refused.
        assert_eq!(a.arrive(ip(4)), Decision::Refuse);
        a.finished(ip(1));
        let order: Vec<_> = std::iter::from_fn(|| {
            let (t, who) = a.start_next()?;
            a.finished(who);
            Some(t)
        })
        .collect();
        assert_eq!(order, [1, 4, 5]);
    }

    #[test]
    fn leaving_the_queue_frees_the_place() {
        let mut a = Admission::new(1, 1);
        a.arrive(ip(1));
        assert_eq!(a.arrive(ip(2)), Decision::Queue(1));
        assert_eq!(a.arrive(ip(3)), Decision::Refuse);
        a.leave_queue(1);
        assert_eq!(a.arrive(ip(3)), Decision::Queue(2));
        assert_eq!(a.take_queue(), [2]);
    }

    #[test]
    fn a_client_that_cannot_wait_takes_a_free_slot_or_nothing() {
        let (a, b) = (ip(1), ip(2));
        let mut adm = Admission::new(1, 1);
        assert!(adm.arrive_now(a));
        assert!(!adm.arrive_now(b), "no slot");
        adm.finished(a);
        assert_eq!(adm.arrive(b), Decision::Run);
        assert_eq!(adm.arrive(a), Decision::Queue(1));
        adm.finished(b);
        assert!(!adm.arrive_now(b), "the queued client is first");
    }
}
