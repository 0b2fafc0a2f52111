//! `RawArgs`: the command line as typed, before any meaning is given to it.
//!
//! It keeps every option occurrence in order with its text value, and the operands
//! iperf3 ignores. Validation reads it to build the typed `Config`; values of options
//! the `Config` has no place for yet stay available here.

use std::ffi::OsString;

use super::getopt::Occurrence;
use super::table::Opt;

/// Everything that was typed, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawArgs {
    /// Each option as met, repeats included.
    pub(crate) occurrences: Vec<Occurrence>,
    /// Non-option arguments (iperf3 accepts and ignores them).
    pub(crate) operands: Vec<OsString>,
}

impl RawArgs {
    /// The last occurrence of an option: for iperf3, the last one wins.
    pub(crate) fn last(&self, opt: Opt) -> Option<&Occurrence> {
        self.occurrences.iter().rev().find(|o| o.spec.id == opt)
    }

    /// The first occurrence of any of `opts` (the one an error names).
    pub(crate) fn first_of(&self, opts: &[Opt]) -> Option<&Occurrence> {
        self.occurrences.iter().find(|o| opts.contains(&o.spec.id))
    }

    /// The last occurrence of any of `opts`: of options that set one thing,
    /// the last one wins.
    pub(crate) fn last_of(&self, opts: &[Opt]) -> Option<&Occurrence> {
        self.occurrences
            .iter()
            .rev()
            .find(|o| opts.contains(&o.spec.id))
    }

    /// Whether the option was given at all.
    pub(crate) fn has(&self, opt: Opt) -> bool {
        self.last(opt).is_some()
    }

    /// The last value of an option, as text (invalid UTF-8 replaced).
    pub(crate) fn text(&self, opt: Opt) -> Option<String> {
        self.last(opt)?
            .value
            .as_ref()
            .map(|v| v.to_string_lossy().into_owned())
    }

    /// The last value of an option, as given (for paths).
    pub(crate) fn os(&self, opt: Opt) -> Option<&OsString> {
        self.last(opt)?.value.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::table::spec;

    fn occ(opt: Opt, v: Option<&str>) -> Occurrence {
        Occurrence {
            spec: spec(opt),
            value: v.map(OsString::from),
            spelled: format!("--{}", spec(opt).long),
        }
    }

    #[test]
    fn last_occurrence_wins() {
        let raw = RawArgs {
            occurrences: vec![
                occ(Opt::Port, Some("1")),
                occ(Opt::Udp, None),
                occ(Opt::Port, Some("2")),
            ],
            operands: vec![],
        };
        assert_eq!(raw.text(Opt::Port).as_deref(), Some("2"));
        assert!(raw.has(Opt::Udp));
        assert!(!raw.has(Opt::Reverse));
        assert_eq!(raw.text(Opt::Udp), None);
        assert_eq!(raw.os(Opt::Port), Some(&OsString::from("2")));
    }
}
