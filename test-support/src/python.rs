//! The Python with the official MCP SDK that the client tests run: `$TOOL_CONFORMANCE_PYTHON`
//! (scripts/test.sh sets it to its virtualenv's python, with conformance/requirements.txt
//! installed), else `python3`.

use std::path::Path;
use std::process::Command;

/// The Python interpreter: `$TOOL_CONFORMANCE_PYTHON`, else `python3`.
pub fn interpreter() -> String {
    std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Runs `script` with `args` on [`interpreter`] and returns its standard output.
///
/// # Panics
/// When the interpreter cannot run (the message says how to get one); when the script exits with
/// code 3, the scripts' convention for "the `mcp` package is missing", with the script's message;
/// when it fails otherwise, with both outputs.
pub fn run(script: &Path, args: &[&str]) -> String {
    run_outputs(script, args).0
}

/// [`run`], returning the script's standard output and standard error.
///
/// # Panics
/// As [`run`].
pub fn run_outputs(script: &Path, args: &[&str]) -> (String, String) {
    let python = interpreter();
    let output = Command::new(&python).arg(script).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run `{python}` ({e}); run scripts/test.sh, or set TOOL_CONFORMANCE_PYTHON to a python with `mcp` installed")
    });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if output.status.code() == Some(3) {
        panic!("{stderr}");
    }
    assert!(
        output.status.success(),
        "{} failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
        script.display(),
        output.status
    );
    (stdout, stderr)
}
