//! OpenTelemetry end to end: `toolbox mcp --http` as an upstream, a second `toolbox mcp --http`
//! importing it as a gateway, the Python MCP SDK calling the gateway with a `traceparent` in
//! `params._meta`, and both toolboxes exporting OTLP over HTTP to a local receiver that decodes
//! the exports with the official OpenTelemetry protobuf definitions (`otlp_receiver.py`, the
//! Python `opentelemetry-proto` package). One trace runs from the client's span through the
//! gateway to the upstream's tool.
//!
//! The interpreter is `$TOOL_CONFORMANCE_PYTHON` (set by `scripts/test.sh` to the python of
//! `target/conformance-venv`), else `python3`. Every wait is bounded in count; nothing is timed.
//! Every process the test starts is killed by it (or by a guard when it fails).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::process::{Output, Running, TOOLBOX_SERVING, start_saying};

fn python() -> String {
    std::env::var("TOOL_CONFORMANCE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// A child process killed (and waited for) on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line of `reader` that starts with `prefix`, the rest of it; read on a thread so that
/// the wait is bounded (120 s, for a cold interpreter).
fn line_after(reader: impl std::io::Read + Send + 'static, prefix: &'static str) -> Option<String> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix(prefix) {
                let _ = sender.send(rest.to_owned());
                break;
            }
        }
    });
    receiver.recv_timeout(Duration::from_secs(120)).ok()
}

/// `PYTHON tests/SCRIPT ARG` (a local server that says `listening on URL` and stops when its
/// standard input closes): the process, its standard input and the URL it said (`None` when it
/// said none).
fn python_server(python: &str, script: &str, arg: &std::ffi::OsStr) -> (Killed, ChildStdin, Option<String>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(script);
    let mut child = Command::new(python)
        .arg(&script)
        .arg(arg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run `{python}` ({e}); run scripts/test.sh"));
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    (Killed(child), stdin, line_after(stdout, "listening on "))
}

/// `otlp_receiver.py` writing to `out`; it stops when its standard input closes.
fn receiver(out: &Path) -> (Killed, ChildStdin, String) {
    let (mut child, stdin, url) = python_server(&python(), "otlp_receiver.py", out.as_os_str());
    let Some(url) = url else {
        let status = child.0.wait().unwrap();
        panic!(
            "otlp_receiver.py did not start ({status}; exit 3: opentelemetry-proto is missing, run scripts/test.sh)"
        );
    };
    (child, stdin, url)
}

/// `toolbox mcp --http 127.0.0.1:0 ARGS` with the variables `env`; returns once it serves, with
/// its URL.
fn toolbox_http(args: &[&str], env: &[(&str, &str)]) -> (Running, String) {
    let started = toolbox_http_started(args, env);
    (started.process, started.said)
}

/// As [`toolbox_http`], with the lines of standard error after the one that said the URL.
fn toolbox_http_started(args: &[&str], env: &[(&str, &str)]) -> test_support::process::Started {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command.args(["mcp", "--http", "127.0.0.1:0"]).args(args);
    for name in ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SERVICE_NAME", "OTEL_SDK_DISABLED", "OTEL_RESOURCE_ATTRIBUTES"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    // Standard error is read to its end on a thread (and kept), never left closed or full.
    start_saying(command, Output::Stderr, TOOLBOX_SERVING)
}

/// One HTTP/1.1 POST of the JSON `body` to `url` (`http://127.0.0.1:PORT/mcp`) with the extra
/// `headers`: the `Mcp-Session-Id` header of the answer, if any, and the whole answer as text
/// (read to its end: the request asks to close the connection; at most 30 s).
fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (Option<String>, String) {
    request("POST", url, headers, &body.to_string())
}

/// As [`post`], with the method and the body's text as given.
fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> (Option<String>, String) {
    use std::io::{Read, Write};
    let (host, path) = url.strip_prefix("http://").unwrap().split_once('/').unwrap();
    let mut request = format!(
        "{method} /{path} HTTP/1.1\r\nHost: {host}\r\nAccept: application/json, text/event-stream\r\nContent-Type: \
         application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut stream = std::net::TcpStream::connect(host).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let session = answer
        .split("\r\n\r\n")
        .next()
        .unwrap()
        .lines()
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("mcp-session-id"))
        .map(|(_, value)| value.trim().to_owned());
    (session, answer)
}

/// A legacy client's session with the server at `url` (protocol version 2025-06-18: `initialize`,
/// then `notifications/initialized` in the session): the `Mcp-Session-Id` the server gave.
fn legacy_session(url: &str) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "legacy", "version": "0"}}});
    let (session, answer) = post(url, &[], &initialize);
    let session = session.unwrap_or_else(|| panic!("no Mcp-Session-Id: {answer}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (_, answer) = post(url, &[("Mcp-Session-Id", &session), ("MCP-Protocol-Version", "2025-06-18")], &initialized);
    assert!(answer.starts_with("HTTP/1.1 202"), "{answer}");
    session
}

/// A `tools/call` of `name` with `arguments` in the legacy `session` at `url` (each with an id of
/// its own); the whole answer.
fn call_in_session(url: &str, session: &str, name: &str, arguments: Value) -> String {
    static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(2);
    let id = IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let call =
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    post(url, &[("Mcp-Session-Id", session), ("MCP-Protocol-Version", "2025-06-18")], &call).1
}

/// Stops `toolbox` with SIGTERM (it exports what is left as it ends) and waits for it, at most 30 s
/// (300 looks, 100 ms apart).
fn terminate(mut toolbox: Running) {
    let pid = toolbox.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    for _ in 0..300 {
        if let Some(status) = toolbox.0.try_wait().unwrap() {
            assert!(status.success(), "toolbox ended with {status}");
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("toolbox did not end within 30 s of SIGTERM");
}

/// The records `otlp_receiver.py` wrote.
fn records(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out).unwrap_or_default().lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// Every export body `otlp_receiver.py` got, as it came (protobuf, in which strings are UTF-8 as
/// they were given), as text.
fn raw_exports(out: &Path) -> String {
    let mut raw = out.as_os_str().to_owned();
    raw.push(".raw");
    String::from_utf8_lossy(&std::fs::read(raw).unwrap_or_default()).into_owned()
}

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

#[test]
fn a_call_through_a_gateway_is_one_trace_from_the_python_client_to_the_upstreams_tool() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("otlp.jsonl");
    let (_receiver, receiver_stdin, otlp) = receiver(&out);
    let (upstream_root, upstream_state, gateway_root, gateway_state) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    std::fs::write(upstream_root.path().join("remote.txt"), "from the upstream\n").unwrap();

    // The upstream names the receiver with the flag, the gateway with the standard variable.
    let (upstream, upstream_url) = toolbox_http(
        &[
            "--set",
            "fs",
            "--root",
            upstream_root.path().to_str().unwrap(),
            "--state-dir",
            upstream_state.path().to_str().unwrap(),
            "--otlp-endpoint",
            &otlp,
        ],
        &[("OTEL_SERVICE_NAME", "upstream")],
    );
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"up": {"url": upstream_url, "type": "http"}}}).to_string()).unwrap();
    let (gateway, gateway_url) = toolbox_http(
        &[
            "--set",
            "up",
            "--config",
            config.to_str().unwrap(),
            "--root",
            gateway_root.path().to_str().unwrap(),
            "--state-dir",
            gateway_state.path().to_str().unwrap(),
        ],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp), ("OTEL_SERVICE_NAME", "gateway")],
    );

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/telemetry_client.py");
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let output = Command::new(python())
        .arg(&script)
        .args([gateway_url.as_str(), "up_read", r#"{"file_path": "remote.txt"}"#, &traceparent])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(stdout.lines().take(2).collect::<Vec<_>>(), ["ok", "    1  from the upstream"]);

    terminate(gateway);
    terminate(upstream);
    drop(receiver_stdin);
    let records = records(&out);

    // Every span of the client's trace: (service, name, kind) -> (span id, parent span id).
    let mut trace: BTreeMap<(String, String, String), (String, String)> = BTreeMap::new();
    for span in records.iter().filter(|r| r["signal"] == "span" && r["trace_id"] == TRACE) {
        let key = (
            span["service"].as_str().unwrap().to_owned(),
            span["name"].as_str().unwrap().to_owned(),
            span["kind"].as_str().unwrap().to_owned(),
        );
        let ids = (span["span_id"].as_str().unwrap().to_owned(), span["parent_span_id"].as_str().unwrap().to_owned());
        assert!(trace.insert(key.clone(), ids).is_none(), "two spans {key:?}");
    }
    let key = |service: &str, name: &str, kind: &str| (service.to_owned(), name.to_owned(), kind.to_owned());
    let keys: Vec<_> = trace.keys().cloned().collect();
    assert_eq!(
        keys,
        [
            key("gateway", "tools/call read", "CLIENT"),
            key("gateway", "tools/call up_read", "SERVER"),
            key("upstream", "tools/call read", "SERVER"),
        ]
    );
    // Each SERVER span is also its tool's execution span (no `execute_tool` span beside it).
    let gateway_server = &trace[&key("gateway", "tools/call up_read", "SERVER")];
    let gateway_client = &trace[&key("gateway", "tools/call read", "CLIENT")];
    let upstream_server = &trace[&key("upstream", "tools/call read", "SERVER")];
    assert_eq!(gateway_server.1, CLIENT_SPAN);
    assert_eq!(gateway_client.1, gateway_server.0);
    assert_eq!(upstream_server.1, gateway_client.0);

    let server = records
        .iter()
        .find(|r| r["signal"] == "span" && r["trace_id"] == TRACE && r["service"] == "gateway" && r["kind"] == "SERVER")
        .unwrap();
    assert_eq!(server["attributes"]["mcp.method.name"], "tools/call");
    assert_eq!(server["attributes"]["network.transport"], "tcp");
    assert_eq!(server["attributes"]["gen_ai.tool.name"], "up_read");
    assert_eq!(server["attributes"]["gen_ai.operation.name"], "execute_tool");
    assert_eq!(server["attributes"]["gen_ai.tool.type"], "function");
    assert_eq!(server["attributes"]["outcome"], "ok");
    assert!(server["attributes"]["gen_ai.tool.call.id"].as_str().is_some_and(|id| id.starts_with("mcp_")));
    assert!(server["attributes"].get("mcp.session.id").is_none());
    let tool = records
        .iter()
        .find(|r| {
            r["signal"] == "span" && r["trace_id"] == TRACE && r["service"] == "upstream" && r["kind"] == "SERVER"
        })
        .unwrap();
    assert!(tool["attributes"].get("gen_ai.tool.call.arguments").is_none(), "arguments captured by default");
    assert!(!tool.to_string().contains("remote.txt"), "the model's input reached the span: {tool}");

    // The resource and the metrics of each process.
    let metrics = |service: &str| -> BTreeMap<String, Vec<f64>> {
        records
            .iter()
            .filter(|r| r["signal"] == "metric" && r["service"] == service)
            .map(|r| {
                let bounds = r["bounds"].as_array().unwrap().iter().map(|b| b.as_f64().unwrap()).collect();
                (r["name"].as_str().unwrap().to_owned(), bounds)
            })
            .collect()
    };
    let execute_tool = vec![0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92];
    let operation = vec![0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];
    let gateway_metrics = metrics("gateway");
    assert_eq!(gateway_metrics.get("gen_ai.execute_tool.duration"), Some(&execute_tool));
    assert_eq!(gateway_metrics.get("mcp.server.operation.duration"), Some(&operation));
    assert_eq!(gateway_metrics.get("mcp.client.operation.duration"), Some(&operation));
    let upstream_metrics = metrics("upstream");
    assert_eq!(upstream_metrics.get("gen_ai.execute_tool.duration"), Some(&execute_tool));
    assert_eq!(upstream_metrics.get("mcp.server.operation.duration"), Some(&operation));
}

/// `toolbox call sec_sign` of `secret_server.py` (imported over standard input and output) with
/// `args` and the variables `env`, exporting to a receiver of its own; the tool message printed
/// and the records the receiver got.
fn call_secret_tool(args: &[&str], env: &[(&str, &str)]) -> (Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("otlp.jsonl");
    let (_receiver, receiver_stdin, otlp) = receiver(&out);
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secret_server.py");
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"sec": {"command": "python3", "args": [script]}}}).to_string())
        .unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command
        .args(["call", "sec_sign", r#"{"text": "hello-visible", "token": "hunter2-secret"}"#])
        .args(["--config", config.to_str().unwrap(), "--otlp-endpoint", &otlp])
        .args(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .args(args);
    for name in
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]
    {
        command.env_remove(name);
    }
    let output = command.envs(env.iter().copied()).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&output.stderr));
    drop(receiver_stdin);
    (serde_json::from_str(&stdout).unwrap(), records(&out))
}

/// The one `execute_tool sec_sign` span of `records`.
fn sign_span(records: &[Value]) -> &Value {
    let spans: Vec<&Value> =
        records.iter().filter(|r| r["signal"] == "span" && r["name"] == "execute_tool sec_sign").collect();
    assert_eq!(spans.len(), 1, "{records:?}");
    spans[0]
}

#[test]
fn without_the_switch_no_argument_or_result_reaches_the_exported_spans() {
    let (message, records) = call_secret_tool(&[], &[]);
    assert_eq!(message["content"], "signed hello-visible with [redacted]");
    let span = sign_span(&records);
    assert_eq!(span["attributes"].get("gen_ai.tool.call.arguments"), None);
    assert_eq!(span["attributes"].get("gen_ai.tool.call.result"), None);
    let exported = serde_json::to_string(&records).unwrap();
    assert!(!exported.contains("hello-visible"), "{exported}");
    assert!(!exported.contains("hunter2-secret"), "{exported}");
}

#[test]
fn capture_content_records_the_arguments_and_the_result_with_the_secret_redacted() {
    let (message, records) = call_secret_tool(&["--capture-content"], &[]);
    assert_eq!(message["content"], "signed hello-visible with [redacted]");
    let span = sign_span(&records);
    assert_eq!(span["attributes"]["gen_ai.tool.call.arguments"], r#"{"text":"hello-visible","token":"[redacted]"}"#);
    assert_eq!(span["attributes"]["gen_ai.tool.call.result"], "signed hello-visible with [redacted]");
    let exported = serde_json::to_string(&records).unwrap();
    assert!(!exported.contains("hunter2-secret"), "{exported}");
}

#[test]
fn the_genai_capture_variable_turns_content_capture_on_like_the_switch() {
    let (_, records) = call_secret_tool(&[], &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")]);
    let span = sign_span(&records);
    assert_eq!(span["attributes"]["gen_ai.tool.call.arguments"], r#"{"text":"hello-visible","token":"[redacted]"}"#);
    assert!(!serde_json::to_string(&records).unwrap().contains("hunter2-secret"));
}

#[test]
fn an_unknown_value_of_the_genai_capture_variable_is_refused_before_any_call() {
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["list", "--set", "todo"])
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "yes")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(output.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "toolbox: OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT is `yes`, which is not a value it takes; set it \
         to `true`, `SPAN_ONLY` or `SPAN_AND_EVENT` to capture the arguments and results of tool calls on spans, or \
         `false`, `NO_CONTENT` or `EVENT_ONLY` (or leave it unset) not to\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_code_mode_program_is_one_server_span_and_each_of_its_calls_an_execute_tool_span_under_it() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("otlp.jsonl");
    let (_receiver, receiver_stdin, otlp) = receiver(&out);
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(root.path().join("a.rs"), "// TODO one\n").unwrap();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbox"));
    command
        .args(["mcp", "--code-mode", "--set", "fs", "--otlp-endpoint", &otlp])
        .args(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    for name in
        ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"]
    {
        command.env_remove(name);
    }
    let mut child = command.spawn().unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = ().serve(transport).await.unwrap();
    let code = "const files = await tools.glob({pattern: '*.rs'});\n\
                const todos = await tools.grep({pattern: 'TODO'});\n\
                return files.trim() + ' ' + todos.split(':')[0];";
    let arguments = json!({ "code": code });
    let result = client
        .call_tool(CallToolRequestParams::new("run_program").with_arguments(arguments.as_object().unwrap().clone()))
        .await
        .unwrap();
    let result = serde_json::to_value(result).unwrap();
    assert_eq!(result["isError"], false, "{result}");
    client.cancel().await.unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(30), child.wait()).await.expect("toolbox ended").unwrap();
    assert!(ended.success());
    drop(receiver_stdin);
    let records = records(&out);

    let spans: Vec<&Value> = records.iter().filter(|r| r["signal"] == "span").collect();
    let server = spans
        .iter()
        .find(|s| s["name"] == "tools/call run_program" && s["kind"] == "SERVER")
        .unwrap_or_else(|| panic!("no SERVER span of run_program: {spans:?}"));
    let trace: Vec<(String, String, String)> = spans
        .iter()
        .filter(|s| s["trace_id"] == server["trace_id"])
        .map(|s| {
            let parent = if s["parent_span_id"] == server["span_id"] { "the SERVER span" } else { "other" };
            (s["name"].as_str().unwrap().to_owned(), s["kind"].as_str().unwrap().to_owned(), parent.to_owned())
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let span = |name: &str, kind: &str, parent: &str| (name.to_owned(), kind.to_owned(), parent.to_owned());
    assert_eq!(
        trace,
        [
            span("execute_tool glob", "INTERNAL", "the SERVER span"),
            span("execute_tool grep", "INTERNAL", "the SERVER span"),
            span("tools/call run_program", "SERVER", "other"),
        ]
    );
    let in_trace =
        |name: &str| spans.iter().filter(|s| s["trace_id"] == server["trace_id"] && s["name"] == name).count();
    assert_eq!((in_trace("execute_tool glob"), in_trace("execute_tool grep")), (1, 1));
    assert_eq!(server["attributes"]["outcome"], "ok");
    assert_eq!(server["attributes"]["gen_ai.tool.name"], "run_program");
    assert!(server["attributes"]["gen_ai.tool.call.id"].as_str().is_some_and(|id| id.starts_with("mcp_")));
}

/// A `toolbox mcp --http` exporting to an `otlp_receiver.py` of its own; [`Exporting::finish`]
/// ends both.
struct Exporting {
    toolbox: Running,
    _receiver: Killed,
    receiver_stdin: ChildStdin,
    out: std::path::PathBuf,
    _state: tempfile::TempDir,
}

/// `toolbox mcp --http 127.0.0.1:0 ARGS --otlp-endpoint` the receiver's URL, serving `root` (its
/// state directory a new temporary one; the receiver writes into `dir`); returns once it serves,
/// with its URL.
fn exporting(dir: &Path, root: &Path, args: &[&str]) -> (Exporting, String) {
    let out = dir.join("otlp.jsonl");
    let (receiver, receiver_stdin, otlp) = receiver(&out);
    let state = tempfile::tempdir().unwrap();
    let mut all = vec!["--otlp-endpoint", &otlp, "--root", root.to_str().unwrap()];
    all.extend(["--state-dir", state.path().to_str().unwrap()]);
    all.extend(args);
    let (toolbox, url) = toolbox_http(&all, &[]);
    (Exporting { toolbox, _receiver: receiver, receiver_stdin, out, _state: state }, url)
}

impl Exporting {
    /// Stops `toolbox` (it exports what is left), then the receiver; what was exported: the
    /// decoded records, and every export's body as text ([`raw_exports`]).
    fn finish(self) -> (Vec<Value>, String) {
        terminate(self.toolbox);
        drop(self.receiver_stdin);
        (records(&self.out), raw_exports(&self.out))
    }
}

/// Fails when `needle` is in a decoded record or in the body of an export.
fn assert_not_exported(records: &[Value], raw: &str, needle: &str) {
    let decoded = serde_json::to_string(records).unwrap();
    assert!(!decoded.contains(needle), "{needle} was exported: {decoded}");
    assert!(!raw.contains(needle), "{needle} is in the body of an export");
}

#[test]
fn a_legacy_sessions_id_is_in_no_exported_span_attribute_or_event() {
    let (dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(root.path().join("a.txt"), "in the root\n").unwrap();
    let (toolbox, url) = exporting(dir.path(), root.path(), &["--legacy-sessions", "--set", "fs"]);
    let session = legacy_session(&url);
    let answer = call_in_session(&url, &session, "read", json!({"file_path": "a.txt"}));
    assert!(answer.contains("in the root"), "{answer}");
    // The client ends the session, which ends rmcp's span of it.
    let (_, answer) =
        request("DELETE", &url, &[("Mcp-Session-Id", &session), ("MCP-Protocol-Version", "2025-06-18")], "");
    assert!(answer.starts_with("HTTP/1.1 2"), "{answer}");
    let (records, raw) = toolbox.finish();

    // The export happened: the call's SERVER span is there.
    assert!(records.iter().any(|r| r["name"] == "tools/call read" && r["kind"] == "SERVER"), "{records:?}");
    assert_not_exported(&records, &raw, &session);
}

#[test]
fn what_an_upstream_says_during_a_call_is_not_exported_by_the_gateway() {
    let (dir, root) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secret_server.py");
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"sec": {"command": "python3", "args": [script]}}}).to_string())
        .unwrap();
    let (gateway, url) = exporting(dir.path(), root.path(), &["--set", "sec", "--config", config.to_str().unwrap()]);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "sec_sign", "arguments": {"text": "hello-visible", "token": "hunter2-secret"},
        "_meta": {"progressToken": "p1"}}});
    let (_, answer) = post(&url, &[], &call);
    assert!(answer.contains("signed hello-visible with"), "{answer}");
    let (records, raw) = gateway.finish();

    assert!(records.iter().any(|r| r["name"] == "tools/call sign" && r["kind"] == "CLIENT"), "{records:?}");
    for marker in ["upstream-log-marker", "upstream-progress-marker", "hello-visible", "hunter2-secret"] {
        assert_not_exported(&records, &raw, marker);
    }
}

#[test]
fn no_session_id_argument_or_upstream_message_reaches_standard_error_at_any_log_level() {
    let dir = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secret_server.py");
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"sec": {"command": "python3", "args": [script]}}}).to_string())
        .unwrap();
    for level in [None, Some("-v"), Some("-vv")] {
        let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let mut args = vec!["--legacy-sessions", "--set", "sec", "--config", config.to_str().unwrap()];
        args.extend(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()]);
        args.extend(level);
        let started = toolbox_http_started(&args, &[]);
        let session = legacy_session(&started.said);
        let arguments = json!({"text": "hello-visible", "token": "hunter2-secret"});
        let answer = call_in_session(&started.said, &session, "sec_sign", arguments);
        assert!(answer.contains("signed hello-visible with"), "{answer}");
        // Arguments that are not an object: a JSON-RPC error (rmcp logs an error it answers at WARN).
        let answer = call_in_session(&started.said, &session, "sec_sign", json!("hunter2-secret"));
        assert!(answer.contains(r#""code":-32602"#), "{answer}");
        let headers = [("Mcp-Session-Id", session.as_str()), ("MCP-Protocol-Version", "2025-06-18")];
        let (_, answer) = request("DELETE", &started.said, &headers, "");
        assert!(answer.starts_with("HTTP/1.1 2"), "{answer}");
        terminate(started.process);

        let stderr = started.kept.lines().join("\n");
        // Something was logged at the verbose levels (the test would pass on a silent process).
        if level.is_some() {
            assert!(stderr.lines().count() > 1, "{level:?}: {stderr}");
        }
        for needle in [&session, "hello-visible", "hunter2-secret", "upstream-log-marker", "upstream-progress-marker"] {
            assert!(!stderr.contains(needle), "{level:?}: {needle} on standard error:\n{stderr}");
        }
    }
}

#[test]
fn an_upstreams_session_id_does_not_reach_standard_error_when_ending_its_session_fails() {
    const SESSION: &str = "sess-5ecret-upstream-91d2";
    let (upstream, stdin, url) = python_server("python3", "legacy_upstream.py", SESSION.as_ref());
    let url = url.expect("legacy_upstream.py serves");
    let (dir, root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = dir.path().join("servers.json");
    std::fs::write(&config, json!({"mcpServers": {"old": {"url": url, "type": "http"}}}).to_string()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["-v", "list", "--set", "old", "--config", config.to_str().unwrap()])
        .args(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .output()
        .unwrap();
    drop((stdin, upstream));

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // The import had the session: it listed the upstream's tool in it (and then asked to end it,
    // which the upstream refuses with 500).
    assert!(stderr.contains("listed the tools of an imported MCP server server=old tools=1"), "{stderr}");
    assert!(!stderr.contains(SESSION), "the upstream's session id on standard error:\n{stderr}");
}

#[test]
fn an_upstreams_request_before_the_handshake_is_logged_without_its_content() {
    let (dir, root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/secret_server.py");
    let config = dir.path().join("servers.json");
    let server = json!({"command": "python3", "args": [script, "--early-request"]});
    std::fs::write(&config, json!({"mcpServers": {"sec": server}}).to_string()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["list", "--set", "sec", "--config", config.to_str().unwrap()])
        .args(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .output()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let lines: Vec<&str> =
        stderr.lines().map(|line| line.split_once("Z ").map_or(line, |(_, rest)| rest).trim_start()).collect();
    assert_eq!(lines, ["WARN rmcp::service::client: Received unexpected message message=[not logged]"]);
}

/// `toolbox ARGS list --set old` with `config` as its `--config` file (in temporary directories):
/// whether it succeeded, and its standard error.
fn list_imported(config: &Value, args: &[&str]) -> (bool, String) {
    let (dir, root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let file = dir.path().join("servers.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(args)
        .args(["list", "--set", "old", "--config", file.to_str().unwrap()])
        .args(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .output()
        .unwrap();
    (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn an_import_urls_password_query_and_bearer_token_reach_no_line_at_the_most_verbose_level() {
    let (upstream, stdin, url) = python_server("python3", "legacy_upstream.py", "sess-1".as_ref());
    let url = url.expect("legacy_upstream.py serves");
    let secret_url = format!("{}?token=hunter2-query", url.replace("http://", "http://user:hunter2-pass@"));
    let entry = json!({"url": secret_url, "type": "http", "headers": {"Authorization": "Bearer hunter2-bearer"}});
    let (listed, stderr) = list_imported(&json!({"mcpServers": {"old": entry}}), &["-vv"]);
    drop((stdin, upstream));

    assert!(listed, "{stderr}");
    // The HTTP client's own lines were written (the level is the most verbose one).
    assert!(stderr.contains("TRACE hyper_util::client::legacy"), "{stderr}");
    for needle in ["hunter2-pass", "hunter2-query", "hunter2-bearer", "user:"] {
        assert!(!stderr.contains(needle), "{needle} on standard error:\n{stderr}");
    }
}

#[test]
fn an_import_that_cannot_connect_names_its_url_without_the_password_or_the_query() {
    let entry = json!({"url": "http://user:hunter2-pass@127.0.0.1:9/mcp?token=hunter2-query#frag", "type": "http"});
    let (listed, stderr) = list_imported(&json!({"mcpServers": {"old": entry}}), &["-vv"]);
    assert!(!listed);
    let last = stderr.lines().last().unwrap();
    assert_eq!(
        last,
        "toolbox: cannot connect to MCP server `old`: http://127.0.0.1:9/mcp?… could not be sent the MCP initialization \
         (client error: error sending request for url (http://127.0.0.1:9/mcp?…)); check that it serves MCP at that URL"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn a_served_requests_headers_query_and_arguments_reach_no_line_at_the_most_verbose_level() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let args =
        ["-vv", "--set", "fs", "--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()];
    let started = toolbox_http_started(&args, &[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "x", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": {}});
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read", "arguments": {"file_path": "hunter2-argument"}, "_meta": meta}});
    let headers = [
        ("Authorization", "Bearer hunter2-bearer"),
        ("Cookie", "s=hunter2-cookie"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "read"),
    ];
    let (_, answer) = post(&format!("{}?token=hunter2-query", started.said), &headers, &call);
    assert!(answer.contains("File not found: hunter2-argument"), "{answer}");
    terminate(started.process);

    let stderr = started.kept.lines().join("\n");
    // The call was logged (inside its span), so the test would see a leak.
    assert!(stderr.contains("gen_ai.tool.name=\"read\""), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn an_otlp_endpoint_with_a_password_is_refused_before_anything_is_exported_or_logged() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let output = Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["-vv", "list", "--otlp-endpoint", "http://user:hunter2-pass@127.0.0.1:9"])
        .args(["--root", root.path().to_str().unwrap(), "--state-dir", state.path().to_str().unwrap()])
        .env_remove("OTEL_SDK_DISABLED")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "toolbox: --otlp-endpoint has a user name or password in its URL (`user:password@`), which the OTLP \
         exporter does not send and the log would show; give the URL without it, and the credential as a header \
         with OTEL_EXPORTER_OTLP_HEADERS (e.g. `Authorization=Basic ...`)\n"
    );
}
