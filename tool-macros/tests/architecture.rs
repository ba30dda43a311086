//! The import rules of ARCHITECTURE.md for `tool-macros`, checked on its sources by
//! [`test_support::architecture::violations`]: every room on a floor and importing only its floor
//! and those below, and no circle between rooms or between the files of `expand/` or `model/`.

use std::path::Path;

use test_support::architecture::{Rules, violations};

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] =
    &[&["docs", "position", "resources"], &["options"], &["model"], &["expand"], &["methods"], &["lib"]];

#[test]
fn the_import_rules_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(violations(&src, &Rules { floors: FLOORS, circles: &[], only: &[] }), Vec::<String>::new());
}
