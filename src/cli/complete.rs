//! `rperf3 --generate complete-bash|complete-zsh|complete-fish`: shell completion
//! scripts written from the option table.
//!
//! Only the options rperf3 implements are offered (the others are refused).
//! What an option's argument completes to is decided here, per option, so the
//! table itself stays what iperf3 defines.

use std::fmt::Write as _;

use super::commands::{COMMANDS, GENERATE_KINDS, PLOT_OPTIONS};
use super::qos::dscp_names;
use super::table::{ArgKind, Opt, OptSpec, OPTIONS};

/// What an option's argument completes to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    /// Free text or a number: nothing to offer.
    Any,
    Words(Vec<&'static str>),
    /// The kernel's available congestion control algorithms, read when completing.
    Congestion,
    File,
    Host,
    Interface,
}

fn value_of(spec: &OptSpec) -> Value {
    match spec.id {
        Opt::Format => Value::Words(vec!["k", "m", "g", "t", "K", "M", "G", "T"]),
        Opt::Congestion => Value::Congestion,
        Opt::Dscp => Value::Words(dscp_names().collect()),
        Opt::Pidfile
        | Opt::File
        | Opt::Logfile
        | Opt::RsaPrivateKeyPath
        | Opt::AuthorizedUsersPath
        | Opt::RsaPublicKeyPath => Value::File,
        Opt::Client | Opt::Bind => Value::Host,
        Opt::BindDev => Value::Interface,
        _ => Value::Any,
    }
}

/// Every spelling of an option that takes a separate argument word.
fn spellings(spec: &OptSpec) -> Vec<String> {
    let mut v: Vec<String> = spec.short.iter().map(|c| format!("-{c}")).collect();
    v.push(format!("--{}", spec.long));
    v.extend(spec.aliases.iter().map(|a| format!("--{a}")));
    v
}

const CONGESTION_SH: &str =
    "$(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null)";

/// The bash script: a `complete -F` function over `COMP_WORDS`.
pub(crate) fn bash() -> String {
    let mut cases = String::new();
    let mut plain = Vec::new();
    for spec in OPTIONS.iter() {
        if spec.arg != ArgKind::Required {
            continue;
        }
        let reply = match value_of(spec) {
            Value::Any => {
                plain.extend(spellings(spec));
                continue;
            }
            Value::Words(w) => format!("compgen -W \"{}\" -- \"$cur\"", w.join(" ")),
            Value::Congestion => format!("compgen -W \"{CONGESTION_SH}\" -- \"$cur\""),
            Value::File => "compgen -f -- \"$cur\"".to_string(),
            Value::Host => "compgen -A hostname -- \"$cur\"".to_string(),
            Value::Interface => {
                "compgen -W \"$(ls /sys/class/net 2>/dev/null)\" -- \"$cur\"".to_string()
            }
        };
        let _ = writeln!(
            cases,
            "        {}) COMPREPLY=($({reply})); return ;;",
            spellings(spec).join("|")
        );
    }
    let _ = writeln!(cases, "        {}) return ;;", plain.join("|"));
    let mut words: Vec<String> = Vec::new();
    for spec in OPTIONS.iter() {
        words.extend(spec.short.iter().map(|c| format!("-{c}")));
        words.push(format!("--{}", spec.long));
        words.extend(spec.aliases.iter().map(|a| format!("--{a}")));
    }
    let plot_words: Vec<String> = PLOT_OPTIONS
        .iter()
        .flat_map(|o| {
            let mut v: Vec<String> = o.short.iter().map(|c| format!("-{c}")).collect();
            v.push(format!("--{}", o.long));
            v
        })
        .collect();
    let mesh_words: Vec<String> = crate::mesh::args::MESH_OPTIONS
        .iter()
        .flat_map(|o| {
            let mut v: Vec<String> = o.short.iter().map(|c| format!("-{c}")).collect();
            v.push(format!("--{}", o.long));
            v
        })
        .collect();
    let kinds: Vec<&str> = GENERATE_KINDS.iter().map(|(k, _)| *k).collect();
    format!(
        r#"# bash completion for rperf3 (rperf3 --generate complete-bash)
_rperf3() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}"
    local prev=""
    (( COMP_CWORD > 0 )) && prev="${{COMP_WORDS[COMP_CWORD-1]}}"
    COMPREPLY=()
    if (( COMP_CWORD > 1 )) && [[ "${{COMP_WORDS[1]}}" == plot ]]; then
        case "$prev" in
            -o|--output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            --title) return ;;
        esac
        if [[ "$cur" == -* ]]; then
            COMPREPLY=($(compgen -W "{plot_words}" -- "$cur"))
        else
            COMPREPLY=($(compgen -f -- "$cur"))
        fi
        return
    fi
    if (( COMP_CWORD > 1 )) && [[ "${{COMP_WORDS[1]}}" == mesh ]]; then
        case "$prev" in
            --peers|--logfile) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        esac
        [[ "$cur" == -* ]] && COMPREPLY=($(compgen -W "{mesh_words}" -- "$cur"))
        return
    fi
    if (( COMP_CWORD == 2 )) && [[ "$prev" == --generate ]]; then
        COMPREPLY=($(compgen -W "{kinds}" -- "$cur"))
        return
    fi
    case "$prev" in
{cases}    esac
    if [[ "$cur" == -* ]]; then
        local extra=""
        (( COMP_CWORD == 1 )) && extra="--generate"
        COMPREPLY=($(compgen -W "{words} $extra" -- "$cur"))
    elif (( COMP_CWORD == 1 )); then
        COMPREPLY=($(compgen -W "plot iperf2 mesh" -- "$cur"))
    fi
    return 0
}}
complete -F _rperf3 rperf3
"#,
        plot_words = plot_words.join(" "),
        mesh_words = mesh_words.join(" "),
        kinds = kinds.join(" "),
        words = words.join(" "),
    )
}

/// Text for a zsh `_arguments` description: inside single quotes and brackets.
fn zsh_text(s: &str) -> String {
    s.replace('\n', " ")
        .replace('\'', "'\\''")
        .replace('[', "\\[")
        .replace(']', "\\]")
        .replace(':', "\\:")
}

fn zsh_action(spec: &OptSpec) -> String {
    let msg = spec.metavar.replace([':', '\''], "");
    let msg = if msg.is_empty() {
        "value".to_string()
    } else {
        msg
    };
    match value_of(spec) {
        Value::Any => format!(":{}: ", zsh_text(&msg)),
        Value::Words(w) => format!(":{}:({})", zsh_text(&msg), w.join(" ")),
        // A {…} action is evaluated when completing: the running kernel's list.
        Value::Congestion => {
            ":algorithm:{compadd -- $(</proc/sys/net/ipv4/tcp_available_congestion_control)}"
                .to_string()
        }
        Value::File => ":file:_files".to_string(),
        Value::Host => ":host:_hosts".to_string(),
        Value::Interface => ":interface:_net_interfaces".to_string(),
    }
}

/// The zsh script: `_arguments` specs.
pub(crate) fn zsh() -> String {
    let mut specs = String::new();
    for spec in OPTIONS.iter() {
        let help = zsh_text(spec.help.lines().next().unwrap_or_default());
        let (short_suffix, long_suffix, action) = match spec.arg {
            ArgKind::None => ("", "", String::new()),
            ArgKind::Required => ("+", "=", zsh_action(spec)),
            ArgKind::Optional => ("", "=-", ":value: ".to_string()),
        };
        let mut names: Vec<String> = Vec::new();
        if let Some(c) = spec.short {
            // The short form of an optional-argument option takes no argument.
            let sfx = if spec.arg == ArgKind::Required {
                short_suffix
            } else {
                ""
            };
            names.push(format!("-{c}{sfx}"));
        }
        names.push(format!("--{}{long_suffix}", spec.long));
        names.extend(spec.aliases.iter().map(|a| format!("--{a}{long_suffix}")));
        for n in names {
            let _ = writeln!(specs, "    '{n}[{help}]{action}' \\");
        }
    }
    let kinds: Vec<&str> = GENERATE_KINDS.iter().map(|(k, _)| *k).collect();
    let plot_help = zsh_text(COMMANDS[0].help);
    let iperf2_help = zsh_text(COMMANDS[2].help);
    let mesh_help = zsh_text(COMMANDS[3].help);
    format!(
        r#"#compdef rperf3
# zsh completion for rperf3 (rperf3 --generate complete-zsh)
_rperf3() {{
  if (( CURRENT > 2 )) && [[ "$words[2]" == plot ]]; then
    _arguments \
      '(-o --output)'{{-o+,--output=}}'[write the SVG to this file]:file:_files' \
      '--title=[title of the plot]:title: ' \
      '(-)'{{-h,--help}}'[print the help and exit]' \
      '*:JSON file:_files'
    return
  fi
  _arguments -s \
{specs}    '(-)--generate=[print the man page or a completion script]:kind:({kinds})' \
    '1::command:((plot\:"{plot_help}" iperf2\:"{iperf2_help}" mesh\:"{mesh_help}"))'
}}
_rperf3 "$@"
"#,
        kinds = kinds.join(" "),
    )
}

/// Text inside fish single quotes.
fn fish_text(s: &str) -> String {
    s.replace('\n', " ")
        .replace('\\', "\\\\")
        .replace('\'', "\\'")
}

/// The fish script: one `complete` line per option.
pub(crate) fn fish() -> String {
    let mut out = String::from(
        "# fish completion for rperf3 (rperf3 --generate complete-fish)\n\
         complete -c rperf3 -f\n",
    );
    let not_plot = "-n 'not __fish_seen_subcommand_from plot mesh'";
    let _ = writeln!(
        out,
        "complete -c rperf3 -n '__fish_use_subcommand' -a plot -d '{}'",
        fish_text(COMMANDS[0].help)
    );
    let _ = writeln!(
        out,
        "complete -c rperf3 -n '__fish_use_subcommand' -a iperf2 -d '{}'",
        fish_text(COMMANDS[2].help)
    );
    let _ = writeln!(
        out,
        "complete -c rperf3 -n '__fish_use_subcommand' -a mesh -d '{}'",
        fish_text(COMMANDS[3].help)
    );
    let kinds: Vec<&str> = GENERATE_KINDS.iter().map(|(k, _)| *k).collect();
    let _ = writeln!(
        out,
        "complete -c rperf3 -n '__fish_use_subcommand' -l generate -x -a '{}' -d '{}'",
        kinds.join(" "),
        fish_text(COMMANDS[1].help)
    );
    for spec in OPTIONS.iter() {
        let mut line = format!("complete -c rperf3 {not_plot}");
        if let Some(c) = spec.short {
            let _ = write!(line, " -s {c}");
        }
        let _ = write!(line, " -l {}", spec.long);
        for a in spec.aliases {
            let _ = write!(line, " -l {a}");
        }
        if spec.arg == ArgKind::Required {
            match value_of(spec) {
                Value::Any => line.push_str(" -x"),
                Value::Words(w) => {
                    let _ = write!(line, " -x -a '{}'", w.join(" "));
                }
                Value::Congestion => line.push_str(
                    " -x -a '(cat /proc/sys/net/ipv4/tcp_available_congestion_control 2>/dev/null | string split \" \")'",
                ),
                Value::File => line.push_str(" -r -F"),
                Value::Host => line.push_str(" -x -a '(__fish_print_hostnames)'"),
                Value::Interface => line.push_str(" -x -a '(__fish_print_interfaces)'"),
            }
        }
        let _ = writeln!(
            line,
            " -d '{}'",
            fish_text(spec.help.lines().next().unwrap_or_default())
        );
        out.push_str(&line);
    }
    let in_plot = "-n '__fish_seen_subcommand_from plot'";
    out.push_str(&format!(
        "complete -c rperf3 {in_plot} -F\n\
         complete -c rperf3 {in_plot} -s o -l output -r -F -d 'write the SVG to this file'\n\
         complete -c rperf3 {in_plot} -l title -x -d 'title of the plot'\n\
         complete -c rperf3 {in_plot} -s h -l help -d 'print the help and exit'\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_is_offered_by_each_shell() {
        let (b, z, f) = (bash(), zsh(), fish());
        for s in OPTIONS {
            let long = format!("--{}", s.long);
            assert!(b.contains(&format!(" {long} ")), "bash {long}");
            assert!(z.contains(&format!("'{long}")), "zsh {long}");
            assert!(f.contains(&format!(" -l {} ", s.long)), "fish {long}");
        }
    }

    #[test]
    fn arguments_with_choices() {
        let b = bash();
        assert!(b.contains("-f|--format) COMPREPLY=($(compgen -W \"k m g t K M G T\""));
        assert!(b.contains("--dscp) COMPREPLY=($(compgen -W \"af11 af12"));
        assert!(b.contains("-C|--congestion|--linux-congestion) COMPREPLY=($(compgen -W \"$(cat"));
        assert!(zsh().contains("'--format=[rate unit of the text report"));
        assert!(fish().contains(" -s f -l format -x -a 'k m g t K M G T'"));
    }
}
