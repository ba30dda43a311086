//! Tools imported from other MCP servers (`tool_mcp::import`): a second `toolbox mcp` over stdio,
//! and a small server made with the Python MCP SDK's FastMCP (`import_server.py` beside this
//! file) over Streamable HTTP on a free loopback port.
//!
//! The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh` to the python of
//! `target/conformance-venv`), else `python3`. Every wait is bounded in count; nothing is timed.
//! Every process a test starts is killed by the test (or by a guard when it fails).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use test_support::process::{Output, TOOLBOX_SERVING, start_saying};
use test_support::python;
use tool_mcp::import::{ImportError, ImportedServer, McpImport};
use tool_runtime::{Progress, Registry, RegistryError, ToolCall, ToolContext, ToolMessage};

/// The Python server, killed on drop.
struct PyServer {
    child: Child,
    url: String,
    port: u16,
}

impl PyServer {
    /// Starts `import_server.py` on `port` (0: a free one) counting calls in `counts`; returns once
    /// it accepts connections.
    fn start(port: u16, counts: &Path, extra: &[&str]) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/import_server.py");
        let mut child = Command::new(python::interpreter())
            .arg(&script)
            .arg(port.to_string())
            .arg(counts)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{}` ({e}); run scripts/test.sh", python::interpreter()));
        // Read on a thread, so that the wait for the first line is bounded.
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = sender.send(line);
        });
        let line = receiver.recv_timeout(std::time::Duration::from_secs(120)).unwrap_or_default();
        let Some(url) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            let status = child.wait().unwrap();
            panic!("import_server.py did not start ({status}; exit 3: the `mcp` package is missing): {line:?}");
        };
        let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp").parse().unwrap();
        Self { child, url: url.to_owned(), port }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PyServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The calls each tool of the Python server received, by its own count (all 0 before any).
fn counts(file: &Path) -> Value {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text).unwrap(),
        Err(_) => json!({"counts": 0, "echo": 0, "lookup": 0, "unannotated": 0, "wait": 0}),
    }
}

/// A temp dir, the Python server on a free port, and its import with the prefix `py_`.
async fn python_import() -> (tempfile::TempDir, PyServer, ImportedServer) {
    let dir = tempfile::tempdir().unwrap();
    let server = PyServer::start(0, &dir.path().join("counts.json"), &[]);
    let imported = McpImport::http("py", &server.url).prefix("py_").connect().await.unwrap();
    (dir, server, imported)
}

/// `toolbox mcp` (the fs tools, `--allow exec` adds the exec ones) over stdio, prefixed `tb_`,
/// in a temp workspace; returns the workspace, the state dir and the import.
async fn toolbox_import(sets: &str) -> (tempfile::TempDir, tempfile::TempDir, ImportedServer) {
    let workspace = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let args = [
        "mcp",
        "--root",
        workspace.path().to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
        "--allow",
        "exec",
        "--set",
        sets,
    ];
    let imported = McpImport::stdio("tb", env!("CARGO_BIN_EXE_toolbox"), args).prefix("tb_").connect().await.unwrap();
    (workspace, state, imported)
}

fn registry(servers: &[&ImportedServer]) -> Registry {
    servers.iter().fold(Registry::builder(), |b, s| s.add_to(b).unwrap()).build().unwrap()
}

async fn call(registry: &Registry, name: &str, arguments: Value) -> ToolMessage {
    registry.call(&ToolCall::new("c1", name, arguments.to_string()), &ToolContext::new()).await
}

fn text(message: &ToolMessage) -> String {
    match &message.content {
        tool_runtime::MessageContent::Text(text) => text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_of_a_toolbox_over_stdio_are_registered_with_the_prefix() {
    let (_workspace, _state, imported) = toolbox_import("fs").await;
    let registry = registry(&[&imported]);
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["tb_edit", "tb_glob", "tb_grep", "tb_read", "tb_read_line", "tb_write"]
    );
    imported.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tools_of_a_python_server_over_http_are_registered_with_the_prefix() {
    let (_dir, _server, imported) = python_import().await;
    let registry = registry(&[&imported]);
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["py_counts", "py_echo", "py_grow", "py_lookup", "py_unannotated", "py_wait"]
    );
    assert_eq!(registry.definitions()[1].set.as_deref(), Some("py"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reaches_the_stdio_server_and_its_result_comes_back() {
    let (workspace, _state, imported) = toolbox_import("fs").await;
    let registry = registry(&[&imported]);
    let message = call(&registry, "tb_write", json!({"file_path": "a.txt", "content": "one\n"})).await;
    assert!(!message.is_error, "{message:?}");
    assert_eq!(std::fs::read_to_string(workspace.path().join("a.txt")).unwrap(), "one\n");
    imported.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_field_is_refused_locally_and_the_server_never_sees_the_call() {
    let (dir, _server, imported) = python_import().await;
    let registry = registry(&[&imported]);
    let message = call(&registry, "py_echo", json!({"text": "hi", "tone": "loud"})).await;
    assert!(message.is_error);
    assert_eq!(text(&message), "invalid arguments for `py_echo`: unknown field `tone`; expected one of `text`");
    assert_eq!(counts(&dir.path().join("counts.json"))["echo"], 0);
    // The server counts what reaches it: a good call is counted.
    let message = call(&registry, "py_echo", json!({"text": "hi"})).await;
    assert_eq!(text(&message), "hi");
    assert_eq!(counts(&dir.path().join("counts.json"))["echo"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_field_is_refused_locally_for_a_stdio_server_too() {
    let (workspace, _state, imported) = toolbox_import("fs").await;
    let registry = registry(&[&imported]);
    let message = call(&registry, "tb_write", json!({"file_path": "a.txt", "content": "x", "mode": "append"})).await;
    assert_eq!(
        text(&message),
        "invalid arguments for `tb_write`: unknown field `mode`; expected one of `content`, `expected_hash`, `file_path`"
    );
    assert!(!workspace.path().join("a.txt").exists());
    imported.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn annotations_become_tags_with_the_mcp_defaults_for_absent_hints() {
    let (_dir, _server, imported) = python_import().await;
    let registry = registry(&[&imported]);
    let tags = |name: &str| registry.definitions().iter().find(|d| d.name == name).unwrap().tags.clone();
    assert_eq!(tags("py_echo"), ["read_only"]);
    assert_eq!(tags("py_lookup"), ["read_only", "external"]);
    assert_eq!(tags("py_unannotated"), ["destructive", "external"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_the_default_policy_a_read_only_tool_runs_and_an_open_world_one_is_refused() {
    let (dir, _server, imported) = python_import().await;
    let registry = registry(&[&imported]);
    assert_eq!(text(&call(&registry, "py_echo", json!({"text": "hi"})).await), "hi");
    let refused = call(&registry, "py_lookup", json!({"query": "rust"})).await;
    assert!(refused.is_error);
    assert_eq!(
        text(&refused),
        "Permission denied: tool `py_lookup` reaches outside this machine (tag `external`) and the permission policy does not allow it"
    );
    assert_eq!(counts(&dir.path().join("counts.json"))["lookup"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_output_schema_and_the_structured_content_are_kept() {
    let (_dir, _server, imported) = python_import().await;
    let registry = registry(&[&imported]);
    let definition = registry.definitions().iter().find(|d| d.name == "py_counts").unwrap().clone();
    let integer = |title: &str| json!({"title": title, "type": "integer"});
    assert_eq!(
        definition.output_schema,
        Some(json!({
            "properties": {
                "counts": integer("Counts"), "echo": integer("Echo"), "lookup": integer("Lookup"),
                "unannotated": integer("Unannotated"), "wait": integer("Wait")
            },
            "required": ["counts", "echo", "lookup", "unannotated", "wait"],
            "title": "Counts",
            "type": "object"
        }))
    );
    let message = call(&registry, "py_counts", json!({})).await;
    assert_eq!(
        message.structured_content,
        Some(json!({"counts": 1, "echo": 0, "lookup": 0, "unannotated": 0, "wait": 0}))
    );
    // Served again over MCP, the tool keeps its output schema and its structured content.
    let entry = tool_mcp::tool_entry(&definition);
    assert_eq!(entry.output_schema.map(|s| Value::Object((*s).clone())), definition.output_schema);
    assert_eq!(
        tool_mcp::call_result(&message, true).structured_content,
        Some(json!({"counts": 1, "echo": 0, "lookup": 0, "unannotated": 0, "wait": 0}))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_the_registry_cannot_take_is_a_registry_error_naming_the_server_and_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let server = PyServer::start(0, &dir.path().join("counts.json"), &["--bad"]);
    let imported = McpImport::http("py", &server.url).connect().await.unwrap();
    let error = imported.tools().err().unwrap();
    let RegistryError::ImportedTools { server: name, tools } = &error else { panic!("{error:?}") };
    assert_eq!(name, "py");
    assert_eq!(tools.iter().map(|(tool, _)| tool.as_str()).collect::<Vec<_>>(), ["bad_schema"]);
    assert!(tools[0].1.starts_with("its `inputSchema` is not a valid JSON Schema: "), "{}", tools[0].1);
    assert!(error.to_string().starts_with("MCP server `py` offers a tool this registry cannot take: `bad_schema`: "));
    // Left out, the others register.
    let imported = McpImport::http("py", &server.url).exclude("bad_schema").connect().await.unwrap();
    assert_eq!(imported.tools().unwrap().len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_wants_a_bearer_token_is_refused_without_it_and_served_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = PyServer::start(0, &dir.path().join("counts.json"), &["--token=s3cret"]);
    let error = McpImport::http("py", &server.url).connect().await.unwrap_err();
    let ImportError::Connect { server: name, message } = &error else { panic!("{error:?}") };
    assert_eq!(name, "py");
    assert_eq!(
        message,
        &format!(
            "{} refused the MCP initialization without authorization (HTTP 401 or 403); give the import its bearer token (`bearer_token`, or `headers.Authorization` in `mcpServers`) or OAuth client credentials with the scopes it asks for",
            server.url
        )
    );
    let imported = McpImport::http("py", &server.url).bearer_token("s3cret").prefix("py_").connect().await.unwrap();
    assert_eq!(text(&call(&registry(&[&imported]), "py_echo", json!({"text": "hi"})).await), "hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_that_cannot_start_a_name_is_refused_before_connecting() {
    let error = McpImport::http("py", "http://127.0.0.1:9/mcp").prefix("1x").connect().await.unwrap_err();
    assert_eq!(error, ImportError::InvalidPrefix { server: "py".to_owned(), prefix: "1x".to_owned() });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_too_long_with_its_prefix_is_a_registry_error() {
    let (_dir, server, _imported) = python_import().await;
    let prefix = "p".repeat(60);
    let imported = McpImport::http("py", &server.url).prefix(prefix.clone()).connect().await.unwrap();
    let Err(RegistryError::ImportedTools { tools, .. }) = imported.tools() else { panic!() };
    assert_eq!(tools.iter().map(|(tool, _)| tool.as_str()).collect::<Vec<_>>(), ["lookup", "unannotated", "counts"]);
    assert_eq!(
        tools[0].1,
        format!(
            "the name `{prefix}lookup` breaks the rule `^[A-Za-z_][A-Za-z0-9_-]{{0,63}}$` (a letter or `_`, then at most 63 letters, digits, `_` or `-`)"
        )
    );
}

/// A command that writes its shell's pid to `started` (as `/proc` numbers it: in the command's
/// pid namespace `$$` is 1), then becomes `sleep` (same pid).
const SLEEPER: &str =
    "read -r pid rest < /proc/self/stat && echo $pid > started.tmp && mv started.tmp started && exec sleep 600";

/// Progress reports as `(done, total, message)`.
type Reports = Arc<Mutex<Vec<(u64, Option<u64>, String)>>>;

/// A context whose progress reports go to `reports`.
fn listening(reports: &Reports) -> tool_runtime::ToolContextBuilder {
    let reports = reports.clone();
    ToolContext::builder().on_progress(move |p: Progress| reports.lock().unwrap().push((p.done, p.total, p.message)))
}

/// Waits (bounded in count) until `ready` holds.
async fn until(what: &str, mut ready: impl FnMut() -> bool) {
    for _ in 0..3000 {
        if ready() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("never happened: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_caller_and_a_cancelled_call_is_cancelled_on_the_server() {
    let (dir, _server, imported) = python_import().await;
    let registry = Arc::new(registry(&[&imported]));
    let reports = Reports::default();
    let token = tool_runtime::CancellationToken::new();
    let ctx = listening(&reports).cancellation(token.clone()).build();
    let marker = dir.path().join("cancelled");
    let arguments = json!({"marker": marker}).to_string();
    let running = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(&ToolCall::new("c1", "py_wait", arguments), &ctx).await }
    });
    until("the progress report", || !reports.lock().unwrap().is_empty()).await;
    assert_eq!(*reports.lock().unwrap(), [(1, Some(2), "started".to_owned())]);
    token.cancel();
    let message = running.await.unwrap();
    assert_eq!(text(&message), "tool `py_wait` was cancelled");
    until("the server's cancelled wait", || marker.exists()).await;
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "cancelled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_http_server_mid_call_gives_an_error_result_and_the_next_call_works_once_it_is_back() {
    let (dir, mut server, imported) = python_import().await;
    let registry = Arc::new(registry(&[&imported]));
    let reports = Reports::default();
    let ctx = listening(&reports).build();
    let arguments = json!({"marker": dir.path().join("unused")}).to_string();
    let running = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(&ToolCall::new("c1", "py_wait", arguments), &ctx).await }
    });
    until("the progress report", || !reports.lock().unwrap().is_empty()).await;
    server.kill();
    let message = running.await.unwrap();
    assert!(message.is_error);
    assert!(
        text(&message).starts_with("MCP server `py` closed its connection during the call of `wait`; "),
        "{}",
        text(&message)
    );
    let _back = PyServer::start(server.port, &dir.path().join("counts.json"), &[]);
    assert_eq!(text(&call(&registry, "py_echo", json!({"text": "again"})).await), "again");
    assert_eq!(counts(&dir.path().join("counts.json"))["echo"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_stdio_server_mid_call_gives_an_error_result_and_the_next_call_starts_it_again() {
    let (workspace, _state, imported) = toolbox_import("fs,exec").await;
    let registry = Arc::new(registry(&[&imported]));
    let first = imported.child_pid().unwrap();
    // The shell writes its pid, then becomes `sleep` (same pid), which the test stops.
    let arguments = json!({ "command": SLEEPER }).to_string();
    let running = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(&ToolCall::new("c1", "tb_bash", arguments), &ToolContext::new()).await }
    });
    let started = workspace.path().join("started");
    until("the command to start", || started.exists()).await;
    let sleeper = std::fs::read_to_string(&started).unwrap().trim().to_owned();
    let kill = |pid: &str| Command::new("kill").args(["-KILL", pid]).status().unwrap();
    assert!(kill(&first.to_string()).success());
    let message = running.await.unwrap();
    assert!(kill(&sleeper).success());
    assert!(message.is_error);
    assert!(
        text(&message)
            == "MCP server `tb` closed its connection during the call of `bash`; the call may or may not have taken effect there; the next call starts it again (if it keeps stopping, look at its log: what it writes to standard error)",
        "{}",
        text(&message)
    );
    let message = call(&registry, "tb_write", json!({"file_path": "b.txt", "content": "two\n"})).await;
    assert!(!message.is_error, "{message:?}");
    assert_eq!(std::fs::read_to_string(workspace.path().join("b.txt")).unwrap(), "two\n");
    let second = imported.child_pid().unwrap();
    assert_ne!(second, first);
    imported.close().await;
}

/// A gateway's surroundings: the Python server, and an `mcpServers` file naming it (`py`) and a
/// second `toolbox mcp` (`tb`, the fs tools in a workspace of its own); the temp dirs they use.
struct Gateway {
    dir: tempfile::TempDir,
    remote_root: tempfile::TempDir,
    _remote_state: tempfile::TempDir,
    /// The state dir of the gateway itself.
    state: tempfile::TempDir,
    _server: PyServer,
    file: PathBuf,
}

impl Gateway {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (remote_root, remote_state, state) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let server = PyServer::start(0, &dir.path().join("counts.json"), &[]);
        let file = dir.path().join("servers.json");
        let config = json!({"mcpServers": {
            "tb": {
                "command": env!("CARGO_BIN_EXE_toolbox"),
                "args": ["mcp", "--set", "fs", "--root", remote_root.path(), "--state-dir", remote_state.path()]
            },
            "py": {"url": server.url, "type": "http"}
        }});
        std::fs::write(&file, config.to_string()).unwrap();
        Self { dir, remote_root, _remote_state: remote_state, state, _server: server, file }
    }

    /// `--config FILE --state-dir STATE`.
    fn options(&self) -> [&str; 4] {
        ["--config", self.file.to_str().unwrap(), "--state-dir", self.state.path().to_str().unwrap()]
    }

    fn counts(&self) -> Value {
        counts(&self.dir.path().join("counts.json"))
    }
}

fn toolbox(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_toolbox")).args(args).stdin(Stdio::null()).output().unwrap()
}

#[test]
fn toolbox_list_with_a_config_lists_the_imported_tools_the_policy_lets_run() {
    let gateway = Gateway::start();
    let output = toolbox(&[&["list", "--set", "py,tb"], &gateway.options()[..]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    // `py_lookup` and `py_unannotated` are open-world: off without `--allow external`.
    assert_eq!(
        names,
        [
            "py_counts",
            "py_echo",
            "py_grow",
            "py_wait",
            "tb_edit",
            "tb_glob",
            "tb_grep",
            "tb_read",
            "tb_read_line",
            "tb_write"
        ]
    );
}

#[test]
fn toolbox_call_with_a_config_runs_an_imported_tool_and_refuses_an_open_world_one() {
    let gateway = Gateway::start();
    let common = gateway.options();
    let output = toolbox(&[&["call", "py_echo", r#"{"text": "hi"}"#, "--call-id", "c1"], &common[..]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let message: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(message["content"], "hi");
    let output = toolbox(&[&["call", "py_lookup", r#"{"query": "q"}"#], &common[..]].concat());
    assert_eq!(output.status.code(), Some(1));
    let message: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        message["content"],
        "Permission denied: tool `py_lookup` is tagged `external` (it reaches outside this machine) and is off; run toolbox with `--allow external` to turn it on"
    );
    assert_eq!(gateway.counts()["lookup"], 0);
}

/// The checks `gateway_client.py` prints, in order, when all pass.
const GATEWAY_CHECKS: [&str; 8] = [
    "ok tools/list: the standard tools and the imported ones the policy lets run",
    "ok call py_echo",
    "ok call tb_read reads the remote workspace",
    "ok call py_echo with an unknown field is an error result",
    "ok call py_lookup is refused",
    "ok call py_counts gives structured content",
    "ok py_wait reports progress to this client, and cancelling it cancels it on the server",
    "ok a tool list change on the imported server reaches this client through the gateway",
];

/// Runs `gateway_client.py` against `target` (a command and its arguments, or a URL) after
/// writing the file the remote toolbox reads; asserts that the checks passed ([`GATEWAY_CHECKS`],
/// then `more`) and what reached the Python server.
fn drive_gateway(gateway: &Gateway, target: &[&str], more: &[&str]) {
    std::fs::write(gateway.remote_root.path().join("remote.txt"), "from the remote workspace\n").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gateway_client.py");
    let output = Command::new(python::interpreter())
        .arg(&script)
        .arg(gateway.dir.path().join("cancelled"))
        .args(target)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.lines().collect::<Vec<_>>(), [&GATEWAY_CHECKS[..], more].concat());
    assert_eq!(gateway.counts()["echo"], 1);
    assert_eq!(gateway.counts()["lookup"], 0);
}

#[test]
fn the_python_mcp_sdk_drives_the_gateway_over_stdio() {
    let gateway = Gateway::start();
    let root = tempfile::tempdir().unwrap();
    let toolbox = env!("CARGO_BIN_EXE_toolbox");
    drive_gateway(
        &gateway,
        &[&[toolbox, "mcp", "--root", root.path().to_str().unwrap()], &gateway.options()[..]].concat(),
        &["ok a stdio client before 2026-07-28 is told of the change unscoped"],
    );
}

#[test]
fn the_python_mcp_sdk_drives_the_gateway_over_streamable_http() {
    let gateway = Gateway::start();
    let root = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command.args(["mcp", "--http", "127.0.0.1:0", "--root", root.path().to_str().unwrap()]).args(gateway.options());
    let started = start_saying(command, Output::Stderr, TOOLBOX_SERVING);
    let (mut gateway_process, url) = (started.process, started.said);
    drive_gateway(&gateway, &[&url], &[]);
    let pid = gateway_process.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert_eq!(gateway_process.0.wait().unwrap().code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_on_the_server_lists_the_tools_again() {
    let (_dir, _server, imported) = python_import().await;
    let before = registry(&[&imported]);
    let mut changes = imported.changes();
    assert_eq!(text(&call(&before, "py_grow", json!({})).await), "grown");
    // Bounded: a missed notification fails here instead of hanging.
    tokio::time::timeout(std::time::Duration::from_secs(120), changes.changed()).await.unwrap().unwrap();
    assert_eq!(imported.remote_tools(), ["lookup", "unannotated", "counts", "wait", "grow", "extra"]);
    // The registry built before keeps its tools; the one removed on the server says so.
    assert_eq!(
        text(&call(&before, "py_echo", json!({"text": "hi"})).await),
        "MCP server `py` no longer offers `echo` (its tool list changed); call another tool"
    );
    let after = registry(&[&imported]);
    assert_eq!(
        after.names().collect::<Vec<_>>(),
        ["py_counts", "py_extra", "py_grow", "py_lookup", "py_unannotated", "py_wait"]
    );
    assert_eq!(text(&call(&after, "py_extra", json!({"word": "new"})).await), "extra new");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_is_cancelled_on_the_stdio_server_which_keeps_serving() {
    let (workspace, _state, imported) = toolbox_import("fs,exec").await;
    let registry = Arc::new(registry(&[&imported]));
    let pid = imported.child_pid().unwrap();
    let token = tool_runtime::CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let arguments = json!({ "command": SLEEPER }).to_string();
    let running = tokio::spawn({
        let registry = registry.clone();
        async move { registry.call(&ToolCall::new("c1", "tb_bash", arguments), &ctx).await }
    });
    let started = workspace.path().join("started");
    until("the command to start", || started.exists()).await;
    let sleeper = std::fs::read_to_string(&started).unwrap().trim().to_owned();
    token.cancel();
    assert_eq!(text(&running.await.unwrap()), "tool `tb_bash` was cancelled");
    // The server stops the command's process group when its call is cancelled.
    let alive = || Command::new("kill").args(["-0", &sleeper]).stderr(Stdio::null()).status().unwrap().success();
    until("the cancelled command to stop", || !alive()).await;
    let message = call(&registry, "tb_write", json!({"file_path": "c.txt", "content": "three\n"})).await;
    assert!(!message.is_error, "{message:?}");
    assert_eq!(imported.child_pid(), Some(pid));
    imported.close().await;
}

/// `toolbox list --config FILE`, FILE holding `config` unless it is `None` (no file); asserts
/// exit 1 and returns the file's path and standard error.
fn list_failing(config: Option<&str>) -> (tempfile::TempDir, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("servers.json");
    if let Some(config) = config {
        std::fs::write(&file, config).unwrap();
    }
    let output = toolbox(&["list", "--config", file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    (dir, file, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn a_config_file_that_cannot_be_read_is_an_error_naming_it() {
    let (_dir, file, stderr) = list_failing(None);
    assert_eq!(
        stderr,
        format!(
            "toolbox: --config cannot read the MCP servers file {}: No such file or directory (os error 2)\n",
            file.display()
        )
    );
}

#[test]
fn a_config_entry_with_an_unknown_key_is_an_error_naming_the_server_and_the_key() {
    let (_dir, file, stderr) =
        list_failing(Some(r#"{"mcpServers": {"a": {"command": "x", "autoApprove": ["read"]}}}"#));
    assert_eq!(
        stderr,
        format!(
            "toolbox: --config {}: server `a`: unknown key `autoApprove`; the keys read are `args`, `command`, `cwd`, `disabled`, `env`, `exclude`, `headers`, `oauth`, `prefix`, `type`, `url`\n",
            file.display()
        )
    );
}

#[test]
fn a_config_server_that_cannot_start_is_an_error_naming_it_and_the_command() {
    let missing = "/nonexistent/no-such-server";
    let (_dir, _file, stderr) = list_failing(Some(&json!({"mcpServers": {"a": {"command": missing}}}).to_string()));
    assert_eq!(
        stderr,
        format!(
            "toolbox: cannot connect to MCP server `a`: cannot start `{missing}`: No such file or directory (os error 2); check the command and that it is on PATH\n"
        )
    );
}

#[test]
fn a_config_server_with_a_tool_the_registry_cannot_take_is_an_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let server = PyServer::start(0, &dir.path().join("counts.json"), &["--bad"]);
    let config = json!({"mcpServers": {"py": {"url": server.url}}}).to_string();
    let (_dir, _file, stderr) = list_failing(Some(&config));
    assert!(
        stderr.starts_with(
            "toolbox: MCP server `py` offers a tool this registry cannot take: `bad_schema`: its `inputSchema` is not a valid JSON Schema: "
        ),
        "{stderr}"
    );
    assert!(stderr.ends_with("; fix the tool on the server, or leave it out of the import (`exclude`)\n"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_reaches_an_import_of_the_gateway_itself() {
    // The import's session is of protocol 2025-11-25 (rmcp's client initializes), so the gateway
    // says it unscoped.
    let gateway = Gateway::start();
    let root = tempfile::tempdir().unwrap();
    let args = [&["mcp", "--root", root.path().to_str().unwrap()], &gateway.options()[..]].concat();
    let imported = McpImport::stdio("gw", env!("CARGO_BIN_EXE_toolbox"), args).prefix("gw_").connect().await.unwrap();
    let mut changes = imported.changes();
    let registry = registry(&[&imported]);
    assert_eq!(text(&call(&registry, "gw_py_grow", json!({})).await), "grown");
    // Bounded: a missed notification fails here instead of hanging.
    tokio::time::timeout(std::time::Duration::from_secs(120), changes.changed()).await.unwrap().unwrap();
    let tools = imported.remote_tools();
    assert!(tools.iter().any(|t| t == "py_extra") && !tools.iter().any(|t| t == "py_echo"), "{tools:?}");
    imported.close().await;
}

/// A `--config` file of one server `tb`, a `toolbox mcp` of the six fs tools over stdio, in `dir`.
fn fs_server_config(dir: &Path) -> PathBuf {
    let (root, state) = (dir.join("remote-root"), dir.join("remote-state"));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&state).unwrap();
    let file = dir.join("servers.json");
    let config = json!({"mcpServers": {"tb": {
        "command": env!("CARGO_BIN_EXE_toolbox"),
        "args": ["mcp", "--set", "fs", "--root", root, "--state-dir", state]
    }}});
    std::fs::write(&file, config.to_string()).unwrap();
    file
}

#[test]
fn import_max_tools_refuses_a_server_listing_more_naming_it_and_the_cap() {
    let (dir, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = fs_server_config(dir.path());
    let options = ["--config", file.to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()];
    let output = toolbox(&[&["list", "--set", "tb", "--import-max-tools", "5"], &options[..]].concat());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "toolbox: MCP server `tb` did not list its tools: it lists more than 5 tools (the import's cap); import a \
         server with fewer tools or raise ImportLimits::max_tools\n"
    );
    // At the server's own count, it is served.
    let output = toolbox(&[&["list", "--set", "tb", "--import-max-tools", "6"], &options[..]].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
}

#[test]
fn a_config_server_that_cannot_start_is_skipped_with_a_warning_and_the_others_are_served() {
    let (dir, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = fs_server_config(dir.path());
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let missing = "/nonexistent/no-such-server";
    config["mcpServers"]["a"] = json!({"command": missing});
    std::fs::write(&file, config.to_string()).unwrap();
    let output = toolbox(&[
        "list",
        "--set",
        "tb",
        "--config",
        file.to_str().unwrap(),
        "--state-dir",
        state.path().to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "toolbox: warning: skipping MCP server of --config: cannot connect to MCP server `a`: cannot start \
             `{missing}`: No such file or directory (os error 2); check the command and that it is on PATH\n"
        )
    );
    let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["tb_edit", "tb_glob", "tb_grep", "tb_read", "tb_read_line", "tb_write"]);
}
