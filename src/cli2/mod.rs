//! The iperf 2 personality's command line: argv in, a typed [`Config2`] (or
//! help, or version, or iperf 2's complaint) out.
//!
//! Scripts written for iperf 2 rely on its command line, so this follows
//! iperf 2.2.1: its getopt ([`getopt`]) over one table of its options
//! ([`table`]), its lenient numbers ([`units`]), each option acting in order
//! ([`interpret`]), then its cross-checks in its words ([`modal`]). Unlike
//! iperf3, a bad option is a warning and the run goes on; only a few values
//! stop it.

mod env;
mod getopt;
mod help;
mod interpret;
mod modal;
mod table;
mod units;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_latency;

use std::ffi::OsString;

use rperf3_app::iperf2::config::Config2;

pub(crate) use self::help::{man_sections, version_text};

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Run the client or the server.
    Run(Box<Config2>),
    /// Print this on stdout and exit 0 (`--help`, `--version`).
    Print(String),
    /// Exit with this status (the reason is in [`Parsed::stderr`]).
    Exit(i32),
}

/// A parsed command line: the lines for stderr, in order (warnings and
/// complaints, each without its newline), then what to do.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Parsed {
    pub(crate) stderr: Vec<String>,
    pub(crate) action: Action,
}

/// Parses the arguments after the program name, after iperf 2's environment
/// variables; `prog` names the program in getopt's complaints and the usage
/// lines (iperf 2 prints argv\[0\] as typed).
pub(crate) fn parse(prog: &str, args: &[OsString]) -> Parsed {
    parse_with_env(prog, args, &|name| std::env::var(name).ok())
}

/// [`parse`] with the environment given by `env`.
pub(crate) fn parse_with_env(
    prog: &str,
    args: &[OsString],
    env: &dyn Fn(&str) -> Option<String>,
) -> Parsed {
    let mut diag = Vec::new();
    let mut st = interpret::State::default();
    let stop = |step: interpret::Step, diag: Vec<String>| -> Option<Parsed> {
        let action = match step {
            interpret::Step::Continue => return None,
            interpret::Step::Help => Action::Print(help::help_text()),
            interpret::Step::Version => Action::Print(version_text()),
            interpret::Step::Exit(n) => Action::Exit(n),
        };
        Some(Parsed {
            stderr: diag,
            action,
        })
    };
    let step = env::apply(&mut st, env, &mut diag);
    if step != interpret::Step::Continue {
        return stop(step, diag).expect("a stop");
    }
    let (items, operands) = getopt::parse(args);
    for item in items {
        match item {
            getopt::Item::Bad(msg) => diag.push(format!("{prog}: {msg}")),
            getopt::Item::Opt(spec, value) => {
                let step = st.apply(spec, value.as_deref(), &mut diag);
                if step != interpret::Step::Continue {
                    return stop(step, diag).expect("a stop");
                }
            }
        }
    }
    for op in operands {
        diag.push(format!("{prog}: ignoring extra argument -- {op}"));
    }
    let action = match modal::finish(&st, &mut diag) {
        modal::Modal::Run(cfg) => Action::Run(cfg),
        modal::Modal::Usage => {
            diag.extend(help::usage_lines(prog));
            Action::Exit(0)
        }
        modal::Modal::Exit(n) => Action::Exit(n),
    };
    Parsed {
        stderr: diag,
        action,
    }
}
