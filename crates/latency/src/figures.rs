//! What a test's probes add up to: the samples of each kind, per interval and for the
//! whole test, and the figures every output prints from them.

use crate::histogram::Histogram;
use crate::oneway::OneWay;
use crate::rpm::Responsiveness;
use crate::summary::Summary;

/// What a round-trip sample timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A round trip before the load started.
    Idle,
    /// A foreign probe's connection handshake (`connect()` to established).
    ForeignConnect,
    /// A foreign probe's TLS handshake on its new connection (HTTP/2 only).
    ForeignTls,
    /// A foreign probe's request and answer on its new connection.
    ForeignRequest,
    /// A round trip on a loaded connection (behind its queued data).
    SelfLoaded,
}

/// Direction of a one-way delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// The samples of one span (an interval or the whole test).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Samples {
    /// Round trips before the load.
    pub idle: Histogram,
    /// Foreign handshakes.
    pub tcp_f: Histogram,
    /// Foreign TLS handshakes (empty without TLS).
    pub tls_f: Histogram,
    /// Foreign requests.
    pub req_f: Histogram,
    /// Self probes.
    pub self_l: Histogram,
    /// One-way delays client to server.
    pub up: OneWay,
    /// One-way delays server to client.
    pub down: OneWay,
    /// One-way delays of the test's own data, client to server (UDP datagrams).
    pub data_up: OneWay,
    /// One-way delays of the test's own data, server to client.
    pub data_down: OneWay,
}

impl Samples {
    /// Adds a round trip of `ns` nanoseconds.
    pub fn record(&mut self, kind: Kind, ns: u64) {
        match kind {
            Kind::Idle => self.idle.record(ns),
            Kind::ForeignConnect => self.tcp_f.record(ns),
            Kind::ForeignTls => self.tls_f.record(ns),
            Kind::ForeignRequest => self.req_f.record(ns),
            Kind::SelfLoaded => self.self_l.record(ns),
        }
    }

    /// Adds a one-way delay (wall clocks of each end, nanoseconds).
    pub fn record_one_way(&mut self, way: Way, sent_ns: i64, recv_ns: i64) {
        match way {
            Way::Up => self.up.record(sent_ns, recv_ns),
            Way::Down => self.down.record(sent_ns, recv_ns),
        }
    }

    /// Adds the one-way delays of the test's data sent `way`.
    pub fn merge_data(&mut self, way: Way, o: &OneWay) {
        match way {
            Way::Up => self.data_up.merge(o),
            Way::Down => self.data_down.merge(o),
        }
    }

    /// Adds another span's samples.
    pub fn merge(&mut self, o: &Self) {
        self.idle.merge(&o.idle);
        self.tcp_f.merge(&o.tcp_f);
        self.tls_f.merge(&o.tls_f);
        self.req_f.merge(&o.req_f);
        self.self_l.merge(&o.self_l);
        self.up.merge(&o.up);
        self.down.merge(&o.down);
        self.data_up.merge(&o.data_up);
        self.data_down.merge(&o.data_down);
    }

    /// Every loaded round trip, foreign and self.
    pub fn loaded(&self) -> Histogram {
        let mut all = self.foreign();
        all.merge(&self.self_l);
        all
    }

    /// Every foreign round trip: handshakes (TCP, TLS) and requests.
    pub fn foreign(&self) -> Histogram {
        let mut all = self.tcp_f.clone();
        all.merge(&self.tls_f);
        all.merge(&self.req_f);
        all
    }

    /// The figures of these samples.
    pub fn figures(&self) -> Figures {
        Figures {
            idle: self.idle.summary(),
            loaded: self.loaded().summary(),
            foreign: self.foreign().summary(),
            self_loaded: self.self_l.summary(),
            responsiveness: Responsiveness::of(
                &[&self.tcp_f, &self.tls_f, &self.req_f],
                &self.self_l,
            ),
            up: self.up.summary(),
            down: self.down.summary(),
            clock_warning: self.up.warning().or_else(|| self.down.warning()),
            data_up: self.data_up.summary(),
            data_down: self.data_down.summary(),
            data_clock_warning: self
                .data_up
                .data_warning(true)
                .or_else(|| self.data_down.data_warning(false)),
        }
    }
}

/// The printed figures of a span.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Round trips before the load (empty in intervals).
    pub idle: Summary,
    /// Every loaded round trip.
    pub loaded: Summary,
    /// Foreign probes (handshakes and requests).
    pub foreign: Summary,
    /// Self probes.
    pub self_loaded: Summary,
    /// RPM by the method's formula.
    pub responsiveness: Responsiveness,
    /// One-way delays client to server (empty when not measured).
    pub up: Summary,
    /// One-way delays server to client.
    pub down: Summary,
    /// Set when a negative one-way delay showed the clocks disagree.
    pub clock_warning: Option<String>,
    /// One-way delays of the test's data client to server (empty when not measured).
    pub data_up: Summary,
    /// One-way delays of the test's data server to client.
    pub data_down: Summary,
    /// Set when a negative data delay showed the clocks disagree; says which way.
    pub data_clock_warning: Option<String>,
}

/// Samples per interval and for the whole test.
#[derive(Clone, Debug, Default)]
pub struct Collector {
    interval: Samples,
    total: Samples,
}

impl Collector {
    /// Nothing collected.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a round trip.
    pub fn record(&mut self, kind: Kind, ns: u64) {
        self.interval.record(kind, ns);
        self.total.record(kind, ns);
    }

    /// Adds a one-way delay.
    pub fn record_one_way(&mut self, way: Way, sent_ns: i64, recv_ns: i64) {
        self.interval.record_one_way(way, sent_ns, recv_ns);
        self.total.record_one_way(way, sent_ns, recv_ns);
    }

    /// Adds the one-way delays of the test's data sent `way`.
    pub fn merge_data(&mut self, way: Way, o: &OneWay) {
        self.interval.merge_data(way, o);
        self.total.merge_data(way, o);
    }

    /// Adds samples gathered elsewhere (the other end's, or another thread's).
    pub fn merge(&mut self, s: &Samples) {
        self.interval.merge(s);
        self.total.merge(s);
    }

    /// The interval's samples; the next interval starts empty.
    pub fn take_interval(&mut self) -> Samples {
        std::mem::take(&mut self.interval)
    }

    /// The whole test's samples.
    pub fn total(&self) -> &Samples {
        &self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_reset_and_the_total_keeps_everything() {
        let mut c = Collector::new();
        c.record(Kind::Idle, 50_000);
        c.record(Kind::ForeignConnect, 10_000_000);
        let first = c.take_interval().figures();
        assert_eq!(first.idle.count, 1);
        assert_eq!(first.loaded.count, 1);
        c.record(Kind::SelfLoaded, 30_000_000);
        c.record(Kind::ForeignRequest, 20_000_000);
        let second = c.take_interval().figures();
        assert_eq!((second.idle.count, second.loaded.count), (0, 2));
        assert_eq!(second.foreign.count, 1);
        assert_eq!(second.self_loaded.count, 1);
        let total = c.total().figures();
        assert_eq!(total.loaded.count, 3);
        assert_eq!(total.loaded.max_ms, 30.0);
        // Foreign (10 + 20) / 2 = 15 ms -> 4000 RPM; self 30 ms -> 2000; mean 3000.
        assert!((total.responsiveness.rpm - 3000.0).abs() < 5.0);
    }

    #[test]
    fn one_way_delays_per_direction_with_the_clock_warning() {
        let mut c = Collector::new();
        c.record_one_way(Way::Up, 0, 5_000_000);
        c.record_one_way(Way::Down, 10, 0);
        let f = c.total().figures();
        assert_eq!((f.up.count, f.down.count), (1, 0));
        assert!(f.clock_warning.is_some());
    }

    #[test]
    fn data_delays_are_kept_apart_from_the_probes() {
        let mut c = Collector::new();
        let mut d = OneWay::new();
        d.record(0, 9_000_000);
        c.merge_data(Way::Up, &d);
        let mut late = OneWay::new();
        late.record(1_000_000_000, 0);
        c.merge_data(Way::Down, &late);
        let f = c.take_interval().figures();
        assert_eq!((f.up.count, f.data_up.count, f.data_up.p50_ms), (0, 1, 9.0));
        assert_eq!(f.clock_warning, None);
        assert!(f.data_clock_warning.unwrap().contains("server to client"));
        assert_eq!(c.total().figures().data_up.count, 1);
        assert_eq!(c.take_interval().figures().data_up.count, 0);
    }
}
