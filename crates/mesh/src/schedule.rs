//! Who tests whom, and when: a round-robin tournament laid out in time slots.
//!
//! Every agent computes the same plan from the same sorted member list and the
//! same clock, so no agent leads and none can be a single point of failure.
//! A cycle is the tournament's rounds (each member meets every other once; with
//! an odd count one member sits each round out), each round run twice, one
//! direction per slot: in a slot every member is in at most one test, as the
//! source (the client, which sends) or the destination (the server).
//!
//! On a big fleet ([`Mode::Sample`]) a cycle runs only a few of the rounds, the
//! next cycle the next few, so every pair is still covered, over several
//! cycles, while each agent keeps series for only a few peers.
//!
//! Time: cycles start on a grid of the cycle's length counted from a shared
//! anchor (by default the Unix epoch), so agents that see the same membership
//! start each cycle together without talking to each other; a membership
//! change shows in the next cycle's length and plan, never in the running one.

/// Whether a cycle covers every pair or a rotating sample of rounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every ordered pair once per cycle.
    Full,
    /// This many tournament rounds per cycle (each member meets that many peers,
    /// both ways); the rounds rotate from cycle to cycle.
    Sample {
        /// Rounds per cycle.
        rounds: usize,
    },
}

impl Mode {
    /// The mode for `members` agents: the full matrix up to `full_max`
    /// members, above it `sample_rounds` rounds a cycle.
    pub fn for_members(members: usize, full_max: usize, sample_rounds: usize) -> Self {
        let rounds = round_count(members);
        if members <= full_max || sample_rounds == 0 || sample_rounds >= rounds {
            Self::Full
        } else {
            Self::Sample {
                rounds: sample_rounds,
            }
        }
    }
}

/// Rounds of a full tournament of `n` members.
pub fn round_count(n: usize) -> usize {
    if n < 2 {
        0
    } else {
        n + n % 2 - 1
    }
}

/// The rounds of a round-robin tournament of `n` members (the circle method):
/// every unordered pair of `0..n` appears in exactly one round, and no member
/// is in two pairs of one round.
pub fn tournament(n: usize) -> Vec<Vec<(usize, usize)>> {
    let rounds = round_count(n);
    // With an odd count the last seat is a bye: whoever meets it sits out.
    let seats = rounds + 1;
    let fixed = seats - 1;
    (0..rounds)
        .map(|r| {
            let mut pairs = Vec::with_capacity(seats / 2);
            if fixed < n {
                // Alternate who goes first against the fixed seat.
                pairs.push(if r % 2 == 0 { (r, fixed) } else { (fixed, r) });
            }
            for k in 1..seats / 2 {
                let a = (r + k) % rounds;
                let b = (r + rounds - k) % rounds;
                pairs.push((a, b));
            }
            pairs
        })
        .collect()
}

/// One test of a slot: `source` sends to `destination` (member indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pair {
    /// The client, which sends.
    pub source: usize,
    /// The server, which receives.
    pub destination: usize,
}

/// What a member does in one slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It tests this member (it is the client).
    Source(usize),
    /// This member tests it (its server serves).
    Destination(usize),
    /// It sits the slot out.
    Idle,
}

/// The tests of one cycle, slot by slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CyclePlan {
    /// The cycle's number on the time grid.
    pub cycle: u64,
    /// The tournament rounds it runs, in order.
    pub rounds: Vec<usize>,
    /// Each slot's tests.
    pub slots: Vec<Vec<Pair>>,
}

impl CyclePlan {
    /// The plan of cycle number `cycle` for `members` agents.
    pub fn new(members: usize, mode: Mode, cycle: u64) -> Self {
        let all = tournament(members);
        let total = all.len();
        let rounds: Vec<usize> = match mode {
            Mode::Full => (0..total).collect(),
            Mode::Sample { rounds } => {
                let k = rounds.min(total);
                // Cycle c takes rounds c*k .. c*k+k (mod total): consecutive
                // cycles walk the whole tournament.
                let first = (cycle % total.max(1) as u64) as usize * k;
                (0..k).map(|j| (first + j) % total).collect()
            }
        };
        let mut slots = Vec::with_capacity(rounds.len() * 2);
        for &r in &rounds {
            let pairs = &all[r];
            slots.push(
                pairs
                    .iter()
                    .map(|&(a, b)| Pair {
                        source: a,
                        destination: b,
                    })
                    .collect(),
            );
            slots.push(
                pairs
                    .iter()
                    .map(|&(a, b)| Pair {
                        source: b,
                        destination: a,
                    })
                    .collect(),
            );
        }
        Self {
            cycle,
            rounds,
            slots,
        }
    }

    /// What member `me` does in slot `slot`.
    pub fn role(&self, slot: usize, me: usize) -> Role {
        for p in self.slots.get(slot).into_iter().flatten() {
            if p.source == me {
                return Role::Source(p.destination);
            }
            if p.destination == me {
                return Role::Destination(p.source);
            }
        }
        Role::Idle
    }

    /// Every test of the cycle.
    pub fn pairs(&self) -> impl Iterator<Item = (usize, Pair)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .flat_map(|(s, ps)| ps.iter().map(move |p| (s, *p)))
    }
}

/// When cycles and slots begin, in Unix seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// A slot's length: one test and its setup, results and margin.
    pub slot: f64,
    /// The shortest cycle (`--period`); longer when its slots need more.
    pub min_period: f64,
    /// Where the grid of cycle starts is counted from.
    pub anchor: f64,
}

impl Timing {
    /// A cycle of `slots` slots lasts this long.
    pub fn cycle_len(&self, slots: usize) -> f64 {
        (slots as f64 * self.slot)
            .max(self.min_period)
            .max(self.slot)
    }

    /// The first cycle start of a cycle of length `len` at or after `after`,
    /// and its number on the grid. A start that passed less than a tenth of a
    /// slot ago still counts: two agents that finish a cycle a moment apart
    /// then both pick the same next one.
    pub fn next_cycle(&self, after: f64, len: f64) -> (u64, f64) {
        let since = after - self.slot / 10.0 - self.anchor;
        let n = if since <= 0.0 {
            0.0
        } else {
            (since / len).ceil()
        };
        (n as u64, self.anchor + n * len)
    }

    /// When slot `slot` of a cycle that starts at `cycle_start` begins.
    pub fn slot_start(&self, cycle_start: f64, slot: usize) -> f64 {
        cycle_start + slot as f64 * self.slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check_full_cycle(n: usize) {
        let plan = CyclePlan::new(n, Mode::Full, 7);
        let mut seen = HashSet::new();
        for ps in &plan.slots {
            let mut busy = HashSet::new();
            for p in ps {
                assert_ne!(p.source, p.destination);
                assert!(p.source < n && p.destination < n);
                assert!(busy.insert(p.source), "{n}: {} twice in a slot", p.source);
                assert!(busy.insert(p.destination), "{n}: {} twice", p.destination);
                assert!(seen.insert(*p), "{n}: {p:?} twice in a cycle");
            }
        }
        assert_eq!(seen.len(), n * n.saturating_sub(1), "{n} members");
        assert_eq!(plan.slots.len(), 2 * round_count(n));
    }

    #[test]
    fn a_full_cycle_tests_every_ordered_pair_once_and_nobody_twice_at_once() {
        for n in 0..=33 {
            check_full_cycle(n);
        }
        check_full_cycle(64);
    }

    #[test]
    fn round_counts_follow_the_tournament() {
        assert_eq!(round_count(0), 0);
        assert_eq!(round_count(1), 0);
        assert_eq!(round_count(2), 1);
        assert_eq!(round_count(3), 3);
        assert_eq!(round_count(16), 15);
        assert_eq!(round_count(17), 17);
        // Even counts: every member is busy in every slot.
        let plan = CyclePlan::new(16, Mode::Full, 0);
        assert!(plan.slots.iter().all(|s| s.len() == 8));
        // Odd: one member idle per slot.
        let plan = CyclePlan::new(5, Mode::Full, 0);
        assert!(plan.slots.iter().all(|s| s.len() == 2));
    }

    #[test]
    fn roles_name_the_other_member() {
        let plan = CyclePlan::new(4, Mode::Full, 0);
        for (s, p) in plan.pairs() {
            assert_eq!(plan.role(s, p.source), Role::Source(p.destination));
            assert_eq!(plan.role(s, p.destination), Role::Destination(p.source));
        }
        let plan = CyclePlan::new(3, Mode::Full, 0);
        let idle = (0..plan.slots.len())
            .filter(|&s| (0..3).any(|m| plan.role(s, m) == Role::Idle))
            .count();
        assert_eq!(idle, plan.slots.len());
        assert_eq!(plan.role(99, 0), Role::Idle);
    }

    #[test]
    fn samples_rotate_until_every_pair_is_covered() {
        for (n, k) in [(10, 3), (11, 4), (64, 8), (100, 8)] {
            let rounds = round_count(n);
            let cycles = rounds.div_ceil(k) as u64;
            let mut seen = HashSet::new();
            for c in 0..cycles {
                let plan = CyclePlan::new(n, Mode::Sample { rounds: k }, c);
                assert_eq!(plan.slots.len(), 2 * k);
                // Each member is a source at most k times a cycle: its series
                // stay within k peers.
                for m in 0..n {
                    let dests: HashSet<_> = plan
                        .pairs()
                        .filter(|(_, p)| p.source == m)
                        .map(|(_, p)| p.destination)
                        .collect();
                    assert!(dests.len() <= k);
                }
                seen.extend(plan.pairs().map(|(_, p)| p));
            }
            assert_eq!(seen.len(), n * (n - 1), "{n} members, {k} rounds a cycle");
        }
    }

    #[test]
    fn the_mode_switches_above_the_full_size() {
        assert_eq!(Mode::for_members(16, 50, 8), Mode::Full);
        assert_eq!(Mode::for_members(51, 50, 8), Mode::Sample { rounds: 8 });
        // A sample as big as the tournament is the tournament.
        assert_eq!(Mode::for_members(6, 2, 8), Mode::Full);
        assert_eq!(Mode::for_members(100, 50, 0), Mode::Full);
    }

    #[test]
    fn cycles_start_on_a_shared_grid() {
        let t = Timing {
            slot: 3.0,
            min_period: 0.0,
            anchor: 1000.0,
        };
        let len = t.cycle_len(30);
        assert_eq!(len, 90.0);
        assert_eq!(t.next_cycle(500.0, len), (0, 1000.0));
        assert_eq!(t.next_cycle(1000.0, len), (0, 1000.0));
        // A start a moment ago is still taken, one further away is not.
        assert_eq!(t.next_cycle(1090.2, len), (1, 1090.0));
        assert_eq!(t.next_cycle(1089.9, len), (1, 1090.0));
        assert_eq!(t.next_cycle(1091.0, len), (2, 1180.0));
        assert_eq!(t.slot_start(1090.0, 4), 1102.0);
        let p = Timing {
            min_period: 600.0,
            ..t
        };
        assert_eq!(p.cycle_len(30), 600.0);
        // Nobody to test: the agent still waits a slot between looks.
        assert_eq!(t.cycle_len(0), 3.0);
    }
}
