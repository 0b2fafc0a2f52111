//! The interval thread of a set of TCP flows: rows, finals and sums in
//! the order iperf 2 prints them.

use super::*;
use std::sync::Mutex;

#[derive(Default)]
struct Collect(Mutex<Vec<Event2>>);
impl Report2 for Collect {
    fn event(&self, e: Event2) {
        self.0.lock().unwrap().push(e);
    }
}

fn spec(tag: Tag2, dir: Dir, stats: &Arc<FlowStats>) -> FlowSpec {
    FlowSpec {
        tag,
        dir,
        stats: stats.clone(),
        sock: None,
        addrs: None,
    }
}

#[test]
fn two_flows_report_rows_then_finals_then_the_sum() {
    let c = Arc::new(Collect::default());
    let start = Instant::now();
    let iv = Intervals::start(
        c.clone(),
        start,
        Some(Duration::from_millis(100)),
        Some(SumKind::Sum),
    );
    let a = Arc::new(FlowStats::new(800));
    let b = Arc::new(FlowStats::new(800));
    iv.add(1, spec(Tag2::Id(1), Dir::Recv, &a));
    iv.add(2, spec(Tag2::Id(2), Dir::Recv, &b));
    a.read(100);
    b.read(700);
    // Wait for the first interval's rows (an event, not a fixed sleep).
    let t = Instant::now();
    while c.0.lock().unwrap().len() < 3 && t.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(5));
    }
    iv.ender().done(1);
    b.read(50);
    iv.ender().done(2);
    iv.finish();
    let ev = c.0.lock().unwrap();
    let rows: Vec<(&str, Tag2, u64)> = ev
        .iter()
        .map(|e| match e {
            Event2::Interval(r) => ("i", r.tag, r.bytes),
            Event2::Final(r) => ("f", r.tag, r.bytes),
            _ => ("?", Tag2::Id(0), 0),
        })
        .collect();
    assert_eq!(rows[0], ("i", Tag2::Id(1), 100));
    assert_eq!(rows[1], ("i", Tag2::Id(2), 700));
    assert_eq!(rows[2], ("i", Tag2::Sum(2), 800));
    let finals: Vec<_> = rows.iter().filter(|r| r.0 == "f").collect();
    assert_eq!(
        finals,
        [
            &("f", Tag2::Id(1), 100),
            &("f", Tag2::Id(2), 750),
            &("f", Tag2::Sum(2), 850)
        ]
    );
    let Event2::Interval(r) = &ev[0] else {
        panic!()
    };
    assert!((r.end - r.start - 0.1).abs() < 0.01, "{r:?}");
    assert_eq!(
        r.kind,
        RowKind2::TcpRecv(TcpRecv2 {
            reads: 1,
            bins: [1, 0, 0, 0, 0, 0, 0, 0],
            latency: None,
            frames: false,
        })
    );
}

/// A set dropped with a flow that never ended (its worker never ran)
/// still ends, with that flow's final row: nothing waits forever.
#[test]
fn dropping_a_set_ends_flows_that_never_ended() {
    let c = Arc::new(Collect::default());
    let iv = Intervals::start(c.clone(), Instant::now(), None, None);
    let a = Arc::new(FlowStats::new(800));
    iv.add(1, spec(Tag2::Id(1), Dir::Recv, &a));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(iv);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(5))
        .expect("the set ended");
    assert_eq!(c.0.lock().unwrap().len(), 1);
}

#[test]
fn a_single_flow_has_no_sum() {
    let c = Arc::new(Collect::default());
    let iv = Intervals::start(c.clone(), Instant::now(), None, Some(SumKind::Sum));
    let a = Arc::new(FlowStats::new(800));
    iv.add(1, spec(Tag2::Id(1), Dir::Send, &a));
    a.io.add(42);
    iv.ender().done(1);
    iv.finish();
    let ev = c.0.lock().unwrap();
    assert_eq!(ev.len(), 1);
    let Event2::Final(r) = &ev[0] else { panic!() };
    assert_eq!(r.bytes, 42);
    assert!(matches!(
        r.kind,
        RowKind2::TcpSend(TcpSend2 { writes: 1, .. })
    ));
}

/// (kind, tag, bytes, start) of each row event.
fn rows_of(c: &Collect) -> Vec<(&'static str, Tag2, u64, f64)> {
    c.0.lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            Event2::Interval(r) => Some(("i", r.tag, r.bytes, r.start)),
            Event2::Final(r) => Some(("f", r.tag, r.bytes, r.start)),
            _ => None,
        })
        .collect()
}

/// Flows that end well into an interval (a receiver whose sender stopped
/// just before a tick) print that partial interval, then their final, and
/// the sum's partial row adds them up, as 2.2.1's reporter does; the set's
/// times began 5 s ago with a 10 s interval, so no tick comes between.
#[test]
fn flows_ending_past_a_quarter_interval_print_the_partial_interval() {
    let c = Arc::new(Collect::default());
    let start = Instant::now() - Duration::from_secs(5);
    let iv = Intervals::start(
        c.clone(),
        start,
        Some(Duration::from_secs(10)),
        Some(SumKind::Sum),
    );
    let a = Arc::new(FlowStats::new(800));
    let b = Arc::new(FlowStats::new(800));
    iv.add(1, spec(Tag2::Id(1), Dir::Recv, &a));
    iv.add(2, spec(Tag2::Id(2), Dir::Recv, &b));
    a.read(100);
    b.read(700);
    iv.ender().done(1);
    iv.ender().done(2);
    iv.finish();
    let rows: Vec<_> = rows_of(&c).iter().map(|r| (r.0, r.1, r.2)).collect();
    assert_eq!(
        rows,
        [
            ("i", Tag2::Id(1), 100),
            ("f", Tag2::Id(1), 100),
            ("i", Tag2::Id(2), 700),
            ("f", Tag2::Id(2), 700),
            ("i", Tag2::Sum(2), 800),
            ("f", Tag2::Sum(2), 800),
        ]
    );
}

/// A flow that ends within the first quarter of an interval prints no
/// partial row (2.2.1 leaves out a partial interval of 25% of -i or less).
#[test]
fn a_short_partial_interval_is_left_out() {
    let c = Arc::new(Collect::default());
    let start = Instant::now() - Duration::from_secs(1);
    let iv = Intervals::start(c.clone(), start, Some(Duration::from_secs(10)), None);
    let a = Arc::new(FlowStats::new(800));
    iv.add(1, spec(Tag2::Id(1), Dir::Recv, &a));
    a.read(100);
    iv.ender().done(1);
    iv.finish();
    let rows: Vec<_> = rows_of(&c).iter().map(|r| (r.0, r.2, r.3)).collect();
    assert_eq!(rows, [("f", 100, 0.0)]);
}
