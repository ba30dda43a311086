//! `tool_std::registry_builder`: every tool registered explicitly, grouped in sets.

#[test]
fn registry_builder_registers_every_tool() {
    let registry = tool_std::registry_builder().build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        [
            "edit",
            "glob",
            "grep",
            "read",
            "read_line",
            "todo_new",
            "todo_read",
            "tool_output_cache",
            "tool_output_cache_grep",
            "tool_output_cache_line",
            "write",
        ]
    );
}

#[test]
fn tools_belong_to_the_fs_todo_and_cache_sets() {
    let registry = tool_std::registry_builder().build().unwrap();

    let sets: Vec<(&str, Option<&str>)> = registry.names().map(|n| (n, registry.get(n).unwrap().set())).collect();

    assert_eq!(
        sets,
        [
            ("edit", Some("fs")),
            ("glob", Some("fs")),
            ("grep", Some("fs")),
            ("read", Some("fs")),
            ("read_line", Some("fs")),
            ("todo_new", Some("todo")),
            ("todo_read", Some("todo")),
            ("tool_output_cache", Some("cache")),
            ("tool_output_cache_grep", Some("cache")),
            ("tool_output_cache_line", Some("cache")),
            ("write", Some("fs"))
        ]
    );
}

#[test]
fn a_set_filter_keeps_only_that_set() {
    let registry = tool_std::registry_builder().sets(["todo"]).build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), ["todo_new", "todo_read"]);
}
