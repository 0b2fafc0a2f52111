//! rperf3's commands beside iperf3's options: `plot` and `--generate`.
//!
//! They are recognised only as the first argument, spelled out, so iperf3's
//! command line is untouched: no option name is added to getopt's table, where
//! it would make iperf3 abbreviations such as `--ge` (`--get-server-output`)
//! ambiguous. The help, the man page and the completions read the lists here.

use std::ffi::OsString;
use std::path::PathBuf;

use super::CliError;

/// One command, as the help and the man page show it.
pub(crate) struct CommandSpec {
    pub(crate) usage: &'static str,
    pub(crate) help: &'static str,
}

/// Every command, in help order.
pub(crate) static COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        usage: "plot RUN.json [MORE.json ...] [-o FILE.svg]",
        help: "draw runs from -J or --json-stream output, or mesh -J lines, as an SVG",
    },
    CommandSpec {
        usage: "--generate man|complete-bash|complete-zsh|complete-fish",
        help: "print the man page or a shell completion script",
    },
    CommandSpec {
        usage: "iperf2 [iperf 2 options]",
        help:
            "speak iperf 2 as version 2.2.1 does: options, outputs, protocol; a link named iperf does too",
    },
    CommandSpec {
        usage: "mesh --peers FILE|--peers-dns NAME|--peers-k8s SERVICE [options]",
        help: "a fleet agent: serves tests and tests every other member on a shared schedule",
    },
];

/// What `--generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
}

/// `--generate`'s arguments, with what each means.
pub(crate) static GENERATE_KINDS: &[(&str, Generate)] = &[
    ("man", Generate::Man),
    ("complete-bash", Generate::Bash),
    ("complete-zsh", Generate::Zsh),
    ("complete-fish", Generate::Fish),
];

/// An option of `plot`: short letter, long name, argument, help.
pub(crate) struct PlotOpt {
    pub(crate) short: Option<char>,
    pub(crate) long: &'static str,
    pub(crate) metavar: &'static str,
    pub(crate) help: &'static str,
}

/// `plot`'s options, for its help, the man page and the completions.
pub(crate) static PLOT_OPTIONS: &[PlotOpt] = &[
    PlotOpt {
        short: Some('o'),
        long: "output",
        metavar: "FILE",
        help: "write the SVG to FILE (default: the first input with .svg; - for stdout)",
    },
    PlotOpt {
        short: None,
        long: "title",
        metavar: "TEXT",
        help: "title of the plot (default: the file name, or \"N runs compared\")",
    },
    PlotOpt {
        short: Some('h'),
        long: "help",
        metavar: "",
        help: "print this help and exit",
    },
];

/// A parsed `rperf3 plot` command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PlotArgs {
    /// Inputs in order; `-` is stdin.
    pub(crate) inputs: Vec<PathBuf>,
    /// Where the SVG goes; `-` is stdout.
    pub(crate) output: PathBuf,
    pub(crate) title: Option<String>,
}

/// The help of `rperf3 plot`.
pub(crate) fn plot_help(prog: &str) -> String {
    let mut out = format!(
        "Usage: {prog} plot [options] RUN.json [MORE.json ...]\n\n\
         Draws throughput per interval (each stream and their sum), then TCP\n\
         retransmits, congestion window and RTT, or UDP loss and jitter, from the\n\
         -J or --json-stream output of rperf3 or iperf3 (client or server side).\n\
         Several runs in one plot compare their sums.\n\n\
         The JSON lines of `{prog} mesh -J` (several agents' files, or one file of\n\
         them concatenated) draw as a mesh instead: matrices of throughput, loaded\n\
         latency p50 and, for UDP, loss, a row per source and a column per\n\
         destination, each cell the pair's latest test (or why it did not run),\n\
         and the worst pairs listed; titled \"Mesh: N nodes, M tests\" by default.\n\
         A plot shows runs or mesh lines, not both.\n\n"
    );
    for o in PLOT_OPTIONS {
        let names = match o.short {
            Some(c) => format!("-{c}, --{}", o.long),
            None => format!("--{}", o.long),
        };
        let usage = format!("{names} {}", o.metavar);
        out.push_str(&format!("  {usage:<26}{}\n", o.help));
    }
    out
}

fn plot_error(prog: &str, msg: &str) -> CliError {
    CliError {
        message: format!("{prog}: plot: {msg}\nTry `{prog} plot --help' for more information.\n"),
        status: 1,
        code: None,
    }
}

/// What `plot`'s arguments ask for: a plot, or its help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PlotCommand {
    Run(PlotArgs),
    Help(String),
}

/// Parses the arguments after `plot`.
pub(crate) fn parse_plot(prog: &str, args: &[OsString]) -> Result<PlotCommand, CliError> {
    let mut inputs = Vec::new();
    let mut output: Option<PathBuf> = None;
    let mut title = None;
    let mut it = args.iter();
    let mut only_operands = false;
    while let Some(arg) = it.next() {
        let text = arg.to_string_lossy();
        if only_operands || text == "-" || !text.starts_with('-') {
            inputs.push(PathBuf::from(arg));
            continue;
        }
        let (name, attached) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_string(), Some(OsString::from(v))),
            _ if !text.starts_with("--") && text.len() > 2 => {
                (text[..2].to_string(), Some(OsString::from(&text[2..])))
            }
            _ => (text.to_string(), None),
        };
        let mut value = |what: &str| match attached.clone().or_else(|| it.next().cloned()) {
            Some(v) => Ok(v),
            None => Err(plot_error(
                prog,
                &format!("option '{what}' requires an argument"),
            )),
        };
        match name.as_str() {
            "--" => only_operands = true,
            "-h" | "--help" => return Ok(PlotCommand::Help(plot_help(prog))),
            "-o" | "--output" => output = Some(PathBuf::from(value(&name)?)),
            "--title" => title = Some(value(&name)?.to_string_lossy().into_owned()),
            _ => return Err(plot_error(prog, &format!("unknown option '{text}'"))),
        }
    }
    let Some(first) = inputs.first() else {
        return Err(plot_error(
            prog,
            "no input file (a -J or --json-stream output)",
        ));
    };
    let output = match output {
        Some(o) => o,
        None if first.as_os_str() == "-" => PathBuf::from("-"),
        None => first.with_extension("svg"),
    };
    if output.as_os_str() != "-" && inputs.contains(&output) {
        return Err(plot_error(
            prog,
            &format!("the output {} is one of the inputs", output.display()),
        ));
    }
    Ok(PlotCommand::Run(PlotArgs {
        inputs,
        output,
        title,
    }))
}

/// Parses `--generate KIND` / `--generate=KIND` (all arguments after the
/// program name; the first is known to start with `--generate`).
pub(crate) fn parse_generate(prog: &str, args: &[OsString]) -> Result<Generate, CliError> {
    let first = args[0].to_string_lossy();
    let kind = match first.strip_prefix("--generate=") {
        Some(k) => Some(k.to_string()),
        None => args.get(1).map(|k| k.to_string_lossy().into_owned()),
    };
    let names: Vec<&str> = GENERATE_KINDS.iter().map(|(n, _)| *n).collect();
    let fail = |msg: String| CliError {
        message: format!("{prog}: {msg} (one of: {})\n", names.join(", ")),
        status: 1,
        code: None,
    };
    let Some(kind) = kind else {
        return Err(fail("option '--generate' requires an argument".to_string()));
    };
    let extra = if first.contains('=') { 1 } else { 2 };
    if args.len() > extra {
        return Err(fail("--generate takes exactly one argument".to_string()));
    }
    GENERATE_KINDS
        .iter()
        .find(|(n, _)| *n == kind)
        .map(|(_, g)| *g)
        .ok_or_else(|| fail(format!("--generate: unknown kind '{kind}'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    fn run(a: &[&str]) -> PlotArgs {
        match parse_plot("p", &argv(a)) {
            Ok(PlotCommand::Run(r)) => r,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn plot_output_defaults_to_the_first_input_as_svg() {
        let r = run(&["runs/a.json", "b.json"]);
        assert_eq!(
            r.inputs,
            [PathBuf::from("runs/a.json"), PathBuf::from("b.json")]
        );
        assert_eq!(r.output, PathBuf::from("runs/a.svg"));
        assert_eq!(run(&["-"]).output, PathBuf::from("-"));
    }

    #[test]
    fn plot_options_in_every_spelling() {
        for a in [
            &["-o", "x.svg", "a.json"][..],
            &["-ox.svg", "a.json"],
            &["a.json", "--output", "x.svg"],
            &["--output=x.svg", "a.json"],
        ] {
            assert_eq!(run(a).output, PathBuf::from("x.svg"), "{a:?}");
        }
        assert_eq!(run(&["--title=T 1", "a"]).title.as_deref(), Some("T 1"));
        assert_eq!(run(&["--", "-o"]).inputs, [PathBuf::from("-o")]);
    }

    #[test]
    fn plot_errors_say_what_is_wrong() {
        let err = |a: &[&str]| parse_plot("p", &argv(a)).unwrap_err().message;
        assert_eq!(
            err(&[]),
            "p: plot: no input file (a -J or --json-stream output)\n\
             Try `p plot --help' for more information.\n"
        );
        assert!(err(&["-x", "a"]).starts_with("p: plot: unknown option '-x'\n"));
        assert!(err(&["a", "-o"]).starts_with("p: plot: option '-o' requires an argument\n"));
        assert!(err(&["a.json", "-o", "a.json"]).contains("is one of the inputs"));
        assert!(matches!(
            parse_plot("p", &argv(&["a", "--help"])),
            Ok(PlotCommand::Help(h)) if h.starts_with("Usage: p plot ")
        ));
    }

    #[test]
    fn generate_kinds() {
        let g = |a: &[&str]| parse_generate("p", &argv(a));
        assert_eq!(g(&["--generate", "man"]), Ok(Generate::Man));
        assert_eq!(g(&["--generate=complete-zsh"]), Ok(Generate::Zsh));
        assert_eq!(
            g(&["--generate", "pdf"]).unwrap_err().message,
            "p: --generate: unknown kind 'pdf' \
             (one of: man, complete-bash, complete-zsh, complete-fish)\n"
        );
        assert!(g(&["--generate"]).is_err());
        assert!(g(&["--generate", "man", "x"]).is_err());
    }
}
