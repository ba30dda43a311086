//! The examples of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`, the
//! crate docs) are compiled twice: as doctests of tool-runtime, and here, where each `rust` block,
//! its hidden `# ` lines left out, must appear verbatim in a pass test of `tests/pass/` (which also
//! calls the tools and checks what they define).

use std::fs;
use std::path::Path;

/// A block as the reader sees it: rustdoc's hidden lines (`# ` or a lone `#`) removed.
fn shown(block: &str) -> String {
    block.lines().filter(|line| !line.starts_with("# ") && *line != "#").map(|line| format!("{line}\n")).collect()
}

fn defining_tools_blocks() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tool-runtime/docs/defining-tools.md");
    let docs = fs::read_to_string(path).unwrap();
    assert!(
        docs.starts_with("# Defining tools\n"),
        "tool-runtime/docs/defining-tools.md starts with `# Defining tools`"
    );
    docs.split("```rust\n").skip(1).map(|rest| shown(rest.split("```\n").next().unwrap_or_default())).collect()
}

#[test]
fn every_defining_tools_example_is_compiled_by_a_pass_test() {
    let pass_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pass");
    let sources: Vec<String> = fs::read_dir(&pass_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| fs::read_to_string(path).unwrap())
        .collect();
    let blocks = defining_tools_blocks();
    assert_eq!(
        blocks.len(),
        12,
        "the examples: parameters, dependencies (shared, provided), input, options, locks, returns, registration, \
         methods, secret arguments, idempotent retries, bound approvals"
    );
    for block in blocks {
        assert!(
            sources.iter().any(|source| source.contains(&block)),
            "this example of tool-runtime/docs/defining-tools.md is in no file of tests/pass/:\n{block}"
        );
    }
}
