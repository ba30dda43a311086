//! `cli.sh` beside this file: `toolbox call` exit codes and `toolbox list --format gemini`, run by
//! `sh` as a shell user runs them.

use std::path::Path;
use std::process::Command;

#[test]
fn the_shell_checks_of_call_exit_codes_and_gemini_listing_pass() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cli.sh");
    let state_home = tempfile::tempdir().unwrap();
    let output = Command::new("sh")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_toolbox"))
        .env("XDG_STATE_HOME", state_home.path())
        .output()
        .expect("sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "cli.sh failed.\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "ok call read exits 0",
            "ok call reads the arguments from standard input with -",
            "ok call with an unknown field exits 1",
            "ok call of a missing tool exits 1",
            "ok call with an unusable root exits 1",
            "ok call without a tool name exits 2",
            "ok list --format gemini exits 0",
        ]
    );
}
