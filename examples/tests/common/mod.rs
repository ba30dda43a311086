//! What the example tests share: the examples' binaries, and running a Python MCP SDK client.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The binary of the example `name`: `target/<profile>/examples/<name>`, beside `deps/` where the
/// test runs (`cargo test -p examples` builds the examples).
pub fn example_binary(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let binary = exe.parent().and_then(Path::parent).unwrap().join("examples").join(name);
    assert!(
        binary.exists(),
        "{} is missing: run `cargo test -p examples`, which builds the examples",
        binary.display()
    );
    binary
}

/// Runs the Python script `script` (relative to this crate) with `args` through
/// [`test_support::python::run`]; returns its standard output.
pub fn run_python(script: &str, args: &[&str]) -> String {
    test_support::python::run(&Path::new(env!("CARGO_MANIFEST_DIR")).join(script), args)
}

/// Starts the example `name` with `args`, which prints its URL as its first line on standard
/// output (as `conformance_server` does); returns the child and the URL.
pub fn spawn_serving(name: &str, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(example_binary(name))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut url = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut url).unwrap();
    let url = url.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"), "{name} printed {url:?}");
    (child, url)
}
