//! No standard tool that touches the disk runs on the async worker that polls its call.
//!
//! Every test runs on a `current_thread` runtime, whose one worker is the test's own thread: a
//! tool body that ran inline would run there. Two ways to see where it ran:
//! - the fs, patch and media tools resolve their paths through a sandbox rooted at the test
//!   thread's own `/proc` entry (`/proc/<pid>/task/<tid>`, what `/proc/thread-self` is on that
//!   thread): `/proc/thread-self/...` lies inside that root only when resolved on the test thread,
//!   so a tool that resolves it on a blocking-pool thread reports that it escapes the workspace;
//! - the cache and todo tools reach their store through a wrapper that records the thread of
//!   every call.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use serde_json::{Value, json};
use tool_runtime::output::{MemoryStore, OUTPUT_STORE, OutputScope, OutputStore, StoreError, StoredInfo, put_text};
use tool_runtime::{ContentPart, Registry, ToolCall, ToolContext};
use tool_std::session::{MemorySessionStore, SESSION_STORE, SessionError, SessionMeta, SessionStore};

/// The threads a store was called on.
#[derive(Debug, Default, Clone)]
struct Threads(Arc<Mutex<Vec<ThreadId>>>);

impl Threads {
    fn record(&self) {
        self.0.lock().unwrap().push(std::thread::current().id());
    }

    /// How many calls were recorded, and how many of them ran on the current thread.
    fn calls_and_calls_here(&self) -> (usize, usize) {
        let threads = self.0.lock().unwrap();
        let here = std::thread::current().id();
        (threads.len(), threads.iter().filter(|t| **t == here).count())
    }
}

/// The message text of one call.
async fn call(registry: &Registry, ctx: &ToolContext, tool: &str, arguments: Value) -> String {
    registry.call(&ToolCall::new("call_1", tool, arguments.to_string()), ctx).await.text().into_owned()
}

#[cfg(target_os = "linux")]
mod paths {
    use serde_json::{Value, json};
    use tool_runtime::ToolContext;
    use tool_std::sandbox::{SANDBOX, Sandbox};

    /// What `tool` answers when it resolves `path` in a sandbox rooted at this thread's `/proc`
    /// entry. The root holds `path` for this thread (checked first).
    async fn answer_in_thread_root(tool: &str, path: &str, arguments: Value) -> String {
        let sandbox = Sandbox::new("/proc/thread-self").unwrap();
        assert!(sandbox.resolve(path).is_ok(), "{path} must lie in the root when resolved on the test thread");
        let registry = tool_std::registry_builder().override_dependency(&SANDBOX, sandbox).build().unwrap();
        super::call(&registry, &ToolContext::new(), tool, arguments).await
    }

    #[tokio::test(flavor = "current_thread")]
    async fn read_runs_on_a_blocking_pool_thread() {
        let answer =
            answer_in_thread_root("read", "/proc/thread-self/comm", json!({"file_path": "/proc/thread-self/comm"}));
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self/comm");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn read_line_runs_on_a_blocking_pool_thread() {
        let arguments = json!({"file_path": "/proc/thread-self/comm", "line_number": 1});
        let answer = answer_in_thread_root("read_line", "/proc/thread-self/comm", arguments);
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self/comm");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn glob_runs_on_a_blocking_pool_thread() {
        let arguments = json!({"pattern": "comm", "path": "/proc/thread-self"});
        let answer = answer_in_thread_root("glob", "/proc/thread-self", arguments);
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn grep_runs_on_a_blocking_pool_thread() {
        let arguments = json!({"pattern": "x", "path": "/proc/thread-self/comm"});
        let answer = answer_in_thread_root("grep", "/proc/thread-self/comm", arguments);
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self/comm");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn write_runs_on_a_blocking_pool_thread() {
        let arguments = json!({"file_path": "/proc/thread-self/new.txt", "content": "x"});
        let answer = answer_in_thread_root("write", "/proc/thread-self/new.txt", arguments);
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self/new.txt");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn edit_runs_on_a_blocking_pool_thread() {
        let arguments = json!({"file_path": "/proc/thread-self/comm", "old_string": "a", "new_string": "b"});
        let answer = answer_in_thread_root("edit", "/proc/thread-self/comm", arguments);
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self/comm");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn apply_patch_runs_on_a_blocking_pool_thread() {
        let patch = "*** Begin Patch\n*** Add File: /proc/thread-self/new.txt\n+x\n*** End Patch";
        let answer = answer_in_thread_root("apply_patch", "/proc/thread-self/new.txt", json!({"patch": patch}));
        assert_eq!(
            answer.await,
            "patch line 2: Path escapes workspace: /proc/thread-self/new.txt; nothing was written"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn view_image_runs_on_a_blocking_pool_thread() {
        let answer = answer_in_thread_root(
            "view_image",
            "/proc/thread-self/comm",
            json!({"file_path": "/proc/thread-self/comm"}),
        );
        assert_eq!(answer.await, "Path escapes workspace: /proc/thread-self/comm");
    }
}

/// An output store that records the thread of every read.
struct RecordingOutputStore {
    inner: MemoryStore,
    threads: Threads,
}

impl OutputStore for RecordingOutputStore {
    fn put_scoped(
        &self,
        scope: OutputScope<'_>,
        ref_id: &str,
        text: &mut dyn std::io::Read,
        parts: &[ContentPart],
    ) -> Result<StoredInfo, StoreError> {
        self.inner.put_scoped(scope, ref_id, text, parts)
    }

    fn check_scope(&self, ref_id: &str, scope: OutputScope<'_>) -> Result<(), StoreError> {
        self.threads.record();
        self.inner.check_scope(ref_id, scope)
    }

    fn info(&self, ref_id: &str) -> Result<StoredInfo, StoreError> {
        self.threads.record();
        self.inner.info(ref_id)
    }

    fn open_at(&self, ref_id: &str, offset: u64) -> Result<Box<dyn std::io::Read + Send>, StoreError> {
        self.threads.record();
        self.inner.open_at(ref_id, offset)
    }

    fn checkpoint(&self, ref_id: &str, line: u64) -> Result<(u64, u64), StoreError> {
        self.threads.record();
        self.inner.checkpoint(ref_id, line)
    }

    fn parts(&self, ref_id: &str) -> Result<Vec<ContentPart>, StoreError> {
        self.threads.record();
        self.inner.parts(ref_id)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_cache_tools_read_the_store_on_blocking_pool_threads() {
    let threads = Threads::default();
    let inner = MemoryStore::new();
    put_text(&inner, "out_1", "alpha\nbeta\n", &[]).unwrap();
    let store: Arc<dyn OutputStore> = Arc::new(RecordingOutputStore { inner, threads: threads.clone() });
    let registry =
        tool_std::registry_builder().sets(["cache"]).override_dependency(&OUTPUT_STORE, store).build().unwrap();
    let ctx = ToolContext::new();

    let answers = [
        call(&registry, &ctx, "tool_output_cache", json!({"ref_id": "out_1"})).await,
        call(&registry, &ctx, "tool_output_cache_grep", json!({"ref_id": "out_1", "pattern": "beta"})).await,
        call(&registry, &ctx, "tool_output_cache_line", json!({"ref_id": "out_1", "line_number": 2})).await,
    ];

    assert_eq!(
        answers,
        ["    1  alpha\n    2  beta", "    2: beta", "line_number=2 line_length=4 char_range=0..4\nbeta"]
    );
    let (calls, on_this_thread) = threads.calls_and_calls_here();
    assert!(calls >= 3, "the store was called {calls} times");
    assert_eq!(on_this_thread, 0, "store calls on the worker");
}

/// A session store that records the thread of every call.
#[derive(Debug)]
struct RecordingSessionStore {
    inner: MemorySessionStore,
    threads: Threads,
}

impl SessionStore for RecordingSessionStore {
    fn load(&self, session_id: &str, principal: Option<&str>) -> Result<SessionMeta, SessionError> {
        self.threads.record();
        self.inner.load(session_id, principal)
    }

    fn update(
        &self,
        session_id: &str,
        principal: Option<&str>,
        edit: &mut dyn FnMut(&mut SessionMeta) -> bool,
    ) -> Result<bool, SessionError> {
        self.threads.record();
        self.inner.update(session_id, principal, edit)
    }

    fn remove(&self, session_id: &str, principal: Option<&str>) -> Result<bool, SessionError> {
        self.threads.record();
        self.inner.remove(session_id, principal)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_todo_tools_call_the_session_store_on_blocking_pool_threads() {
    let threads = Threads::default();
    let store: Arc<dyn SessionStore> =
        Arc::new(RecordingSessionStore { inner: MemorySessionStore::new(), threads: threads.clone() });
    let registry =
        tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store).build().unwrap();
    let ctx = ToolContext::builder().session_id("s1").build();

    call(&registry, &ctx, "todo_new", json!({"todos": [{"content": "Write code", "status": "pending"}]})).await;
    call(&registry, &ctx, "todo_append", json!({"todos": [{"content": "Test", "status": "pending"}]})).await;
    call(&registry, &ctx, "todo_patch", json!({"updates": [{"id": "test", "status": "completed"}]})).await;
    let plan = call(&registry, &ctx, "todo_read", json!({})).await;
    let cleared = call(&registry, &ctx, "todo_clear", json!({})).await;

    assert_eq!(
        plan,
        "Todos: 2 total, 1 pending, 0 in_progress, 1 completed, 0 cancelled\nNext: [write-code]\n\
         1. [ ] [write-code] (p3) Write code\n2. [x] [test] (p3) Test"
    );
    assert_eq!(cleared, "Cleared the plan (2 items removed). Use todo_new to write a new one.");
    assert_eq!(threads.calls_and_calls_here(), (5, 0));
}
