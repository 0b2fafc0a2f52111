//! `--bounceback` and its options: the sizes, hold, period and load of the
//! round-trip test, and the throughput-test options it cannot honour (its
//! streams are client-to-server TCP request loops; `--bounceback-load` sets the
//! direction of the bulk data beside them).

use rperf3_proto::bounceback::{
    BbLoad, BouncebackOffer, BOUNCEBACK_VERSION, DEFAULT_SIZE, MAX_SIZE, MIN_SIZE,
};

use super::error::ParamError;
use super::raw::RawArgs;
use super::table::Opt;
use super::units::parse_size;

/// The longest hold or period: a round trip, not a pause.
const MAX_SECS: f64 = 60.0;

/// Options that change what the streams carry or which way.
const CONFLICTS: &[Opt] = &[
    Opt::Udp,
    Opt::Sctp,
    Opt::Reverse,
    Opt::Bidir,
    Opt::File,
    Opt::Rpm,
    Opt::Bitrate,
];

const OWN: &[Opt] = &[
    Opt::BouncebackRequest,
    Opt::BouncebackReply,
    Opt::BouncebackHold,
    Opt::BouncebackPeriod,
    Opt::BouncebackLoad,
];

fn err(text: impl Into<String>) -> ParamError {
    ParamError::Bounceback(text.into())
}

fn size(raw: &RawArgs, opt: Opt, name: &str) -> Result<u32, ParamError> {
    let Some(t) = raw.text(opt) else {
        return Ok(DEFAULT_SIZE as u32);
    };
    match parse_size(&t) {
        Ok(v) if (MIN_SIZE as f64..=MAX_SIZE as f64).contains(&v) => Ok(v as u32),
        _ => Err(err(format!(
            "--bounceback-{name} must be from {MIN_SIZE} bytes to 1M, not \"{t}\""
        ))),
    }
}

fn seconds_us(raw: &RawArgs, opt: Opt, name: &str) -> Result<u64, ParamError> {
    let Some(t) = raw.text(opt) else {
        return Ok(0);
    };
    match t.trim().parse::<f64>() {
        Ok(s) if (0.0..=MAX_SECS).contains(&s) => Ok((s * 1e6).round() as u64),
        _ => Err(err(format!(
            "--bounceback-{name} must be a number of seconds from 0 to {MAX_SECS}, not \"{t}\""
        ))),
    }
}

/// The round-trip test's offer, `None` without `--bounceback`.
pub(super) fn config(raw: &RawArgs) -> Result<Option<BouncebackOffer>, ParamError> {
    if !raw.has(Opt::Bounceback) {
        if let Some(o) = raw.first_of(OWN) {
            return Err(err(format!("{} needs --bounceback", o.spelled)));
        }
        return Ok(None);
    }
    if let Some(o) = raw.first_of(CONFLICTS) {
        return Err(err(format!(
            "--bounceback runs TCP request loops from the client ({} cannot be used \
             with it; --bounceback-load adds a load in either direction)",
            o.spelled
        )));
    }
    let load = match raw.text(Opt::BouncebackLoad) {
        None => None,
        Some(t) => Some(BbLoad::parse(t.trim()).ok_or_else(|| {
            err(format!(
                "--bounceback-load takes up, down or bidir, not \"{t}\""
            ))
        })?),
    };
    Ok(Some(BouncebackOffer {
        version: BOUNCEBACK_VERSION,
        request: size(raw, Opt::BouncebackRequest, "request")?,
        reply: size(raw, Opt::BouncebackReply, "reply")?,
        hold_us: seconds_us(raw, Opt::BouncebackHold, "hold")?,
        period_us: seconds_us(raw, Opt::BouncebackPeriod, "period")?,
        load,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{client, fails, param_usage};
    use super::*;

    #[test]
    fn defaults_and_chosen_values_issue18() {
        assert_eq!(client(&["-c", "h"]).bounceback, None);
        let d = client(&["-c", "h", "--bounceback"]).bounceback.unwrap();
        assert_eq!(
            (
                d.version,
                d.request,
                d.reply,
                d.hold_us,
                d.period_us,
                d.load
            ),
            (1, 100, 100, 0, 0, None)
        );
        let c = client(&[
            "-c",
            "h",
            "--bounceback",
            "--bounceback-request=1K",
            "--bounceback-reply",
            "64",
            "--bounceback-hold",
            "0.01",
            "--bounceback-period=0.05",
            "--bounceback-load",
            "down",
            "-P",
            "2",
        ])
        .bounceback
        .unwrap();
        assert_eq!(
            (c.request, c.reply, c.hold_us, c.period_us, c.load),
            (1024, 64, 10_000, 50_000, Some(BbLoad::Down))
        );
    }

    #[test]
    fn bad_values_say_what_is_wanted_issue18() {
        for v in ["7", "2M", "x"] {
            assert_eq!(
                fails(&["-c", "h", "--bounceback", "--bounceback-request", v]),
                param_usage(&format!(
                    "--bounceback-request must be from 8 bytes to 1M, not \"{v}\""
                ))
            );
        }
        for v in ["-1", "61", "soon"] {
            assert_eq!(
                fails(&["-c", "h", "--bounceback", &format!("--bounceback-hold={v}")]),
                param_usage(&format!(
                    "--bounceback-hold must be a number of seconds from 0 to 60, not \"{v}\""
                ))
            );
        }
        assert_eq!(
            fails(&["-c", "h", "--bounceback", "--bounceback-load", "sideways"]),
            param_usage("--bounceback-load takes up, down or bidir, not \"sideways\"")
        );
        assert_eq!(
            fails(&["-c", "h", "--bounceback-period", "1"]),
            param_usage("--bounceback-period needs --bounceback")
        );
    }

    #[test]
    fn udp_and_other_directions_are_refused_issue18() {
        for typed in ["-u", "-R", "--bidir", "--rpm"] {
            assert_eq!(
                fails(&["-c", "h", "--bounceback", typed]),
                param_usage(&format!(
                    "--bounceback runs TCP request loops from the client ({typed} cannot \
                     be used with it; --bounceback-load adds a load in either direction)"
                ))
            );
        }
        // The end conditions and the output options apply.
        let c = client(&["-c", "h", "--bounceback", "-n", "10K", "-J", "--latency"]);
        assert!(c.bounceback.is_some());
    }
}
