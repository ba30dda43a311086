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

/// The crates of ARCHITECTURE.md's "Crates" table whose own `tracing` events never come from a
/// served process: a procedural macro (what `#[tool]` generates logs under its user's crate), and
/// the crates that are dev-dependencies, examples, snapshots or benchmarks only.
const NEVER_IN_A_SERVER: &[&str] = &[
    "tool-macros",
    "tool-std-patch-checks",
    "provider-mock",
    "test-support",
    "examples",
    "ui-tests",
    "benches/dispatch",
];

/// The crates ARCHITECTURE.md's "Crates" table lists: the first backticked name of each
/// comma-separated part of a row's first cell.
fn crates_of_the_architecture() -> Vec<String> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md beside the crates");
    let table = text.split("## Crates").nth(1).and_then(|rest| rest.split("\n## ").next()).expect("a Crates section");
    table
        .lines()
        .filter(|line| line.starts_with("| `"))
        .flat_map(|line| line.split('|').nth(1).unwrap_or_default().split(", ").map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|part| part.split('`').nth(1).map(str::to_owned))
        .collect()
}

#[test]
fn every_crate_that_runs_in_a_server_is_a_framework_target_whose_events_are_not_exported() {
    let listed = crates_of_the_architecture();
    assert!(listed.len() >= 12, "the Crates table was not read: {listed:?}");
    let mut served: Vec<String> = listed
        .iter()
        .filter(|name| !NEVER_IN_A_SERVER.contains(&name.as_str()))
        .map(|name| name.replace('-', "_"))
        .collect();
    served.sort();
    let mut targets: Vec<String> = tool_mcp::telemetry::FRAMEWORK_TARGETS.iter().map(|t| (*t).to_owned()).collect();
    targets.sort();
    assert_eq!(
        served, targets,
        "a crate that runs in a server must be in FRAMEWORK_TARGETS (or, if it never does, in NEVER_IN_A_SERVER)"
    );
    for name in NEVER_IN_A_SERVER {
        assert!(listed.iter().any(|listed| listed == name), "{name} is no longer in ARCHITECTURE.md's Crates table");
    }
}
