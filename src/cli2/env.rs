//! iperf 2 also reads options from the environment, before the command line:
//! `IPERF_<long name>` (and `TCP_WINDOW_SIZE` for `-w`), each set variable
//! acting as its option would, a flag whatever its value. The command line
//! then overrides what it repeats.

use super::interpret::{State, Step};
use super::table;

/// The variables iperf 2.2.1 reads, in its order, and the option each means.
pub(crate) static VARIABLES: &[(&str, char)] = &[
    ("IPERF_IPV6_DOMAIN", 'V'),
    ("IPERF_SINGLECLIENT", '1'),
    ("IPERF_BANDWIDTH", 'b'),
    ("IPERF_CLIENT", 'c'),
    ("IPERF_DUALTEST", 'd'),
    ("IPERF_ENHANCEDREPORTS", 'e'),
    ("IPERF_FORMAT", 'f'),
    ("IPERF_INTERVAL", 'i'),
    ("IPERF_LEN", 'l'),
    ("IPERF_PRINT_MSS", 'm'),
    ("IPERF_NUM", 'n'),
    ("IPERF_PORT", 'p'),
    ("IPERF_TRADEOFF", 'r'),
    ("IPERF_SERVER", 's'),
    ("IPERF_TIME", 't'),
    ("IPERF_UDP", 'u'),
    ("TCP_WINDOW_SIZE", 'w'),
    ("IPERF_REPORTEXCLUDE", 'x'),
    ("IPERF_REPORTSTYLE", 'y'),
    ("IPERF_BIND", 'B'),
    ("IPERF_COMPAT", 'C'),
    ("IPERF_DAEMON", 'D'),
    ("IPERF_FILE_INPUT", 'F'),
    ("IPERF_STDIN_INPUT", 'I'),
    ("IPERF_MSS", 'M'),
    ("IPERF_NODELAY", 'N'),
    ("IPERF_LISTENPORT", 'L'),
    ("IPERF_PARALLEL", 'P'),
    ("IPERF_TOS", 'S'),
    ("IPERF_TTL", 'T'),
    ("IPERF_SINGLE_UDP", 'U'),
    ("IPERF_SUGGEST_WIN_SIZE", 'W'),
    ("IPERF_PEER_DETECT", 'X'),
    ("IPERF_CONGESTION_CONTROL", 'Z'),
];

/// Applies the variables `lookup` finds; stops at the first that ends the run.
pub(crate) fn apply(
    st: &mut State,
    lookup: &dyn Fn(&str) -> Option<String>,
    diag: &mut Vec<String>,
) -> Step {
    for (name, letter) in VARIABLES {
        let Some(value) = lookup(name) else { continue };
        let Some(spec) = table::by_short(*letter) else {
            continue;
        };
        match st.apply(spec, Some(&value), diag) {
            Step::Continue => {}
            other => return other,
        }
    }
    Step::Continue
}
