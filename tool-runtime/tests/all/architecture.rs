//! The import rules of ARCHITECTURE.md for `tool-runtime`, checked on its sources by
//! [`test_support::architecture::violations`]: every room on a floor and importing only its floor
//! and those below, no circle between rooms or between the files of a folder but `context` <->
//! `depends`, and `output/` importing neither
//! `provider/` nor `registry/` (both on floors above it).

use std::path::Path;

use test_support::architecture::{Rules, room_imports, violations};

/// The floors, bottom first, as ARCHITECTURE.md lists them.
const FLOORS: &[&[&str]] = &[
    &[
        "error",
        "result",
        "call",
        "client",
        "clock",
        "ref_id",
        "rustdoc",
        "lifecycle",
        "progress",
        "waits",
        "worker",
        "resource",
        "mac",
    ],
    &["schema", "secret"],
    &["decode"],
    &["talk", "context", "depends"],
    &["tool", "methods", "policy", "dynamic"],
    &["output", "search", "idempotency", "approvals", "locks", "telemetry"],
    &["registry"],
    &["provider"],
    &["lib", "private"],
];

/// Rule 4 (`output/` imports neither `provider/` nor `registry/`) follows from the floors: both are
/// above `output`.
const RULES: Rules<'static> = Rules { floors: FLOORS, circles: &[("context", "depends")], only: &[] };

fn src() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_import_rules_hold() {
    assert_eq!(violations(&src(), &RULES), Vec::<String>::new());
}

#[test]
fn the_one_allowed_circle_is_there() {
    let imports = room_imports(&src());
    assert!(imports["context"].contains("depends") && imports["depends"].contains("context"));
}
