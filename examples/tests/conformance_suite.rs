//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned by
//! `scripts/test.sh`, which installs it with node 22 into `target/mcp-conformance` and exports
//! `TOOL_CONFORMANCE_SUITE`), run against the examples: the server scenarios of protocol
//! 2026-07-28 against `examples/conformance_server.rs`, and the client scenarios against
//! `examples/conformance_client.rs` (an import of the test server's tools). Everything stays on
//! loopback: the suite starts its own servers there.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{example_binary, spawn_serving};

/// The suite's `node_modules`.
fn suite() -> PathBuf {
    let dir = std::env::var("TOOL_CONFORMANCE_SUITE").unwrap_or_else(|_| {
        panic!(
            "TOOL_CONFORMANCE_SUITE is not set: run scripts/test.sh, which installs the conformance suite and sets it"
        )
    });
    PathBuf::from(dir)
}

/// Runs the suite with `args`; returns its output, standard output then standard error.
fn run_suite(args: &[&str]) -> String {
    let modules = suite();
    let output = Command::new(modules.join(".bin/node"))
        .arg(modules.join(".bin/conformance"))
        .args(args)
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run the conformance suite in {} ({e}); run scripts/test.sh", modules.display())
        });
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

/// The scenario lines of a run (`✓ name: ..` or `✗ name: ..`): (passed, name), in order.
fn scenarios(output: &str) -> Vec<(bool, &str)> {
    output
        .lines()
        .filter_map(|line| {
            let (passed, rest) = match line.strip_prefix("✓ ") {
                Some(rest) => (true, rest),
                None => (false, line.strip_prefix("✗ ")?),
            };
            Some((passed, rest.split(':').next()?))
        })
        .collect()
}

const SERVER_SCENARIOS: [&str; 50] = [
    "server-stateless",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    "server-sse-multiple-streams",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "sep-2164-resource-not-found",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
    "caching",
    "input-required-result-basic-elicitation",
    "input-required-result-basic-sampling",
    "input-required-result-basic-list-roots",
    "input-required-result-request-state",
    "input-required-result-multiple-input-requests",
    "input-required-result-multi-round",
    "input-required-result-missing-input-response",
    "input-required-result-non-tool-request",
    "input-required-result-result-type",
    "input-required-result-unsupported-methods",
    "input-required-result-tampered-state",
    "input-required-result-capability-check",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
    "json-schema-2020-12",
    "http-header-validation",
    "http-custom-header-server-validation",
];

#[test]
fn every_server_scenario_of_protocol_2026_07_28_passes_against_the_example_server() {
    let (mut child, url) = spawn_serving("conformance_server", &["127.0.0.1:0"]);
    let output = run_suite(&["server", "--url", &url, "--requirements", "2026-07-28"]);
    child.kill().unwrap();
    child.wait().unwrap();
    let expected: Vec<(bool, &str)> = SERVER_SCENARIOS.iter().map(|name| (true, *name)).collect();
    assert_eq!(scenarios(&output), expected, "{output}");
    assert!(output.contains("\nTotal: 194 passed, 0 failed"), "{output}");
}

/// The client scenarios of 2026-07-28 that pass, then those that do not (see `tool-mcp/docs/conformance.md`).
const CLIENT_PASSING: [&str; 30] = [
    "tools_call",
    "request-metadata",
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/client-credentials-basic",
    "http-standard-headers",
    "json-schema-ref-no-deref",
];

const CLIENT_FAILING: [&str; 9] = [
    "sep-2322-client-request-state",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "auth/client-credentials-jwt",
    "auth/enterprise-managed-authorization",
    "auth/dpop",
    "auth/dpop-nonce",
    "auth/wif-jwt-bearer",
    "json-schema-2020-12-preservation",
];

#[test]
fn the_example_client_passes_every_authorization_scenario_2026_07_28_requires_and_fails_the_nine_the_readme_names() {
    let client = example_binary("conformance_client");
    let output = run_suite(&["client", "--command", client.to_str().unwrap(), "--requirements", "2026-07-28"]);
    let mut passed: Vec<&str> = scenarios(&output).into_iter().filter(|(ok, _)| *ok).map(|(_, name)| name).collect();
    let mut failed: Vec<&str> = scenarios(&output).into_iter().filter(|(ok, _)| !*ok).map(|(_, name)| name).collect();
    passed.sort_unstable();
    failed.sort_unstable();
    let mut expected_passed = CLIENT_PASSING.to_vec();
    let mut expected_failed = CLIENT_FAILING.to_vec();
    expected_passed.sort_unstable();
    expected_failed.sort_unstable();
    assert_eq!((passed, failed), (expected_passed, expected_failed), "{output}");
}
