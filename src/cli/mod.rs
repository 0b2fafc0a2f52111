//! The command line: argv in, a typed `Config` (or help, or version) out.
//!
//! iperf3 users and scripts rely on its exact command line, so this layer follows
//! iperf3 3.21: getopt_long parsing over one table of options ([`table`]), the
//! arguments as typed ([`raw`]), then iperf3's checks and messages while building
//! the `Config` ([`validate`]).

mod auth;
mod bounceback;
mod commands;
mod complete;
mod error;
mod getopt;
mod help;
mod man;
mod qos;
mod raw;
mod rpm;
mod table;
pub(crate) mod units;
mod validate;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_peers;
#[cfg(test)]
mod tests_props;

use std::ffi::OsString;
use std::fmt;

use rperf3_app::config::Config;

use self::getopt::{Getopt, Item};
use self::table::Opt;

pub(crate) use self::auth::{load as load_auth, Loaded as LoadedAuth};
pub(crate) use self::commands::{Generate, PlotArgs};
pub(crate) use self::help::{help_text, version_text};
pub(crate) use self::raw::RawArgs;

/// A parsed command line that runs a test or a server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Invocation {
    pub(crate) config: Config,
    /// Complete lines for stderr, e.g. `warning: Report format (-f) flag ignored
    /// with JSON output (-J)`.
    pub(crate) warnings: Vec<String>,
    /// Complete lines for stdout: iperf3 prints its `--no-fq-socket-pacing`
    /// deprecation there.
    pub(crate) notices: Vec<String>,
    /// The arguments as typed, for settings `Config` has no field for.
    pub(crate) raw: RawArgs,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Command {
    /// Run (boxed: it is much larger than the other variants).
    Run(Box<Invocation>),
    /// `-h`: print this text on stdout and exit 0.
    Help(String),
    /// `-v`: print [`version_text`] on stdout and exit 0.
    Version,
    /// `plot`: draw runs from JSON output.
    Plot(PlotArgs),
    /// `--generate KIND`: print this text (a man page, a completion script).
    Generate(String),
}

/// A bad command line: print `message` on stderr as is, exit with `status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    /// The full stderr text, newlines included.
    pub(crate) message: String,
    /// The exit status (1, as iperf3).
    pub(crate) status: i32,
    /// iperf3's error number for parameter errors, if it has one.
    pub(crate) code: Option<i32>,
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

impl CliError {
    fn getopt(prog: &str, e: &getopt::GetoptError) -> Self {
        Self {
            message: error::getopt_text(prog, e),
            status: 1,
            code: None,
        }
    }

    fn param(prog: &str, e: &error::ParamError) -> Self {
        Self {
            message: error::param_text(prog, e),
            status: 1,
            code: e.code(),
        }
    }
}

/// The text `--generate` prints.
pub(crate) fn generate(kind: Generate) -> String {
    match kind {
        Generate::Man => man::man_page(),
        Generate::Bash => complete::bash(),
        Generate::Zsh => complete::zsh(),
        Generate::Fish => complete::fish(),
    }
}

/// Parses the arguments after the program name. `prog` (argv\[0\]'s basename)
/// names the program in messages and in the help.
///
/// Like iperf3, acts on options in order: the first error, `-h` or `-v` decides.
pub(crate) fn parse(prog: &str, args: &[OsString]) -> Result<Command, CliError> {
    match args.first().and_then(|a| a.to_str()) {
        Some("plot") => {
            return Ok(match commands::parse_plot(prog, &args[1..])? {
                commands::PlotCommand::Run(p) => Command::Plot(p),
                commands::PlotCommand::Help(h) => Command::Help(h),
            })
        }
        Some(a) if a == "--generate" || a.starts_with("--generate=") => {
            return Ok(Command::Generate(generate(commands::parse_generate(
                prog, args,
            )?)));
        }
        _ => {}
    }
    let mut raw = RawArgs::default();
    for item in Getopt::new(args) {
        match item.map_err(|e| CliError::getopt(prog, &e))? {
            Item::Operand(o) => raw.operands.push(o),
            Item::Opt(occ) => {
                match occ.spec.id {
                    Opt::Help => return Ok(Command::Help(help_text(prog))),
                    Opt::Version => return Ok(Command::Version),
                    _ => {}
                }
                validate::check_occurrence(&raw, &occ).map_err(|e| CliError::param(prog, &e))?;
                raw.occurrences.push(occ);
            }
        }
    }
    let (config, warnings) = validate::finish(&raw).map_err(|e| CliError::param(prog, &e))?;
    let notices = if raw.has(Opt::NoFqSocketPacing) {
        vec!["Warning:  --no-fq-socket-pacing is deprecated".to_string()]
    } else {
        Vec::new()
    };
    Ok(Command::Run(Box::new(Invocation {
        config,
        warnings,
        notices,
        raw,
    })))
}
