//! An iperf 2 TCP server session's directions and deadlines without sockets
//! or clocks: which ways a request's mode moves data, when its sending stops
//! (the header's `-t`, with a backstop for a paced sender that ends itself)
//! and when the server's own `-t` ends everything.

use std::time::{Duration, Instant};

use crate::Mode;

/// How long after the end of `-t` a paced sender is stopped if it has not
/// ended by itself.
pub const PACED_GRACE: Duration = Duration::from_millis(250);

/// Which ways a server's TCP session moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Directions {
    /// It reads the client's data (all but `-R`).
    pub receives: bool,
    /// It sends on the test's connection (`-R`, full duplex).
    pub sends: bool,
    /// Something it sends is timed by the header's `-t`: this connection's
    /// sending, or a `-d` connection back running beside it.
    pub timed_send: bool,
}

impl Directions {
    /// The directions of a request's `mode`.
    pub fn of(mode: Mode) -> Self {
        let sends = matches!(mode, Mode::Reverse | Mode::FullDuplex);
        Self {
            receives: mode != Mode::Reverse,
            sends,
            timed_send: sends || matches!(mode, Mode::Dual { .. }),
        }
    }
}

/// What a session's driver does at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionStep {
    /// The server's own `-t` is up: end every worker now.
    pub abort: bool,
    /// The sending's time is up: stop the senders (once).
    pub stop_sending: bool,
    /// The next deadline, if any.
    pub wake: Option<Instant>,
}

/// A session's deadlines.
#[derive(Debug, Clone, Copy)]
pub struct SessionClock {
    server_end: Option<Instant>,
    send_end: Option<Instant>,
    stopped: bool,
}

impl SessionClock {
    /// A session started at `start`: `server_time` is the server's own `-t`;
    /// `send_time` the header's, when the session's sending is timed; a
    /// `paced` sender (`-b`) ends itself at its time, so the stop comes
    /// [`PACED_GRACE`] later as its backstop.
    pub fn new(
        start: Instant,
        server_time: Option<Duration>,
        send_time: Option<Duration>,
        paced: bool,
    ) -> Self {
        let grace = if paced { PACED_GRACE } else { Duration::ZERO };
        Self {
            server_end: server_time.map(|t| start + t),
            send_end: send_time.map(|t| start + t + grace),
            stopped: false,
        }
    }

    /// What to do at `now`.
    pub fn poll(&mut self, now: Instant) -> SessionStep {
        let abort = self.server_end.is_some_and(|t| now >= t);
        let stop_sending = !self.stopped && self.send_end.is_some_and(|t| now >= t);
        self.stopped |= stop_sending;
        let wake = [self.server_end, self.send_end.filter(|_| !self.stopped)]
            .into_iter()
            .flatten()
            .min();
        SessionStep {
            abort,
            stop_sending,
            wake,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_of_each_mode() {
        let d = |m| {
            let x = Directions::of(m);
            (x.receives, x.sends, x.timed_send)
        };
        assert_eq!(d(Mode::Normal), (true, false, false));
        assert_eq!(d(Mode::Reverse), (false, true, true));
        assert_eq!(d(Mode::FullDuplex), (true, true, true));
        assert_eq!(d(Mode::Dual { port: 5001 }), (true, false, true));
        assert_eq!(d(Mode::Tradeoff { port: 5001 }), (true, false, false));
    }

    #[test]
    fn sending_stops_once_at_its_time_and_a_paced_sender_later() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let mut c = SessionClock::new(t0, None, Some(Duration::from_secs(2)), false);
        assert_eq!(c.poll(s(1000)).wake, Some(s(2000)));
        let at = c.poll(s(2000));
        assert!(at.stop_sending && !at.abort && at.wake.is_none());
        assert!(!c.poll(s(2500)).stop_sending);
        let mut p = SessionClock::new(t0, None, Some(Duration::from_secs(2)), true);
        assert!(!p.poll(s(2100)).stop_sending);
        assert!(p.poll(s(2250)).stop_sending);
    }

    #[test]
    fn the_servers_time_ends_everything() {
        let t0 = Instant::now();
        let s = |ms: u64| t0 + Duration::from_millis(ms);
        let mut c = SessionClock::new(
            t0,
            Some(Duration::from_secs(1)),
            Some(Duration::from_secs(5)),
            false,
        );
        let at = c.poll(s(500));
        assert_eq!((at.abort, at.wake), (false, Some(s(1000))));
        assert!(c.poll(s(1000)).abort);
        // No deadline at all: the driver waits on its workers alone.
        assert_eq!(
            SessionClock::new(t0, None, None, true).poll(s(9)),
            SessionStep::default()
        );
    }
}
