//! A getopt_long work-alike over the option table.
//!
//! iperf3 parses with GNU `getopt_long`, and scripts depend on its exact behaviour:
//! unique prefixes of long names, `--opt=value` and `--opt value`, optional values
//! only after `=`, bundled short flags (`-uV`), attached values (`-p5201`), `--`,
//! operands mixed with options (GNU permutation), and glibc's wording of every
//! complaint. No argument-parsing crate reproduces all of that, hence this file.
//!
//! The parser yields options one at a time because iperf3 acts on each option as
//! it meets it: the first error, `-h` or `-v` wins, whatever follows.

use std::ffi::{OsStr, OsString};
use std::fmt;

use super::table::{self, ArgKind, OptSpec};

/// One option as found on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Occurrence {
    pub(crate) spec: &'static OptSpec,
    /// The value, if the option has one here.
    pub(crate) value: Option<OsString>,
    /// The full long name matched (`--bandwidth` for `--band`), or `-b`.
    pub(crate) spelled: String,
}

/// What the parser yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    Opt(Occurrence),
    /// A non-option argument (iperf3 ignores them).
    Operand(OsString),
}

/// glibc's complaints; Display is its text after `<prog>: `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum GetoptError {
    /// `--name[=value]` matches no long option.
    Unrecognized(String),
    /// A short letter that is not an option.
    InvalidShort(char),
    /// A short option at the end of argv without its value.
    ShortNeedsArg(char),
    /// A long option at the end of argv without its value (full long name).
    LongNeedsArg(String),
    /// `--flag=value` for a flag (full long name).
    LongNoArg(String),
    /// An abbreviation of several options: what was typed, then the candidates.
    Ambiguous(String, Vec<&'static str>),
}

impl fmt::Display for GetoptError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unrecognized(s) => write!(f, "unrecognized option '--{s}'"),
            Self::InvalidShort(c) => write!(f, "invalid option -- '{c}'"),
            Self::ShortNeedsArg(c) => write!(f, "option requires an argument -- '{c}'"),
            Self::LongNeedsArg(n) => write!(f, "option '--{n}' requires an argument"),
            Self::LongNoArg(n) => write!(f, "option '--{n}' doesn't allow an argument"),
            Self::Ambiguous(s, names) => {
                write!(f, "option '--{s}' is ambiguous; possibilities:")?;
                for n in names {
                    write!(f, " '--{n}'")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(unix)]
fn bytes_of(s: &OsStr) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    s.as_bytes().to_vec()
}

#[cfg(unix)]
fn os_from(b: &[u8]) -> OsString {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(b).to_os_string()
}

#[cfg(not(unix))]
fn bytes_of(s: &OsStr) -> Vec<u8> {
    s.to_string_lossy().into_owned().into_bytes()
}

#[cfg(not(unix))]
fn os_from(b: &[u8]) -> OsString {
    String::from_utf8_lossy(b).into_owned().into()
}

/// Iterates over the items of an argument list (without the program name).
pub(crate) struct Getopt<'a> {
    args: &'a [OsString],
    /// Next argument to look at.
    next: usize,
    /// Inside a bundle of short options: the bundle's bytes and the position.
    cluster: Option<(Vec<u8>, usize)>,
    /// After `--`: everything left is an operand.
    only_operands: bool,
}

impl<'a> Getopt<'a> {
    pub(crate) fn new(args: &'a [OsString]) -> Self {
        Self {
            args,
            next: 0,
            cluster: None,
            only_operands: false,
        }
    }

    fn take_next_arg(&mut self) -> Option<OsString> {
        let a = self.args.get(self.next)?.clone();
        self.next += 1;
        Some(a)
    }

    fn short(&mut self, bytes: Vec<u8>, pos: usize) -> Result<Item, GetoptError> {
        let byte = bytes[pos];
        let c = char::from(byte);
        let rest = pos + 1;
        let Some(spec) = table::by_short(c).filter(|_| byte.is_ascii()) else {
            if rest < bytes.len() {
                self.cluster = Some((bytes, rest));
            }
            return Err(GetoptError::InvalidShort(display_byte(byte)));
        };
        let spelled = format!("-{c}");
        // Optional values exist only in long form, as in iperf3's optstring.
        if spec.arg != ArgKind::Required {
            if rest < bytes.len() {
                self.cluster = Some((bytes, rest));
            }
            return Ok(Item::Opt(Occurrence {
                spec,
                value: None,
                spelled,
            }));
        }
        let value = if rest < bytes.len() {
            os_from(&bytes[rest..])
        } else {
            self.take_next_arg().ok_or(GetoptError::ShortNeedsArg(c))?
        };
        Ok(Item::Opt(Occurrence {
            spec,
            value: Some(value),
            spelled,
        }))
    }

    fn long(&mut self, body: &[u8]) -> Result<Item, GetoptError> {
        let typed = String::from_utf8_lossy(body).into_owned();
        let eq = body.iter().position(|&b| b == b'=');
        let name = String::from_utf8_lossy(&body[..eq.unwrap_or(body.len())]).into_owned();
        let (matched, spec) = match_long(&name).map_err(|candidates| {
            if candidates.is_empty() {
                GetoptError::Unrecognized(typed.clone())
            } else {
                GetoptError::Ambiguous(typed.clone(), candidates)
            }
        })?;
        let spelled = format!("--{matched}");
        let value = match (eq, spec.arg) {
            (Some(_), ArgKind::None) => return Err(GetoptError::LongNoArg(matched.to_string())),
            (Some(i), _) => Some(os_from(&body[i + 1..])),
            (None, ArgKind::Required) => Some(
                self.take_next_arg()
                    .ok_or_else(|| GetoptError::LongNeedsArg(matched.to_string()))?,
            ),
            (None, _) => None,
        };
        Ok(Item::Opt(Occurrence {
            spec,
            value,
            spelled,
        }))
    }
}

/// glibc prints the offending byte as is; show non-ASCII bytes as U+FFFD.
fn display_byte(b: u8) -> char {
    if b.is_ascii() {
        char::from(b)
    } else {
        char::REPLACEMENT_CHARACTER
    }
}

/// Resolves a long name or abbreviation as glibc does: an exact match wins;
/// otherwise the first prefix match, unless another prefix match is a different
/// option (aliases of the first one do not count). `Err` holds the candidates to
/// list (empty when nothing matches).
fn match_long(name: &str) -> Result<(&'static str, &'static OptSpec), Vec<&'static str>> {
    if let Some(exact) = table::long_names().find(|(n, _)| *n == name) {
        return Ok(exact);
    }
    let mut first: Option<(&'static str, &'static OptSpec)> = None;
    let mut ambiguous: Vec<&'static str> = Vec::new();
    for (n, spec) in table::long_names().filter(|(n, _)| n.starts_with(name)) {
        match first {
            None => first = Some((n, spec)),
            Some((first_name, first_spec)) => {
                if first_spec.id != spec.id {
                    if ambiguous.is_empty() {
                        ambiguous.push(first_name);
                    }
                    ambiguous.push(n);
                }
            }
        }
    }
    match first {
        Some(found) if ambiguous.is_empty() => Ok(found),
        Some(_) => Err(iperf3_candidates(ambiguous)),
        None => Err(Vec::new()),
    }
}

/// An abbreviation iperf3 finds ambiguous lists iperf3's candidates only, as
/// iperf3 does (`--b`), not rperf3's own options beside them.
fn iperf3_candidates(names: Vec<&'static str>) -> Vec<&'static str> {
    let theirs: Vec<&'static str> = names
        .iter()
        .copied()
        .filter(|n| table::long_names().any(|(l, s)| l == *n && !table::is_own(s.id)))
        .collect();
    if theirs.len() >= 2 {
        theirs
    } else {
        names
    }
}

impl Iterator for Getopt<'_> {
    type Item = Result<Item, GetoptError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some((bytes, pos)) = self.cluster.take() {
            return Some(self.short(bytes, pos));
        }
        let arg = self.take_next_arg()?;
        if self.only_operands {
            return Some(Ok(Item::Operand(arg)));
        }
        let bytes = bytes_of(&arg);
        if bytes == b"--" {
            self.only_operands = true;
            return self.next();
        }
        if bytes.len() > 2 && bytes.starts_with(b"--") {
            return Some(self.long(&bytes[2..]));
        }
        if bytes.len() > 1 && bytes[0] == b'-' {
            return Some(self.short(bytes, 1));
        }
        Some(Ok(Item::Operand(arg)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::table::Opt;

    fn args(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    /// (spelled, value) of every item, or the error text.
    fn run(v: &[&str]) -> Result<Vec<(String, Option<String>)>, String> {
        let a = args(v);
        let mut out = Vec::new();
        for item in Getopt::new(&a) {
            match item.map_err(|e| e.to_string())? {
                Item::Opt(o) => {
                    out.push((o.spelled, o.value.map(|v| v.to_string_lossy().into_owned())))
                }
                Item::Operand(v) => out.push(("operand".into(), Some(v.to_string_lossy().into()))),
            }
        }
        Ok(out)
    }

    fn one(spelled: &str, value: Option<&str>) -> (String, Option<String>) {
        (spelled.to_string(), value.map(str::to_string))
    }

    #[test]
    fn bundled_flags_and_attached_values() {
        assert_eq!(
            run(&["-uV", "-p5201", "-c", "h"]).unwrap(),
            vec![
                one("-u", None),
                one("-V", None),
                one("-p", Some("5201")),
                one("-c", Some("h"))
            ]
        );
        // A value-taking letter inside a bundle takes the rest of the bundle.
        assert_eq!(
            run(&["-Rt5"]).unwrap(),
            vec![one("-R", None), one("-t", Some("5"))]
        );
    }

    #[test]
    fn required_values_may_start_with_a_dash() {
        assert_eq!(run(&["-c", "-s"]).unwrap(), vec![one("-c", Some("-s"))]);
        assert_eq!(
            run(&["--title", "--x"]).unwrap(),
            vec![one("--title", Some("--x"))]
        );
    }

    #[test]
    fn long_forms() {
        assert_eq!(
            run(&["--port=7", "--port", "8", "--port="]).unwrap(),
            vec![
                one("--port", Some("7")),
                one("--port", Some("8")),
                one("--port", Some(""))
            ]
        );
    }

    #[test]
    fn unique_prefixes_resolve_to_the_full_name() {
        assert_eq!(
            run(&["--cl", "h"]).unwrap(),
            vec![one("--client", Some("h"))]
        );
        assert_eq!(
            run(&["--band=1M"]).unwrap(),
            vec![one("--bandwidth", Some("1M"))]
        );
        assert_eq!(run(&["--one"]).unwrap(), vec![one("--one-off", None)]);
    }

    #[test]
    fn exact_match_beats_longer_names() {
        assert_eq!(run(&["--json"]).unwrap(), vec![one("--json", None)]);
        assert_eq!(
            run(&["--json-stream"]).unwrap(),
            vec![one("--json-stream", None)]
        );
        assert_eq!(run(&["--version"]).unwrap(), vec![one("--version", None)]);
        assert_eq!(
            run(&["--bind"]).unwrap_err(),
            "option '--bind' requires an argument"
        );
    }

    #[test]
    fn ambiguity_lists_candidates_in_longopts_order_without_aliases_of_the_first() {
        // Real iperf3 output; --bandwidth is an alias of --bitrate, so not listed.
        assert_eq!(
            run(&["--b"]).unwrap_err(),
            "option '--b' is ambiguous; possibilities: '--bitrate' '--bytes' '--blockcount' \
             '--bidir' '--bind' '--bind-dev'"
        );
        assert_eq!(
            run(&["--vers"]).unwrap_err(),
            "option '--vers' is ambiguous; possibilities: '--version' '--version4' '--version6'"
        );
        // The typed text, value included, is echoed.
        assert_eq!(
            run(&["--b=3"]).unwrap_err(),
            "option '--b=3' is ambiguous; possibilities: '--bitrate' '--bytes' '--blockcount' \
             '--bidir' '--bind' '--bind-dev'"
        );
        assert_eq!(
            run(&["--json-s"]).unwrap_err(),
            "option '--json-s' is ambiguous; possibilities: '--json-stream' \
             '--json-stream-full-output'"
        );
    }

    #[test]
    fn aliases_alone_are_not_ambiguous() {
        // "--linux-c" only matches the alias; "--co" is ambiguous between options.
        assert_eq!(
            run(&["--linux-c=x"]).unwrap(),
            vec![one("--linux-congestion", Some("x"))]
        );
        assert_eq!(
            run(&["--con=x"]).unwrap_err(),
            "option '--con=x' is ambiguous; possibilities: '--congestion' '--connect-timeout'"
        );
    }

    #[test]
    fn glibc_error_texts() {
        assert_eq!(run(&["--foo"]).unwrap_err(), "unrecognized option '--foo'");
        assert_eq!(
            run(&["--foo=bar"]).unwrap_err(),
            "unrecognized option '--foo=bar'"
        );
        assert_eq!(run(&["-Q"]).unwrap_err(), "invalid option -- 'Q'");
        assert_eq!(
            run(&["-c"]).unwrap_err(),
            "option requires an argument -- 'c'"
        );
        assert_eq!(
            run(&["--client"]).unwrap_err(),
            "option '--client' requires an argument"
        );
        assert_eq!(
            run(&["--cl"]).unwrap_err(),
            "option '--client' requires an argument"
        );
        assert_eq!(
            run(&["--server=x"]).unwrap_err(),
            "option '--server' doesn't allow an argument"
        );
        assert_eq!(
            run(&["--on=3"]).unwrap_err(),
            "option '--one-off' doesn't allow an argument"
        );
    }

    #[test]
    fn optional_values_only_after_equals() {
        assert_eq!(
            run(&["--debug=2"]).unwrap(),
            vec![one("--debug", Some("2"))]
        );
        assert_eq!(
            run(&["--debug", "2"]).unwrap(),
            vec![one("--debug", None), one("operand", Some("2"))]
        );
        assert_eq!(
            run(&["--timestamps"]).unwrap(),
            vec![one("--timestamps", None)]
        );
        assert_eq!(
            run(&["--timestamps=%H "]).unwrap(),
            vec![one("--timestamps", Some("%H "))]
        );
        assert_eq!(
            run(&["--cntl-ka=1/2/3"]).unwrap(),
            vec![one("--cntl-ka", Some("1/2/3"))]
        );
        // -d takes no value: "-d2" is -d then the unknown option -2.
        let a = args(&["-d2"]);
        let mut it = Getopt::new(&a);
        assert!(matches!(it.next(), Some(Ok(Item::Opt(ref o))) if o.spec.id == Opt::Debug));
        assert_eq!(it.next(), Some(Err(GetoptError::InvalidShort('2'))));
    }

    #[test]
    fn operands_dash_and_double_dash() {
        assert_eq!(
            run(&["foo", "-s", "-", "--", "-u", "--bar"]).unwrap(),
            vec![
                one("operand", Some("foo")),
                one("-s", None),
                one("operand", Some("-")),
                one("operand", Some("-u")),
                one("operand", Some("--bar"))
            ]
        );
    }

    #[test]
    fn empty_list_yields_nothing() {
        assert_eq!(run(&[]).unwrap(), vec![]);
    }

    #[cfg(unix)]
    #[test]
    fn values_keep_non_utf8_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let a = vec![
            OsString::from("--logfile"),
            OsStr::from_bytes(b"f\xff").to_os_string(),
        ];
        let items: Vec<_> = Getopt::new(&a).collect();
        match &items[0] {
            Ok(Item::Opt(o)) => assert_eq!(o.value.as_deref().unwrap().as_bytes(), b"f\xff"),
            other => panic!("{other:?}"),
        }
    }
}
