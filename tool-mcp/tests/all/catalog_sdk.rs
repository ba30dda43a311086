//! The notes server of [`catalog`](crate::catalog) driven by the official Python MCP SDK over
//! stateless Streamable HTTP on a free loopback port (protocol 2026-07-28), with the checks of
//! `catalog_client.py`. The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh`),
//! else `python3`.

use std::path::Path;

use crate::common::Running;

const CHECKS: [&str; 6] = [
    "ok list resources and templates, with caching hints",
    "ok read a text resource, a blob resource and a template's resource",
    "ok an unknown resource and a refused template value are -32602 with the uri",
    "ok list prompts and get one",
    "ok a missing required argument is -32602 naming it",
    "ok complete a prompt argument, and an unknown template variable is -32602",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_mcp_sdk_lists_reads_gets_and_completes_over_streamable_http() {
    let running = Running::start(crate::catalog::notes_server()).await;
    let python = std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/all/catalog_client.py");
    let url = format!("http://{}/mcp", running.addr);
    let output = tokio::process::Command::new(&python).arg(&script).arg(&url).output().await.unwrap_or_else(|e| {
        panic!("cannot run `{python}` ({e}); run scripts/test.sh, or set TOOL_CONFORMANCE_PYTHON to a python with `mcp` installed")
    });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_ne!(output.status.code(), Some(3), "{stderr}");
    assert!(
        output.status.success(),
        "catalog_client.py failed ({}).\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    assert_eq!(stdout.lines().collect::<Vec<_>>(), CHECKS);
    running.stop().await;
}
