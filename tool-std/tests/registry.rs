//! `tool_std::registry_builder`: every tool registered explicitly, grouped in sets.

#[test]
fn registry_builder_registers_every_tool() {
    let registry = tool_std::registry_builder().build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        [
            "apply_patch",
            "bash",
            "bash_kill",
            "bash_output",
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
            ("bash", Some("exec")),
            ("bash_kill", Some("exec")),
            ("bash_output", Some("exec")),
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

/// A program's own tool, without a set.
#[tool_runtime::tool]
fn count_rows() -> String {
    "3".to_owned()
}

const FS_TOOLS: [&str; 6] = ["edit", "glob", "grep", "read", "read_line", "write"];

#[test]
fn tagged_sets_keeps_the_chosen_standard_sets_and_the_programs_own_tools() {
    let registry = tool_std::registry_builder().tool(count_rows::TOOL).tagged_sets(["fs"]).build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["count_rows", "edit", "glob", "grep", "read", "read_line", "write"]
    );
}

#[test]
fn tagged_sets_after_discovery_keeps_the_binarys_own_tools_beside_the_chosen_sets() {
    let registry = tool_runtime::Registry::builder().discover().tagged_sets(["fs"]).build().unwrap();

    let mut expected = vec!["count_rows"];
    expected.extend(FS_TOOLS);
    assert_eq!(registry.names().collect::<Vec<_>>(), expected);
}

#[test]
fn sets_drops_the_tools_without_a_set() {
    let registry = tool_std::registry_builder().tool(count_rows::TOOL).sets(["fs"]).build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), FS_TOOLS);
}

#[test]
fn the_last_set_filter_wins() {
    let registry =
        tool_std::registry_builder().tool(count_rows::TOOL).tagged_sets(["fs"]).sets(["control"]).build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), ["done"]);
}

#[test]
fn a_set_filter_keeps_only_that_set() {
    let registry = tool_std::registry_builder().sets(["todo"]).build().unwrap();

    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["todo_append", "todo_clear", "todo_new", "todo_patch", "todo_read"]
    );
}

/// The tags the MCP hints come from (`read_only` → readOnlyHint, `destructive` → destructiveHint,
/// `idempotent` → idempotentHint, `external` → openWorldHint). MCP gives destructiveHint and
/// idempotentHint a meaning only for a tool that is not read-only, so a read-only tool carries
/// `read_only` alone.
#[test]
fn every_tool_carries_the_tags_true_of_it() {
    let registry = tool_std::registry_builder().build().unwrap();

    let tags: Vec<(&str, Vec<&str>)> =
        registry.definitions().iter().map(|d| (d.name.as_str(), d.tags.iter().map(String::as_str).collect())).collect();

    assert_eq!(
        tags,
        [
            // Adds, overwrites, deletes and renames files; applied again it fails or adds again.
            ("apply_patch", vec!["destructive"]),
            // Runs any command (it may change or delete anything it may write); off unless `exec`
            // is allowed. Whether it reaches outside the machine depends on the configuration
            // (`ExecConfig::network`), which a static tag cannot say.
            ("bash", vec!["exec", "destructive"]),
            // Stops a command (its unread output is gone).
            ("bash_kill", vec!["exec", "destructive"]),
            // Reads new output; it advances the read position only.
            ("bash_output", vec!["exec", "read_only"]),
            // Returns the completion signal; changes nothing.
            ("done", vec!["read_only"]),
            // Overwrites the file; applied again, the old text is gone (or `replace_all` replaces
            // again where new_string holds old_string).
            ("edit", vec!["destructive"]),
            ("glob", vec!["read_only"]),
            ("grep", vec!["read_only"]),
            ("read", vec!["read_only"]),
            ("read_line", vec!["read_only"]),
            // A GET of a search backend: nothing local changes; it reaches outside the machine.
            ("search", vec!["read_only", "external"]),
            // Adds items only; called again it adds them again (as `-2` ids).
            ("todo_append", vec![]),
            // Empties the plan; once empty, it stays so.
            ("todo_clear", vec!["destructive", "idempotent"]),
            // Replaces the plan with the same items (ids come from the items alone).
            ("todo_new", vec!["destructive", "idempotent"]),
            // Sets fields and removes items: again, the fields hold the same values, and a second
            // removal is refused with nothing saved.
            ("todo_patch", vec!["destructive", "idempotent"]),
            ("todo_read", vec!["read_only"]),
            ("tool_output_cache", vec!["read_only"]),
            ("tool_output_cache_grep", vec!["read_only"]),
            ("tool_output_cache_line", vec!["read_only"]),
            ("view_image", vec!["read_only"]),
            // A GET of the URL: nothing local changes; it reaches outside the machine.
            ("webfetch", vec!["read_only", "external"]),
            // Replaces the whole file; the same content again leaves it as it is.
            ("write", vec!["destructive", "idempotent"]),
        ]
    );
}

#[test]
fn with_network_exec_the_exec_tools_are_tagged_external_too() {
    let registry = tool_std::registry_builder_with_network_exec().sets(["exec"]).build().unwrap();

    let tags: Vec<(&str, Vec<&str>)> =
        registry.definitions().iter().map(|d| (d.name.as_str(), d.tags.iter().map(String::as_str).collect())).collect();

    assert_eq!(
        tags,
        [
            ("bash", vec!["exec", "destructive", "external"]),
            ("bash_kill", vec!["exec", "destructive", "external"]),
            ("bash_output", vec!["exec", "read_only", "external"]),
        ]
    );
}

#[test]
fn the_open_world_exec_tools_answer_every_question_as_the_tools_they_tag() {
    use tool_runtime::Tool;
    let tagged = tool_std::exec::open_world_tools();
    let own = [tool_std::exec::bash::TOOL, tool_std::exec::bash_output::TOOL, tool_std::exec::bash_kill::TOOL];
    assert_eq!(tagged.len(), own.len());
    for (tagged, own) in tagged.iter().zip(own) {
        let name = Tool::name(own);
        assert_eq!(tagged.name(), name);
        assert_eq!(tagged.set(), Tool::set(own), "{name}");
        assert_eq!(format!("{:?}", tagged.origin()), format!("{:?}", Tool::origin(own)), "{name}");
        assert_eq!(tagged.sequential(), Tool::sequential(own), "{name}");
        assert_eq!(tagged.timeout(), Tool::timeout(own), "{name}");
        assert_eq!(tagged.deferred(), Tool::deferred(own), "{name}");
        assert_eq!(tagged.reads_context(), Tool::reads_context(own), "{name}");
        let mut definition = Tool::definition(own).clone();
        definition.tags.push("external".to_owned());
        assert_eq!(tagged.definition(), &definition, "{name}");
    }
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

#[test]
fn discover_on_the_registry_builder_keeps_each_standard_tool_once() {
    let mut expected: Vec<String> = tool_std::registry_builder().build().unwrap().names().map(str::to_owned).collect();
    // This binary's own tool, found by discovery too.
    expected.push("count_rows".to_owned());
    expected.sort();
    let registry = tool_std::registry_builder().discover().build().unwrap();

    assert_eq!(registry.names().collect::<Vec<_>>(), expected);
}

/// The parameters of `tool` (its schema's `properties`).
fn properties(registry: &tool_runtime::Registry, tool: &str) -> serde_json::Map<String, serde_json::Value> {
    let definition = registry.definitions().iter().find(|d| d.name == tool).unwrap_or_else(|| panic!("no tool {tool}"));
    definition.input_schema["properties"].as_object().cloned().unwrap_or_default()
}

#[test]
fn similar_tools_give_a_shared_parameter_one_schema_its_name_type_bounds_default_and_description() {
    let registry = tool_std::registry_builder().build().unwrap();
    let pairs: [(&str, &str, &[&str]); 7] = [
        ("read", "tool_output_cache", &["offset", "limit"]),
        ("read_line", "tool_output_cache_line", &["line_number", "char_offset", "char_limit"]),
        ("grep", "tool_output_cache_grep", &["pattern", "regex", "case_insensitive", "before", "after", "limit"]),
        ("write", "edit", &["file_path", "expected_hash"]),
        ("edit", "apply_patch", &["dry_run"]),
        ("read", "view_image", &["file_path"]),
        ("read", "read_line", &["file_path"]),
    ];
    let mut differ = Vec::new();
    for (a, b, shared) in pairs {
        let (left, right) = (properties(&registry, a), properties(&registry, b));
        for name in shared {
            if left.get(*name).is_none() || left.get(*name) != right.get(*name) {
                differ.push(format!("{a}.{name}: {:?} / {b}.{name}: {:?}", left.get(*name), right.get(*name)));
            }
        }
    }
    assert_eq!(differ, Vec::<String>::new());
}

#[test]
fn glob_and_grep_bound_their_limit_alike_and_say_what_it_counts() {
    let registry = tool_std::registry_builder().build().unwrap();
    let (glob, grep) = (&properties(&registry, "glob")["limit"], &properties(&registry, "grep")["limit"]);
    let bounds = |s: &serde_json::Value| (s["type"].clone(), s["minimum"].clone(), s["maximum"].clone());

    assert_eq!(bounds(glob), bounds(grep));
    assert_eq!(
        (glob["description"].as_str(), grep["description"].as_str()),
        (Some("Files to show (default 100)."), Some("Matching lines to show (default 100)."))
    );
}
