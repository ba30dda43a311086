//! The import rules of ARCHITECTURE.md for `tool-mcp`, checked on its sources by
//! [`test_support::architecture::violations`]: every room on a floor and importing only its floor
//! and those below, no circle between rooms or between the files of a folder, and `import/` (the
//! client side) sharing only the leaves.

use std::path::Path;

use test_support::architecture::{Rules, violations};

/// The leaves: rooms that know no server.
const LEAVES: &[&str] =
    &["call_id", "content", "errors", "incoming", "limits", "protocol", "sealed", "shutdown", "telemetry"];

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] = &[
    LEAVES,
    &["auth", "catalog", "import", "runner", "talk", "tasks"],
    &["server"],
    &["call"],
    &["handler"],
    &["http", "stdio"],
    &["builder"],
    &["lib"],
];

#[test]
fn the_import_rules_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rules = Rules { floors: FLOORS, circles: &[], only: &[("import", LEAVES)] };
    assert_eq!(violations(&src, &rules), Vec::<String>::new());
}
