//! The import rules of ARCHITECTURE.md for `tool-code`, checked on its sources by
//! [`test_support::architecture::violations`]: every room on a floor and importing only its floor
//! and those below, and no circle. `meta` sits above the crate root: it adds the meta-tools to
//! `CodeMode`, which the root defines (the root only re-exports `meta`'s names).

use std::path::Path;

use test_support::architecture::{Rules, violations};

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] = &[&["declare", "error", "limits", "marks"], &["engine"], &["lib"], &["meta"]];

#[test]
fn the_import_rules_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    assert_eq!(violations(&src, &Rules { floors: FLOORS, circles: &[], only: &[] }), Vec::<String>::new());
}
