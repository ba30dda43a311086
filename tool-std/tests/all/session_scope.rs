//! A session id is only usable by the principal that made it, sessions and workspaces do not see
//! each other's plans (in both built-in session stores, and with the `redis` feature in the Redis
//! store on a real redis-server started by the test), and both built-in session stores stay bounded
//! (time to live since last use, size cap, least recently used first out).

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};
use tool_runtime::output::StoreLimits;
use tool_runtime::{Clock, FixedClock, Registry, ToolCall, ToolContext, ToolMessage};
use tool_std::session::{
    FILE_SESSION_OVERHEAD, FileSessionStore, MEMORY_SESSION_OVERHEAD, MemorySessionStore, SESSION_STORE, SessionError,
    SessionStore, modify,
};

/// A store of each kind, named.
type Stores = Vec<(&'static str, Arc<dyn SessionStore>)>;

/// A store of each kind, named, with how many bytes it holds by its own count and the bytes it
/// counts per session beside the session's own.
type CountedStores = [(&'static str, Arc<dyn SessionStore>, Box<dyn Fn() -> u64>, u64); 2];

fn clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(UNIX_EPOCH + Duration::from_secs(1_800_000_000)))
}

/// Both session stores, with `limits` and `clock`; the temp dir keeps the file store's directory.
fn stores(limits: StoreLimits, clock: &Arc<FixedClock>) -> (tempfile::TempDir, Stores) {
    let dir = tempfile::tempdir().unwrap();
    let file = FileSessionStore::with_limits(dir.path().join("sessions"), limits, clock.clone());
    let memory = MemorySessionStore::with_limits(limits, clock.clone());
    (dir, vec![("memory", Arc::new(memory)), ("file", Arc::new(file))])
}

#[cfg(feature = "redis")]
use crate::redis_server;

/// What keeps the stores' backing alive: the file store's temp dir, the redis-server.
type Guards = Vec<Box<dyn std::any::Any>>;

/// [`stores`] with [`roomy`] limits, and the Redis store with the `redis` feature.
fn all_stores(clock: &Arc<FixedClock>) -> (Guards, Stores) {
    let (dir, stores) = stores(roomy(), clock);
    #[allow(unused_mut)]
    let (mut guards, mut stores): (Guards, Stores) = (vec![Box::new(dir)], stores);
    #[cfg(feature = "redis")]
    {
        let server = redis_server::RedisServer::start();
        let conn = tool_runtime::redis::RedisConnection::open(&server.url(0)).unwrap();
        let redis = tool_std::session::RedisSessionStore::with_limits(conn, "t:sess", roomy(), clock.clone());
        stores.push(("redis", Arc::new(redis)));
        guards.push(Box::new(server));
    }
    (guards, stores)
}

fn roomy() -> StoreLimits {
    StoreLimits::new(Duration::from_secs(3600), 1024 * 1024)
}

fn todo_registry(store: Arc<dyn SessionStore>) -> Registry {
    tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store).build().unwrap()
}

fn context(session: &str, principal: Option<&str>) -> ToolContext {
    let builder = ToolContext::builder().session_id(session);
    match principal {
        Some(p) => builder.principal(p).build(),
        None => builder.build(),
    }
}

async fn call(registry: &Registry, ctx: &ToolContext, tool: &str, arguments: Value) -> ToolMessage {
    registry.call(&ToolCall::new("call_0", tool, arguments.to_string()), ctx).await
}

/// Every todo tool, with arguments that would change the plan of `s1` made by [`plan_of_alice`].
fn todo_calls() -> [(&'static str, Value); 5] {
    [
        ("todo_read", json!({})),
        ("todo_new", json!({"todos": [{"content": "Take over", "status": "pending"}]})),
        ("todo_append", json!({"todos": [{"content": "Add more", "status": "pending"}]})),
        ("todo_patch", json!({"updates": [{"id": "ship-it", "status": "completed"}]})),
        ("todo_clear", json!({})),
    ]
}

const ALICES_PLAN: &str = "Todos: 1 total, 1 pending, 0 in_progress, 0 completed, 0 cancelled\nNext: [ship-it]\n1. [ ] [ship-it] (p3) Ship it";

async fn plan_of_alice(registry: &Registry, alice: &ToolContext) {
    let made = call(registry, alice, "todo_new", json!({"todos": [{"content": "Ship it", "status": "pending"}]})).await;
    assert_eq!(made.text(), ALICES_PLAN);
}

#[tokio::test]
async fn every_todo_tool_refuses_a_session_of_another_principal_and_changes_nothing() {
    let clock = clock();
    let (_guards, stores) = all_stores(&clock);
    for (kind, store) in stores {
        let registry = todo_registry(store);
        let alice = context("s1", Some("alice"));
        plan_of_alice(&registry, &alice).await;
        for other in [context("s1", Some("bob")), context("s1", None)] {
            for (tool, arguments) in todo_calls() {
                let refused = call(&registry, &other, tool, arguments).await;
                assert!(refused.is_error, "{kind}: {tool}: {}", refused.text());
                assert_eq!(
                    refused.text(),
                    "session `s1` cannot be used by this caller: it belongs to another principal; use a session id of \
                     your own",
                    "{kind}: {tool}"
                );
            }
        }
        assert_eq!(call(&registry, &alice, "todo_read", json!({})).await.text(), ALICES_PLAN, "{kind}");
    }
}

#[tokio::test]
async fn a_session_made_without_a_principal_is_refused_to_one_with_a_principal() {
    let clock = clock();
    let (_guards, stores) = all_stores(&clock);
    for (kind, store) in stores {
        let registry = todo_registry(store);
        plan_of_alice(&registry, &context("s1", None)).await;
        let refused = call(&registry, &context("s1", Some("mallory")), "todo_read", json!({})).await;
        assert!(refused.is_error, "{kind}: {}", refused.text());
    }
}

#[tokio::test]
async fn two_sessions_of_one_principal_keep_two_plans() {
    let clock = clock();
    let (_guards, stores) = all_stores(&clock);
    for (kind, store) in stores {
        let registry = todo_registry(store);
        let (s1, s2) = (context("s1", Some("alice")), context("s2", Some("alice")));
        plan_of_alice(&registry, &s1).await;
        let other = call(&registry, &s2, "todo_read", json!({})).await;
        assert_eq!(other.text(), tool_std::todo::EMPTY_PLAN, "{kind}");
        for (tool, arguments) in todo_calls() {
            call(&registry, &s2, tool, arguments).await;
        }
        assert_eq!(call(&registry, &s1, "todo_read", json!({})).await.text(), ALICES_PLAN, "{kind}");
    }
}

#[tokio::test]
async fn two_workspaces_sharing_a_session_store_keep_two_plans() {
    let clock = clock();
    let (_guards, stores) = all_stores(&clock);
    for (kind, store) in stores {
        // Two servers of two workspaces, each with the session its root gives it.
        let (a, b) = (todo_registry(store.clone()), todo_registry(store.clone()));
        let (in_a, in_b) = (context("root-aaaa", None), context("root-bbbb", None));
        plan_of_alice(&a, &in_a).await;
        assert_eq!(call(&b, &in_b, "todo_read", json!({})).await.text(), tool_std::todo::EMPTY_PLAN, "{kind}");
        call(&b, &in_b, "todo_clear", json!({})).await;
        assert_eq!(call(&a, &in_a, "todo_read", json!({})).await.text(), ALICES_PLAN, "{kind}");
    }
}

#[tokio::test]
async fn a_session_not_used_for_longer_than_its_time_to_live_is_gone_and_says_so() {
    let clock = clock();
    let (_dir, stores) = stores(StoreLimits::new(Duration::from_secs(600), 1024 * 1024), &clock);
    for (kind, store) in stores {
        let registry = todo_registry(store);
        let alice = context("s1", Some("alice"));
        let start = clock.now();
        plan_of_alice(&registry, &alice).await;
        clock.set(start + Duration::from_secs(500));
        assert_eq!(call(&registry, &alice, "todo_read", json!({})).await.text(), ALICES_PLAN, "{kind}");
        // 600 s after the read at 500 s: still kept.
        clock.set(start + Duration::from_secs(1100));
        assert_eq!(call(&registry, &alice, "todo_read", json!({})).await.text(), ALICES_PLAN, "{kind}");
        clock.set(start + Duration::from_secs(1701));
        let gone = call(&registry, &alice, "todo_read", json!({})).await;
        assert_eq!(
            gone.text(),
            "session `s1` is no longer kept (not used for longer than its time to live); its state is gone, and \
             saving to it starts it again",
            "{kind}"
        );
        // Another principal asking for it learns nothing of it.
        let bob = call(&registry, &context("s1", Some("bob")), "todo_read", json!({})).await;
        assert_eq!(bob.text(), tool_std::todo::EMPTY_PLAN, "{kind}");
        let again =
            call(&registry, &alice, "todo_new", json!({"todos": [{"content": "Ship it", "status": "pending"}]})).await;
        assert_eq!(again.text(), ALICES_PLAN, "{kind}: saving starts the session again");
    }
}

#[test]
fn sessions_past_the_size_cap_go_least_recently_used_first() {
    let clock = clock();
    let dir = tempfile::tempdir().unwrap();
    let note = "n".repeat(8000);
    // Room for six sessions of this note in each store, with the bytes it counts per session.
    let room = |overhead: u64| 6 * (8000 + 200 + overhead);
    let limits = |overhead| StoreLimits::new(Duration::from_secs(3600), room(overhead));
    let memory = Arc::new(MemorySessionStore::with_limits(limits(MEMORY_SESSION_OVERHEAD), clock.clone()));
    let file = Arc::new(FileSessionStore::with_limits(dir.path(), limits(FILE_SESSION_OVERHEAD), clock.clone()));
    let (m, f) = (memory.clone(), file.clone());
    let stores: CountedStores = [
        ("memory", memory, Box::new(move || m.total_bytes()), MEMORY_SESSION_OVERHEAD),
        ("file", file, Box::new(move || f.total_bytes()), FILE_SESSION_OVERHEAD),
    ];
    for (kind, store, total, overhead) in stores {
        for i in 0..200 {
            let id = format!("s{i}");
            modify(&*store, &id, None, |m| Ok::<_, ()>(m.insert("note".into(), json!(note)))).unwrap().unwrap();
            if i == 3 {
                // A use of s0 makes it the last of the old ones to go.
                store.load("s0", None).unwrap();
            }
            if i == 7 {
                // Eight written, six fit: s1 and s2 went, s0 (used after s3) stays.
                assert_eq!(store.load("s0", None).unwrap()["note"], json!(note), "{kind}");
                assert!(matches!(store.load("s1", None), Err(SessionError::Expired { .. })), "{kind}");
                assert!(matches!(store.load("s2", None), Err(SessionError::Expired { .. })), "{kind}");
                assert_eq!(store.load("s3", None).unwrap()["note"], json!(note), "{kind}");
            }
            let held = total();
            assert!(held <= room(overhead) + 8000 + 200 + overhead, "{kind}: {held} bytes after session {i}");
        }
        assert_eq!(store.load("s199", None).unwrap()["note"], json!(note), "{kind}");
        assert_eq!(
            store.load("s100", None),
            Err(SessionError::Expired { session_id: "s100".to_owned(), why: tool_runtime::output::Expiry::SizeCap }),
            "{kind}"
        );
    }
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "json"));
    assert_eq!(files.count(), 6, "the file store deleted the files it let go");
}
