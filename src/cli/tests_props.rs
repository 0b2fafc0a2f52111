//! Properties of the iperf3 command line over generated arguments: parsing
//! never panics and fails with status 1 and iperf3's usage hint; ports and
//! stream counts round-trip.

use std::ffi::OsString;

use proptest::prelude::*;

use super::tests::{argv, client};
use super::*;

fn token() -> impl Strategy<Value = OsString> {
    prop_oneof![
        "-[a-zA-Z0-9]{0,3}",
        "--[a-z46-]{0,12}(=[a-z0-9./%]{0,5})?",
        "[0-9.kKmMgGtT/x-]{0,6}",
        "\\PC{0,5}",
        Just("-c".to_string()),
        Just("-s".to_string()),
    ]
    .prop_map(OsString::from)
}

proptest! {
    #[test]
    fn parse_never_panics_and_errors_are_status_1(args in prop::collection::vec(token(), 0..8)) {
        if let Err(e) = parse("p", &args) {
            prop_assert_eq!(e.status, 1);
            prop_assert!(e.message.starts_with("p: "));
            prop_assert!(e.message.ends_with("Try `p --help' for more information.\n"));
        }
    }

    #[test]
    fn any_valid_port_round_trips(port in 1u16..=65535, attached: bool) {
        let args = if attached {
            argv(&["-s", &format!("-p{port}")])
        } else {
            argv(&["-s", "--port", &port.to_string()])
        };
        let Ok(Command::Run(inv)) = parse("p", &args) else { panic!() };
        prop_assert_eq!(inv.config.common.port, port);
    }

    #[test]
    fn streams_within_limits_round_trip(n in 1u32..=128) {
        prop_assert_eq!(client(&["-c", "h", "-P", &n.to_string()]).parallel, n);
    }
}
