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

/// Runs the Python script `script` (relative to this crate) with `args` on
/// `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh`), else `python3`; returns its standard
/// output. A failed script fails the test with its output; exit code 3 (the `mcp` package
/// missing) with the script's message.
pub fn run_python(script: &str, args: &[&str]) -> String {
    let python = std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(script);
    let output = Command::new(&python).arg(&path).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run `{python}` ({e}); run scripts/test.sh, or set TOOL_CONFORMANCE_PYTHON to a python with `mcp` installed")
    });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(3) {
        panic!("{stderr}");
    }
    assert!(output.status.success(), "{script} failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    stdout
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
