//! `tool_std::registry_builder`: every tool registered explicitly, grouped in sets.

#[test]
fn registry_builder_registers_every_tool() {
    let registry = tool_std::registry_builder().build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        [
            "apply_patch",
            "done",
            "edit",
            "glob",
            "grep",
            "read",
            "read_line",
            "search",
            "todo_append",
            "todo_clear",
            "todo_new",
            "todo_patch",
            "todo_read",
            "tool_output_cache",
            "tool_output_cache_grep",
            "tool_output_cache_line",
            "view_image",
            "webfetch",
            "write",
        ]
    );
}

#[test]
fn every_tool_belongs_to_its_set() {
    let registry = tool_std::registry_builder().build().unwrap();

    let sets: Vec<(&str, Option<&str>)> = registry.names().map(|n| (n, registry.get(n).unwrap().set())).collect();

    assert_eq!(
        sets,
        [
            ("apply_patch", Some("patch")),
            ("done", Some("control")),
            ("edit", Some("fs")),
            ("glob", Some("fs")),
            ("grep", Some("fs")),
            ("read", Some("fs")),
            ("read_line", Some("fs")),
            ("search", Some("web")),
            ("todo_append", Some("todo")),
            ("todo_clear", Some("todo")),
            ("todo_new", Some("todo")),
            ("todo_patch", Some("todo")),
            ("todo_read", Some("todo")),
            ("tool_output_cache", Some("cache")),
            ("tool_output_cache_grep", Some("cache")),
            ("tool_output_cache_line", Some("cache")),
            ("view_image", Some("media")),
            ("webfetch", Some("web")),
            ("write", Some("fs")),
        ]
    );
}

#[test]
fn a_set_filter_keeps_only_that_set() {
    let registry = tool_std::registry_builder().sets(["todo"]).build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["todo_append", "todo_clear", "todo_new", "todo_patch", "todo_read"]
    );
}

#[test]
fn only_webfetch_and_search_are_tagged_external() {
    let registry = tool_std::registry_builder().build().unwrap();

    let external: Vec<&str> = registry
        .definitions()
        .iter()
        .filter(|d| d.tags.iter().any(|t| t == "external"))
        .map(|d| d.name.as_str())
        .collect();

    assert_eq!(external, ["search", "webfetch"]);
}

#[tokio::test]
async fn the_default_policy_refuses_the_external_tools_until_allowed() {
    let denied = tool_std::registry_builder().sets(["web"]).build().unwrap();
    let call = tool_runtime::ToolCall::new("call_1", "webfetch", r#"{"url":"http://127.0.0.1:9/"}"#);

    let message = denied.call(&call, &tool_runtime::ToolContext::new()).await;

    assert!(message.is_error);
    assert_eq!(
        message.text(),
        "Permission denied: tool `webfetch` reaches outside this machine (tag `external`) and the permission \
         policy does not allow it"
    );
}
