//! `toolbox --allow exec`: the shell tools turned on, a secret of toolbox's environment kept from
//! the command, and a call cancelled over MCP stopping the command's process group.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientRequest, Request};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use test_support::procs;

use procs::{gone, pid_in, running, sleeper, write_pid};

/// Runs `toolbox ARGS` with its state in `state` and the variable `TOOL_TEST_SECRET` set; its
/// standard output as JSON.
fn toolbox(args: &[&str], state: &Path) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(args)
        .args(["--state-dir", state.to_str().unwrap()])
        .env("TOOL_TEST_SECRET", "hunter2")
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)))
}

fn names(definitions: &Value) -> Vec<&str> {
    definitions.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect()
}

#[test]
fn the_exec_set_is_listed_only_with_allow_exec() {
    let state = tempfile::tempdir().unwrap();
    assert_eq!(names(&toolbox(&["list", "--set", "exec"], state.path())), Vec::<&str>::new());
    assert_eq!(
        names(&toolbox(&["list", "--set", "exec", "--allow", "exec"], state.path())),
        ["bash", "bash_kill", "bash_output"]
    );
}

/// The MCP annotations of the exec tools as `toolbox list --format mcp` gives them.
fn annotations(allow: &str, state: &Path) -> Vec<(String, Value)> {
    let entries = toolbox(&["list", "--format", "mcp", "--set", "exec", "--allow", allow], state);
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap().to_owned(), e["annotations"].clone()))
        .collect()
}

#[test]
fn the_exec_tools_are_open_world_for_mcp_only_when_the_network_is_allowed() {
    let state = tempfile::tempdir().unwrap();
    let closed = annotations("exec", state.path());
    assert_eq!(
        closed,
        [
            ("bash".to_owned(), json!({"destructiveHint": true, "openWorldHint": false})),
            ("bash_kill".to_owned(), json!({"destructiveHint": true, "openWorldHint": false})),
            ("bash_output".to_owned(), json!({"readOnlyHint": true, "openWorldHint": false})),
        ]
    );
    let open = annotations("exec,external", state.path());
    assert_eq!(
        open,
        [
            ("bash".to_owned(), json!({"destructiveHint": true, "openWorldHint": true})),
            ("bash_kill".to_owned(), json!({"destructiveHint": true, "openWorldHint": true})),
            ("bash_output".to_owned(), json!({"readOnlyHint": true, "openWorldHint": true})),
        ]
    );
}

#[test]
fn a_call_to_bash_without_allow_exec_says_how_to_turn_it_on() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let message =
        toolbox(&["call", "bash", r#"{"command":"true"}"#, "--root", root.path().to_str().unwrap()], state.path());
    assert_eq!(message["is_error"], true);
    assert_eq!(
        message["content"],
        "Permission denied: tool `bash` is tagged `exec` (it runs commands on this machine) and is off; run toolbox \
         with `--allow exec` to turn it on"
    );
}

#[test]
fn a_secret_in_the_environment_of_toolbox_does_not_reach_the_command() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = root.path().to_str().unwrap();
    let command =
        json!({"command": "echo \"secret=${TOOL_TEST_SECRET:-unset}\"; env | cut -d= -f1 | sort | tr '\\n' ' '"});
    let message = toolbox(&["call", "bash", &command.to_string(), "--allow", "exec", "--root", root], state.path());
    assert_eq!(message["is_error"], false, "{message}");
    let text = message["content"].as_str().unwrap();
    assert_eq!(text.splitn(3, '\n').nth(2).unwrap(), "secret=unset\nHOME LANG PATH PWD SHLVL _ ");
}

#[test]
fn no_environ_file_of_proc_that_a_command_can_read_holds_the_secret_of_toolbox() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = root.path().to_str().unwrap();
    // Every `/proc/*/environ` the command can read, searched for the secret, and the count read;
    // then the environment of toolbox itself: the shell's parent as `/proc/self/stat` tells it
    // (`$PPID` is 0 in the command's pid namespace).
    let command = json!({"command": "n=0; for f in /proc/[0-9]*/environ; do if tr '\\0' '\\n' 2>/dev/null \
        < \"$f\" > e.txt; then n=$((n+1)); grep -c hunter2 e.txt; fi; done; echo \"read $n\"; read -r _ _ _ parent _ \
        < /proc/self/stat; cat /proc/$parent/environ 2>&1 | sed \"s/$parent/TOOLBOX/\""});
    let message = toolbox(&["call", "bash", &command.to_string(), "--allow", "exec", "--root", root], state.path());
    let text = message["content"].as_str().unwrap();
    let body = text.splitn(3, '\n').nth(2).unwrap();
    let lines: Vec<&str> = body.lines().collect();
    let (last, counts) = lines.split_last().unwrap();
    // Not listed in its `/proc`, and opened by its pid it refuses (hidepid=ptraceable).
    assert_eq!(*last, "cat: /proc/TOOLBOX/environ: Operation not permitted", "{body}");
    // Each file it could read is its own processes' (no secret: a count of 0), and there are some.
    let (read, counts) = counts.split_last().unwrap();
    assert!(counts.iter().all(|count| *count == "0"), "{body}");
    assert!(read.starts_with("read ") && *read != "read 0", "{body}");
    assert!(!body.contains("hunter2"), "{body}");
}

#[test]
fn a_command_can_neither_read_nor_write_the_state_directory_of_toolbox() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = root.path().to_str().unwrap();
    let plan = json!({"todos": [{"content": "a plan of this session", "status": "pending"}]});
    let made = toolbox(&["call", "todo_new", &plan.to_string(), "--root", root], state.path());
    assert_eq!(made["is_error"], false, "{made}");
    let dir = std::fs::canonicalize(state.path()).unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(dir.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    let [session] = files.as_slice() else { panic!("one session file: {files:?}") };
    let command = json!({ "command": format!(
        "ls {0}/sessions; cat {1} | grep -c 'a plan'; echo x > {0}/new; echo done", dir.display(), session.display()
    ) });
    let message = toolbox(&["call", "bash", &command.to_string(), "--allow", "exec", "--root", root], state.path());
    let text = message["content"].as_str().unwrap();
    assert_eq!(
        text.splitn(3, '\n').nth(2).unwrap(),
        format!(
            "ls: cannot open directory '{0}/sessions': Permission denied\ncat: {1}: Permission denied\n0\nbash: line \
             1: {0}/new: Read-only file system\ndone\n",
            dir.display(),
            session.display()
        ),
        "{text}"
    );
    assert!(!dir.join("new").exists());
}

#[test]
fn a_descriptor_toolbox_inherited_does_not_reach_the_command() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leaked = state.path().join("leaked.txt");
    let command = json!({"command": "echo through-7 >&7; echo through-8 >&8; ls /proc/self/fd | tr '\\n' ' '"});
    // The parent opens fds 7 and 8 without close-on-exec, as a careless launcher might.
    let output = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"exec 7>"$1" 8>>"$1"; exec "$2" call bash "$3" --allow exec --root "$4" --state-dir "$5""#)
        .arg("launcher")
        .args([leaked.as_os_str(), std::ffi::OsStr::new(env!("CARGO_BIN_EXE_toolbox"))])
        .arg(command.to_string())
        .args([root.path(), state.path()])
        .output()
        .unwrap();
    let message: Value = serde_json::from_slice(&output.stdout).unwrap();
    let text = message["content"].as_str().unwrap();
    assert_eq!(
        text.splitn(3, '\n').nth(2).unwrap(),
        "bash: line 1: 7: Bad file descriptor\nbash: line 1: 8: Bad file descriptor\n0 1 2 3 ",
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&leaked).unwrap(), "");
}

#[test]
fn a_state_directory_inside_the_root_is_refused_saying_why() {
    let root = tempfile::tempdir().unwrap();
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    let state = root_path.join(".state/toolbox");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["call", "read", r#"{"file_path":"a.txt"}"#, "--allow", "exec"])
        .args([std::ffi::OsStr::new("--root"), root_path.as_os_str()])
        .args([std::ffi::OsStr::new("--state-dir"), state.as_os_str()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        format!(
            "toolbox: the state directory {} is inside the workspace root {}: the tools could read and write every \
             session's plans and cached outputs; pass --state-dir DIR outside the root\n",
            state.display(),
            root_path.display()
        )
    );
    assert!(!root_path.join(".state").exists());
}

#[test]
fn the_max_flags_set_the_limits_of_each_command() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = root.path().to_str().unwrap();
    let command = json!({"command": "ulimit -t; ulimit -v; ulimit -f; cat /sys/fs/cgroup/pids$(grep pids \
        /proc/self/cgroup | cut -d: -f3)/pids.max; cat /sys/fs/cgroup/memory$(grep memory /proc/self/cgroup | cut \
        -d: -f3)/memory.limit_in_bytes; df -B1 --output=size \"$HOME\" | tail -n 1 | tr -d ' '"});
    let limits = [
        "--max-processes",
        "40",
        "--max-cpu-seconds",
        "9",
        "--max-address-space-bytes",
        "2147483648",
        "--max-file-size-bytes",
        "1048576",
        "--max-session-memory-bytes",
        "67108864",
        "--max-home-bytes",
        "2097152",
    ];
    let message = toolbox(
        &[&["call", "bash", &command.to_string(), "--allow", "exec", "--root", root][..], &limits].concat(),
        state.path(),
    );
    assert_eq!(message["is_error"], false, "{message}");
    let text = message["content"].as_str().unwrap();
    assert!(
        text.lines().next().unwrap().ends_with(
            "; limits: 40 processes, 9 cpu s, 2 GiB address space, 1 MiB per file, 64 MiB memory per session, 2 MiB \
             HOME]"
        ),
        "{text}"
    );
    assert_eq!(text.splitn(3, '\n').nth(2).unwrap(), "9\n2097152\n1024\n40\n67108864\n2097152\n");
}

/// `toolbox mcp --set exec --allow exec` on stdio in `root`, and an rmcp client of it.
async fn exec_server(
    root: &Path,
    state: &Path,
) -> (tokio::process::Child, rmcp::service::RunningService<rmcp::RoleClient, ()>) {
    exec_server_with(root, state, &[]).await
}

/// As [`exec_server`], with the `more` arguments.
async fn exec_server_with(
    root: &Path,
    state: &Path,
    more: &[&str],
) -> (tokio::process::Child, rmcp::service::RunningService<rmcp::RoleClient, ()>) {
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "exec", "--allow", "exec", "--root", root.to_str().unwrap()])
        .args(["--state-dir", state.to_str().unwrap()])
        .args(more)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (server.stdout.take().unwrap(), server.stdin.take().unwrap());
    (server, ().serve(transport).await.unwrap())
}

#[tokio::test]
async fn every_process_of_a_command_ends_when_toolbox_is_killed() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut server, client) = exec_server(root.path(), state.path()).await;
    // A background command whose shell and a process that left its group (`setsid`) sleep on.
    let command = format!("{}; setsid {} & wait", write_pid("shell.pid"), sleeper("stray.pid", 1000));
    let arguments = json!({ "command": command, "run_in_background": true }).as_object().unwrap().clone();
    let result = client.call_tool(CallToolRequestParams::new("bash").with_arguments(arguments)).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let pids = [pid_in(&root.path().join("shell.pid")).await, pid_in(&root.path().join("stray.pid")).await];
    assert!(pids.iter().all(|&pid| running(pid)));
    // No code of toolbox's runs after SIGKILL: the kernel ends the command.
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    assert!(gone(&pids).await, "{pids:?} outlived toolbox");
}

#[tokio::test]
async fn max_commands_per_principal_refuses_a_command_past_the_flags_count() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut server, client) =
        exec_server_with(root.path(), state.path(), &["--max-commands-per-principal", "1"]).await;
    let bash =
        |arguments: Value| CallToolRequestParams::new("bash").with_arguments(arguments.as_object().unwrap().clone());
    let started = client.call_tool(bash(json!({"command": "sleep 60", "run_in_background": true}))).await.unwrap();
    assert_ne!(started.is_error, Some(true), "{started:?}");
    let refused = client.call_tool(bash(json!({"command": "touch ran"}))).await.unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert_eq!(
        refused.content[0].as_text().unwrap().text,
        "this caller already runs 1 shell commands, the most one caller may run at once; wait for one to end, or \
         stop a background one with bash_kill first"
    );
    assert!(!root.path().join("ran").exists());
    server.start_kill().unwrap();
    server.wait().await.unwrap();
}

/// `toolbox call bash` connecting to a listener on 127.0.0.1 with `--allow ALLOW`: the command's
/// output and whether the listener got the connection.
fn connect_with(allow: &str) -> (String, bool) {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = json!({ "command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected") });
    let root = root.path().to_str().unwrap();
    let message = toolbox(&["call", "bash", &command.to_string(), "--allow", allow, "--root", root], state.path());
    let text = message["content"].as_str().unwrap().to_owned();
    (text.splitn(3, '\n').nth(2).unwrap_or_default().to_owned(), listener.accept().is_ok())
}

#[test]
fn commands_open_tcp_connections_only_with_allow_exec_and_external() {
    let (output, accepted) = connect_with("exec");
    assert!(!accepted);
    assert!(output.contains("Permission denied"), "{output}");
    assert_eq!(connect_with("exec,external"), ("connected\n".to_owned(), true));
}

#[tokio::test]
async fn cancelling_a_bash_call_over_mcp_stops_its_process_group() {
    let (root, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (mut server, client) = exec_server(root.path(), state.path()).await;
    let command = format!("{}; {} & wait", write_pid("shell.pid"), sleeper("child.pid", 60));
    let arguments = json!({ "command": command }).as_object().unwrap().clone();
    let request =
        ClientRequest::CallToolRequest(Request::new(CallToolRequestParams::new("bash").with_arguments(arguments)));
    let handle = client.peer().send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    let shell = pid_in(&root.path().join("shell.pid")).await;
    let child = pid_in(&root.path().join("child.pid")).await;
    assert!(running(shell) && running(child));
    handle.cancel(Some("the user pressed stop".to_owned())).await.unwrap();
    assert!(gone(&[shell, child]).await, "{shell} or {child} survived");
    // The server goes on serving.
    let arguments = json!({"command": "echo still here"}).as_object().unwrap().clone();
    let result = client.call_tool(CallToolRequestParams::new("bash").with_arguments(arguments)).await.unwrap();
    let text = serde_json::to_value(&result.content).unwrap()[0]["text"].as_str().unwrap().to_owned();
    assert!(text.ends_with("\nstill here\n"), "{text}");
    client.cancel().await.unwrap();
    assert!(server.wait().await.unwrap().success());
}

#[test]
fn exec_user_runs_the_commands_as_the_user_given() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, state) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // A workspace of nobody's, below a directory every user may enter.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir(&root).unwrap();
    std::os::unix::fs::chown(&root, Some(65534), Some(65534)).unwrap();
    let command = json!({"command": "id -u"}).to_string();
    let root = root.to_str().unwrap();
    let run = |user: &str| {
        let message =
            toolbox(&["call", "bash", &command, "--allow", "exec", "--root", root, "--exec-user", user], state.path());
        let text = message["content"].as_str().unwrap().to_owned();
        (text.lines().nth(2).unwrap_or_default().to_owned(), text.lines().next().unwrap().to_owned())
    };
    let (uid, first) = run("65534:65534");
    assert_eq!(uid, "65534", "{first}");
    assert!(first.ends_with("; as uid 65534 (gid 65534)]"), "{first}");
    assert_eq!(run("server").0, "0");
    assert_eq!(run("owner").0, "65534");
}

#[test]
fn an_exec_user_that_is_not_a_user_is_refused_at_the_command_line() {
    let state = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["list", "--exec-user", "nobody", "--state-dir", state.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "invalid value 'nobody' for '--exec-user <USER>': `nobody` is not a user: give `owner` (the workspace's \
             owner), `server` (the server's own user) or a decimal `UID` or `UID:GID`"
        ),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_temp_dir_mount_and_cgroups_of_a_killed_toolbox_are_removed_by_the_next_one() {
    let (root, state, temp) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["mcp", "--set", "exec", "--allow", "exec", "--root", root.path().to_str().unwrap()])
        .args(["--state-dir", state.path().to_str().unwrap()])
        .env("TMPDIR", temp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (server.stdout.take().unwrap(), server.stdin.take().unwrap());
    let client = ().serve(transport).await.unwrap();
    let command = "grep -E 'pids|memory' /proc/self/cgroup | cut -d: -f2,3 > cgroups.txt; exec sleep 1000";
    let arguments = json!({ "command": command, "run_in_background": true }).as_object().unwrap().clone();
    let result = client.call_tool(CallToolRequestParams::new("bash").with_arguments(arguments)).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let cgroups_file = root.path().join("cgroups.txt");
    procs::poll(|| std::fs::metadata(&cgroups_file).is_ok_and(|m| m.len() > 0).then_some(())).await;
    let cgroups: Vec<PathBuf> = std::fs::read_to_string(&cgroups_file)
        .unwrap()
        .lines()
        .map(|line| {
            let (controller, path) = line.split_once(':').unwrap();
            PathBuf::from(format!("/sys/fs/cgroup/{controller}{path}"))
        })
        .collect();
    assert_eq!(cgroups.len(), 2, "{cgroups:?}");
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    // Left behind: no code of toolbox's ran after SIGKILL.
    let left = |what: &str| {
        let dirs = std::fs::read_dir(temp.path()).unwrap().count();
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let mounted = mounts.lines().filter(|line| line.contains(temp.path().to_str().unwrap())).count();
        let groups = cgroups.iter().filter(|dir| dir.exists()).count();
        format!("{what}: {dirs} temp dir, {mounted} mount, {groups} cgroups")
    };
    assert!(procs::poll(|| cgroups.iter().all(|dir| dir.exists()).then_some(())).await.is_some());
    assert_eq!(left("killed"), "killed: 1 temp dir, 1 mount, 2 cgroups");
    let message = toolbox_in(temp.path(), root.path(), state.path());
    assert_eq!(message["is_error"], false, "{message}");
    // The next toolbox's first command removed them (its own are gone with its registry).
    assert_eq!(left("next start"), "next start: 0 temp dir, 0 mount, 0 cgroups");
}

/// `toolbox call bash true` with `TMPDIR` set to `temp`.
fn toolbox_in(temp: &Path, root: &Path, state: &Path) -> Value {
    let command = json!({"command": "true"}).to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_toolbox"))
        .args(["call", "bash", &command, "--allow", "exec", "--root", root.to_str().unwrap()])
        .args(["--state-dir", state.to_str().unwrap()])
        .env("TMPDIR", temp)
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stderr)))
}
