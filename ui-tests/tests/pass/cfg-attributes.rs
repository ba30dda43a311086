//! `#[tool]` above `#[cfg(..)]`, `#[cfg_attr(..)]` and `#[deprecated]`: a function configured out
//! is gone before `#[tool]` runs (rustc strips it first, whatever the order of the attributes), so
//! it is registered nowhere; a deprecated tool compiles without a warning from the code generated
//! for it (a caller of the function still gets one).

#![deny(warnings)]

use tool_runtime::prelude::*;

/// Never compiled (`any()` of nothing is false).
#[tool]
#[cfg(any())]
fn nowhere() -> String {
    "nowhere".to_owned()
}

/// Always compiled.
#[tool]
#[cfg(all())]
fn everywhere() -> String {
    "everywhere".to_owned()
}

/// Kept for old prompts.
#[tool]
#[deprecated(note = "use `everywhere`")]
fn legacy() -> String {
    "legacy".to_owned()
}

/// Configured out only in tests of another crate.
#[tool]
#[cfg_attr(test, allow(dead_code))]
async fn attributed() -> String {
    "attributed".to_owned()
}

fn main() {
    let registry = Registry::discover().unwrap();
    assert_eq!(registry.names().collect::<Vec<_>>(), ["attributed", "everywhere", "legacy"]);
    assert_eq!((everywhere::TOOL.name(), legacy::TOOL.name()), ("everywhere", "legacy"));
}
