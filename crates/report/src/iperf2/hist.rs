//! iperf 2's latency histogram line (`BB8(f)-PDF: bin(w=100us):cnt(20)=1:19,3:1
//! (5.00/95.00/99.7%=1/3/3,Outliers=0,obl/obu=0/0)`): the latency core's
//! samples counted into fixed-width bins. Binning is layout; the samples and
//! the outlier count come from the core.

use super::model::Hist2;
use super::rows::tag;
use std::time::UNIX_EPOCH;

use super::units::interval;

/// The bin (1-based) a value of `ns` falls in.
fn bin(ns: u64, width: u64) -> u64 {
    ns / width.max(1) + 1
}

/// The line for `h`.
pub(crate) fn line(h: &Hist2) -> String {
    let mut bins: Vec<(u64, u64)> = Vec::new();
    for &(v, n) in &h.buckets {
        let b = bin(v, h.bin_ns);
        match bins.last_mut() {
            Some((last, c)) if *last == b => *c += n,
            _ => bins.push((b, n)),
        }
    }
    let total: u64 = bins.iter().map(|b| b.1).sum();
    // The first bin whose running count passes the share, as 2.2.1 prints.
    let at = |q: f64| {
        let want = total as f64 * q;
        let mut run = 0;
        bins.iter()
            .find(|(_, c)| {
                run += c;
                run as f64 > want
            })
            .or(bins.last())
            .map_or(0, |b| b.0)
    };
    let list: Vec<String> = bins.iter().map(|(b, c)| format!("{b}:{c}")).collect();
    // Whole milliseconds show as such (`w=1ms`), anything else in µs.
    let width = if h.bin_ns >= 1_000_000 && h.bin_ns.is_multiple_of(1_000_000) {
        format!("{}ms", h.bin_ns / 1_000_000)
    } else {
        format!("{}us", h.bin_ns / 1000)
    };
    let mut s = format!(
        "{}{} sec{}{}-PDF: bin(w={width}):cnt({total})={} (5.00/95.00/99.7%={}/{}/{},Outliers={},obl/obu=0/0)",
        tag(h.tag),
        interval(h.start, h.end),
        // A bounceback client's line has two spaces; receivers' and
        // writers' lines (with or without their largest value) one.
        if h.max_at.is_none() && h.name.starts_with("BB") { "  " } else { " " },
        h.name,
        list.join(","),
        at(0.05),
        at(0.95),
        at(0.997),
        h.outliers
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
        let mut buckets = vec![(17_000, 5), (40_000, 14)];
        buckets.push((218_000, 1));
        let h = Hist2 {
            tag: Tag2::Id(1),
            start: 0.0,
            end: 2.0,
            name: "BB8(f)".into(),
            bin_ns: 100_000,
            buckets,
            outliers: 0,
            max_at: None,
        };
        assert_eq!(
            line(&h),
            "[  1] 0.00-2.00 sec  BB8(f)-PDF: bin(w=100us):cnt(20)=1:19,3:1 \
             (5.00/95.00/99.7%=1/3/3,Outliers=0,obl/obu=0/0)"
        );
    }
}
