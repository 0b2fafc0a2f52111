//! A test's line without `-J`: one line a person reads at a glance.

use rperf3_mesh::record::TestRecord;

/// `n1 -> n2  ok  941 Mbits/sec  0 retransmits  loaded p50/p99 1.203/2.110 ms  idle 0.051 ms  4521 RPM`
pub(crate) fn line(rec: &TestRecord) -> String {
    let time = crate::logger::utc((rec.start * 1000.0) as u64);
    let head = format!(
        "{time} {} -> {}  {}",
        rec.source,
        rec.destination,
        rec.outcome.label()
    );
    let Some(f) = &rec.figures else {
        return match &rec.error {
            Some(e) => format!("{head}: {e}"),
            None => head,
        };
    };
    let mut s = format!(
        "{head}  {}",
        rperf3_report::units::rate(f.throughput_bps / 8.0, 'a').trim_start()
    );
    if let Some(r) = f.retransmits {
        s.push_str(&format!("  {r} retransmits"));
    }
    if let (Some(l), Some(j)) = (f.lost_percent, f.jitter_ms) {
        s.push_str(&format!("  {l:.3}% lost  jitter {j:.3} ms"));
    }
    s.push_str(&format!(
        "  loaded p50/p99 {:.3}/{:.3} ms  idle {:.3} ms  {:.0} RPM",
        f.loaded_p50_s * 1000.0,
        f.loaded_p99_s * 1000.0,
        f.idle_p50_s * 1000.0,
        f.rpm
    ));
    if let Some(e) = &rec.error {
        s.push_str(&format!(" ({e})"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rperf3_mesh::record::{Figures, Outcome};

    #[test]
    fn a_line_holds_the_figures_or_the_reason() {
        let mut rec = TestRecord {
            source: "n1".into(),
            destination: "n2".into(),
            cycle: 0,
            slot: 0,
            start: 1_764_000_000.25,
            end: 1_764_000_011.0,
            outcome: Outcome::Ok,
            error: None,
            figures: Some(Figures {
                protocol: "tcp",
                throughput_bps: 941e6,
                bytes_sent: 1,
                retransmits: Some(3),
                rpm: 4521.4,
                latency: serde_json::json!({}),
                loaded_p50_s: 0.001203,
                loaded_p99_s: 0.00211,
                idle_p50_s: 0.000051,
                lost_percent: None,
                jitter_ms: None,
                lost_packets: None,
                packets: None,
            }),
        };
        assert_eq!(
            line(&rec),
            "2025-11-24T16:00:00.250Z n1 -> n2  ok  941 Mbits/sec  3 retransmits  \
             loaded p50/p99 1.203/2.110 ms  idle 0.051 ms  4521 RPM"
        );
        rec.outcome = Outcome::Unreachable;
        rec.figures = None;
        rec.error = Some("unable to connect to server: Connection refused".into());
        assert!(line(&rec)
            .ends_with("n1 -> n2  unreachable: unable to connect to server: Connection refused"));
    }
}
