//! `toolbox mcp --http` and authorization: an address that is not loopback is refused without
//! `--auth-issuer` unless `--no-auth`; with `--auth-issuer`, a real authorization server
//! (oauth2-mock-server from npm, started here by `auth_server.mjs` on a free loopback port) issues
//! the tokens and the official Python MCP SDK (`auth_client.py` beside this file) obtains them
//! with the client credentials grant and calls tools as two clients with different scopes,
//! `toolbox --config` imports the tools of a protected server with an `oauth` entry, and
//! `tool_mcp::import` gets its token by the authorization code flow with PKCE. Every process
//! started here is stopped here (Drop guards); every wait is bounded.
//!
//! Needs node with oauth2-mock-server under `$TOOL_OAUTH2_MOCK_SERVER` (a `node_modules` dir;
//! default `target/oauth2-mock-server/node_modules`, where scripts/test.sh installs it with npm)
//! and the Python SDK in `$TOOL_CONFORMANCE_PYTHON` (scripts/test.sh sets it); without them the
//! test fails saying so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use std::time::Duration;
use test_support::process::{self, Output as Stream, Running, TOOLBOX_SERVING};
use test_support::python;

/// Starts `command`, reading its standard error (or output, when `stdout`); returns the process
/// and what followed `prefix` on the first line that starts with it.
fn start_saying(command: Command, stdout: bool, prefix: &str) -> (Running, String) {
    let output = if stdout { Stream::Stdout } else { Stream::Stderr };
    let started = process::start_saying(command, output, prefix);
    (started.process, started.said)
}

fn toolbox() -> Command {
    Command::new(env!("CARGO_BIN_EXE_toolbox"))
}

/// Runs `toolbox mcp` with `args` to its end, at most 60 s (a server that does start is killed).
fn run_mcp(args: &[&str], root: &Path) -> Output {
    // Outside the root, which toolbox requires of its state directory.
    let state = tempfile::tempdir().unwrap();
    let mut child = toolbox()
        .arg("mcp")
        .args(args)
        .arg("--root")
        .arg(root)
        .arg("--state-dir")
        .arg(state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..600 {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("toolbox mcp {args:?} did not end within 60 s");
}

/// A loopback port free when asked.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).unwrap().port()
}

#[test]
fn a_non_loopback_address_without_auth_is_refused_saying_why_and_what_to_give() {
    let root = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("0.0.0.0:{port}");
    let output = run_mcp(&["--http", &addr], root.path());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "toolbox: refusing to serve MCP on {addr} without authentication: it is not a loopback address, so \
             anyone who reaches it could call the tools (with `--allow exec`, run commands on this machine); give \
             `--auth-issuer URL` (an OAuth authorization server whose tokens name this server in `aud`), bind a \
             loopback address such as `127.0.0.1:{port}`, or give `--no-auth` to serve it unauthenticated anyway\n"
        )
    );
}

#[test]
fn no_auth_serves_a_non_loopback_address_with_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let mut command = toolbox();
    command.args(["mcp", "--http", "0.0.0.0:0", "--no-auth", "--root"]).arg(root.path());
    let state = tempfile::tempdir().unwrap();
    command.arg("--state-dir").arg(state.path());
    let (_server, url) = start_saying(command, false, TOOLBOX_SERVING);
    assert!(url.starts_with("http://0.0.0.0:"), "{url}");
}

#[test]
fn auth_on_every_address_needs_the_audience() {
    let root = tempfile::tempdir().unwrap();
    let output = run_mcp(&["--http", "0.0.0.0:0", "--auth-issuer", "http://127.0.0.1:1"], root.path());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.ends_with(
            "so the URL clients reach this server at is not known; give `--auth-audience URL` (e.g. \
             `https://tools.example/mcp`), the URL tokens must name in `aud`\n"
        ),
        "{stderr}"
    );
}

#[test]
fn no_auth_and_auth_issuer_together_are_a_usage_error() {
    let root = tempfile::tempdir().unwrap();
    let output = run_mcp(&["--http", "127.0.0.1:0", "--no-auth", "--auth-issuer", "http://127.0.0.1:1"], root.path());
    assert_eq!(output.status.code(), Some(2));
}

/// The `node_modules` dir holding oauth2-mock-server.
fn mock_server_modules() -> PathBuf {
    let dir = std::env::var_os("TOOL_OAUTH2_MOCK_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/oauth2-mock-server/node_modules"));
    assert!(
        dir.join("oauth2-mock-server/package.json").is_file(),
        "oauth2-mock-server is not installed in {}: this test needs it; run scripts/test.sh, which installs it \
         with `npm install --prefix target/oauth2-mock-server oauth2-mock-server@9.3.0` (.ci/run runs it in CI), \
         or set TOOL_OAUTH2_MOCK_SERVER to a node_modules dir that has it",
        dir.display()
    );
    dir
}

/// oauth2-mock-server with the clients `clients` (`id=scope,scope`), and `toolbox mcp --http`
/// protected by it, each on a free loopback port; both stop when this is dropped.
struct Protected {
    issuer: String,
    url: String,
    root: tempfile::TempDir,
    state: tempfile::TempDir,
    _servers: (Running, Running),
}

impl Protected {
    fn start(clients: &[&str]) -> Self {
        let mut node = Command::new("node");
        node.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/auth_server.mjs"))
            .arg(mock_server_modules())
            .args(clients);
        let (issuer_server, issuer) = start_saying(node, true, "issuer ");
        let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut command = toolbox();
        // oauth2-mock-server types its access tokens `JWT`, not RFC 9068's `at+jwt`.
        command.args(["mcp", "--http", "127.0.0.1:0", "--auth-issuer", &issuer, "--auth-accept-jwt-typ", "--root"]);
        command.arg(root.path());
        command.arg("--state-dir").arg(state.path());
        let (server, url) = start_saying(command, false, TOOLBOX_SERVING);
        Self { issuer, url, root, state, _servers: (issuer_server, server) }
    }
}

#[test]
fn the_python_sdk_gets_tokens_by_client_credentials_and_each_client_reaches_only_its_scopes() {
    let protected = Protected::start(&["ana=tools:read,tools:write", "bo=tools:read"]);
    let (issuer, url) = (&protected.issuer, &protected.url);

    let stdout = python::run(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/auth_client.py"), &[url, issuer]);
    assert_eq!(
        stdout,
        "unauthenticated: 401 Bearer scope=\"tools:exec tools:read tools:write\"\n\
         ana lists write: True\n\
         ana reads her plan: True\n\
         bo lists write: False\n\
         bo sees the plan of ana: False\n\
         bo writes: 403 Bearer error=\"insufficient_scope\", scope=\"tools:write\"\n"
    );
}

#[test]
fn a_config_entry_with_oauth_imports_the_tools_its_client_credentials_reach() {
    let protected = Protected::start(&["reader=tools:read"]);
    let (url, root, state) = (&protected.url, &protected.root, &protected.state);

    let config = root.path().join("servers.json");
    let entry = serde_json::json!({"mcpServers": {"guarded": {"url": url, "oauth": {
        "client_id": "reader", "client_secret": "secret-of-reader", "scopes": ["tools:read", "tools:write"]}}}});
    std::fs::write(&config, entry.to_string()).unwrap();
    let output = toolbox()
        .arg("--config")
        .arg(&config)
        .args(["list", "--set", "guarded", "--root"])
        .arg(root.path())
        .arg("--state-dir")
        .arg(state.path().join("client"))
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let definitions: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    // Asked for read and write, granted read: only the read-only tools.
    assert_eq!(
        names,
        [
            "guarded_done",
            "guarded_glob",
            "guarded_grep",
            "guarded_read",
            "guarded_read_line",
            "guarded_todo_read",
            "guarded_tool_output_cache",
            "guarded_tool_output_cache_grep",
            "guarded_tool_output_cache_line",
            "guarded_view_image"
        ]
    );
}

/// The import of `protected` as `guarded` by the authorization code flow, as the client `coder`,
/// with `limits`.
async fn import_by_code(
    protected: &Protected,
    limits: tool_mcp::import::ImportLimits,
) -> tool_mcp::import::ImportedServer {
    use tool_mcp::import::{AuthorizationCode, HeadlessRedirect, McpImport};
    // oauth2-mock-server approves at once and registers no clients: any pre-registered id goes.
    let flow = AuthorizationCode::new("http://127.0.0.1:9/callback", HeadlessRedirect)
        .client("coder", Some("secret-of-coder".to_owned()));
    McpImport::http("guarded", &protected.url)
        .authorization_code(flow)
        .limits(limits)
        .connect()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn an_import_by_the_authorization_code_flow_gets_its_token_with_pkce_and_reaches_the_tools_of_its_scopes() {
    let protected = Protected::start(&["coder=tools:read"]);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let imported = import_by_code(&protected, tool_mcp::import::ImportLimits::default()).await;
        // The challenge's scopes asked for, `tools:read` granted: only the read-only tools.
        assert_eq!(
            imported.remote_tools(),
            [
                "done",
                "glob",
                "grep",
                "read",
                "read_line",
                "todo_read",
                "tool_output_cache",
                "tool_output_cache_grep",
                "tool_output_cache_line",
                "view_image"
            ]
        );
        let tools = imported.tools().unwrap();
        let todo_read = tools.iter().find(|tool| tool.definition().name == "todo_read").unwrap();
        let result = todo_read.call("{}", &tool_runtime::ToolContext::new()).await.unwrap();
        assert_eq!(result, tool_runtime::ToolResult::Text("No todos yet. Use todo_new to write a plan.".to_owned()));
        imported.close().await;
    });
}

#[test]
fn an_import_by_the_authorization_code_flow_stores_a_long_result_as_it_arrives_and_shows_its_preview() {
    use std::io::Read;
    use std::sync::Arc;
    use tool_mcp::import::ImportLimits;
    use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputStore};
    use tool_runtime::{Registry, ToolCall, ToolContext};

    let protected = Protected::start(&["coder=tools:read"]);
    // 200 lines of 99 characters: the `read` result is far over the 4,096-byte threshold.
    let lines: Vec<String> = (1..=200).map(|n| format!("{n:04} {}", "x".repeat(94))).collect();
    std::fs::write(protected.root.path().join("big.txt"), lines.join("\n") + "\n").unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let imported =
            import_by_code(&protected, ImportLimits { inline_result_bytes: 4096, ..ImportLimits::default() }).await;
        let store: Arc<dyn OutputStore> = Arc::new(MemoryStore::new());
        let registry = imported
            .add_to(Registry::builder())
            .unwrap()
            .override_dependency(&OUTPUT_STORE, store.clone())
            .build()
            .unwrap();
        let call = ToolCall::new("c1", "read", r#"{"file_path":"big.txt"}"#);
        let message = registry.call(&call, &ToolContext::new()).await;
        assert!(!message.is_error, "{}", message.text());
        let ref_id = message.ref_id.clone().expect("the long result is stored under a ref id");
        let mut whole = String::new();
        store.open_at(&ref_id, 0).unwrap().read_to_string(&mut whole).unwrap();
        // The store keeps the whole text (every line, the last included); the model sees its head
        // and tail around a marker that names the ref id.
        assert!(whole.contains(&lines[0]) && whole.contains(&lines[199]), "{whole}");
        let text = message.text();
        assert!(text.len() < whole.len(), "the preview is shorter than the whole");
        assert!(text.contains(&format!("{{\"ref_id\":\"{ref_id}\"}}")), "{text}");
        assert!(text.contains(&lines[0]), "{text}");
        // The filter held at most the threshold's bound, never the whole answer.
        let held = imported.peak_held_bytes();
        assert!(held <= 7 * 4096 + 24, "held {held} bytes");
        imported.close().await;
    });
}
