//! iperf 2's getopt_long: the GNU getopt it carries in its sources, with that
//! copy's wording (`` option `--time' requires an argument ``) and its habits:
//! a bad option is reported and skipped, never fatal; operands are gathered
//! and reported after the options (`ignoring extra argument -- x`); unique
//! prefixes of long names; values only after `=` for optional arguments.

use std::ffi::OsString;

use super::table::{self, Arg, Spec};

/// What the parser yields, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// An option and its value.
    Opt(&'static Spec, Option<String>),
    /// A complaint, already worded (without the `prog: ` prefix).
    Bad(String),
}

/// The options of `args` (without the program name), then the operands.
pub(crate) fn parse(args: &[OsString]) -> (Vec<Item>, Vec<String>) {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut items = Vec::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            operands.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            items.push(long(body, &args, &mut i));
        } else if a.len() > 1 && a.starts_with('-') {
            short_cluster(&a[1..], &args, &mut i, &mut items);
        } else {
            operands.push(a.clone());
        }
    }
    (items, operands)
}

fn long(body: &str, args: &[String], i: &mut usize) -> Item {
    let (name, inline) = match body.split_once('=') {
        Some((n, v)) => (n, Some(v.to_string())),
        None => (body, None),
    };
    let found = table::by_long(name);
    let spec = match found.as_slice() {
        [] => return Item::Bad(format!("unrecognized option `--{body}'")),
        [one] => *one,
        _ => return Item::Bad(format!("option `--{body}' is ambiguous")),
    };
    let full = spec.long.unwrap_or_default();
    match (spec.arg, inline) {
        (Arg::No, Some(_)) => Item::Bad(format!("option `--{full}' doesn't allow an argument")),
        (Arg::No, None) | (Arg::Optional, None) => Item::Opt(spec, None),
        (_, Some(v)) => Item::Opt(spec, Some(v)),
        (Arg::Required, None) => match args.get(*i) {
            Some(v) => {
                *i += 1;
                Item::Opt(spec, Some(v.clone()))
            }
            None => Item::Bad(format!("option `--{body}' requires an argument")),
        },
    }
}

fn short_cluster(cluster: &str, args: &[String], i: &mut usize, items: &mut Vec<Item>) {
    for (pos, c) in cluster.char_indices() {
        let Some(spec) = table::by_short(c) else {
            items.push(Item::Bad(format!("invalid option -- {c}")));
            continue;
        };
        if spec.arg == Arg::No {
            items.push(Item::Opt(spec, None));
            continue;
        }
        let rest = &cluster[pos + c.len_utf8()..];
        if !rest.is_empty() {
            items.push(Item::Opt(spec, Some(rest.to_string())));
        } else if let Some(v) = args.get(*i) {
            *i += 1;
            items.push(Item::Opt(spec, Some(v.clone())));
        } else {
            items.push(Item::Bad(format!("option requires an argument -- {c}")));
        }
        return;
    }
}
