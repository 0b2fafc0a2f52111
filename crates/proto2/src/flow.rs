//! An iperf 2 UDP flow's lifecycle without sockets or clocks: when a
//! server's flow stops sending and receiving (the header's time, the
//! server's `-t`, a client gone silent, a FIN that never comes), how a server
//! answers FINs with its report, and how a client ends its data with FINs
//! until the report comes. The drivers read the clock and move the bytes;
//! every decision is here, tested with made-up instants.

use std::time::{Duration, Instant};

use crate::FIN_MAX_SENDS;
use crate::{fin_seq, next_fin_seq, Mode, ServerReport, TestEnd, TestRequest};

/// A client silent this long has gone: its flow ends with what it has.
pub const IDLE_END: Duration = Duration::from_secs(10);
/// How long a flow that sends no FIN (`--no-udp-fin`, multicast) may run past
/// the time its header announced.
pub const NO_FIN_GRACE: Duration = Duration::from_secs(2);
/// How long a flow may run past its announced time waiting for its FIN.
pub const LATE_FIN_GRACE: Duration = Duration::from_secs(5);
/// After sending its report, how long a server listens for a late FIN (each
/// answered with the report again), and how many reports it sends at most.
pub const REPORT_SILENCE: Duration = Duration::from_millis(250);
/// See [`REPORT_SILENCE`].
pub const REPORT_SENDS: u32 = 9;

/// What a server's flow does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowStep {
    /// Stop the direction the server sends (`-R`, full duplex).
    pub stop_sending: bool,
    /// Stop receiving: the client is gone or the time is up.
    pub stop_receiving: bool,
    /// The next instant that matters (the sender's end), if any.
    pub wake: Option<Instant>,
}

/// What a server flow's deadlines follow from: the request's mode and end,
/// and whether a FIN will end it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowTerms {
    /// The direction mode.
    pub mode: Mode,
    /// When the client's sender stops.
    pub end: TestEnd,
    /// A FIN ends the flow (not with `--no-udp-fin`, not on multicast).
    pub fin: bool,
}

impl FlowTerms {
    /// The terms of `req`; a multicast flow has no FIN.
    pub fn of(req: &TestRequest, multicast: bool) -> Self {
        Self {
            mode: req.mode,
            end: req.end,
            fin: !(req.no_udp_fin || multicast),
        }
    }
}

/// A server flow's deadlines: the time its header announced (when the server
/// sends), the absolute limit (the server's `-t`; the announced time plus a
/// grace), and silence (no datagram for [`IDLE_END`]).
#[derive(Debug, Clone)]
pub struct ServerFlow {
    receives: bool,
    sends: bool,
    tx_end: Option<Instant>,
    limit: Option<Instant>,
    /// Datagrams counted at the last look, and when that count last changed.
    seen: (u64, Instant),
    silent: bool,
}

impl ServerFlow {
    /// A flow on `terms`, started at `at`; `server_time` is the server's own
    /// `-t`.
    pub fn new(terms: FlowTerms, at: Instant, server_time: Option<Duration>) -> Self {
        let mut limit = server_time.map(|t| at + t);
        if let TestEnd::Time(d) = terms.end {
            let grace = if terms.fin {
                LATE_FIN_GRACE
            } else {
                NO_FIN_GRACE
            };
            let l = at + d + grace;
            limit = Some(limit.map_or(l, |x| x.min(l)));
        }
        Self {
            receives: terms.mode != Mode::Reverse,
            sends: matches!(terms.mode, Mode::Reverse | Mode::FullDuplex),
            tx_end: match terms.end {
                TestEnd::Time(d) => Some(at + d),
                TestEnd::Bytes(_) => None,
            },
            limit,
            seen: (0, at),
            silent: false,
        }
    }

    /// At `now`, having received `datagrams` in all, what the driver does.
    pub fn poll(&mut self, now: Instant, datagrams: u64) -> FlowStep {
        if datagrams != self.seen.0 {
            self.seen = (datagrams, now);
        }
        self.silent = self.receives && now.duration_since(self.seen.1) >= IDLE_END;
        let over = self.limit.is_some_and(|l| now >= l);
        let tx_over = self.tx_end.is_some_and(|e| now >= e) || over;
        FlowStep {
            stop_sending: self.sends && tx_over,
            stop_receiving: self.silent || over,
            wake: self.tx_end.filter(|&e| self.sends && e > now),
        }
    }

    /// Whether the flow ended because its client fell silent.
    pub fn silent(&self) -> bool {
        self.silent
    }
}

/// A server's answers to FINs once its flow has ended: the report, and again
/// for each late FIN heard within [`REPORT_SILENCE`], at most
/// [`REPORT_SENDS`] times.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReportReplies {
    sent: u32,
}

impl ReportReplies {
    /// Whether to send the report (now): the first time, and after each late
    /// FIN heard, until the limit.
    pub fn send_now(&mut self) -> bool {
        self.sent += 1;
        self.sent <= REPORT_SENDS
    }

    /// How long to listen for a late FIN after a report.
    pub fn listen(&self) -> Duration {
        REPORT_SILENCE
    }
}

/// A client's end of its data: FINs (the negative sequence number counting
/// down with each retry) until a server report answers, at most
/// [`FIN_MAX_SENDS`]; a single FIN when no report is awaited.
#[derive(Debug, Clone, Copy)]
pub struct FinExchange {
    next: i64,
    sends: u32,
    handshake: bool,
    done: bool,
}

impl FinExchange {
    /// The exchange after `data` datagrams; `handshake`: a report is awaited.
    pub fn new(data: u64, handshake: bool) -> Self {
        Self {
            next: fin_seq(i64::try_from(data).unwrap_or(i64::MAX)),
            sends: 0,
            handshake,
            done: false,
        }
    }

    /// The sequence number of the next FIN to send, or none when the
    /// exchange is over (answered, or out of tries).
    pub fn next_fin(&mut self) -> Option<i64> {
        let limit = if self.handshake { FIN_MAX_SENDS } else { 1 };
        if self.done || self.sends >= limit {
            return None;
        }
        let seq = self.next;
        self.next = next_fin_seq(seq);
        self.sends += 1;
        Some(seq)
    }

    /// FINs sent so far.
    pub fn sends(&self) -> u32 {
        self.sends
    }

    /// A datagram that came back: the server report, if it is one (128
    /// bytes or more with the report flag, not the echo of a FIN), which ends
    /// the exchange.
    pub fn on_reply(&mut self, d: &[u8]) -> Option<ServerReport> {
        let r = ServerReport::decode(d).ok()?;
        self.done = true;
        Some(r)
    }
}

/// How long after the last sender's end a client's receiving direction
/// (`-R`, full duplex) waits for a FIN that never comes.
pub const RX_GRACE: Duration = Duration::from_secs(2);

/// A client's flows' deadlines: each sender stops at its own end (`-t` from
/// its own start), the receivers a grace after the last sender's end or when
/// their server falls silent for [`IDLE_END`], and a signal ends everything.
#[derive(Debug, Clone)]
pub struct ClientClock {
    /// Each flow's sending end, if by time.
    untils: Vec<Option<Instant>>,
    /// The last of them.
    end: Option<Instant>,
    /// The receivers' end.
    rx_end: Option<Instant>,
}

impl ClientClock {
    /// The clock of flows that send until `untils` (none: by bytes).
    pub fn new(untils: Vec<Option<Instant>>) -> Self {
        let end = untils.iter().flatten().max().copied();
        Self {
            untils,
            end,
            rx_end: end.map(|d| d + RX_GRACE),
        }
    }

    /// Whether flow `i`'s sender stops at `now`.
    pub fn sender_over(&self, i: usize, now: Instant, interrupted: bool) -> bool {
        interrupted
            || self
                .untils
                .get(i)
                .copied()
                .flatten()
                .is_some_and(|u| now >= u)
    }

    /// Whether a receiver whose server has been silent for `idle` stops.
    pub fn receiver_over(&self, now: Instant, idle: Duration, interrupted: bool) -> bool {
        interrupted || self.rx_end.is_some_and(|d| now >= d) || idle >= IDLE_END
    }

    /// Whether every sender's time is up (the client then checks often for
    /// the flows' last threads).
    pub fn ended(&self, now: Instant, interrupted: bool) -> bool {
        interrupted || self.end.is_some_and(|d| now >= d)
    }

    /// Whether an interval ending at `tick` gets rows: not once every
    /// sender has ended before it.
    pub fn rows_at(&self, tick: Instant) -> bool {
        self.end.is_none_or(|d| tick <= d)
    }

    /// The next sender's end after `now`.
    pub fn next_end(&self, now: Instant) -> Option<Instant> {
        self.untils
            .iter()
            .flatten()
            .filter(|&&u| u > now)
            .min()
            .copied()
    }

    /// When the test's time ends (the last sender's end), if by time.
    pub fn end(&self) -> Option<Instant> {
        self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::{DATAGRAM_HEADER_LEN, SERVER_REPORT_LEN};

    fn req(mode: Mode, end: TestEnd, no_fin: bool) -> FlowTerms {
        FlowTerms {
            mode,
            end,
            fin: !no_fin,
        }
    }

    #[test]
    fn a_receiving_flow_ends_at_silence_or_its_limit() {
        let t0 = Instant::now();
        let s = |x: u64| t0 + Duration::from_secs(x);
        let r = req(Mode::Normal, TestEnd::Time(Duration::from_secs(2)), false);
        let mut f = ServerFlow::new(r, t0, None);
        assert_eq!(f.poll(s(1), 10), FlowStep::default());
        // Datagrams keep coming: not silent, but 2 s + 5 s of grace is the limit.
        assert!(!f.poll(s(6), 20).stop_receiving);
        let end = f.poll(s(7), 30);
        assert!(end.stop_receiving && !end.stop_sending && !f.silent());
        // A flow whose client stops for IDLE_END is silent.
        let r = req(Mode::Normal, TestEnd::Bytes(1000), false);
        let mut f = ServerFlow::new(r, t0, None);
        assert!(!f.poll(s(3), 5).stop_receiving);
        assert!(!f.poll(s(12), 5).stop_receiving);
        assert!(f.poll(s(13), 5).stop_receiving && f.silent());
    }

    #[test]
    fn the_servers_time_and_a_missing_fin_shorten_the_limit() {
        let t0 = Instant::now();
        let s = |x: u64| t0 + Duration::from_secs(x);
        let r = req(Mode::Normal, TestEnd::Time(Duration::from_secs(10)), true);
        let mut f = ServerFlow::new(r, t0, Some(Duration::from_secs(3)));
        assert!(f.poll(s(3), 1).stop_receiving);
        // No FIN: 10 s + 2 s; a multicast flow likewise.
        let mut f = ServerFlow::new(r, t0, None);
        assert!(!f.poll(s(11), 1).stop_receiving && f.poll(s(12), 2).stop_receiving);
        let mut f = ServerFlow::new(
            req(Mode::Normal, TestEnd::Time(Duration::from_secs(10)), true),
            t0,
            None,
        );
        assert!(f.poll(s(12), 1).stop_receiving);
    }

    #[test]
    fn a_sending_flow_stops_at_the_announced_time_and_wakes_for_it() {
        let t0 = Instant::now();
        let r = req(Mode::Reverse, TestEnd::Time(Duration::from_secs(2)), false);
        let mut f = ServerFlow::new(r, t0, None);
        let step = f.poll(t0 + Duration::from_secs(1), 0);
        assert_eq!(step.wake, Some(t0 + Duration::from_secs(2)));
        // A -R flow receives nothing, so it is never silent.
        assert!(!step.stop_sending && !step.stop_receiving);
        let step = f.poll(t0 + Duration::from_secs(2), 0);
        assert!(step.stop_sending && step.wake.is_none() && !f.silent());
    }

    #[test]
    fn reports_answer_at_most_nine_fins() {
        let mut r = ReportReplies::default();
        assert_eq!((0..20).filter(|_| r.send_now()).count(), 9);
        assert_eq!(r.listen(), Duration::from_millis(250));
    }

    #[test]
    fn fins_count_down_until_the_report() {
        let mut x = FinExchange::new(100, true);
        assert_eq!(x.next_fin(), Some(-101));
        assert_eq!(x.next_fin(), Some(-102));
        // An echo of the FIN (short) is not the report.
        assert!(x.on_reply(&[0u8; 64]).is_none());
        let mut wire = vec![0u8; SERVER_REPORT_LEN];
        wire[DATAGRAM_HEADER_LEN] = 0x80;
        assert!(x.on_reply(&wire).is_some());
        assert_eq!((x.next_fin(), x.sends()), (None, 2));
        // Without a handshake, one FIN.
        let mut y = FinExchange::new(5, false);
        assert_eq!((y.next_fin(), y.next_fin()), (Some(-6), None));
        // Unanswered: FIN_MAX_SENDS of them.
        let mut z = FinExchange::new(0, true);
        assert_eq!(
            std::iter::from_fn(|| z.next_fin()).count(),
            FIN_MAX_SENDS as usize
        );
    }

    #[test]
    fn a_clients_flows_end_each_at_its_time_and_receivers_after_a_grace() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let c = ClientClock::new(vec![Some(s(1000)), Some(s(1010)), None]);
        assert_eq!((c.end(), c.next_end(s(0))), (Some(s(1010)), Some(s(1000))));
        assert!(!c.sender_over(0, s(999), false) && c.sender_over(0, s(1000), false));
        assert!(!c.sender_over(2, s(99_000), false) && c.sender_over(2, s(0), true));
        assert!(!c.ended(s(1005), false) && c.ended(s(1010), false));
        assert!(c.rows_at(s(1010)) && !c.rows_at(s(1011)));
        // Receivers: 2 s after the last end, or a silent server, or a signal.
        assert!(!c.receiver_over(s(3009), Duration::ZERO, false));
        assert!(c.receiver_over(s(3010), Duration::ZERO, false));
        assert!(c.receiver_over(s(0), IDLE_END, false));
        // By bytes: no clock but silence and signals.
        let b = ClientClock::new(vec![None]);
        assert!(b.rows_at(s(99_000)) && !b.ended(s(99_000), false));
        assert!(!b.receiver_over(s(99_000), Duration::from_secs(9), false));
    }
}
