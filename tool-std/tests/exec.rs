//! The exec set on real processes: exit codes and signals, the process group stopped at a time
//! limit and at the end, background commands, the Landlock sandbox (writes, TCP), the clean
//! environment, standard input at its end, lossy output, long output, progress and policies.

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore, StoreLimits};
use tool_runtime::{
    DefaultPolicy, Permission, PermissionRequest, Progress, Registry, ToolCall, ToolContext, ToolMessage,
};
use tool_std::exec::{EXEC_CONFIG, ExecConfig, ExecUser};
use tool_std::sandbox::{SANDBOX, Sandbox};

use test_support::procs;

use procs::{await_file, gone, pid_in, running, sleeper, write_pid};

/// A workspace `ws/`, a temp root for the session dirs `tmp/` and a directory `outside/`, in one
/// temp directory; a registry of the exec set allowed by the default policy.
struct Shell {
    _dir: tempfile::TempDir,
    root: PathBuf,
    temp_root: PathBuf,
    outside: PathBuf,
    store: Arc<MemoryStore>,
    registry: Registry,
}

impl Shell {
    fn new() -> Self {
        Self::with(|config| config)
    }

    fn with(configure: impl FnOnce(ExecConfig) -> ExecConfig) -> Self {
        Self::build(configure, |builder| builder.policy(DefaultPolicy::new().allow_all_exec()))
    }

    fn build(
        configure: impl FnOnce(ExecConfig) -> ExecConfig,
        policy: impl FnOnce(tool_runtime::RegistryBuilder) -> tool_runtime::RegistryBuilder,
    ) -> Self {
        Self::build_with(configure, policy, MemoryStore::new())
    }

    /// A shell whose registry has the output layer, over `store`.
    fn with_output_layer(store: MemoryStore) -> Self {
        let policy = |builder: tool_runtime::RegistryBuilder| {
            builder.policy(DefaultPolicy::new().allow_all_exec()).output(OutputLayer::new())
        };
        Self::build_with(|config| config, policy, store)
    }

    fn build_with(
        configure: impl FnOnce(ExecConfig) -> ExecConfig,
        policy: impl FnOnce(tool_runtime::RegistryBuilder) -> tool_runtime::RegistryBuilder,
        store: MemoryStore,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let parent = std::fs::canonicalize(dir.path()).unwrap();
        let (root, temp_root, outside) = (parent.join("ws"), parent.join("tmp"), parent.join("outside"));
        for d in [&root, &temp_root, &outside] {
            std::fs::create_dir(d).unwrap();
        }
        let config =
            configure(ExecConfig { temp_root: temp_root.clone(), kill_grace_ms: 1000, ..ExecConfig::default() });
        let store = Arc::new(store);
        let builder = tool_std::registry_builder()
            .sets(["exec"])
            .override_dependency(&SANDBOX, Sandbox::new(&root).unwrap())
            .override_dependency(&EXEC_CONFIG, config)
            .override_dependency(&OUTPUT_STORE, store.clone() as Arc<dyn OutputStore>);
        let registry = policy(builder).build().unwrap();
        Self { _dir: dir, root, temp_root, outside, store, registry }
    }

    async fn call_in(&self, ctx: &ToolContext, tool: &str, arguments: Value) -> ToolMessage {
        self.registry.call(&ToolCall::new("call_1", tool, arguments.to_string()), ctx).await
    }

    async fn call(&self, tool: &str, arguments: Value) -> ToolMessage {
        self.call_in(&ToolContext::new(), tool, arguments).await
    }

    async fn bash(&self, command: &str) -> ToolMessage {
        self.call("bash", json!({ "command": command })).await
    }

    /// The session's `HOME` (the one session temp dir made so far, in the registry's).
    fn home(&self) -> PathBuf {
        let only = |dir: &std::path::Path| {
            let dirs: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
            assert_eq!(dirs.len(), 1, "one temp dir: {dirs:?}");
            dirs[0].clone()
        };
        only(&only(&self.temp_root)).join("home")
    }

    /// The first line of a result with the default limits, the network as `network` says.
    fn sandbox_line(&self, network: &str) -> String {
        format!(
            "[sandbox: landlock ABI {}; writes only below {}, {}; {network}; {CONTAINED}; {LIMITS}]",
            landlock_abi(),
            self.root.display(),
            self.home().display()
        )
    }
}

/// The first line's part on processes on this machine (a pid namespace per command).
const CONTAINED: &str = "every process ends with the command and with the server";

/// The first line's part on the default limits.
const LIMITS: &str =
    "limits: 512 processes, 600 cpu s, 8 GiB address space, 1 GiB per file, 4 GiB memory per session, 1 GiB HOME";

/// The kernel's Landlock ABI as the crate uses it (the lower of the kernel's and 10).
fn landlock_abi() -> i32 {
    // The `landlock` crate reports it on a restricted thread; a thread made for it here ends
    // with its restriction.
    std::thread::spawn(|| {
        use landlock::RulesetAttr as _;
        let ruleset = landlock::Ruleset::default().handle_access(landlock::AccessFs::Execute).unwrap();
        let status = ruleset.create().unwrap().restrict_self().unwrap();
        match status.landlock {
            landlock::LandlockStatus::Available { effective_abi, .. } => effective_abi as i32,
            other => panic!("these tests need Landlock, the kernel says {other:?}"),
        }
    })
    .join()
    .unwrap()
}

/// The lines of a message after its first (the sandbox) and second (the status) line.
fn body(message: &ToolMessage) -> String {
    message.text().splitn(3, '\n').nth(2).unwrap_or_default().to_owned()
}

/// The status line of a message without its duration.
fn status(message: &ToolMessage) -> String {
    let text = message.text();
    let line = text.lines().nth(1).unwrap_or_default();
    line.rsplit_once(" · ").map_or(line, |(status, _)| status).to_owned()
}

#[tokio::test]
async fn a_command_that_succeeds_reports_the_sandbox_exit_code_0_and_its_output() {
    let shell = Shell::new();
    let message = shell.bash("echo hello").await;
    assert!(!message.is_error, "{}", message.text());
    let text = message.text();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], shell.sandbox_line("network refused (tcp, udp, unix sockets)"));
    assert_eq!(status(&message), "exit code 0");
    assert_eq!(body(&message), "hello\n");
}

#[tokio::test]
async fn a_nonzero_exit_code_is_an_error_result_with_the_output() {
    let shell = Shell::new();
    let message = shell.bash("echo failing; exit 3").await;
    assert!(message.is_error);
    assert_eq!(status(&message), "exit code 3");
    assert_eq!(body(&message), "failing\n");
}

#[tokio::test]
async fn a_shell_killed_by_a_signal_reports_the_signal() {
    let shell = Shell::new();
    // The shell is the pid 1 of its namespace, which ignores the signals it sends itself: the
    // signal comes from outside, as an out-of-memory kill would.
    let command = format!("{}; sleep 60", write_pid("shell.pid"));
    let call = shell.bash(&command);
    let kill = async {
        let pid = pid_in(&shell.root.join("shell.pid")).await;
        std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
    };
    let (message, ()) = tokio::join!(call, kill);
    assert!(message.is_error);
    assert_eq!(status(&message), "killed by signal 9 (SIGKILL)");
}

#[tokio::test]
async fn stdout_and_stderr_interleave_in_the_order_they_were_written() {
    let shell = Shell::new();
    let message = shell.bash("echo one; echo two >&2; echo three; echo four >&2").await;
    assert_eq!(body(&message), "one\ntwo\nthree\nfour\n");
}

#[tokio::test]
async fn a_timeout_stops_the_whole_process_group_and_its_children() {
    let shell = Shell::new();
    let message = shell
        .call("bash", json!({"command": format!("{} & sleep 60", sleeper("child.pid", 60)), "timeout_ms": 300}))
        .await;
    assert!(message.is_error);
    assert_eq!(status(&message), "timed out after 300 ms; the process group was stopped (SIGTERM)");
    let child = pid_in(&shell.root.join("child.pid")).await;
    assert!(gone(&[child]).await, "the child {child} survived the timeout");
}

#[tokio::test]
async fn a_group_that_ignores_sigterm_gets_sigkill_after_the_grace() {
    let shell = Shell::with(|config| ExecConfig { kill_grace_ms: 200, ..config });
    let command = format!("trap '' TERM; {} & wait", sleeper("child.pid", 60));
    let message = shell.call("bash", json!({"command": command, "timeout_ms": 300})).await;
    assert_eq!(status(&message), "timed out after 300 ms; the process group was stopped (SIGTERM, then SIGKILL)");
    let child = pid_in(&shell.root.join("child.pid")).await;
    assert!(gone(&[child]).await, "the child {child} survived SIGKILL");
}

#[tokio::test]
async fn cancelling_the_call_stops_the_process_group() {
    let shell = Shell::new();
    let token = tool_runtime::CancellationToken::new();
    let ctx = ToolContext::builder().cancellation(token.clone()).build();
    let command = format!("{}; {} & wait", write_pid("shell.pid"), sleeper("child.pid", 60));
    let call = shell.call_in(&ctx, "bash", json!({ "command": command }));
    let watch = async {
        let pids = [pid_in(&shell.root.join("shell.pid")).await, pid_in(&shell.root.join("child.pid")).await];
        token.cancel();
        pids
    };
    let (message, pids) = tokio::join!(call, watch);
    assert_eq!(message.text(), "tool `bash` was cancelled");
    assert!(gone(&pids).await, "{pids:?}: one survived the cancellation");
}

#[tokio::test]
async fn a_child_left_running_when_the_shell_exits_is_stopped() {
    let shell = Shell::new();
    let message = shell.bash(&format!("{} & {}", sleeper("child.pid", 60), await_file("child.pid"))).await;
    assert_eq!(status(&message), "exit code 0");
    let child = pid_in(&shell.root.join("child.pid")).await;
    assert!(gone(&[child]).await, "the child {child} outlived its command");
}

#[tokio::test]
async fn timeout_ms_outside_1_to_600000_is_refused_at_decode() {
    let shell = Shell::new();
    let mut refused = Vec::new();
    for value in [0, 600_001] {
        let message = shell.call("bash", json!({"command": "true", "timeout_ms": value})).await;
        refused.push((message.is_error, message.text().into_owned()));
    }
    assert_eq!(
        refused,
        [
            (true, "invalid arguments for `bash`: `timeout_ms`: must be at least 1; got 0".to_owned()),
            (true, "invalid arguments for `bash`: `timeout_ms`: must be at most 600000; got 600001".to_owned()),
        ]
    );
}

#[tokio::test]
async fn a_timeout_ms_over_a_configured_lower_maximum_is_refused_when_the_call_runs() {
    let shell = Shell::with(|config| ExecConfig { max_timeout_ms: 1000, ..config });

    let message = shell.call("bash", json!({"command": "true", "timeout_ms": 1001})).await;

    assert_eq!((message.is_error, message.text().as_ref()), (true, "timeout_ms must be between 1 and 1000, got 1001"));
}

#[tokio::test]
async fn workdir_is_resolved_in_the_workspace_and_may_not_leave_it() {
    let shell = Shell::new();
    std::fs::create_dir(shell.root.join("sub")).unwrap();
    let message = shell.call("bash", json!({"command": "pwd", "workdir": "sub"})).await;
    assert_eq!(body(&message), format!("{}\n", shell.root.join("sub").display()));
    let message = shell.call("bash", json!({"command": "pwd", "workdir": "../outside"})).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "workdir `../outside` is refused: Path escapes workspace: ../outside; give a directory inside the workspace \
         (default: its root)"
    );
}

#[tokio::test]
async fn standard_input_is_at_its_end() {
    let shell = Shell::new();
    let message = shell.bash("cat; echo \"cat $?\"; read line; echo \"read $?\"").await;
    assert_eq!(body(&message), "cat 0\nread 1\n");
}

#[tokio::test]
async fn the_environment_holds_only_path_lang_and_home() {
    let shell = Shell::new();
    // cargo runs this test with its own variables set (CARGO_PKG_NAME, ...): none reaches the command.
    assert!(std::env::var_os("CARGO_PKG_NAME").is_some());
    let message = shell.bash("env | cut -d= -f1 | sort | tr '\\n' ' '").await;
    // PWD, SHLVL and _ are set by bash itself.
    assert_eq!(body(&message), "HOME LANG PATH PWD SHLVL _ ");
    let message = shell.bash("echo \"$HOME|$LANG|$PATH\"").await;
    let path = std::env::var("PATH").unwrap();
    assert_eq!(body(&message), format!("{}|C.UTF-8|{path}\n", shell.home().display()));
}

#[tokio::test]
async fn invalid_utf8_is_shown_lossily_with_a_note() {
    let shell = Shell::new();
    let message = shell.bash("printf 'a\\377b\\n'").await;
    assert_eq!(body(&message), "a\u{FFFD}b\n[note: the output is not valid UTF-8; invalid bytes are shown as U+FFFD]");
}

#[tokio::test]
async fn a_write_outside_the_workspace_is_refused_by_the_kernel_and_the_note_names_the_sandbox() {
    let shell = Shell::new();
    let target = shell.outside.join("escaped.txt");
    let message = shell.bash(&format!("echo x > {}", target.display())).await;
    assert!(message.is_error);
    assert!(!target.exists());
    let text = message.text();
    // The read-only view of everything but the workspace and `HOME` answers before Landlock does.
    assert!(text.contains(&format!("{}: Read-only file system", target.display())), "{text}");
    assert!(
        text.ends_with(&format!(
            "[note: the command runs in a Landlock sandbox: the kernel refuses writes outside {}, {}, reads of the \
             server's state, caches and other sessions and, unless the network is allowed, sockets, and a read-only \
             view of the rest refuses changes there; a \"Permission denied\" or \"Read-only file system\" above may \
             come from it]",
            shell.root.display(),
            shell.home().display(),
        )),
        "{text}"
    );
}

#[tokio::test]
async fn writes_inside_the_workspace_and_home_are_allowed() {
    let shell = Shell::new();
    let message = shell.bash("echo in > inside.txt && echo home > \"$HOME/h.txt\" && cat \"$HOME/h.txt\"").await;
    assert_eq!(status(&message), "exit code 0", "{}", message.text());
    assert_eq!(std::fs::read_to_string(shell.root.join("inside.txt")).unwrap(), "in\n");
    assert_eq!(body(&message), "home\n");
}

#[tokio::test]
async fn a_command_cannot_signal_a_process_outside_its_sandbox() {
    let shell = Shell::new();
    // This test's own process, which started the command but is outside its sandbox.
    // Its pid is not in the command's pid namespace.
    let message = shell.bash(&format!("kill -0 {}", std::process::id())).await;
    assert!(message.is_error);
    assert!(body(&message).contains("No such process"), "{}", message.text());
    // Its own processes it may signal.
    let message = shell.bash("sleep 60 & kill $! && wait $!; echo $?").await;
    assert_eq!(body(&message), "143\n");
}

/// Connects to a listener on 127.0.0.1 with bash's `/dev/tcp`; whether the listener got it.
async fn connect_to_loopback(shell: &Shell) -> (ToolMessage, bool) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let message = shell.bash(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")).await;
    (message, listener.accept().is_ok())
}

#[tokio::test]
async fn a_tcp_connection_to_loopback_is_refused_when_the_network_is_not_allowed() {
    let shell = Shell::new();
    let (message, accepted) = connect_to_loopback(&shell).await;
    assert!(message.is_error);
    assert!(!accepted);
    assert!(body(&message).contains("Permission denied"), "{}", message.text());
}

#[tokio::test]
async fn a_tcp_connection_to_loopback_works_when_the_network_is_allowed() {
    let shell = Shell::with(|config| ExecConfig { network: true, ..config });
    let (message, accepted) = connect_to_loopback(&shell).await;
    assert_eq!(body(&message), "connected\n", "{}", message.text());
    assert!(accepted);
    assert_eq!(message.text().lines().next().unwrap(), shell.sandbox_line("network allowed"));
}

#[tokio::test]
async fn progress_reports_the_bytes_of_output_so_far() {
    let shell = Shell::new();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let ctx = ToolContext::builder().on_progress(move |p: Progress| sink.lock().unwrap().push(p)).build();
    let message = shell.call_in(&ctx, "bash", json!({"command": "echo hello"})).await;
    assert_eq!(body(&message), "hello\n");
    let reports = reports.lock().unwrap();
    assert_eq!((reports[0].done, reports[0].total, reports[0].message.as_str()), (6, None, "6 bytes of output so far"));
}

#[tokio::test]
async fn a_long_output_shows_head_and_tail_and_is_stored_whole() {
    let shell = Shell::with(|config| ExecConfig { inline_bytes: 1000, preview_bytes: 20, ..config });
    let message = shell.bash("seq 1 10000").await;
    let whole: String = (1..=10000).map(|n| format!("{n}\n")).collect();
    let body = body(&message);
    let ref_id = body.split("ref_id `").nth(1).and_then(|rest| rest.split('`').next()).unwrap();
    assert_eq!(
        body,
        format!(
            "1\n2\n3\n4\n5\n6\n7\n8\n9\n[... {} bytes omitted; the output cache holds the whole output ({} bytes) \
             as ref_id `{ref_id}`: page it with tool_output_cache, search it with tool_output_cache_grep ...]\n9998\n\
             9999\n10000\n",
            whole.len() - 18 - 16,
            whole.len()
        )
    );
    let mut stored = String::new();
    std::io::Read::read_to_string(&mut shell.store.open_at(ref_id, 0).unwrap(), &mut stored).unwrap();
    assert_eq!(stored, whole);
}

#[tokio::test]
async fn an_output_past_max_output_bytes_keeps_its_first_bytes_and_its_tail_and_says_so() {
    let shell = Shell::with(|config| ExecConfig { inline_bytes: 5, preview_bytes: 20, max_output_bytes: 10, ..config });
    let message = shell.bash("seq 1 100").await;
    let body = body(&message);
    let ref_id = body.split("ref_id `").nth(1).and_then(|rest| rest.split('`').next()).unwrap();
    assert_eq!(
        body,
        format!(
            "1\n2\n3\n4\n5\n6\n7\n8\n9\n[... 255 bytes omitted; the output cache holds the first 10 bytes of the \
             output (292 bytes) as ref_id `{ref_id}`: page it with tool_output_cache, search it with \
             tool_output_cache_grep ...]\n95\n96\n97\n98\n99\n100\n[note: the output was 292 bytes; only its first 10 \
             bytes were kept (the cap of the exec tools' configuration, `max_output_bytes`)]"
        )
    );
    let mut stored = String::new();
    std::io::Read::read_to_string(&mut shell.store.open_at(ref_id, 0).unwrap(), &mut stored).unwrap();
    assert_eq!(stored, "1\n2\n3\n4\n5\n");
}

fn stored(store: &MemoryStore, ref_id: &str) -> String {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut store.open_at(ref_id, 0).unwrap(), &mut text).unwrap();
    text
}

#[tokio::test]
async fn the_output_of_a_command_is_stored_once_under_the_results_ref_id() {
    let shell = Shell::with_output_layer(MemoryStore::new());
    let message = shell.bash("seq 1 3").await;
    assert_eq!(body(&message), "1\n2\n3\n");
    let ref_id = message.ref_id.clone().unwrap();
    // The command's output itself, as it streamed into the cache; the layer did not store the
    // result again.
    assert_eq!(stored(&shell.store, &ref_id), "1\n2\n3\n");
    assert_eq!(shell.store.len(), 1);
    assert!(!message.trimmed);
}

#[tokio::test]
async fn a_long_output_is_a_trimmed_result_whose_ref_id_is_the_whole_output() {
    let shell = Shell::with_output_layer(MemoryStore::new());
    let message = shell.bash("seq 1 100000").await;
    let whole: String = (1..=100_000).map(|n| format!("{n}\n")).collect();
    let ref_id = message.ref_id.clone().unwrap();
    assert!(message.trimmed);
    assert!(body(&message).contains(&format!("as ref_id `{ref_id}`: page it with tool_output_cache")));
    assert_eq!(stored(&shell.store, &ref_id), whole);
}

#[tokio::test]
async fn an_output_larger_than_the_caches_cap_stays_readable_while_later_results_are_stored() {
    // A cache of 64 KiB and an output of 588,895 bytes (the 1 GB output beside the 256 MiB
    // default, scaled down).
    let limits = StoreLimits::new(std::time::Duration::from_secs(3600), 64 * 1024);
    let shell = Shell::with_output_layer(MemoryStore::with_limits(limits, Arc::new(tool_runtime::SystemClock)));
    let big = shell.bash("seq 1 100000").await.ref_id.unwrap();
    let mut small = Vec::new();
    for n in 0..40 {
        // Each about 2 KiB with its sandbox and status lines: together over the cap.
        let message = shell.bash(&format!("printf '%02000d\\n' {n}")).await;
        small.push(message.ref_id.unwrap());
    }
    assert_eq!(stored(&shell.store, &big).len(), 588_895);
    assert_eq!(stored(&shell.store, small.last().unwrap()), format!("{:02000}\n", 39));
    // The small ones went oldest first, among themselves.
    assert!(shell.store.open_at(&small[0], 0).is_err());
    // A second output over the cap takes the place of the first.
    let second = shell.bash("seq 1 90000").await.ref_id.unwrap();
    assert!(shell.store.open_at(&big, 0).is_err());
    assert_eq!(stored(&shell.store, &second).lines().count(), 90_000);
}

#[tokio::test]
async fn without_landlock_a_command_is_refused_with_the_reason_and_how_to_allow_it() {
    // `max_landlock_abi: 0` confines as on a kernel without Landlock.
    let shell = Shell::with(|config| ExecConfig { max_landlock_abi: Some(0), ..config });
    let message = shell.bash("echo ran > ran.txt").await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "refused to run the command: Landlock is off in the exec configuration (`max_landlock_abi` is 0), as on a \
         kernel without it, so it cannot be confined to the workspace; the operator can allow unconfined commands \
         (`ExecConfig::allow_unconfined`, toolbox `--allow unconfined-exec`)"
    );
    assert!(!shell.root.join("ran.txt").exists());
}

#[tokio::test]
async fn without_landlock_an_allowed_command_runs_unconfined_by_landlock_and_its_first_line_says_so() {
    let shell = Shell::with(|config| ExecConfig { max_landlock_abi: Some(0), allow_unconfined: true, ..config });
    // The state of another session, which Landlock alone hides.
    let secret = shell.outside.join("secret.txt");
    std::fs::write(&secret, "read without Landlock\n").unwrap();
    let target = shell.outside.join("unconfined.txt");
    let message = shell.bash(&format!("cat {}; echo x > {}", secret.display(), target.display())).await;
    assert_eq!(
        message.text().lines().next().unwrap(),
        format!(
            "[sandbox: none (Landlock is off in the exec configuration (`max_landlock_abi` is 0), as on a kernel \
             without it); files are not confined by Landlock; network refused (tcp, udp, unix sockets); {CONTAINED}; \
             {LIMITS}]"
        )
    );
    // Reads are not confined; writes outside are still refused by the read-only view of the rest.
    assert_eq!(
        body(&message),
        format!("read without Landlock\nbash: line 1: {}: Read-only file system\n", target.display()),
        "{}",
        message.text()
    );
}

#[tokio::test]
async fn below_landlock_abi_4_tcp_is_refused_by_seccomp_and_the_first_line_says_so() {
    let shell = Shell::with(|config| ExecConfig { max_landlock_abi: Some(3), ..config });
    let (message, accepted) = connect_to_loopback(&shell).await;
    assert!(body(&message).contains("Permission denied"), "{}", message.text());
    assert!(!accepted);
    assert_eq!(
        message.text().lines().next().unwrap(),
        format!(
            "[sandbox: landlock ABI 3; writes only below {}, {}; network refused (tcp, udp, unix sockets); \
             {CONTAINED}; {LIMITS}]",
            shell.root.display(),
            shell.home().display()
        )
    );
    // Writes are still confined.
    let target = shell.outside.join("escaped.txt");
    let message = shell.bash(&format!("echo x > {}", target.display())).await;
    assert!(message.is_error);
    assert!(!target.exists());
}

/// Starts a background command; its handle.
async fn start(shell: &Shell, ctx: &ToolContext, command: &str) -> String {
    let message = shell.call_in(ctx, "bash", json!({"command": command, "run_in_background": true})).await;
    assert!(!message.is_error, "{}", message.text());
    let text = message.text();
    let line = text.lines().nth(1).unwrap();
    line.split('`').nth(1).unwrap().to_owned()
}

#[tokio::test]
async fn a_background_command_is_read_twice_and_ends() {
    let shell = Shell::new();
    let ctx = ToolContext::new();
    let handle = start(&shell, &ctx, "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second").await;
    assert_eq!(handle, "bash_1");
    let mut first = String::new();
    for _ in 0..500 {
        let message = shell.call_in(&ctx, "bash_output", json!({"handle": handle})).await;
        first.push_str(&body(&message));
        if first.contains("first") {
            assert_eq!(message.text().lines().nth(1).unwrap(), "bash_1: running · 6 bytes of output so far");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(first, "first\n");
    std::fs::write(shell.root.join("go"), "").unwrap();
    let mut second = String::new();
    let mut ended = None;
    for _ in 0..500 {
        let message = shell.call_in(&ctx, "bash_output", json!({"handle": handle})).await;
        second.push_str(&body(&message));
        let state = message.text().lines().nth(1).unwrap().to_owned();
        if state.starts_with("bash_1: ended") {
            ended = Some(state);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(second, "second\n");
    assert!(ended.unwrap().starts_with("bash_1: ended, exit code 0 · "));
    // Read to its end, the ended command is forgotten.
    let message = shell.call_in(&ctx, "bash_output", json!({"handle": handle})).await;
    assert_eq!(
        message.text(),
        "no background command `bash_1` in this session (none); use a handle that bash returned here"
    );
}

#[tokio::test]
async fn bash_kill_stops_a_background_command_and_its_group() {
    let shell = Shell::new();
    let ctx = ToolContext::new();
    let handle = start(&shell, &ctx, &format!("{} & wait", sleeper("child.pid", 60))).await;
    let child = pid_in(&shell.root.join("child.pid")).await;
    let message = shell.call_in(&ctx, "bash_kill", json!({"handle": handle})).await;
    assert_eq!(
        status(&message),
        "bash_1: ended, stopped before it ended; the process group was stopped (SIGTERM)",
        "{}",
        message.text()
    );
    assert!(gone(&[child]).await);
}

#[tokio::test]
async fn closing_the_registry_stops_every_background_command() {
    let shell = Shell::new();
    let ctx = ToolContext::new();
    for n in 0..2 {
        start(&shell, &ctx, &format!("{}; exec sleep 60", write_pid(&format!("bg{n}.pid")))).await;
    }
    let pids = [pid_in(&shell.root.join("bg0.pid")).await, pid_in(&shell.root.join("bg1.pid")).await];
    shell.registry.close().await.unwrap();
    assert!(pids.iter().all(|&pid| !running(pid)), "{pids:?}: one survived the close");
}

#[tokio::test]
async fn a_session_has_at_most_8_background_commands() {
    let shell = Shell::new();
    let ctx = ToolContext::builder().session_id("s1").build();
    for _ in 0..8 {
        start(&shell, &ctx, "sleep 60").await;
    }
    let message = shell.call_in(&ctx, "bash", json!({"command": "sleep 60", "run_in_background": true})).await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "this session already has 8 background commands (bash_1, bash_2, bash_3, bash_4, bash_5, bash_6, bash_7, \
         bash_8); read finished ones to their end with bash_output or stop one with bash_kill first"
    );
    // Another session has its own handles: bash_1 of s1 is not known there.
    let other = ToolContext::builder().session_id("s2").build();
    let message = shell.call_in(&other, "bash_output", json!({"handle": "bash_1"})).await;
    assert_eq!(
        message.text(),
        "no background command `bash_1` in this session (none); use a handle that bash returned here"
    );
    shell.registry.close().await.unwrap();
}

#[tokio::test]
async fn one_principal_runs_at_most_max_commands_per_principal_across_its_sessions() {
    let shell = Shell::with(|config| ExecConfig { max_commands_per_principal: 2, ..config });
    let ana = |session: &str| ToolContext::builder().session_id(session).principal("ana").build();
    let first = start(&shell, &ana("a1"), "sleep 60").await;
    start(&shell, &ana("a2"), "sleep 60").await;
    // A third, in a session of its own and in the foreground: refused before anything starts.
    let message = shell.call_in(&ana("a3"), "bash", json!({"command": "touch started"})).await;
    assert_eq!(
        (message.is_error, message.text().into_owned()),
        (
            true,
            "this caller already runs 2 shell commands, the most one caller may run at once; wait for one to end, or \
             stop a background one with bash_kill first"
                .to_owned()
        )
    );
    assert!(!shell.root.join("started").exists());
    // Another principal is not affected.
    let bo = ToolContext::builder().session_id("b1").principal("bo").build();
    assert!(!shell.call_in(&bo, "bash", json!({"command": "true"})).await.is_error);
    // Once one of ana's has ended, ana runs another.
    assert!(!shell.call_in(&ana("a1"), "bash_kill", json!({"handle": first})).await.is_error);
    let message = shell.call_in(&ana("a3"), "bash", json!({"command": "touch started"})).await;
    assert!(!message.is_error, "{}", message.text());
    assert!(shell.root.join("started").exists());
    shell.registry.close().await.unwrap();
}

#[tokio::test]
async fn the_default_policy_refuses_the_exec_tools_unless_allowed() {
    let shell = Shell::build(|config| config, |builder| builder);
    let message = shell.bash("echo hi").await;
    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "Permission denied: tool `bash` runs commands on this machine (tag `exec`) and the permission policy does not \
         allow it"
    );
}

/// Allows `cargo test` (with any arguments) and refuses every other command: the policy reads
/// the command text from the call's arguments.
fn cargo_test_only(request: PermissionRequest<'_>) -> Permission {
    if request.call.name != "bash" {
        return Permission::Allow;
    }
    let arguments: Value = serde_json::from_str(&request.call.arguments).unwrap_or_default();
    let command = arguments["command"].as_str().unwrap_or_default();
    if command == "cargo test" || command.starts_with("cargo test ") {
        Permission::Allow
    } else {
        Permission::Deny(format!("only `cargo test` may run, not `{command}`"))
    }
}

#[tokio::test]
async fn a_policy_sees_the_command_text_before_it_runs() {
    let shell = Shell::build(|config| config, |builder| builder.policy(cargo_test_only));
    let message = shell.bash("touch made-by-rm-policy-test").await;
    assert_eq!(message.text(), "Permission denied: only `cargo test` may run, not `touch made-by-rm-policy-test`");
    assert!(!shell.root.join("made-by-rm-policy-test").exists());
    // `cargo test` is let through and runs (whatever it finds in an empty workspace).
    let message = shell.bash("cargo test --offline").await;
    assert!(status(&message).starts_with("exit code "), "{}", message.text());
    assert!(message.text().starts_with("[sandbox: landlock "), "{}", message.text());
}

#[tokio::test]
async fn bash_output_returns_at_most_read_bytes_of_whole_lines_and_says_what_waits() {
    let shell = Shell::with(|config| ExecConfig { read_bytes: 10, ..config });
    let ctx = ToolContext::new();
    // `seq` writes its 27 bytes at once (a pipe write under PIPE_BUF arrives whole).
    let handle = start(&shell, &ctx, "seq 1 12").await;
    let mut reads = Vec::new();
    for _ in 0..500 {
        let message = shell.call_in(&ctx, "bash_output", json!({"handle": handle})).await;
        let ended = message.text().lines().nth(1).unwrap().starts_with("bash_1: ended");
        let read = body(&message);
        let more = read.contains("more bytes");
        if !read.is_empty() {
            reads.push(read);
        }
        if ended && !more {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(reads[0], "1\n2\n3\n4\n5\n[17 more bytes of new output; call bash_output again]");
    let whole: String = reads.iter().map(|r| r.split('[').next().unwrap()).collect();
    assert_eq!(whole, (1..=12).map(|n| format!("{n}\n")).collect::<String>());
}

/// The workdir is resolved off the async worker: in a sandbox rooted at this thread's own
/// `/proc` entry (`/proc/<pid>/task/<tid>`), `/proc/thread-self/fd` lies inside the root only on
/// this thread, so resolved on a blocking-pool thread it escapes the workspace.
#[tokio::test(flavor = "current_thread")]
async fn the_workdir_is_resolved_on_a_blocking_pool_thread() {
    let sandbox = Sandbox::new("/proc/thread-self").unwrap();
    assert!(sandbox.resolve("/proc/thread-self/fd").is_ok(), "on the test thread the path is in the root");
    let registry = tool_std::registry_builder()
        .sets(["exec"])
        .policy(DefaultPolicy::new().allow_all_exec())
        .override_dependency(&SANDBOX, sandbox)
        .build()
        .unwrap();
    let arguments = json!({"command": "true", "workdir": "/proc/thread-self/fd"}).to_string();
    let message = registry.call(&ToolCall::new("call_1", "bash", arguments), &ToolContext::new()).await;
    assert_eq!(
        message.text(),
        "workdir `/proc/thread-self/fd` is refused: Path escapes workspace: /proc/thread-self/fd; give a directory \
         inside the workspace (default: its root)"
    );
}

// The attacks of a command on what lies outside its sandbox: the server's environment, sockets,
// the server's state, processes that escape the command, and the machine's resources.

#[tokio::test]
async fn no_environment_outside_the_command_is_readable_from_it() {
    let shell = Shell::new();
    // A process of the server's with a secret in its environment, as the server's own would be.
    let secret = format!("secret-{}-{}", std::process::id(), line!());
    let mut holder = std::process::Command::new("sleep").arg("60").env("SECRET_TOKEN", &secret).spawn().unwrap();
    let command = format!(
        "readable=0; for f in /proc/[0-9]*/environ; do if tr '\\0' '\\n' < \"$f\" > env.txt 2>/dev/null; then \
         readable=$((readable+1)); grep -h SECRET_TOKEN env.txt; fi; done; echo \"readable $readable\"; cat \
         /proc/{}/environ /proc/{}/environ /proc/{}/cmdline",
        std::process::id(),
        holder.id(),
        std::process::id()
    );
    let message = shell.bash(&command).await;
    holder.kill().unwrap();
    holder.wait().unwrap();
    let text = body(&message);
    assert!(!text.contains(&secret), "{text}");
    // Its own processes' environments it reads (so that the loop above did read some).
    assert!(!text.contains("readable 0\n"), "{text}");
    // The server's `/proc` entry is not listed, and entered by its pid it refuses
    // (hidepid=ptraceable), its command line too.
    assert!(text.contains(&format!("/proc/{}/environ: Operation not permitted", std::process::id())), "{text}");
    assert!(text.contains(&format!("/proc/{}/cmdline: Operation not permitted", std::process::id())), "{text}");
    assert!(text.contains(&format!("/proc/{}/environ: No such file or directory", holder.id())), "{text}");
}

/// Sends a datagram to a UDP socket on 127.0.0.1 with bash's `/dev/udp`; whether it arrived.
async fn send_udp(shell: &Shell) -> (ToolMessage, bool) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_nonblocking(true).unwrap();
    let port = socket.local_addr().unwrap().port();
    let message = shell.bash(&format!("echo ping > /dev/udp/127.0.0.1/{port} && echo sent")).await;
    // A datagram on loopback is queued before the send returns.
    (message, socket.recv(&mut [0; 16]).is_ok())
}

/// Perl connecting a Unix stream socket to `peer` (a Perl expression); prints `connected`.
fn connect_unix(peer: &str) -> String {
    format!(
        "perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => {peer}) or die \"connect: $!\\n\"; print \"connected\\n\"'"
    )
}

/// Connects from a command to a Unix socket listener bound at a path outside the workspace, and
/// to one in the abstract namespace; for each, the command's output and whether it was accepted.
async fn connect_unix_sockets(shell: &Shell) -> [(String, bool); 2] {
    use std::os::linux::net::SocketAddrExt as _;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let path = shell.outside.join("listener.sock");
    let by_path = UnixListener::bind(&path).unwrap();
    let name = format!("tool-exec-test-{}-{}", std::process::id(), shell.root.display());
    let abstract_ = UnixListener::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap()).unwrap();
    let mut results = Vec::new();
    for (listener, peer) in [(by_path, format!("\"{}\"", path.display())), (abstract_, format!("\"\\0{name}\""))] {
        listener.set_nonblocking(true).unwrap();
        let message = shell.bash(&connect_unix(&peer)).await;
        let first = body(&message).lines().next().unwrap_or_default().to_owned();
        results.push((first, listener.accept().is_ok()));
    }
    results.try_into().unwrap()
}

#[tokio::test]
async fn udp_is_refused_when_the_network_is_not_allowed() {
    let shell = Shell::new();
    let (message, arrived) = send_udp(&shell).await;
    assert!(message.is_error, "{}", message.text());
    assert!(!arrived);
    assert!(body(&message).contains("Permission denied"), "{}", message.text());
}

#[tokio::test]
async fn udp_works_when_the_network_is_allowed() {
    let shell = Shell::with(|config| ExecConfig { network: true, ..config });
    let (message, arrived) = send_udp(&shell).await;
    assert_eq!(body(&message), "sent\n", "{}", message.text());
    assert!(arrived);
}

#[tokio::test]
async fn unix_sockets_by_path_and_abstract_are_refused_when_the_network_is_not_allowed() {
    let shell = Shell::new();
    let [by_path, abstract_] = connect_unix_sockets(&shell).await;
    assert_eq!(by_path, ("connect: Permission denied".to_owned(), false));
    assert_eq!(abstract_, ("connect: Permission denied".to_owned(), false));
}

#[tokio::test]
async fn unix_sockets_by_path_and_abstract_work_when_the_network_is_allowed() {
    let shell = Shell::with(|config| ExecConfig { network: true, ..config });
    let [by_path, abstract_] = connect_unix_sockets(&shell).await;
    assert_eq!(by_path, ("connected".to_owned(), true));
    assert_eq!(abstract_, ("connected".to_owned(), true));
}

#[tokio::test]
async fn a_command_cannot_read_another_sessions_home_or_background_output() {
    let shell = Shell::new();
    let s1 = ToolContext::builder().session_id("s1").build();
    let message =
        shell.call_in(&s1, "bash", json!({"command": "echo plan of s1 > \"$HOME/plan.txt\"; echo $HOME"})).await;
    let home = PathBuf::from(body(&message).trim());
    start(&shell, &s1, "echo output of s1").await;
    let spills: Vec<PathBuf> =
        std::fs::read_dir(home.parent().unwrap().join("output")).unwrap().map(|e| e.unwrap().path()).collect();
    let [spill] = spills.as_slice() else { panic!("one spill file: {spills:?}") };
    let s2 = ToolContext::builder().session_id("s2").build();
    let command = format!("cat {}/plan.txt {}", home.display(), spill.display());
    let message = shell.call_in(&s2, "bash", json!({ "command": command })).await;
    let text = body(&message);
    assert!(!text.contains("of s1"), "{text}");
    assert!(text.contains("plan.txt: Permission denied"), "{text}");
}

#[tokio::test]
async fn a_process_that_leaves_the_group_with_setsid_ends_with_bash_kill() {
    let shell = Shell::new();
    let ctx = ToolContext::new();
    let handle = start(&shell, &ctx, &format!("setsid {} & wait", sleeper("stray.pid", 1000))).await;
    let stray = pid_in(&shell.root.join("stray.pid")).await;
    assert!(running(stray));
    let message = shell.call_in(&ctx, "bash_kill", json!({"handle": handle})).await;
    assert!(message.text().contains("bash_1: ended"), "{}", message.text());
    assert!(gone(&[stray]).await, "{stray} survived bash_kill");
}

#[tokio::test]
async fn a_double_fork_that_leaves_the_group_ends_at_the_time_limit() {
    let shell = Shell::new();
    let command = format!("( setsid {} & ); sleep 60", sleeper("stray.pid", 1000));
    let message = shell.call("bash", json!({"command": command, "timeout_ms": 500})).await;
    assert_eq!(status(&message), "timed out after 500 ms; the process group was stopped (SIGTERM)");
    let stray = pid_in(&shell.root.join("stray.pid")).await;
    assert!(gone(&[stray]).await, "{stray} survived the time limit");
}

#[tokio::test]
async fn a_process_that_leaves_the_group_ends_when_the_shell_exits() {
    let shell = Shell::new();
    let message = shell.bash(&format!("setsid {} & {}", sleeper("stray.pid", 1000), await_file("stray.pid"))).await;
    assert_eq!(status(&message), "exit code 0");
    let stray = pid_in(&shell.root.join("stray.pid")).await;
    assert!(gone(&[stray]).await, "{stray} outlived its command");
}

#[tokio::test]
async fn a_process_that_leaves_the_group_ends_when_the_registry_is_dropped() {
    let shell = Shell::new();
    let ctx = ToolContext::new();
    start(&shell, &ctx, &format!("setsid {} & wait", sleeper("stray.pid", 1000))).await;
    let stray = pid_in(&shell.root.join("stray.pid")).await;
    let Shell { registry, _dir, .. } = shell;
    drop(registry);
    assert!(gone(&[stray]).await, "{stray} outlived the registry");
}

#[tokio::test]
async fn a_process_that_leaves_the_group_ends_when_the_registry_closes() {
    let shell = Shell::new();
    let ctx = ToolContext::new();
    start(&shell, &ctx, &format!("(setsid {} &); exec sleep 60", sleeper("stray.pid", 1000))).await;
    let stray = pid_in(&shell.root.join("stray.pid")).await;
    shell.registry.close().await.unwrap();
    assert!(gone(&[stray]).await, "{stray} outlived the registry");
}

#[tokio::test]
async fn a_command_cannot_read_the_state_and_cache_directories() {
    // The server's state and output cache, beside other files.
    let server = tempfile::tempdir().unwrap();
    let server = std::fs::canonicalize(server.path()).unwrap();
    let (state, cache) = (server.join("state"), server.join("cache"));
    std::fs::create_dir_all(state.join("sessions")).unwrap();
    std::fs::create_dir_all(cache.join("ref1")).unwrap();
    std::fs::write(state.join("sessions/other.json"), "{\"todos\": \"plan of another session\"}").unwrap();
    std::fs::write(cache.join("ref1/text"), "cached output of another session").unwrap();
    std::fs::write(server.join("visible.txt"), "visible\n").unwrap();
    let hidden = vec![state.clone(), cache.clone()];
    let shell = Shell::with(|config| ExecConfig { hidden, ..config });
    let command = format!(
        "cat {0}/sessions/other.json; cat {1}/ref1/text; ls {0}; echo x > {0}/new; cat {2}/visible.txt",
        state.display(),
        cache.display(),
        server.display()
    );
    let message = shell.bash(&command).await;
    let text = body(&message);
    assert!(!text.contains("another session"), "{text}");
    for refused in [
        "sessions/other.json: Permission denied",
        "ref1/text: Permission denied",
        "cannot open directory",
        "new: Read-only file system",
    ] {
        assert!(text.contains(refused), "{text}");
    }
    assert!(!state.join("new").exists());
    // The rest of the directory they are in stays readable.
    assert!(text.contains("visible\n"), "{text}");
}

#[tokio::test]
async fn a_fork_loop_is_held_to_the_process_limit_while_the_registry_answers() {
    let shell = Shell::with(|config| ExecConfig { max_processes: 64, ..config });
    let ctx = ToolContext::builder().session_id("forks").build();
    let command = "grep pids /proc/self/cgroup | cut -d: -f3 > cgroup.txt; for i in $(seq 300); do sleep 30 & done";
    let handle = start(&shell, &ctx, command).await;
    let mut output = String::new();
    for _ in 0..500 {
        output.push_str(&body(&shell.call_in(&ctx, "bash_output", json!({"handle": handle})).await));
        if output.contains("fork: retry: Resource temporarily unavailable") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(output.contains("fork: retry: Resource temporarily unavailable"), "{output}");
    let cgroup = std::fs::read_to_string(shell.root.join("cgroup.txt")).unwrap();
    let dir = PathBuf::from(format!("/sys/fs/cgroup/pids{}", cgroup.trim()));
    let count = |file: &str| std::fs::read_to_string(dir.join(file)).unwrap().trim().to_owned();
    assert_eq!(count("pids.max"), "64");
    assert!(count("pids.current").parse::<u64>().unwrap() <= 64, "{}", count("pids.current"));
    // Another call is answered while the loop still runs.
    let message = shell.bash("echo still answering").await;
    assert_eq!(body(&message), "still answering\n");
    let state = shell.call_in(&ctx, "bash_output", json!({"handle": handle})).await;
    assert!(state.text().lines().nth(1).unwrap().starts_with("bash_1: running"), "{}", state.text());
    shell.call_in(&ctx, "bash_kill", json!({"handle": handle})).await;
    // Its cgroup goes once its processes are gone.
    assert!(procs::poll(|| (!dir.exists()).then_some(())).await.is_some(), "{} is left", dir.display());
}

#[tokio::test]
async fn each_command_runs_under_the_configured_limits_which_it_cannot_raise() {
    let shell = Shell::with(|config| ExecConfig {
        max_cpu_seconds: 7,
        max_address_space_bytes: 1 << 30,
        max_file_size_bytes: 1 << 20,
        ..config
    });
    let message =
        shell.bash("for o in t v f; do ulimit -H -$o; ulimit -S -$o; done; ulimit -H -f unlimited; echo $?").await;
    assert_eq!(
        body(&message),
        "7\n7\n1048576\n1048576\n1024\n1024\nbash: line 1: ulimit: file size: cannot modify limit: Operation not \
         permitted\n1\n"
    );
    let message = shell.bash("head -c 2000000 /dev/zero > big; echo $?; stat -c %s big").await;
    // 153: killed by SIGXFSZ (25); the file stops at the limit.
    assert!(
        body(&message).ends_with("File size limit exceededhead -c 2000000 /dev/zero > big\n153\n1048576\n"),
        "{}",
        message.text()
    );
    let text = message.text();
    assert!(
        text.lines().next().unwrap().ends_with(
            "; limits: 512 processes, 7 cpu s, 1 GiB address space, 1 MiB per file, 4 GiB memory per session, 1 GiB \
             HOME]"
        ),
        "{text}"
    );
}

#[tokio::test]
async fn a_command_keeps_only_the_file_capabilities_and_makes_no_device_node() {
    let shell = Shell::new();
    let message = shell.bash("grep -E '^Cap(Eff|Bnd)' /proc/self/status; mknod zero c 1 5; ls").await;
    // CHOWN, DAC_OVERRIDE, DAC_READ_SEARCH, FOWNER, FSETID (bits 0 to 4) and NET_BIND_SERVICE
    // (bit 10); not SETUID, SETGID nor KILL.
    assert_eq!(
        body(&message),
        "CapEff:\t000000000000041f\nCapBnd:\t000000000000041f\nmknod: zero: Permission denied\n",
        "{}",
        message.text()
    );
    assert!(!shell.root.join("zero").exists());
}

#[tokio::test]
async fn a_command_can_set_no_parent_death_signal_but_sigkill() {
    let shell = Shell::new();
    // PR_SET_PDEATHSIG is 1: clearing it (0) or setting SIGTERM (15) is refused, SIGKILL (9) is
    // allowed; so the shell keeps the SIGKILL it starts with, which ends it with the server.
    let script = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfor sig in (0, 15, 9):\n    \
                  result = libc.prctl(1, sig, 0, 0, 0)\n    print(sig, result, os.strerror(ctypes.get_errno()) if \
                  result else 'ok')";
    let message = shell.bash(&format!("python3 -c \"{script}\"")).await;
    assert_eq!(body(&message), "0 -1 Permission denied\n15 -1 Permission denied\n9 0 ok\n", "{}", message.text());
}

#[tokio::test]
async fn without_setpriv_on_the_path_the_first_line_says_the_command_may_outlive_the_server() {
    // A `PATH` with bash alone.
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(procs::which("bash"), bin.path().join("bash")).unwrap();
    let path = bin.path().to_str().unwrap().to_owned();
    let shell = Shell::with(|config| ExecConfig { path, ..config });
    let message = shell.bash("echo ran").await;
    assert_eq!(body(&message), "ran\n", "{}", message.text());
    assert_eq!(
        message.text().lines().next().unwrap(),
        format!(
            "[sandbox: landlock ABI {}; writes only below {}, {}; network refused (tcp, udp, unix sockets); every \
             process ends with the command, not with the server (no `setpriv` (util-linux) on the PATH to set it); \
             {LIMITS}]",
            landlock_abi(),
            shell.root.display(),
            shell.home().display()
        )
    );
}

/// A command running `script` with python3; its output.
async fn python(shell: &Shell, script: &str) -> ToolMessage {
    let path = shell.root.join(format!("attack-{}.py", script.len()));
    std::fs::write(&path, script).unwrap();
    shell.bash(&format!("python3 {}", path.display())).await
}

#[tokio::test]
async fn a_command_cannot_change_its_user_id_which_would_clear_its_parent_death_signal() {
    let shell = Shell::new();
    let script = "import os\nfor name, call in [('seteuid', lambda: os.seteuid(1)), ('setegid', lambda: os.setegid(1))]:\n    \
                  try:\n        call()\n        print(name, 'ok')\n    except OSError as e:\n        print(name, e.strerror)\n";
    let message = python(&shell, script).await;
    assert_eq!(
        body(&message),
        "seteuid Operation not permitted\nsetegid Operation not permitted\n",
        "{}",
        message.text()
    );
}

#[tokio::test]
async fn a_command_cannot_listen_on_a_port_it_never_bound_when_the_network_is_off() {
    let shell = Shell::new();
    let script = "import socket\ns = socket.socket()\ntry:\n    s.listen(1)\n    print('listening on', \
                  s.getsockname()[1])\nexcept OSError as e:\n    print('listen:', e.strerror)\n";
    let message = python(&shell, script).await;
    assert_eq!(body(&message), "listen: Permission denied\n", "{}", message.text());
}

#[tokio::test]
async fn a_command_has_no_controlling_terminal_and_cannot_push_keystrokes_into_one() {
    let shell = Shell::new();
    // `/dev/tty` is the controlling terminal, which a command in a session of its own has none
    // of; `TIOCSTI` (0x5412) on its standard input is refused before the kernel sees the fd.
    let script = "import fcntl, os\ntry:\n    os.open('/dev/tty', os.O_WRONLY)\n    print('tty opened')\nexcept \
                  OSError as e:\n    print('tty:', e.strerror)\ntry:\n    fcntl.ioctl(0, 0x5412, b'x')\nexcept OSError as \
                  e:\n    print('tiocsti:', e.strerror)\n";
    let message = python(&shell, script).await;
    assert_eq!(body(&message), "tty: No such device or address\ntiocsti: Permission denied\n", "{}", message.text());
    // The shell leads its session and its process group (fields 1, 5 and 6 of its stat).
    let message = shell
        .bash("read -r pid _ _ _ pgrp session _ < /proc/self/stat; [ $pid = $session ] && [ $pid = $pgrp ] && echo leader")
        .await;
    assert_eq!(body(&message), "leader\n", "{}", message.text());
}

#[tokio::test]
async fn a_command_sets_no_set_user_id_or_set_group_id_bit_in_any_way() {
    let shell = Shell::new();
    std::fs::write(shell.root.join("tool"), "#!/bin/sh\n").unwrap();
    let script = "import os\nfor name, call in [\n    ('chmod 4755', lambda: os.chmod('tool', 0o4755)),\n    ('chmod \
                  2755', lambda: os.chmod('tool', 0o2755)),\n    ('fchmod', lambda: os.fchmod(os.open('tool', os.O_RDONLY), \
                  0o4755)),\n    ('open O_CREAT', lambda: os.open('made', os.O_CREAT | os.O_WRONLY, 0o4755)),\n    \
                  ('mknod', lambda: os.mknod('node', 0o4755)),\n    ('chmod 755', lambda: os.chmod('tool', 0o755)),\n]:\n    \
                  try:\n        call()\n        print(name, 'ok')\n    except OSError as e:\n        print(name, e.strerror)\n";
    let message = python(&shell, script).await;
    assert_eq!(
        body(&message),
        "chmod 4755 Permission denied\nchmod 2755 Permission denied\nfchmod Permission denied\nopen O_CREAT \
         Permission denied\nmknod Permission denied\nchmod 755 ok\n",
        "{}",
        message.text()
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(shell.root.join("tool")).unwrap().permissions().mode() & 0o7777, 0o755);
    assert!(!shell.root.join("made").exists() && !shell.root.join("node").exists());
}

// The shell as root (issue 42, point 10): each attack below worked on a command run as root
// before the kernel closed it.

#[tokio::test]
async fn a_command_cannot_make_a_user_namespace() {
    let shell = Shell::new();
    // CLONE_NEWUSER (0x10000000) through `unshare` and through `clone`; `clone3`, whose flags a
    // filter cannot read, is not implemented as far as the command can tell, so that libc falls
    // back to `clone`.
    let script = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfor name, call in [\n    ('unshare', \
                  lambda: libc.unshare(0x10000000)),\n    ('clone', lambda: libc.syscall(56, 0x10000000 | 17, 0, 0, 0, \
                  0)),\n    ('clone3', lambda: libc.syscall(435, 0, 0)),\n]:\n    result = call()\n    if result == 0:\n        \
                  os._exit(0)\n    print(name, result, os.strerror(ctypes.get_errno()) if result < 0 else 'made')\n";
    let message = python(&shell, script).await;
    assert_eq!(
        body(&message),
        "unshare -1 Permission denied\nclone -1 Permission denied\nclone3 -1 Function not implemented\n",
        "{}",
        message.text()
    );
    // Processes and threads are still made (by `clone`).
    let message = shell
        .bash(
            "python3 -c 'import threading; t = threading.Thread(target=print, args=(1,)); t.start(); t.join()' & wait",
        )
        .await;
    assert_eq!(body(&message), "1\n", "{}", message.text());
}

#[tokio::test]
async fn a_command_cannot_use_the_kernel_keyrings() {
    let shell = Shell::new();
    // add_key (248) into the user keyring (-4), which outlives the command as root's; keyctl (250)
    // reading the session keyring (-3, KEYCTL_GET_KEYRING_ID 0); request_key (249).
    let script = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nfor name, call in [\n    ('add_key', \
                  lambda: libc.syscall(248, b'user', b'tool-exec-attack', b'secret', 6, -4)),\n    ('keyctl', lambda: \
                  libc.syscall(250, 0, -3, 0)),\n    ('request_key', lambda: libc.syscall(249, b'user', \
                  b'tool-exec-attack', None, 0)),\n]:\n    result = call()\n    print(name, result, \
                  os.strerror(ctypes.get_errno()) if result < 0 else 'ok')\n";
    let message = python(&shell, script).await;
    assert_eq!(
        body(&message),
        "add_key -1 Permission denied\nkeyctl -1 Permission denied\nrequest_key -1 Permission denied\n",
        "{}",
        message.text()
    );
}

#[tokio::test]
async fn a_command_sees_no_host_sockets_through_netlink_or_proc_when_the_network_is_off() {
    let shell = Shell::new();
    // A listening socket of the host's, which `ss` (netlink's sock_diag) and /proc/net/tcp list.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = format!("{:04X}", listener.local_addr().unwrap().port());
    let script = "import socket\nfor protocol in (0, 4):\n    try:\n        socket.socket(socket.AF_NETLINK, \
                  socket.SOCK_RAW, protocol)\n        print(protocol, 'opened')\n    except OSError as e:\n        \
                  print(protocol, e.strerror)\n";
    let message = python(&shell, script).await;
    assert_eq!(body(&message), "0 Permission denied\n4 Permission denied\n", "{}", message.text());
    let message =
        shell.bash(&format!("grep -ci ':{port} ' /proc/net/tcp; awk -F: 'NR > 2 {{ print $1 }}' /proc/net/dev")).await;
    assert_eq!(body(&message), "0\n    lo\n", "{}", message.text());
}

#[tokio::test]
async fn sysv_ipc_is_the_commands_own_and_ends_with_it() {
    let shell = Shell::new();
    // A shared memory segment of a size no other program asks for.
    let message = shell.bash("ipcmk -M 7340033 -p 0600 && ipcs -m | grep -c 7340033").await;
    assert_eq!(body(&message).lines().last(), Some("1"), "{}", message.text());
    let host = std::fs::read_to_string("/proc/sysvipc/shm").unwrap();
    let leaked: Vec<&str> = host.lines().filter(|line| line.split_whitespace().nth(3) == Some("7340033")).collect();
    for line in &leaked {
        let _ = std::process::Command::new("ipcrm").args(["-m", line.split_whitespace().nth(1).unwrap()]).status();
    }
    assert_eq!(leaked, Vec::<&str>::new(), "the segment outlived its command in the host's IPC namespace");
    let message = shell.bash("ipcs -m | grep -c 7340033").await;
    assert_eq!(body(&message), "0\n", "{}", message.text());
}

#[tokio::test]
async fn a_command_cannot_read_another_sessions_command_line_or_environment() {
    sessions_do_not_see_each_others_processes(Shell::new()).await;
}

#[tokio::test]
async fn commands_of_two_sessions_run_as_one_user_do_not_see_each_others_processes() {
    sessions_do_not_see_each_others_processes(shell_of_nobody(|config| config)).await;
}

/// Session s2 looks for the secret in the command line and the environment of session s1's
/// command, in every `/proc/PID` it sees.
async fn sessions_do_not_see_each_others_processes(shell: Shell) {
    let secret = format!("secret-{}-{}", std::process::id(), line!());
    let s1 = ToolContext::builder().session_id("s1").build();
    start(&shell, &s1, &format!("export TOKEN={secret}; {} & sleep 60; echo {secret}", sleeper("s1.pid", 60))).await;
    let victim = pid_in(&shell.root.join("s1.pid")).await;
    let s2 = ToolContext::builder().session_id("s2").build();
    let command = format!(
        "for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do tr '\\0' ' ' < $f 2>/dev/null; done | grep -c secre[t]{}; \
         ls -d /proc/{victim}",
        secret.trim_start_matches("secret")
    );
    let message = shell.call_in(&s2, "bash", json!({ "command": command })).await;
    let text = body(&message);
    assert!(text.starts_with("0\n"), "{}", message.text());
    assert!(text.contains(&format!("/proc/{victim}': No such file or directory")), "{text}");
    // Its own processes' entries it reads: the shell's, from a process it started (marker-own).
    let command = "sh -c 'read -r _ _ _ ppid _ < /proc/self/stat; tr \"\\0\" \" \" < /proc/$ppid/cmdline' | grep -o marker-own; true";
    let message = shell.call_in(&s2, "bash", json!({ "command": command })).await;
    assert_eq!(body(&message), "marker-own\n", "{}", message.text());
}

/// The cgroup of `controller` (v1) a command's shell ran in, as it wrote it with
/// `grep <controller> /proc/self/cgroup | cut -d: -f3 > <file>` in the workspace.
fn cgroup_dir(shell: &Shell, controller: &str, file: &str) -> PathBuf {
    let path = std::fs::read_to_string(shell.root.join(file)).unwrap();
    PathBuf::from(format!("/sys/fs/cgroup/{controller}{}", path.trim()))
}

#[tokio::test]
async fn a_session_is_held_to_its_memory_limit_across_its_commands() {
    let shell = Shell::with(|config| ExecConfig { max_session_memory_bytes: 64 << 20, ..config });
    // 200 MiB written, well under the 8 GiB of address space each process may have.
    let message = shell.bash("python3 -c 'data = b\"x\" * (200 << 20); print(\"allocated\")'").await;
    assert_eq!(status(&message), "exit code 137", "{}", message.text());
    assert!(!body(&message).lines().any(|line| line == "allocated"), "{}", message.text());
    assert!(message.text().lines().next().unwrap().contains(", 64 MiB memory per session"), "{}", message.text());
}

#[tokio::test]
async fn the_commands_of_a_session_share_one_memory_cgroup_and_other_sessions_have_their_own() {
    let shell = Shell::with(|config| ExecConfig { max_session_memory_bytes: 64 << 20, ..config });
    let (s1, s2) = (ToolContext::builder().session_id("s1").build(), ToolContext::builder().session_id("s2").build());
    for (ctx, file) in [(&s1, "a.txt"), (&s1, "b.txt"), (&s2, "c.txt")] {
        let command = format!("grep memory /proc/self/cgroup | cut -d: -f3 > {file}");
        let message = shell.call_in(ctx, "bash", json!({ "command": command })).await;
        assert_eq!(status(&message), "exit code 0", "{}", message.text());
    }
    let [a, b, c] = ["a.txt", "b.txt", "c.txt"].map(|file| cgroup_dir(&shell, "memory", file));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(std::fs::read_to_string(a.join("memory.limit_in_bytes")).unwrap(), "67108864\n");
}

#[tokio::test]
async fn a_sessions_home_holds_at_most_max_home_bytes() {
    let shell = Shell::with(|config| ExecConfig { max_home_bytes: 1 << 20, ..config });
    let message = shell.bash("head -c 2000000 /dev/zero > \"$HOME/big\"; echo $?; stat -c %s \"$HOME/big\"").await;
    assert_eq!(
        body(&message),
        "head: error writing 'standard output': No space left on device\n1\n1048576\n",
        "{}",
        message.text()
    );
    assert!(message.text().lines().next().unwrap().ends_with(", 1 MiB HOME]"), "{}", message.text());
}

#[test]
fn a_registry_dropped_with_its_runtime_while_a_command_runs_leaves_no_temp_dir_or_cgroup() {
    let shell = Shell::new();
    // The runtime goes first, with the command's supervisor, as at the end of a server's `main`.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let ctx = ToolContext::new();
        let command = "grep pids /proc/self/cgroup | cut -d: -f3 > pids.txt; grep memory /proc/self/cgroup | cut -d: \
                       -f3 > memory.txt; sleep 60";
        start(&shell, &ctx, command).await;
        procs::poll(|| std::fs::metadata(shell.root.join("memory.txt")).is_ok_and(|m| m.len() > 0).then_some(())).await;
    });
    let cgroups = [cgroup_dir(&shell, "pids", "pids.txt"), cgroup_dir(&shell, "memory", "memory.txt")];
    assert!(cgroups.iter().all(|dir| dir.exists()), "{cgroups:?}");
    drop(runtime);
    let Shell { registry, temp_root, _dir, .. } = shell;
    drop(registry);
    let left: Vec<PathBuf> = std::fs::read_dir(&temp_root).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(left, Vec::<PathBuf>::new());
    for dir in cgroups {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
}

#[tokio::test]
async fn temp_dirs_mounts_and_cgroups_left_by_a_killed_server_are_removed_at_the_next_start() {
    // A server that is gone: its pid names no process.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let shell = Shell::new();
    let home = shell.temp_root.join(format!("tool-exec-{dead}-1-Xq2/session-a81/home"));
    std::fs::create_dir_all(&home).unwrap();
    let mounted =
        std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"]).arg(&home).status();
    assert!(mounted.unwrap().success());
    std::fs::write(home.join("left.txt"), "left by a killed server").unwrap();
    let own = |controller: &str| {
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let line = cgroups.lines().find(|line| line.split(':').nth(1) == Some(controller)).unwrap();
        PathBuf::from(format!("/sys/fs/cgroup/{controller}{}", line.splitn(3, ':').nth(2).unwrap()))
    };
    let cgroups =
        [own("pids").join(format!("tool-exec-{dead}-1-c1")), own("memory").join(format!("tool-exec-{dead}-1-s1"))];
    for dir in &cgroups {
        std::fs::create_dir(dir).unwrap();
    }
    let message = shell.bash("true").await;
    assert_eq!(status(&message), "exit code 0", "{}", message.text());
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(!mounts.contains(&format!("tool-exec-{dead}-")), "{mounts}");
    assert!(!shell.temp_root.join(format!("tool-exec-{dead}-1-Xq2")).exists());
    for dir in cgroups {
        assert!(!dir.exists(), "{} is left", dir.display());
    }
}

/// A shell whose workspace (and the directories above it) belongs to `nobody` (65534), as a
/// workspace of a user's own is, with `outside/victim.txt` (root's, 0644) and
/// `outside/secret.txt` (root's, 0600) hard-linked into the workspace as `link.txt`.
fn shell_of_nobody(configure: impl FnOnce(ExecConfig) -> ExecConfig) -> Shell {
    use std::os::unix::fs::PermissionsExt;
    let shell = Shell::with(configure);
    std::os::unix::fs::chown(&shell.root, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(shell.root.parent().unwrap(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(shell.outside.join("victim.txt"), "victim\n").unwrap();
    std::fs::write(shell.outside.join("secret.txt"), "secret of root\n").unwrap();
    std::fs::set_permissions(shell.outside.join("secret.txt"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::hard_link(shell.outside.join("secret.txt"), shell.root.join("link.txt")).unwrap();
    shell
}

#[tokio::test]
async fn a_command_changes_no_mode_owner_time_or_attribute_outside_and_reads_no_hard_link_to_a_private_file() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let shell = shell_of_nobody(|config| config);
    let victim = shell.outside.join("victim.txt");
    let before = std::fs::metadata(&victim).unwrap();
    let script = format!(
        "import os\nv = {victim:?}\nfor name, call in [\n    ('chmod', lambda: os.chmod(v, 0o777)),\n    ('chown', lambda: \
         os.chown(v, 65534, 65534)),\n    ('utime', lambda: os.utime(v, (0, 0))),\n    ('setxattr', lambda: \
         os.setxattr(v, 'user.attack', b'1')),\n    ('read link.txt', lambda: open('link.txt').read()),\n]:\n    try:\n        \
         call()\n        print(name, 'ok')\n    except OSError as e:\n        print(name, e.strerror)\n",
        victim = victim.display().to_string()
    );
    let message = python(&shell, &script).await;
    assert_eq!(
        body(&message),
        "chmod Read-only file system\nchown Read-only file system\nutime Read-only file system\nsetxattr Read-only \
         file system\nread link.txt Permission denied\n",
        "{}",
        message.text()
    );
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(
        (after.permissions().mode(), after.uid(), after.mtime()),
        (before.permissions().mode(), 0, before.mtime())
    );
}

#[tokio::test]
async fn a_command_runs_as_the_owner_of_the_workspace_and_writes_there_and_in_home() {
    use std::os::unix::fs::MetadataExt;
    let shell = shell_of_nobody(|config| config);
    let message = shell
        .bash("id -u; id -g; id -G; echo made > made.txt; echo kept > \"$HOME/kept.txt\" && cat \"$HOME/kept.txt\"")
        .await;
    assert_eq!(body(&message), "65534\n65534\n65534\nkept\n", "{}", message.text());
    assert_eq!(std::fs::metadata(shell.root.join("made.txt")).unwrap().uid(), 65534);
    let first = message.text().lines().next().unwrap().to_owned();
    assert!(first.ends_with("1 GiB HOME; as uid 65534 (gid 65534), the owner of the workspace]"), "{first}");
}

#[tokio::test]
async fn a_command_run_as_another_user_still_ends_with_the_server() {
    let shell = shell_of_nobody(|config| config);
    // PR_GET_PDEATHSIG (2): the user was switched before the signal was set, which a switch clears.
    let script = "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nsignal = ctypes.c_int(0)\n\
                  libc.prctl(2, ctypes.byref(signal), 0, 0, 0)\nprint(os.getuid(), signal.value)\n";
    // `exec`: python is the shell itself then (a fork clears the signal, an `exec` keeps it).
    std::fs::write(shell.root.join("pdeathsig.py"), script).unwrap();
    let message = shell.bash(&format!("exec python3 {}", shell.root.join("pdeathsig.py").display())).await;
    assert_eq!(body(&message), "65534 9\n", "{}", message.text());
}

#[tokio::test]
async fn the_server_user_setting_runs_commands_as_root_whoever_owns_the_workspace() {
    let shell = shell_of_nobody(|config| ExecConfig { user: ExecUser::Server, ..config });
    let message = shell.bash("id -u").await;
    assert_eq!(body(&message), "0\n", "{}", message.text());
    assert!(message.text().lines().next().unwrap().ends_with(&format!("{LIMITS}]")), "{}", message.text());
}

#[tokio::test]
async fn a_user_given_runs_the_commands_when_the_workspace_is_writable_by_it() {
    let shell = shell_of_nobody(|config| ExecConfig { user: ExecUser::Id { uid: 65534, gid: 65534 }, ..config });
    let message = shell.bash("id -u; echo made > made.txt && cat made.txt").await;
    assert_eq!(body(&message), "65534\nmade\n", "{}", message.text());
    let first = message.text().lines().next().unwrap().to_owned();
    assert!(first.ends_with("1 GiB HOME; as uid 65534 (gid 65534)]"), "{first}");
}

#[tokio::test]
async fn a_user_given_that_cannot_write_the_workspace_is_refused_saying_what_to_change() {
    let shell = Shell::with(|config| ExecConfig { user: ExecUser::Id { uid: 4242, gid: 4242 }, ..config });
    let message = shell.bash("touch made.txt").await;
    assert!(message.is_error);
    let root = shell.root.display();
    assert_eq!(
        message.text(),
        format!(
            "refused to run the command as uid 4242 (gid 4242): the workspace root {root} is not writable by it (owner \
             uid 0, gid 0, mode 755); give the workspace to that user (`chown -R 4242:4242 {root}`) or run commands \
             as the workspace's owner (toolbox `--exec-user owner`)"
        )
    );
    assert!(!shell.root.join("made.txt").exists());
}

#[tokio::test]
async fn a_command_run_as_root_changes_no_mode_owner_time_or_attribute_outside_its_workspace_and_home() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // A workspace of root's: the command runs as root.
    let shell = Shell::new();
    let victim = shell.outside.join("victim.txt");
    std::fs::write(&victim, "victim\n").unwrap();
    std::fs::write(shell.root.join("mine.txt"), "mine\n").unwrap();
    let before = std::fs::metadata(&victim).unwrap();
    let script = format!(
        "import os\nfor path in [{victim:?}, 'mine.txt', os.environ['HOME']]:\n    for name, call in [\n        ('chmod', \
         lambda: os.chmod(path, 0o700)),\n        ('chown', lambda: os.chown(path, 65534, 65534)),\n        ('utime', \
         lambda: os.utime(path, (0, 0))),\n        ('setxattr', lambda: os.setxattr(path, 'user.attack', b'1')),\n    \
         ]:\n        try:\n            call()\n            print(name, 'ok')\n        except OSError as e:\n            \
         print(name, e.strerror)\n",
        victim = victim.display().to_string()
    );
    let message = python(&shell, &script).await;
    let refused = "chmod Read-only file system\nchown Read-only file system\nutime Read-only file system\nsetxattr \
                   Read-only file system\n";
    // Outside refused; in the workspace and in `HOME` allowed.
    let allowed = "chmod ok\nchown ok\nutime ok\nsetxattr ok\n";
    assert_eq!(body(&message), format!("{refused}{allowed}{allowed}"), "{}", message.text());
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(
        (after.permissions().mode(), after.uid(), after.mtime()),
        (before.permissions().mode(), 0, before.mtime())
    );
    // So the first line does not say that root may change them.
    assert!(!message.text().lines().next().unwrap().contains("as root"), "{}", message.text());
}
