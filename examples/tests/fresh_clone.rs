//! What a newcomer meets on a fresh clone: the README's two commands, CI calling the test command,
//! and nothing that reaches outside the repository.

use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("examples/ sits in the repository root").to_path_buf()
}

#[test]
fn the_readme_starts_with_the_main_job_and_the_test_command() {
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let commands: Vec<&str> = readme.lines().take(5).filter_map(|l| l.strip_prefix("    ")).collect();
    assert_eq!(commands.len(), 2, "{readme}");
    assert!(commands[0].starts_with("cargo run -p examples --example quickstart "), "{}", commands[0]);
    assert!(commands[1].starts_with("scripts/test.sh "), "{}", commands[1]);
}

#[test]
fn ci_runs_the_readme_test_command() {
    let ci = std::fs::read_to_string(repo_root().join(".ci/run")).unwrap();
    assert!(ci.lines().any(|l| l.trim() == "scripts/test.sh"), "{ci}");
}

#[test]
fn the_test_command_installs_the_pinned_python_packages_and_runs_the_whole_suite() {
    let script = std::fs::read_to_string(repo_root().join("scripts/test.sh")).unwrap();
    assert!(script.contains("conformance/requirements.txt"), "{script}");
    assert!(script.contains("export TOOL_CONFORMANCE_PYTHON"), "{script}");
    assert!(script.lines().any(|l| l.trim() == r#"cargo test --workspace "$@""#), "{script}");
    let requirements = std::fs::read_to_string(repo_root().join("conformance/requirements.txt")).unwrap();
    let pinned: Vec<&str> = requirements
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split("==").next().unwrap_or_default())
        .collect();
    assert_eq!(
        pinned,
        [
            "jsonschema",
            "openai-agents",
            "google-genai",
            "mcp",
            "hypothesis-jsonschema",
            "hypothesis",
            "opentelemetry-proto"
        ],
        "{requirements}"
    );
    assert!(requirements.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).all(|l| l.contains("==")));
}

#[test]
fn the_quickstart_fixtures_are_in_the_repository_with_their_sources() {
    let dir = repo_root().join("fixtures/provider-responses");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "SOURCES.md",
            "anthropic-tool-use-1.json",
            "anthropic-tool-use-parallel-1.json",
            "gemini-function-call-1.json",
            "gemini-parallel-1.json",
            "gemini-unknown-tool-1.json",
            "openai-chat-parallel-1.json",
            "openai-chat-single-1.json",
            "openai-responses-parallel-1.json",
        ]
    );
    let sources = std::fs::read_to_string(dir.join("SOURCES.md")).unwrap();
    for name in names.iter().filter(|n| n.ends_with(".json")) {
        assert!(sources.contains(&format!("## {name}")), "SOURCES.md has no section for {name}");
    }
}

/// Source, manifest and script files must not reach outside the checkout: a fresh clone has
/// nothing beside it.
#[test]
fn no_source_file_refers_to_files_outside_the_repository() {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if name != "target" && name != ".git" {
                    walk(&path, found);
                }
            } else if [".rs", ".toml", ".sh"].iter().any(|ext| name.ends_with(ext)) || name == "run" {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let needle = ["..", "/shared"].concat();
                if text.contains(&needle) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(&repo_root(), &mut found);
    assert_eq!(found, Vec::<String>::new());
}
