//! iperf 2's latency histogram line (`BB8(f)-PDF: bin(w=100us):cnt(20)=1:19,3:1
//! (5.00/95.00/99.7%=1/3/3,Outliers=0,obl/obu=0/0)`): the latency core's
//! bins, shares, outliers and overflow counts, laid out.

use super::model::Hist2;
use super::rows::tag;
use std::time::UNIX_EPOCH;

use super::units::interval;

/// The line for `h`.
pub(crate) fn line(h: &Hist2) -> String {
    let b = &h.bins;
    let list: Vec<String> = b.bins.iter().map(|(b, c)| format!("{b}:{c}")).collect();
    // 2.2.1 drops the last character of its list: a comma, or with no samples
    // in any bin, the `=` before it.
    let list = if list.is_empty() {
        String::new()
    } else {
        format!("={}", list.join(","))
    };
    // Whole milliseconds show as such (`w=1ms`), anything else in µs.
    let width = if b.width_ns >= 1_000_000 && b.width_ns.is_multiple_of(1_000_000) {
        format!("{}ms", b.width_ns / 1_000_000)
    } else {
        format!("{}us", b.width_ns / 1000)
    };
    let mut s = format!(
        "{}{} sec{}{}-PDF: bin(w={width}):cnt({}){} (5.00/95.00/99.7%={}/{}/{},Outliers={},obl/obu={}/{})",
        tag(h.tag),
        interval(h.start, h.end),
        // A bounceback client's line has two spaces; receivers' and
        // writers' lines (with or without their largest value) one.
        if h.max_at.is_none() && h.name.starts_with("BB") { "  " } else { " " },
        h.name,
        b.count,
        list,
        b.shares[0],
        b.shares[1],
        b.shares[2],
        b.outliers,
        b.below,
        b.above,
    );
    if let Some((max, t)) = h.max_at {
        let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
        s.push_str(&format!(
            " ({:.3} ms/{}.{:06})",
            max as f64 * 1e-6,
            d.as_secs(),
            d.subsec_micros()
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf2::model::Tag2;

    /// The 2.2.1 capture `tcp-bounceback`: 19 round trips under 100 µs and one
    /// between 200 and 300 µs.
    #[test]
    fn bins_and_shares_as_2_2_1() {
        let buckets = [(17_000, 5), (40_000, 14), (218_000, 1)];
        let h = Hist2 {
            tag: Tag2::Id(1),
            start: 0.0,
            end: 2.0,
            name: "BB8(f)".into(),
            bins: rperf3_latency::Binned::of(&buckets, 0, 100_000, 100_000),
            max_at: None,
        };
        assert_eq!(
            line(&h),
            "[  1] 0.00-2.00 sec  BB8(f)-PDF: bin(w=100us):cnt(20)=1:19,3:1 \
             (5.00/95.00/99.7%=1/3/3,Outliers=0,obl/obu=0/0)"
        );
    }
}
