//! The ordered comparison of two iperf 2 outputs by line shape. Lines must
//! come in the same order with the same counts; the only latitude is what two
//! runs of one command legitimately differ in, each named below with why:
//! [`STREAM_ORDER`], [`EARLY_FINAL`], [`CONNECT_ORDER`] and
//! [`OPTIONAL_LINES`]. Everything else (titles, settings, separators, a
//! stream's rows interval by interval, the blocks' order, each block's count)
//! is compared in order.

use super::shape;

/// Rows of one period from different streams compare as a multiset (and are
/// shown sorted).
pub(super) const STREAM_ORDER: &str = "each stream's thread reports on its own, so iperf 2 \
     prints the rows of one interval (or the finals) of its streams in any order (and which \
     ID comes first varies); a [SUM] row still comes after its period's stream rows";

/// A stream's final row may come before other streams' rows of the last
/// interval.
pub(super) const EARLY_FINAL: &str = "a stream that ends before the last tick prints its \
     partial last interval and its final row at its end, before the other streams' rows of \
     that interval (2.2.1: [2] 1.00-2.00, [2] 0.00-2.00, [1] 1.00-2.00, [1] 0.00-2.00, \
     [SUM] 1.00-2.00, [SUM] 0.00-2.00)";

/// Adjacent connection lines compare as a multiset.
pub(super) const CONNECT_ORDER: &str =
    "the streams of a test connect in any order, each printing its own connection line";

/// Lines left out of both sides, each with why.
pub(super) const OPTIONAL_LINES: &[(&str, &str)] = &[
    (
        "[  1] 0.00-1.00 sec  2 datagrams received out-of-order",
        "printed only for an interval in which datagrams arrived out of order, which loopback \
         does now and then (a sender that moves between CPUs), in either program",
    ),
    (
        "Waiting for server threads to complete. Interrupt again to force quit.",
        "printed by a server interrupted while a session's threads are still ending; these \
         tests interrupt the server the moment its client exits, so whether it comes is a race \
         in either program",
    ),
];

/// Where a report row falls: an interval (by its start, in ms) or the
/// final rows; intervals sort before the finals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Period {
    Interval(u64),
    Final,
}

impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Interval(ms) => write!(f, "the interval from {:.2} s", *ms as f64 / 1e3),
            Self::Final => f.write_str("the final rows"),
        }
    }
}

/// One printed line: its number (1-based, among non-empty lines), text and
/// shape.
#[derive(Debug, Clone)]
struct Line<'a> {
    no: usize,
    raw: &'a str,
    shape: String,
}

/// A report row's stream tag and its interval's start and end, in seconds:
/// `[  1] 0.00-1.00 sec ...`, a CSV row (`...,1,0.0-1.0,...`) or an
/// enhanced CSV row (`+0000:...,1,0.0,1.0,...`).
fn row_of(line: &str) -> Option<(String, f64, f64)> {
    if let Some(rest) = line.strip_prefix('[') {
        let (tag, rest) = rest.split_once(']')?;
        let (span, rest) = rest.trim_start().split_once(' ')?;
        if !rest.starts_with("sec") {
            return None;
        }
        let (a, b) = span.split_once('-')?;
        return Some((tag.trim().to_string(), a.parse().ok()?, b.parse().ok()?));
    }
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 9 {
        return None;
    }
    let (a, b) = if f[0].starts_with('+') {
        (f[6], f[7])
    } else {
        f[6].split_once('-')?
    };
    Some((f[5].to_string(), a.parse().ok()?, b.parse().ok()?))
}

/// The period of a row from `start` to `end` when intervals are `every`
/// seconds: the first interval starts at 0 too, so it is told from a final
/// row by its length.
fn period(start: f64, end: f64, every: Option<f64>) -> Period {
    match every {
        Some(i) if start > 0.0005 || (end - i).abs() < 0.0051 => {
            Period::Interval((start * 1000.0).round() as u64)
        }
        _ => Period::Final,
    }
}

/// A line printed with the row before it (a histogram line), not a row.
fn attached(shape: &str) -> bool {
    shape.contains("-PDF:")
}

fn is_sum(tag: &str) -> bool {
    tag.starts_with("SUM") || tag.starts_with("FD")
}

/// A row with the lines attached to it.
struct Entry<'a> {
    tag: String,
    period: Period,
    lines: Vec<Line<'a>>,
}

/// One side's lines in the order they are compared: rows of one run (rows
/// with no other line between them) sorted by period, sums after streams
/// ([`STREAM_ORDER`]); adjacent connection lines sorted ([`CONNECT_ORDER`]);
/// every other line where it was printed. Rows out of the order iperf 2
/// prints them in fail here.
fn canonical(text: &str, every: Option<f64>) -> Result<Vec<Line<'_>>, String> {
    let optional: Vec<String> = OPTIONAL_LINES.iter().map(|(l, _)| shape(l)).collect();
    let lines = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, raw)| Line {
            no: i + 1,
            raw,
            shape: shape(raw),
        })
        .filter(|l| !optional.contains(&l.shape));
    let mut out = Vec::new();
    let mut run: Vec<Entry> = Vec::new();
    let mut connects: Vec<Line> = Vec::new();
    for l in lines {
        if let Some((tag, start, end)) = row_of(l.raw) {
            out.append(&mut sorted_connects(&mut connects));
            match run.last_mut() {
                Some(e) if attached(&l.shape) => e.lines.push(l),
                _ => run.push(Entry {
                    tag,
                    period: period(start, end, every),
                    lines: vec![l],
                }),
            }
            continue;
        }
        out.append(&mut sorted_run(&mut run)?);
        if l.shape.contains(" connected with ") {
            connects.push(l);
        } else {
            out.append(&mut sorted_connects(&mut connects));
            out.push(l);
        }
    }
    out.append(&mut sorted_run(&mut run)?);
    out.append(&mut sorted_connects(&mut connects));
    Ok(out)
}

fn sorted_connects<'a>(c: &mut Vec<Line<'a>>) -> Vec<Line<'a>> {
    let mut c = std::mem::take(c);
    c.sort_by(|a, b| a.shape.cmp(&b.shape));
    c
}

/// Checks a run of rows against the order iperf 2 prints rows in, then sorts
/// it: each stream's rows go interval by interval and then its final, once;
/// periods do not go back, but for [`EARLY_FINAL`]; a sum comes after its
/// period's stream rows.
fn sorted_run<'a>(run: &mut Vec<Entry<'a>>) -> Result<Vec<Line<'a>>, String> {
    let mut run = std::mem::take(run);
    let last_interval = run
        .iter()
        .map(|e| e.period)
        .filter(|p| *p != Period::Final)
        .max();
    let mut high: Option<Period> = None;
    for (i, e) in run.iter().enumerate() {
        let before = &run[..i];
        let bad = |why: String| {
            let l = &e.lines[0];
            Err(format!("line {} `{}`: {why}", l.no, l.raw))
        };
        if let Some(p) = before.iter().rfind(|b| b.tag == e.tag) {
            if p.period >= e.period {
                return bad(format!(
                    "[{}] already printed its row of {} (line {}): a stream's rows go interval \
                     by interval, then its final row, each once",
                    e.tag, p.period, p.lines[0].no
                ));
            }
        }
        if high.is_some_and(|h| e.period < h)
            && !(high == Some(Period::Final) && Some(e.period) == last_interval)
        {
            return bad(format!(
                "a row of {} after rows of a later period (only a final row may come before \
                 the last interval's rows: {EARLY_FINAL})",
                e.period
            ));
        }
        if !is_sum(&e.tag) {
            if let Some(s) = before
                .iter()
                .find(|b| is_sum(&b.tag) && b.period == e.period)
            {
                return bad(format!(
                    "a stream row of {} after its sum (line {}): the sum comes last",
                    e.period, s.lines[0].no
                ));
            }
        }
        high = high.max(Some(e.period));
    }
    run.sort_by(|a, b| {
        let key = |e: &Entry| (e.period, is_sum(&e.tag));
        let shapes = |e: &Entry| e.lines.iter().map(|l| l.shape.clone()).collect::<Vec<_>>();
        key(a).cmp(&key(b)).then_with(|| shapes(a).cmp(&shapes(b)))
    });
    Ok(run.into_iter().flat_map(|e| e.lines).collect())
}

/// Compares `have` (rperf3's output) with `want` (the capture's) in order;
/// `Err` says where they part, with context on each side.
pub(super) fn compare(want: &str, have: &str, every: Option<f64>) -> Result<(), String> {
    let w = canonical(want, every).map_err(|e| format!("the capture's rows: {e}"))?;
    let h = canonical(have, every).map_err(|e| format!("rperf3's rows are out of order: {e}"))?;
    let at = w
        .iter()
        .zip(&h)
        .position(|(a, b)| a.shape != b.shape)
        .unwrap_or(w.len().min(h.len()));
    if at == w.len() && at == h.len() {
        return Ok(());
    }
    let show = |side: &str, v: &[Line]| {
        let mut s = format!(
            "--- {side}, shape: `{}`\n",
            v.get(at).map_or("(end)", |l| &l.shape)
        );
        for (i, l) in v.iter().enumerate().take(at + 4).skip(at.saturating_sub(3)) {
            let mark = if i == at { '>' } else { ' ' };
            s += &format!("{mark} {:3}  {}\n", l.no, l.raw);
        }
        if at >= v.len() {
            s += ">      (end)\n";
        }
        s
    };
    Err(format!(
        "the line shapes part at line {} of the capture and line {} of rperf3's output \
         (rows of one period shown sorted):\n{}{}latitude allowed: rows of one period in any \
         order ({STREAM_ORDER}); connection lines in any order ({CONNECT_ORDER}); a final row \
         before the last interval's rows ({EARLY_FINAL})\n",
        w.get(at).map_or(w.len() + 1, |l| l.no),
        h.get(at).map_or(h.len() + 1, |l| l.no),
        show("capture", &w),
        show("rperf3", &h)
    ))
}

/// Why a run of `every`-second intervals over `secs` seconds shows a stalled
/// machine rather than a layout (an interval row that starts at or after the
/// end of the test, or spans more than one interval: the reporter woke up
/// late), if it does.
pub(super) fn disturbance(text: &str, every: Option<f64>, secs: Option<f64>) -> Option<String> {
    let (i, t) = (every?, secs?);
    text.lines().find_map(|l| {
        let (_, start, end) = row_of(l)?;
        let Period::Interval(_) = period(start, end, Some(i)) else {
            return None;
        };
        (start >= t - 0.005 || end - start > i + 0.015).then(|| format!("`{l}`"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_STREAMS: &str = "\
------------------------------------------------------------
Server listening on TCP port 21280
------------------------------------------------------------
[  1] local 127.0.0.1 port 21280 connected with 127.0.0.1 port 34936
[  2] local 127.0.0.1 port 21280 connected with 127.0.0.1 port 34940
[ ID] Interval       Transfer     Bandwidth
[  2] 0.00-1.00 sec  2.23 GBytes  19.1 Gbits/sec
[  1] 0.00-1.00 sec  2.20 GBytes  18.9 Gbits/sec
[SUM] 0.00-1.00 sec  4.43 GBytes  38.0 Gbits/sec
[  2] 1.00-2.00 sec  2.20 GBytes  18.9 Gbits/sec
[  1] 1.00-2.00 sec  2.23 GBytes  19.2 Gbits/sec
[SUM] 1.00-2.00 sec  4.43 GBytes  38.1 Gbits/sec
[  2] 0.00-2.00 sec  4.43 GBytes  19.0 Gbits/sec
[  1] 0.00-2.00 sec  4.44 GBytes  19.0 Gbits/sec
[SUM] 0.00-2.00 sec  8.87 GBytes  38.1 Gbits/sec
";

    /// `TWO_STREAMS` with its (1-based) lines in the order `order`.
    fn reordered(order: &[usize]) -> String {
        let l: Vec<&str> = TWO_STREAMS.lines().collect();
        order.iter().map(|i| format!("{}\n", l[i - 1])).collect()
    }

    fn all_but(drop: &[usize]) -> Vec<usize> {
        (1..=15).filter(|i| !drop.contains(i)).collect()
    }

    #[test]
    fn the_same_layout_passes() {
        assert_eq!(compare(TWO_STREAMS, TWO_STREAMS, Some(1.0)), Ok(()));
    }

    #[test]
    fn a_missing_interval_row_fails() {
        let have = reordered(&all_but(&[11]));
        let e = compare(TWO_STREAMS, &have, Some(1.0)).unwrap_err();
        assert!(e.contains("part at line 11 of the capture"), "{e}");
    }

    #[test]
    fn a_missing_stream_fails() {
        let have = reordered(&all_but(&[5, 7, 10, 13]));
        assert!(compare(TWO_STREAMS, &have, Some(1.0)).is_err());
    }

    #[test]
    fn a_duplicated_summary_fails() {
        let mut order = all_but(&[]);
        order.push(15);
        let e = compare(TWO_STREAMS, &reordered(&order), Some(1.0)).unwrap_err();
        assert!(
            e.contains("[SUM] already printed its row of the final rows"),
            "{e}"
        );
    }

    #[test]
    fn streams_of_one_interval_in_another_order_pass() {
        let have = reordered(&[1, 2, 3, 5, 4, 6, 8, 7, 9, 10, 11, 12, 14, 13, 15]);
        assert_eq!(compare(TWO_STREAMS, &have, Some(1.0)), Ok(()));
    }

    #[test]
    fn blocks_out_of_order_fail() {
        let have = reordered(&[1, 2, 3, 4, 5, 6, 10, 11, 12, 7, 8, 9, 13, 14, 15]);
        let e = compare(TWO_STREAMS, &have, Some(1.0)).unwrap_err();
        assert!(e.contains("out of order"), "{e}");
        // The last interval after the finals.
        let have = reordered(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 10, 11, 12]);
        assert!(compare(TWO_STREAMS, &have, Some(1.0)).is_err());
        // A title line moved below the first block.
        let have = reordered(&[1, 2, 3, 4, 5, 7, 8, 9, 6, 10, 11, 12, 13, 14, 15]);
        assert!(compare(TWO_STREAMS, &have, Some(1.0)).is_err());
    }

    #[test]
    fn blocks_interleaved_by_stream_fail() {
        let have = reordered(&[1, 2, 3, 4, 5, 6, 7, 10, 8, 11, 9, 12, 13, 14, 15]);
        assert!(compare(TWO_STREAMS, &have, Some(1.0)).is_err());
    }

    #[test]
    fn a_sum_before_its_streams_fails() {
        let have = reordered(&[1, 2, 3, 4, 5, 6, 7, 9, 8, 10, 11, 12, 13, 14, 15]);
        let e = compare(TWO_STREAMS, &have, Some(1.0)).unwrap_err();
        assert!(e.contains("after its sum"), "{e}");
    }

    #[test]
    fn a_stream_that_ended_before_the_last_tick_may_print_its_final_first() {
        let have = reordered(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 11, 14, 12, 15]);
        assert_eq!(compare(TWO_STREAMS, &have, Some(1.0)), Ok(()));
        // But not before the interval before the last.
        let have = reordered(&[1, 2, 3, 4, 5, 6, 7, 13, 8, 9, 10, 11, 14, 12, 15]);
        assert!(compare(TWO_STREAMS, &have, Some(1.0)).is_err());
    }

    #[test]
    fn connection_lines_in_another_order_pass() {
        let have = reordered(&[1, 2, 3, 5, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        assert_eq!(compare(TWO_STREAMS, &have, Some(1.0)), Ok(()));
    }

    #[test]
    fn the_failure_shows_where_the_sides_part() {
        let have = reordered(&all_but(&[15]));
        let e = compare(TWO_STREAMS, &have, Some(1.0)).unwrap_err();
        assert!(e.contains(">  15  [SUM] 0.00-2.00 sec"), "{e}");
        assert!(e.contains(">      (end)"), "{e}");
    }

    #[test]
    fn histogram_lines_go_with_their_row() {
        let want = "\
[  1] 0.00-1.00 sec  6.00 MBytes  50.3 Mbits/sec  49/0
[  1] 0.00-1.00 sec W8-PDF: bin(w=100us):cnt(48)=1:34,2:12 (5.00/95.00/99.7%=1/2/29,Outliers=1,obl/obu=0/0)
[  1] 0.00-2.05 sec  12.1 MBytes  49.7 Mbits/sec  98/0
[  1] 0.00-2.05 sec W8(f)-PDF: bin(w=100us):cnt(97)=1:61 (5.00/95.00/99.7%=1/3/29,Outliers=1,obl/obu=0/0)
";
        assert_eq!(compare(want, want, Some(1.0)), Ok(()));
        let l: Vec<&str> = want.lines().collect();
        let swapped = [l[1], l[0], l[2], l[3]].join("\n");
        assert!(compare(want, &swapped, Some(1.0)).is_err());
    }

    #[test]
    fn csv_rows_have_periods_too() {
        let want = "\
20261125160916,127.0.0.1,36416,127.0.0.1,21370,1,0.0-1.0,2140012608,17120100864
20261125160917,127.0.0.1,36416,127.0.0.1,21370,1,1.0-2.0,2849243136,22793945088
20261125160916,127.0.0.1,36416,127.0.0.1,21370,1,0.0-2.0,4989386816,19815745787
";
        let l: Vec<&str> = want.lines().collect();
        let swapped = [l[1], l[0], l[2]].join("\n");
        assert!(compare(want, &swapped, Some(1.0)).is_err());
        assert_eq!(row_of(l[1]), Some(("1".into(), 1.0, 2.0)));
    }

    #[test]
    fn a_stalled_run_is_told_apart() {
        let t = Some(2.0);
        assert_eq!(disturbance(TWO_STREAMS, Some(1.0), t), None);
        let late = "[  1] 2.00-2.73 sec  1.44 KBytes  16.1 Kbits/sec";
        assert!(disturbance(late, Some(1.0), t).is_some());
        let merged = "[  1] 1.00-3.00 sec  33.9 MBytes   142 Mbits/sec";
        assert!(disturbance(merged, Some(1.0), t).is_some());
        let partial = "[  1] 1.00-1.77 sec  2.25 GBytes  25.1 Gbits/sec";
        assert_eq!(disturbance(partial, Some(1.0), t), None);
    }
}
