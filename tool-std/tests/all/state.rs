//! A program's own typed state in the framework's stores: per key and principal, defaults for
//! what was never written, atomic updates, the file store across two openings (two processes),
//! Redis across two connections, and every bad input refused with what to change.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tool_runtime::output::StoreLimits;
use tool_runtime::{DependencyError, DependencyKey, Registry, SystemClock, ToolCall, ToolContext, tool};
use tool_std::session::{MemorySessionStore, SessionStore};
use tool_std::state::{StateError, UserState};

#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct Notes {
    lines: Vec<String>,
}

fn as_user(principal: &str) -> ToolContext {
    ToolContext::builder().principal(principal).build()
}

#[tokio::test]
async fn a_value_is_kept_per_key_and_principal_and_reads_as_default_before_its_first_write() {
    let notes: UserState<Notes> = UserState::open("notes", "memory").unwrap();
    let (ana, bo) = (as_user("ana"), as_user("bo"));
    assert_eq!(notes.get(&ana, "inbox").await.unwrap(), Notes::default());
    let count = notes.update(&ana, "inbox", |n| {
        n.lines.push("milk".to_owned());
        n.lines.len()
    });
    assert_eq!(count.await.unwrap(), 1);
    assert_eq!(notes.get(&ana, "inbox").await.unwrap(), Notes { lines: vec!["milk".to_owned()] });
    // Bo's `inbox` is Bo's; nobody's is nobody's.
    assert_eq!(notes.get(&bo, "inbox").await.unwrap(), Notes::default());
    assert_eq!(notes.get(&ToolContext::new(), "inbox").await.unwrap(), Notes::default());
    assert!(notes.remove(&ana, "inbox").await.unwrap());
    assert!(!notes.remove(&ana, "inbox").await.unwrap());
    assert_eq!(notes.get(&ana, "inbox").await.unwrap(), Notes::default());
}

#[tokio::test]
async fn a_file_store_keeps_the_value_for_the_next_opening() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().display());
    let first: UserState<Notes> = UserState::open("notes", &url).unwrap();
    first.update(&as_user("ana"), "inbox", |n| n.lines.push("eggs".to_owned())).await.unwrap();
    let second: UserState<Notes> = UserState::open("notes", &url).unwrap();
    assert_eq!(second.get(&as_user("ana"), "inbox").await.unwrap().lines, ["eggs"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_updates_of_one_key_are_all_kept() {
    let notes: UserState<Notes> = UserState::open("notes", "memory").unwrap();
    let mut updates = Vec::new();
    for i in 0..20 {
        let notes = notes.clone();
        updates.push(tokio::spawn(async move {
            notes.update(&as_user("ana"), "inbox", move |n| n.lines.push(format!("{i}"))).await.unwrap();
        }));
    }
    for update in updates {
        update.await.unwrap();
    }
    assert_eq!(notes.get(&as_user("ana"), "inbox").await.unwrap().lines.len(), 20);
}

#[tokio::test]
async fn over_the_stores_size_cap_the_least_recently_used_values_go_and_read_as_default() {
    let limits = StoreLimits::new(Duration::from_secs(3600), 1_400);
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::with_limits(limits, Arc::new(SystemClock)));
    let notes: UserState<Notes> = UserState::new("notes", store).unwrap();
    let ana = as_user("ana");
    notes.update(&ana, "old", |n| n.lines.push("x".repeat(300))).await.unwrap();
    notes.update(&ana, "new", |n| n.lines.push("y".repeat(300))).await.unwrap();
    // Each value counts about 640 bytes (its id, its JSON and the memory store's 256-byte
    // overhead): a third puts the three over 1,400 bytes, and the least recently used goes.
    notes.update(&ana, "newer", |n| n.lines.push("z".repeat(300))).await.unwrap();
    assert_eq!(notes.get(&ana, "old").await.unwrap(), Notes::default());
    assert_eq!(notes.get(&ana, "new").await.unwrap().lines, ["y".repeat(300)]);
    assert_eq!(notes.get(&ana, "newer").await.unwrap().lines, ["z".repeat(300)]);
}

#[tokio::test]
async fn a_stored_value_of_another_shape_is_a_decode_error_that_says_what_to_do() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let as_text: UserState<String> = UserState::new("notes", store.clone()).unwrap();
    as_text.update(&as_user("ana"), "inbox", |s| s.push_str("plain")).await.unwrap();
    let as_notes: UserState<Notes> = UserState::new("notes", store).unwrap();
    assert_eq!(
        as_notes.get(&as_user("ana"), "inbox").await.unwrap_err().to_string(),
        "the stored value of `inbox` does not read as this state's type (invalid type: string \"plain\", expected \
         struct Notes); remove it or migrate it"
    );
}

#[test]
fn bad_names_keys_and_urls_are_refused_with_what_to_give() {
    let name = UserState::<Notes>::open("my notes", "memory").unwrap_err();
    assert_eq!(
        name.to_string(),
        "the state name \"my notes\" is not 1 to 64 letters, digits, `_` or `-`; give a name such as `notes`"
    );
    let url = UserState::<Notes>::open("notes", "postgres://db").unwrap_err();
    assert_eq!(
        url.to_string(),
        "\"postgres://db\" is not a state store; use `memory`, `file:DIR` or `redis://HOST:PORT/DB`"
    );
    assert_eq!(UserState::<Notes>::open("notes", "file:").unwrap_err(), StateError::BadUrl { url: "file:".to_owned() });
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let notes: UserState<Notes> = UserState::open("notes", "memory").unwrap();
    let key = runtime.block_on(notes.get(&ToolContext::new(), "")).unwrap_err();
    assert_eq!(key.to_string(), "the state key is 0 bytes; give a key of 1 to 256 bytes");
    let long = "k".repeat(257);
    assert_eq!(runtime.block_on(notes.get(&ToolContext::new(), &long)).unwrap_err(), StateError::BadKey { bytes: 257 });
}

static NOTES: DependencyKey<UserState<Notes>> = DependencyKey::shared("state_test_notes", |_| {
    UserState::open("notes", "memory").map_err(|e| DependencyError(e.to_string()))
});

/// Add a note to the caller's list.
#[tool]
async fn add_note(
    ctx: &ToolContext,
    #[depends(NOTES)] notes: UserState<Notes>,
    text: String,
) -> Result<String, StateError> {
    let count = notes
        .update(ctx, "list", move |n| {
            n.lines.push(text.clone());
            n.lines.len()
        })
        .await?;
    Ok(format!("{count} notes"))
}

#[tokio::test]
async fn an_async_tool_keeps_state_through_a_dependency_without_being_blocking() {
    let registry = Registry::builder().tool(add_note::TOOL).build().unwrap();
    let ana = as_user("ana");
    let call = |id: &str| ToolCall::new(id, "add_note", r#"{"text":"milk"}"#);
    assert_eq!(registry.call(&call("c1"), &ana).await.text(), "1 notes");
    assert_eq!(registry.call(&call("c2"), &ana).await.text(), "2 notes");
    assert_eq!(registry.call(&call("c3"), &as_user("bo")).await.text(), "1 notes");
}

#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_openings_of_one_redis_share_the_state_as_two_server_processes_would() {
    let server = crate::redis_server::RedisServer::start();
    let url = server.url(0);
    let first: UserState<Notes> = UserState::open("notes", &url).unwrap();
    let second: UserState<Notes> = UserState::open("notes", &url).unwrap();
    first.update(&as_user("ana"), "inbox", |n| n.lines.push("one".to_owned())).await.unwrap();
    second.update(&as_user("ana"), "inbox", |n| n.lines.push("two".to_owned())).await.unwrap();
    assert_eq!(first.get(&as_user("ana"), "inbox").await.unwrap().lines, ["one", "two"]);
    assert_eq!(second.get(&as_user("bo"), "inbox").await.unwrap(), Notes::default());
}

#[tokio::test]
async fn keys_with_slashes_dots_nul_and_unicode_stay_distinct_and_inside_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().join("state").display());
    let notes: UserState<Notes> = UserState::open("notes", &url).unwrap();
    let ana = as_user("ana");
    let long = "é".repeat(128);
    let keys = ["a/b", "a%2Fb", "..", "../../escape", "a\0b", "a", "ключ", long.as_str(), "~x", "%7Ex"];
    for key in keys {
        let line = key.to_owned();
        notes.update(&ana, key, move |n| n.lines.push(line.clone())).await.unwrap();
    }
    for key in keys {
        assert_eq!(notes.get(&ana, key).await.unwrap().lines, [key], "{key:?}");
    }
    assert_eq!(notes.get(&ToolContext::new(), "a/b").await.unwrap(), Notes::default());
    // Nothing was written beside the store's directory.
    let beside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(beside, [std::ffi::OsString::from("state")]);
    assert_eq!(notes.get(&ana, &"é".repeat(129)).await.unwrap_err(), StateError::BadKey { bytes: 258 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_updates_through_two_openings_of_one_file_store_are_all_kept() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file:{}", dir.path().display());
    let openings: [UserState<Notes>; 2] =
        [UserState::open("notes", &url).unwrap(), UserState::open("notes", &url).unwrap()];
    let mut updates = Vec::new();
    for i in 0..20 {
        let notes = openings[i % 2].clone();
        updates.push(tokio::spawn(async move {
            notes.update(&as_user("ana"), "inbox", move |n| n.lines.push(format!("{i}"))).await.unwrap();
        }));
    }
    for update in updates {
        update.await.unwrap();
    }
    let mut lines = openings[0].get(&as_user("ana"), "inbox").await.unwrap().lines;
    lines.sort_by_key(|l| l.parse::<usize>().unwrap());
    assert_eq!(lines, (0..20).map(|i| i.to_string()).collect::<Vec<_>>());
}
