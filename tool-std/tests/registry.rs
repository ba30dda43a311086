//! `tool_std::registry_builder`: every tool registered explicitly, grouped in sets.

#[test]
fn registry_builder_registers_every_tool() {
    let registry = tool_std::registry_builder().build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), ["apply_patch", "glob", "grep", "read", "todo_new", "todo_read"]);
}

#[test]
fn tools_belong_to_the_fs_patch_and_todo_sets() {
    let registry = tool_std::registry_builder().build().unwrap();

    let sets: Vec<(&str, Option<&str>)> = registry.names().map(|n| (n, registry.get(n).unwrap().set())).collect();

    assert_eq!(
        sets,
        [
            ("apply_patch", Some("patch")),
            ("glob", Some("fs")),
            ("grep", Some("fs")),
            ("read", Some("fs")),
            ("todo_new", Some("todo")),
            ("todo_read", Some("todo"))
        ]
    );
}

#[test]
fn a_set_filter_keeps_only_that_set() {
    let registry = tool_std::registry_builder().sets(["todo"]).build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), ["todo_new", "todo_read"]);
}
