//! The import rules of ARCHITECTURE.md for `tool-openai`, checked on its sources by
//! [`test_support::architecture::violations`]: `chat` and `responses` build on what the crate
//! root shares (the projection, images, `Turn`) and never on each other.

use std::path::Path;

use test_support::architecture::{Rules, violations};

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] = &[&["lib"], &["chat", "responses"]];

#[test]
fn the_import_rules_hold() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let rules = Rules { floors: FLOORS, circles: &[], only: &[("chat", &["lib"]), ("responses", &["lib"])] };
    assert_eq!(violations(&src, &rules), Vec::<String>::new());
}
