//! Session state: the memory and file stores, atomic read-modify-write, the file format, and todo
//! lists kept in session meta and restored when a session id is resumed.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_runtime::{Registry, ToolCall, ToolContext};
use tool_std::session::{
    FileSessionStore, MemorySessionStore, SESSION_FORMAT_VERSION, SESSION_STORE, SessionError, SessionMeta,
    SessionStore, modify,
};
use tool_std::todo::APPLIED_KEY;

/// `meta` without the todo tools' record of applied changes (kept for retries, see
/// `tool_std::todo`), and the `(tool, key)` of each record in it, oldest first.
fn without_applied(mut meta: SessionMeta) -> (SessionMeta, Vec<(String, String)>) {
    let records = meta.remove(APPLIED_KEY).map_or_else(Vec::new, |records| {
        records
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["tool"].as_str().unwrap().to_owned(), r["key"].as_str().unwrap().to_owned()))
            .collect()
    });
    (meta, records)
}

fn meta(value: Value) -> SessionMeta {
    value.as_object().unwrap().clone()
}

fn registry_over(dir: &Path) -> Registry {
    let store: Arc<dyn SessionStore> = Arc::new(FileSessionStore::new(dir));
    tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store).build().unwrap()
}

async fn call(registry: &Registry, session: Option<&str>, tool: &str, arguments: Value) -> String {
    let ctx = match session {
        Some(id) => ToolContext::builder().session_id(id).build(),
        None => ToolContext::new(),
    };
    let message = registry.call(&ToolCall::new("call_1", tool, arguments.to_string()), &ctx).await;
    assert!(!message.is_error, "{}", message.text());
    message.text().into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_session_never_written_has_empty_meta() {
    let dir = tempfile::tempdir().unwrap();

    assert_eq!(MemorySessionStore::new().load("s1", None).unwrap(), SessionMeta::new());
    assert_eq!(FileSessionStore::new(dir.path()).load("s1", None).unwrap(), SessionMeta::new());
}

#[test]
fn the_memory_store_keeps_what_an_update_saves() {
    let store = MemorySessionStore::new();

    store.update("s1", None, &mut |m| m.insert("k".into(), json!(1)).is_none()).unwrap();

    assert_eq!(store.load("s1", None).unwrap(), meta(json!({"k": 1})));
    assert_eq!(store.load("s2", None).unwrap(), SessionMeta::new());
}

#[test]
fn an_update_whose_edit_returns_false_saves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let memory = MemorySessionStore::new();
    let file = FileSessionStore::new(dir.path());

    for store in [&memory as &dyn SessionStore, &file] {
        let saved = store
            .update("s1", None, &mut |m| {
                m.insert("k".into(), json!(1));
                false
            })
            .unwrap();
        assert!(!saved);
        assert_eq!(store.load("s1", None).unwrap(), SessionMeta::new());
    }
    assert_eq!(file_names(dir.path()), ["s1.lock"]);
}

#[test]
fn modify_writes_nothing_when_the_change_fails_after_editing_the_meta() {
    let store = MemorySessionStore::new();
    store.update("s1", None, &mut |m| m.insert("k".into(), json!("old")).is_none()).unwrap();

    let outcome = modify(&store, "s1", None, |m| {
        m.insert("k".into(), json!("new"));
        Err::<(), _>("refused")
    })
    .unwrap();

    assert_eq!(outcome, Err("refused"));
    assert_eq!(store.load("s1", None).unwrap(), meta(json!({"k": "old"})));
}

#[test]
fn the_session_file_holds_the_format_version_the_id_a_revision_and_the_meta() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());

    modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("a".into(), json!(1)))).unwrap().unwrap();
    modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("b".into(), json!([true])))).unwrap().unwrap();

    assert_eq!(SESSION_FORMAT_VERSION, 2);
    assert_eq!(
        read_json(&dir.path().join("s1.json")),
        json!({"version": 2, "session_id": "s1", "revision": 2, "meta": {"a": 1, "b": [true]}})
    );
}

#[test]
fn the_session_file_of_a_principal_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());

    modify(&store, "s1", Some("alice"), |m| Ok::<_, ()>(m.insert("a".into(), json!(1)))).unwrap().unwrap();

    assert_eq!(
        read_json(&dir.path().join("s1.json")),
        json!({"version": 2, "session_id": "s1", "principal": "alice", "revision": 1, "meta": {"a": 1}})
    );
}

#[test]
fn a_session_file_of_format_version_1_is_read_as_a_session_without_a_principal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("s1.json"),
        r#"{"version": 1, "session_id": "s1", "revision": 4, "meta": {"a": 1}}"#,
    )
    .unwrap();
    let store = FileSessionStore::new(dir.path());

    assert_eq!(store.load("s1", None).unwrap(), meta(json!({"a": 1})));
    assert_eq!(
        store.load("s1", Some("alice")).unwrap_err(),
        SessionError::OtherPrincipal { session_id: "s1".to_owned() }
    );
}

#[test]
fn writes_leave_no_temporary_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());

    for n in 0..3 {
        modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("n".into(), json!(n)))).unwrap().unwrap();
    }

    assert_eq!(file_names(dir.path()), ["s1.json", "s1.lock"]);
}

#[test]
fn the_directory_is_created_on_the_first_save() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path().join("state/sessions"));

    modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("a".into(), json!(1)))).unwrap().unwrap();

    assert_eq!(store.load("s1", None).unwrap(), meta(json!({"a": 1})));
}

#[test]
fn session_ids_that_look_like_paths_stay_inside_the_directory() {
    let store = FileSessionStore::new("/state");

    assert_eq!(store.path_of("../etc/passwd").unwrap(), Path::new("/state/%2E%2E%2Fetc%2Fpasswd.json"));
    assert_eq!(store.path_of("a b%").unwrap(), Path::new("/state/a%20b%25.json"));
    assert_eq!(store.path_of("run_1-x").unwrap(), Path::new("/state/run_1-x.json"));
}

#[test]
fn a_very_long_session_id_is_stored_under_its_hash() {
    let store = FileSessionStore::new("/state");

    let path = store.path_of(&"x".repeat(300)).unwrap();

    let name = path.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with('~') && name.ends_with(".json"), "{name}");
    assert_eq!(name.len(), 1 + 64 + 5);
}

#[test]
fn an_empty_session_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();

    assert_eq!(FileSessionStore::new(dir.path()).load("", None), Err(SessionError::EmptyId));
    assert_eq!(MemorySessionStore::new().load("", None), Err(SessionError::EmptyId));
}

#[test]
fn a_damaged_file_is_an_error_naming_it_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.json");
    std::fs::write(&path, "{not json").unwrap();
    let store = FileSessionStore::new(dir.path());

    let error = modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("a".into(), json!(1)))).unwrap_err();

    assert_eq!(
        error.to_string(),
        format!(
            "session file {} is damaged: key must be a string at line 1 column 2; repair or delete it",
            path.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{not json");
}

#[test]
fn a_file_of_a_newer_format_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.json");
    std::fs::write(&path, r#"{"version": 3, "session_id": "s1", "revision": 1, "meta": {}}"#).unwrap();

    let error = FileSessionStore::new(dir.path()).load("s1", None).unwrap_err();

    assert_eq!(
        error.to_string(),
        format!(
            "session file {} has format version 3, this build reads version 2; use a newer build or another state \
             directory",
            path.display()
        )
    );
}

#[test]
fn a_file_holding_another_session_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s1.json");
    std::fs::write(&path, r#"{"version": 1, "session_id": "s9", "revision": 1, "meta": {}}"#).unwrap();

    let error = FileSessionStore::new(dir.path()).load("s1", None).unwrap_err();

    assert_eq!(
        error.to_string(),
        format!("session file {} is damaged: it holds session `s9`, not `s1`; repair or delete it", path.display())
    );
}

#[test]
fn remove_forgets_a_session() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path());
    modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("a".into(), json!(1)))).unwrap().unwrap();

    assert!(store.remove("s1", None).unwrap());
    assert!(!store.remove("s1", None).unwrap());
    assert_eq!(store.load("s1", None).unwrap(), SessionMeta::new());
}

#[tokio::test]
async fn the_todo_list_is_kept_in_session_meta_under_todos() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_over(dir.path());

    call(&registry, Some("s1"), "todo_new", json!({"todos": [{"content": "Write code", "status": "pending"}]})).await;

    let file_meta = read_json(&dir.path().join("s1.json"))["meta"].as_object().unwrap().clone();
    assert_eq!(
        without_applied(file_meta),
        (
            meta(json!({"todos": [{"id": "write-code", "content": "Write code", "status": "pending", "priority": 3}]})),
            vec![("todo_new".to_owned(), "call_1".to_owned())]
        )
    );
}

#[tokio::test]
async fn resuming_a_session_id_restores_its_plan() {
    let dir = tempfile::tempdir().unwrap();
    let first = registry_over(dir.path());
    let written =
        call(&first, Some("s1"), "todo_new", json!({"todos": [{"content": "Write code", "status": "in_progress"}]}))
            .await;
    drop(first);

    let resumed = registry_over(dir.path());
    let read = call(&resumed, Some("s1"), "todo_read", json!({})).await;

    assert_eq!(read, written);
}

#[tokio::test]
async fn an_empty_plan_removes_the_todos_key() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_over(dir.path());
    let store = FileSessionStore::new(dir.path());
    modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("other".into(), json!("kept")))).unwrap().unwrap();
    call(&registry, Some("s1"), "todo_new", json!({"todos": [{"content": "a", "status": "pending"}]})).await;

    call(&registry, Some("s1"), "todo_patch", json!({"updates": [{"id": "a", "remove": true}]})).await;

    let (left, applied) = without_applied(store.load("s1", None).unwrap());
    assert_eq!(left, meta(json!({"other": "kept"})));
    assert_eq!(applied, [("todo_new", "call_1"), ("todo_patch", "call_1")].map(|(t, k)| (t.to_owned(), k.to_owned())));
}

#[tokio::test]
async fn todo_clear_removes_the_todos_key() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_over(dir.path());
    call(&registry, Some("s1"), "todo_new", json!({"todos": [{"content": "a", "status": "pending"}]})).await;

    call(&registry, Some("s1"), "todo_clear", json!({})).await;

    // The record of the applied changes stays, so that a late retry of the clear changes nothing.
    let (left, applied) = without_applied(FileSessionStore::new(dir.path()).load("s1", None).unwrap());
    assert_eq!(left, SessionMeta::new());
    assert_eq!(applied, [("todo_new", "call_1"), ("todo_clear", "call_1")].map(|(t, k)| (t.to_owned(), k.to_owned())));
}

#[tokio::test]
async fn calls_without_a_session_id_write_no_session_file() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_over(dir.path());

    call(&registry, None, "todo_new", json!({"todos": [{"content": "a", "status": "pending"}]})).await;

    assert_eq!(file_names(dir.path()), Vec::<String>::new());
}

#[tokio::test]
async fn a_damaged_todos_value_is_reported_and_todo_new_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    let registry = registry_over(dir.path());
    let store = FileSessionStore::new(dir.path());
    modify(&store, "s1", None, |m| Ok::<_, ()>(m.insert("todos".into(), json!("oops")))).unwrap().unwrap();
    let ctx = ToolContext::builder().session_id("s1").build();

    let read = registry.call(&ToolCall::new("c", "todo_read", "{}"), &ctx).await;
    call(&registry, Some("s1"), "todo_new", json!({"todos": [{"content": "a", "status": "pending"}]})).await;

    assert!(read.is_error);
    assert_eq!(
        read.text(),
        "the saved todo list of this session is damaged (invalid type: string \"oops\", expected a sequence); \
         replace it with todo_new or remove it with todo_clear"
    );
    assert_eq!(store.load("s1", None).unwrap()["todos"][0]["id"], "a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_appends_to_one_session_keep_all_fifty_items() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(registry_over(dir.path()));

    let calls: Vec<_> = (0..50)
        .map(|n| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let ctx = ToolContext::builder().session_id("s1").build();
                let arguments = json!({"todos": [{"content": format!("Item {n}"), "status": "pending"}]});
                registry.call(&ToolCall::new(format!("c{n}"), "todo_append", arguments.to_string()), &ctx).await
            })
        })
        .collect();
    for call in calls {
        let message = call.await.unwrap();
        assert!(!message.is_error, "{}", message.text());
    }

    let todos = FileSessionStore::new(dir.path()).load("s1", None).unwrap()["todos"].as_array().unwrap().clone();
    let mut ids: Vec<String> = todos.iter().map(|t| t["id"].as_str().unwrap().to_owned()).collect();
    ids.sort();
    let mut expected: Vec<String> = (0..50).map(|n| format!("item-{n}")).collect();
    expected.sort();
    assert_eq!(ids, expected);
    assert_eq!(read_json(&dir.path().join("s1.json"))["revision"], 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_appends_in_memory_keep_all_fifty_items() {
    let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
    let registry = Arc::new(
        tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store.clone()).build().unwrap(),
    );

    let calls: Vec<_> = (0..50)
        .map(|n| {
            let registry = registry.clone();
            tokio::spawn(async move {
                let ctx = ToolContext::builder().session_id("s1").build();
                let arguments = json!({"todos": [{"content": format!("Item {n}"), "status": "pending"}]});
                registry.call(&ToolCall::new(format!("c{n}"), "todo_append", arguments.to_string()), &ctx).await
            })
        })
        .collect();
    for call in calls {
        assert!(!call.await.unwrap().is_error);
    }

    assert_eq!(store.load("s1", None).unwrap()["todos"].as_array().unwrap().len(), 50);
}
