//! A ref id is only good in the scope that made it: the session and the principal of the call.
//! Asked for a ref of another session, principal or workspace, every cache tool answers exactly
//! as for an unknown ref; in both built-in stores, and with the `redis` feature in the Redis store
//! (a real redis-server started by the test).

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tool_runtime::output::{FileStore, MemoryStore, OUTPUT_STORE, OutputLayer, OutputStore, StoreLimits};
use tool_runtime::{FixedClock, Registry, ToolCall, ToolContext, ToolMessage};
use tool_std::sandbox::{SANDBOX, Sandbox};

#[cfg(feature = "redis")]
use crate::redis_server;

/// What keeps a store's backing alive: its temp dir, or its redis-server.
type Guard = Box<dyn std::any::Any>;

/// A Redis output store on `server`, in its own namespace.
#[cfg(feature = "redis")]
fn redis_store(server: &redis_server::RedisServer) -> Arc<dyn OutputStore> {
    let conn = tool_runtime::redis::RedisConnection::open(&server.url(0)).unwrap();
    let limits = tool_runtime::output::DEFAULT_OUTPUT_LIMITS;
    Arc::new(tool_runtime::redis::RedisStore::with_limits(conn, "t:out", limits, Arc::new(tool_runtime::SystemClock)))
}

/// The three cache tools, each with the arguments that read `ref_id`.
fn cache_calls(ref_id: &str) -> [(&'static str, serde_json::Value); 3] {
    [
        ("tool_output_cache", json!({"ref_id": ref_id})),
        ("tool_output_cache_grep", json!({"ref_id": ref_id, "pattern": "secret"})),
        ("tool_output_cache_line", json!({"ref_id": ref_id, "line_number": 1})),
    ]
}

/// A registry of the fs and cache tools rooted in `root`, with the output layer writing to `store`.
fn registry(root: &Path, store: Arc<dyn OutputStore>) -> Registry {
    tool_std::registry_builder()
        .sets(["fs", "cache"])
        .override_dependency(&SANDBOX, Sandbox::new(root).unwrap())
        .override_dependency(&OUTPUT_STORE, store)
        .output(OutputLayer::new())
        .build()
        .unwrap()
}

fn context(session: &str, principal: Option<&str>) -> ToolContext {
    let builder = ToolContext::builder().session_id(session);
    match principal {
        Some(p) => builder.principal(p).build(),
        None => builder.build(),
    }
}

async fn call(registry: &Registry, ctx: &ToolContext, tool: &str, arguments: serde_json::Value) -> ToolMessage {
    registry.call(&ToolCall::new("call_0", tool, arguments.to_string()), ctx).await
}

/// The two built-in stores, fresh, and the Redis store with the `redis` feature; the guard keeps
/// the file store's root or the redis-server alive.
fn stores() -> Vec<(&'static str, Arc<dyn OutputStore>, Option<Guard>)> {
    let dir = tempfile::tempdir().unwrap();
    let files = FileStore::new(dir.path().join("cache")).unwrap();
    #[allow(unused_mut)]
    let mut stores: Vec<(&'static str, Arc<dyn OutputStore>, Option<Guard>)> =
        vec![("memory", Arc::new(MemoryStore::new()), None), ("file", Arc::new(files), Some(Box::new(dir)))];
    #[cfg(feature = "redis")]
    {
        let server = redis_server::RedisServer::start();
        stores.push(("redis", redis_store(&server), Some(Box::new(server))));
    }
    stores
}

/// A workspace holding `secret.txt`, and the ref of its `read` made in `owner`'s scope.
async fn secret_ref(registry: &Registry, root: &Path, owner: &ToolContext) -> String {
    std::fs::write(root.join("secret.txt"), "the secret is 42\n").unwrap();
    let read = call(registry, owner, "read", json!({"file_path": "secret.txt"})).await;
    assert!(!read.is_error, "{}", read.text());
    read.ref_id.clone().unwrap()
}

/// What every cache tool answers `reader` for `ref_id` when nothing at all is stored under it:
/// the same calls to a registry with an empty store of the same kind.
async fn unknown_answers(kind: &str, root: &Path, reader: &ToolContext, ref_id: &str) -> Vec<ToolMessage> {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(feature = "redis")]
    let server = redis_server::RedisServer::start();
    let empty: Arc<dyn OutputStore> = match kind {
        "memory" => Arc::new(MemoryStore::new()),
        #[cfg(feature = "redis")]
        "redis" => redis_store(&server),
        _ => Arc::new(FileStore::new(dir.path()).unwrap()),
    };
    let registry = registry(root, empty);
    let mut answers = Vec::new();
    for (tool, arguments) in cache_calls(ref_id) {
        answers.push(call(&registry, reader, tool, arguments).await);
    }
    answers
}

/// Asserts that `reader` gets, from every cache tool, exactly the unknown-ref answer for
/// `ref_id`, and that `owner` reads it.
async fn assert_only_owner_reads(
    kind: &str,
    registry: &Registry,
    root: &Path,
    owner: &ToolContext,
    reader: &ToolContext,
) {
    let ref_id = secret_ref(registry, root, owner).await;
    let unknown = unknown_answers(kind, root, reader, &ref_id).await;
    for ((tool, arguments), unknown) in cache_calls(&ref_id).into_iter().zip(unknown) {
        let other = call(registry, reader, tool, arguments.clone()).await;
        assert!(other.is_error, "{kind}: {tool} read another scope's ref: {}", other.text());
        assert_eq!(other.text(), unknown.text(), "{kind}: {tool}");
        assert_eq!(
            other.text(),
            format!(
                "no tool output is cached under ref_id `{ref_id}` in this session; use the ref_id of a tool \
                 result of this session"
            )
        );
        let own = call(registry, owner, tool, arguments).await;
        assert!(!own.is_error, "{kind}: {tool} refused the owner: {}", own.text());
        assert!(own.text().contains("the secret is 42"), "{kind}: {tool}: {}", own.text());
    }
}

#[tokio::test]
async fn a_ref_of_another_session_reads_as_unknown_in_every_cache_tool() {
    for (kind, store, _dir) in stores() {
        let ws = tempfile::tempdir().unwrap();
        let registry = registry(ws.path(), store);
        assert_only_owner_reads(kind, &registry, ws.path(), &context("s1", None), &context("s2", None)).await;
    }
}

#[tokio::test]
async fn a_ref_of_another_principal_in_the_same_session_reads_as_unknown_in_every_cache_tool() {
    for (kind, store, _dir) in stores() {
        let ws = tempfile::tempdir().unwrap();
        let registry = registry(ws.path(), store);
        let (alice, bob) = (context("s1", Some("alice")), context("s1", Some("bob")));
        assert_only_owner_reads(kind, &registry, ws.path(), &alice, &bob).await;
        // A caller without a principal is another scope too.
        assert_only_owner_reads(kind, &registry, ws.path(), &alice, &context("s1", None)).await;
    }
}

#[tokio::test]
async fn a_ref_made_in_another_workspace_reads_as_unknown_though_the_store_is_shared() {
    for (kind, store, _dir) in stores() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let (in_a, in_b) = (registry(a.path(), store.clone()), registry(b.path(), store.clone()));
        // Each workspace has its session (as `toolbox` derives one from the root).
        let (ctx_a, ctx_b) = (context("root-a", None), context("root-b", None));
        let ref_id = secret_ref(&in_a, a.path(), &ctx_a).await;
        let secret = a.path().join("secret.txt").canonicalize().unwrap();
        let read = call(&in_b, &ctx_b, "read", json!({"file_path": secret})).await;
        assert!(read.is_error, "{kind}: workspace b read a's file: {}", read.text());
        let unknown = unknown_answers(kind, b.path(), &ctx_b, &ref_id).await;
        for ((tool, arguments), unknown) in cache_calls(&ref_id).into_iter().zip(unknown) {
            let through_cache = call(&in_b, &ctx_b, tool, arguments).await;
            assert_eq!(through_cache.text(), unknown.text(), "{kind}: {tool}");
        }
    }
}

#[tokio::test]
async fn the_output_of_a_call_is_stored_in_its_scope_and_read_back_in_it() {
    for (kind, store, _dir) in stores() {
        let ws = tempfile::tempdir().unwrap();
        let registry = registry(ws.path(), store);
        let ctx = context("s1", Some("alice"));
        let ref_id = secret_ref(&registry, ws.path(), &ctx).await;
        let again = call(&registry, &ctx, "tool_output_cache", json!({"ref_id": ref_id})).await;
        assert_eq!(again.text().lines().next(), Some("    1      1  the secret is 42"), "{kind}");
    }
}

#[tokio::test]
async fn every_cache_tool_says_a_ref_of_this_scope_expired_and_what_to_do() {
    let clock = Arc::new(FixedClock::new(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000)));
    let limits = StoreLimits::new(std::time::Duration::from_secs(60), 1024 * 1024);
    let dir = tempfile::tempdir().unwrap();
    let stores: [(&str, Arc<dyn OutputStore>); 2] = [
        ("memory", Arc::new(MemoryStore::with_limits(limits, clock.clone()))),
        ("file", Arc::new(FileStore::open(dir.path(), limits, clock.clone()).unwrap())),
    ];
    for (kind, store) in stores {
        let ws = tempfile::tempdir().unwrap();
        let registry = registry(ws.path(), store);
        let (owner, other) = (context("s1", Some("alice")), context("s1", Some("bob")));
        let ref_id = secret_ref(&registry, ws.path(), &owner).await;
        clock.advance(std::time::Duration::from_secs(61));
        for (tool, arguments) in cache_calls(&ref_id) {
            let expired = call(&registry, &owner, tool, arguments.clone()).await;
            assert_eq!(
                expired.text(),
                format!(
                    "the tool output under ref_id `{ref_id}` is no longer cached (not used for longer than its time \
                     to live); call the tool again to get it"
                ),
                "{kind}: {tool}"
            );
            let unknown = call(&registry, &other, tool, arguments).await;
            assert!(unknown.text().starts_with("no tool output is cached under ref_id"), "{kind}: {tool}");
        }
    }
}
