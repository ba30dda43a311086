//! The README's "Defining tools" examples are compiled: each `rust` block of that section appears
//! verbatim in a pass test of `tests/pass/`.

use std::fs;
use std::path::Path;

fn defining_tools_blocks() -> Vec<String> {
    let readme = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let start = readme.find("\n## Defining tools\n").expect("the README has a `## Defining tools` section");
    let section = &readme[start + 1..];
    let section = &section[..section[1..].find("\n## ").map_or(section.len(), |end| end + 1)];
    section.split("```rust\n").skip(1).map(|rest| rest.split("```\n").next().unwrap_or_default().to_owned()).collect()
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
        8,
        "the section's examples: parameters, dependencies (shared, provided), input, options, returns, registration, methods"
    );
    for block in blocks {
        assert!(
            sources.iter().any(|source| source.contains(&block)),
            "this README example is in no file of tests/pass/:\n{block}"
        );
    }
}
