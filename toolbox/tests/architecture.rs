//! The import rules of ARCHITECTURE.md for `toolbox`, checked on its sources by
//! [`test_support::architecture::violations`]: every room on a floor and importing only its floor
//! and those below (`main` parses the command line and calls the commands; nothing calls back
//! into it), and no circle.

use std::path::Path;

use test_support::architecture::{Rules, violations};

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] =
    &[&["bars", "code", "policy", "tasks", "telemetry"], &["setup"], &["call", "list", "mcp", "run"], &["main"]];

#[test]
fn the_import_rules_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(violations(&src, &Rules { floors: FLOORS, circles: &[], only: &[] }), Vec::<String>::new());
}
