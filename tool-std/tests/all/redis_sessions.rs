//! The Redis session store against a real `redis-server` (started by each test on a free loopback
//! port, stopped when the test ends): ownership, bounds, and updates that are atomic across
//! connections.

use crate::redis_server;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use redis_server::{RedisServer, closed_port};
use serde_json::json;
use tool_runtime::SystemClock;
use tool_runtime::output::{Expiry, StoreLimits};
use tool_runtime::redis::RedisConnection;
use tool_std::session::{RedisSessionStore, SessionError, SessionMeta, SessionStore, modify};

const NS: &str = "t:sess";

fn store_with(url: &str, limits: StoreLimits) -> RedisSessionStore {
    RedisSessionStore::with_limits(RedisConnection::open(url).unwrap(), NS, limits, Arc::new(SystemClock))
}

fn store(server: &RedisServer) -> RedisSessionStore {
    store_with(&server.url(0), StoreLimits::new(Duration::from_secs(3600), 1 << 30))
}

fn meta(value: serde_json::Value) -> SessionMeta {
    value.as_object().unwrap().clone()
}

fn set(key: &'static str, value: serde_json::Value) -> impl FnMut(&mut SessionMeta) -> Result<(), ()> {
    move |m: &mut SessionMeta| {
        m.insert(key.to_owned(), value.clone());
        Ok(())
    }
}

#[test]
fn a_saved_session_loads_back_and_a_session_never_saved_is_empty() {
    let server = RedisServer::start();
    let store = store(&server);
    assert_eq!(store.load("s", Some("alice")).unwrap(), SessionMeta::new());
    modify(&store, "s", Some("alice"), set("todos", json!([1, 2]))).unwrap().unwrap();
    assert_eq!(store.load("s", Some("alice")).unwrap(), meta(json!({"todos": [1, 2]})));
}

#[test]
fn a_session_is_refused_to_every_other_principal_and_left_unchanged() {
    let server = RedisServer::start();
    let store = store(&server);
    modify(&store, "s", Some("alice"), set("k", json!(1))).unwrap().unwrap();
    let refused = SessionError::OtherPrincipal { session_id: "s".to_owned() };
    for other in [Some("bob"), None] {
        assert_eq!(store.load("s", other).unwrap_err(), refused);
        assert_eq!(modify(&store, "s", other, set("k", json!(2))).unwrap_err(), refused);
        assert_eq!(store.remove("s", other).unwrap_err(), refused);
    }
    assert_eq!(store.load("s", Some("alice")).unwrap(), meta(json!({"k": 1})));
    assert!(store.remove("s", Some("alice")).unwrap());
    assert!(!store.remove("s", Some("alice")).unwrap());
}

#[test]
fn an_edit_that_refuses_saves_nothing() {
    let server = RedisServer::start();
    let store = store(&server);
    modify(&store, "s", None, set("k", json!(1))).unwrap().unwrap();
    let refused: Result<(), &str> = modify(&store, "s", None, |m| {
        m.insert("k".to_owned(), json!(2));
        Err("no")
    })
    .unwrap();
    assert_eq!(refused, Err("no"));
    assert_eq!(store.load("s", None).unwrap(), meta(json!({"k": 1})));
}

#[test]
fn fifty_concurrent_appends_over_two_connections_keep_every_item_once() {
    let server = RedisServer::start();
    let stores = [store(&server), store(&server)];
    let barrier = Barrier::new(50);
    std::thread::scope(|s| {
        for i in 0..50 {
            let (store, barrier) = (&stores[i % 2], &barrier);
            s.spawn(move || {
                barrier.wait();
                modify(store, "plan", Some("alice"), |m| {
                    let list = m.entry("items").or_insert_with(|| json!([]));
                    list.as_array_mut().unwrap().push(json!(i));
                    Ok::<(), ()>(())
                })
                .unwrap()
                .unwrap();
            });
        }
    });
    let loaded = stores[0].load("plan", Some("alice")).unwrap();
    let mut items: Vec<u64> = loaded["items"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    items.sort_unstable();
    assert_eq!(items, (0..50).collect::<Vec<u64>>());
}

#[test]
fn a_session_whose_key_expired_says_so_to_its_owner_and_starts_again_on_save() {
    let server = RedisServer::start();
    let store = store(&server);
    modify(&store, "s", Some("alice"), set("k", json!(1))).unwrap().unwrap();
    assert!((1..=3_600_000).contains(&server.cli(&["PTTL", &format!("{NS}:s")])[0].parse::<i64>().unwrap()));
    server.cli(&["PEXPIRE", &format!("{NS}:s"), "1"]);
    for _ in 0..400 {
        if server.cli(&["EXISTS", &format!("{NS}:s")]) == ["0"] {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        store.load("s", Some("alice")).unwrap_err(),
        SessionError::Expired { session_id: "s".to_owned(), why: Expiry::TimeToLive }
    );
    assert_eq!(store.load("s", Some("bob")).unwrap(), SessionMeta::new());
    modify(&store, "s", Some("alice"), set("k", json!(2))).unwrap().unwrap();
    assert_eq!(store.load("s", Some("alice")).unwrap(), meta(json!({"k": 2})));
}

#[test]
fn sessions_over_the_cap_go_least_recently_used_first() {
    let server = RedisServer::start();
    let store = store_with(&server.url(0), StoreLimits::new(Duration::from_secs(3600), 4096));
    let big = json!("z".repeat(1000));
    for i in 0..10 {
        let id = format!("s{i}");
        modify(&store, &id, None, set("k", big.clone())).unwrap().unwrap();
        // s0 is used after each save, so it stays.
        store.load("s0", None).unwrap();
    }
    assert!(store.entries().total_bytes().unwrap() <= 4096);
    assert_eq!(store.load("s0", None).unwrap(), meta(json!({"k": big})));
    assert_eq!(
        store.load("s1", None).unwrap_err(),
        SessionError::Expired { session_id: "s1".to_owned(), why: Expiry::SizeCap }
    );
    assert_eq!(store.load("s9", None).unwrap(), meta(json!({"k": big})));
}

#[test]
fn an_empty_session_id_is_refused() {
    let store =
        store_with(&format!("redis://127.0.0.1:{}/0", closed_port()), StoreLimits::new(Duration::from_secs(1), 1));
    assert_eq!(store.load("", None).unwrap_err(), SessionError::EmptyId);
}

#[test]
fn a_redis_that_is_down_is_a_store_error_naming_it_and_what_to_check() {
    let url = format!("redis://127.0.0.1:{}/0", closed_port());
    let store = store_with(&url, StoreLimits::new(Duration::from_secs(60), 1 << 20));
    let SessionError::Store { message } = store.load("s", None).unwrap_err() else { panic!("not a store error") };
    assert!(message.starts_with(&format!("the redis session store at {url} failed (")), "{message}");
    assert!(
        message.ends_with(
            "); check that redis-server runs there and accepts connections, or choose another store with \
             `--store` or `TOOL_STORE`"
        ),
        "{message}"
    );
}

/// Two server processes (two connections, two registries) each get the same 20 keyed
/// `todo_append` calls at once, as a client that retried every call on the other server would
/// send them: the record of a key is saved by the same compare-and-set as the change, so every
/// item is in the plan once, and both copies of a call answer a plan that holds its item (the
/// first answer, or the plan as it is when that answer is no longer kept).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_keyed_append_sent_to_two_servers_at_once_is_applied_once() {
    use tool_runtime::{Registry, ToolCall, ToolContext};
    use tool_std::session::SESSION_STORE;

    let server = RedisServer::start();
    let registries: Vec<Arc<Registry>> = (0..2)
        .map(|_| {
            let store: Arc<dyn SessionStore> = Arc::new(store(&server));
            Arc::new(
                tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store).build().unwrap(),
            )
        })
        .collect();
    let ctx = ToolContext::builder().session_id("plan").build();
    let append = |registry: &Arc<Registry>, call_id: String, n: usize| {
        let arguments = json!({"todos": [{"content": format!("item {n}"), "status": "pending"}], "idempotency_key": format!("k{n}")});
        let call = ToolCall::new(call_id, "todo_append", arguments.to_string());
        let (registry, ctx) = (Arc::clone(registry), ctx.clone());
        async move { registry.call(&call, &ctx).await }
    };
    let calls = (0..20).flat_map(|n| {
        [
            tokio::spawn(append(&registries[0], format!("a{n}"), n)),
            tokio::spawn(append(&registries[1], format!("b{n}"), n)),
        ]
    });
    let answers: Vec<_> = futures::future::join_all(calls).await.into_iter().map(Result::unwrap).collect();
    for (n, pair) in answers.chunks(2).enumerate() {
        for answer in pair {
            assert!(!answer.is_error, "{}", answer.text());
            assert!(
                answer.text().contains(&format!("] (p3) item {n}\n"))
                    || answer.text().ends_with(&format!("] (p3) item {n}")),
                "{}",
                answer.text()
            );
        }
    }
    let plan = registries[0].call(&ToolCall::new("r", "todo_read", "{}"), &ctx).await;
    let mut items: Vec<String> = plan
        .text()
        .lines()
        .filter_map(|line| line.split_once(") ").map(|(_, content)| content.to_owned()))
        .filter(|content| content.starts_with("item "))
        .collect();
    items.sort();
    let mut expected: Vec<String> = (0..20).map(|n| format!("item {n}")).collect();
    expected.sort();
    assert_eq!(items, expected);
}
