//! `toolbox mcp` driven by the official Python MCP SDK (`mcp` on PyPI, pinned in
//! `toolbox/tests/requirements.txt`) as a client over stdio: `mcp_client.py` beside this file.
//!
//! The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh` to the python of
//! `target/conformance-venv`), else `python3`. A missing `mcp` package fails the test with a
//! message saying how to install it; it never passes silently.

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_mcp_sdk_lists_and_calls_the_tools_over_stdio() {
    let python = std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let workspace = tempfile::tempdir().unwrap();
    let state_dir = tempfile::tempdir().unwrap();
    let output = Command::new(&python)
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_toolbox"))
        .arg(workspace.path())
        .arg(state_dir.path())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `{python}` ({e}); run scripts/test.sh, or set TOOL_CONFORMANCE_PYTHON to a python with `mcp` installed")
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(3) {
        panic!("{stderr}");
    }
    assert!(output.status.success(), "mcp_client.py failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    // Every check ran and passed.
    let checks: Vec<&str> = stdout.lines().map(|l| l.split(" (").next().unwrap_or(l)).collect();
    let view_image = "ok call view_image";
    assert_eq!(
        checks,
        [
            "ok initialize",
            "ok list_tools",
            "ok call read",
            "ok call with an unknown field",
            "ok call outside the workspace",
            "ok grep with a progress token reports files searched",
            "ok write has an output schema and its result validates as structured content",
            "ok call a missing tool",
            view_image,
            "ok todo_new then todo_read in one session",
        ],
        "stderr:\n{stderr}"
    );
}
