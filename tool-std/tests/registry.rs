//! `tool_std::registry_builder`: every tool registered explicitly, grouped in sets.

#[test]
fn registry_builder_registers_every_tool() {
    let registry = tool_std::registry_builder().build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        [
            "done",
            "glob",
            "grep",
            "read",
            "search",
            "todo_append",
            "todo_clear",
            "todo_new",
            "todo_patch",
            "todo_read",
            "view_image",
            "webfetch"
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
            ("done", Some("control")),
            ("glob", Some("fs")),
            ("grep", Some("fs")),
            ("read", Some("fs")),
            ("search", Some("web")),
            ("todo_append", Some("todo")),
            ("todo_clear", Some("todo")),
            ("todo_new", Some("todo")),
            ("todo_patch", Some("todo")),
            ("todo_read", Some("todo")),
            ("view_image", Some("media")),
            ("webfetch", Some("web")),
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
