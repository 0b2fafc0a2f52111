//! The `[SUM]` rows of a UDP server: the flows of one `-P` client (same
//! address, the header's stream count above one) are added up per interval
//! and at the end, as iperf 2's server shows them.
//!
//! Each flow keeps its own clock, so an interval's sum is out once every
//! member has either reported that interval or ended; the total once every
//! member has ended.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rperf3_report::iperf2::model::{Event2, Row2, RowKind2, Tag2, UdpRecv2};
use rperf3_report::iperf2::Report2;

#[derive(Debug, Default)]
struct Acc {
    span: (f64, f64),
    bytes: u64,
    recv: UdpRecv2,
    members: u32,
}

impl Acc {
    fn add(&mut self, r: &Row2) {
        if self.members == 0 {
            self.span = (r.start, r.end);
        }
        self.span.1 = self.span.1.max(r.end);
        self.members += 1;
        self.bytes += r.bytes;
        if let RowKind2::UdpRecv(u) = r.kind {
            self.recv.lost += u.lost;
            self.recv.total += u.total;
            self.recv.out_of_order += u.out_of_order;
            self.recv.reads += u.reads;
        }
    }

    fn row(&self, tag: Tag2) -> Row2 {
        Row2 {
            tag,
            addrs: None,
            start: self.span.0,
            end: self.span.1,
            bytes: self.bytes,
            kind: RowKind2::UdpRecv(self.recv),
            at: SystemTime::now(),
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// Per member: the last interval it reported, and whether it ended.
    members: Vec<(Option<u32>, bool)>,
    /// Interval sums by interval number, until they are out.
    intervals: BTreeMap<u32, Acc>,
    total: Acc,
}

/// The flows of one `-P` client on the server.
#[derive(Debug)]
pub(crate) struct Group {
    /// How many flows the client announced.
    pub(crate) expected: u32,
    state: Mutex<State>,
}

impl Group {
    /// A group for a client announcing `expected` flows.
    pub(crate) fn new(expected: u32) -> Arc<Self> {
        Arc::new(Self {
            expected,
            state: Mutex::new(State::default()),
        })
    }

    /// Adds a member: its number in the group, `None` when the group is full.
    pub(crate) fn join(&self) -> Option<usize> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if s.members.len() >= self.expected as usize {
            return None;
        }
        s.members.push((None, false));
        Some(s.members.len() - 1)
    }

    /// Whether more members may join.
    pub(crate) fn open(&self) -> bool {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .members
            .len()
            < self.expected as usize
    }

    /// Member `m`'s interval row `k` (0-based, in order).
    pub(crate) fn interval(&self, m: usize, k: u32, row: &Row2, report: &dyn Report2) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.intervals.entry(k).or_default().add(row);
        if let Some(x) = s.members.get_mut(m) {
            x.0 = Some(k);
        }
        self.flush(&mut s, report);
    }

    /// Member `m`'s total: the member has ended.
    pub(crate) fn total(&self, m: usize, row: &Row2, report: &dyn Report2) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(x) = s.members.get_mut(m) {
            x.1 = true;
        }
        s.total.add(row);
        self.flush(&mut s, report);
        let n = s.members.len() as u32;
        if n >= self.expected && s.members.iter().all(|x| x.1) {
            report.event(Event2::Final(s.total.row(Tag2::Sum(n))));
        }
    }

    /// Emits, in order, every interval sum that each member has either
    /// reported or ended before.
    fn flush(&self, s: &mut State, report: &dyn Report2) {
        let n = s.members.len() as u32;
        while let Some(entry) = s.intervals.first_entry() {
            let k = *entry.key();
            let ready = s
                .members
                .iter()
                .all(|&(last, ended)| ended || last.is_some_and(|l| l >= k));
            if !ready {
                return;
            }
            let acc = entry.remove();
            report.event(Event2::Interval(acc.row(Tag2::Sum(n))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect(Mutex<Vec<Event2>>);
    impl Report2 for Collect {
        fn event(&self, e: Event2) {
            self.0.lock().unwrap().push(e);
        }
    }

    fn row(k: u32, total: u64, lost: u64) -> Row2 {
        Row2 {
            tag: Tag2::Id(1),
            addrs: None,
            start: f64::from(k),
            end: f64::from(k + 1),
            bytes: total * 100,
            kind: RowKind2::UdpRecv(UdpRecv2 {
                lost,
                total,
                ..UdpRecv2::default()
            }),
            at: SystemTime::now(),
        }
    }

    fn sums(c: &Collect) -> Vec<(bool, u64, u64)> {
        c.0.lock()
            .unwrap()
            .iter()
            .filter_map(|e| match e {
                Event2::Interval(r) | Event2::Final(r) if matches!(r.tag, Tag2::Sum(2)) => {
                    let RowKind2::UdpRecv(u) = r.kind else {
                        return None;
                    };
                    Some((matches!(e, Event2::Final(_)), u.lost, u.total))
                }
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_interval_sum_waits_for_every_live_member() {
        let g = Group::new(2);
        let c = Collect::default();
        assert_eq!((g.join(), g.join(), g.join()), (Some(0), Some(1), None));
        g.interval(0, 0, &row(0, 10, 1), &c);
        assert!(sums(&c).is_empty());
        g.interval(1, 0, &row(0, 12, 0), &c);
        assert_eq!(sums(&c), [(false, 1, 22)]);
        // Member 1 reports interval 1; member 0 ends without it: the sum of
        // interval 1 is out with what there is, then the total.
        g.interval(1, 1, &row(1, 5, 0), &c);
        assert_eq!(sums(&c).len(), 1);
        g.total(0, &row(0, 20, 1), &c);
        assert_eq!(sums(&c), [(false, 1, 22), (false, 0, 5)]);
        g.total(1, &row(0, 18, 0), &c);
        assert_eq!(sums(&c), [(false, 1, 22), (false, 0, 5), (true, 1, 38)]);
    }
}
