//! Tools as methods: `#[tool]` methods of a `#[tools]` impl block, served on one instance.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tool_runtime::prelude::*;
use tool_runtime::{MissingDependency, RegistryError};

/// A notes server: its state is on `self`.
#[derive(Default)]
struct NotesServer {
    notes: Mutex<Vec<String>>,
    calls: AtomicUsize,
}

fn prefix(_: &ToolContext) -> Result<String, DependencyError> {
    Ok("> ".to_owned())
}

static PREFIX: DependencyKey<String> = DependencyKey::per_call("prefix", prefix);

#[tools]
impl NotesServer {
    /// Add a note; returns how many notes there are.
    #[tool(set = "notes", tags(idempotent))]
    async fn add(
        &self,
        /// The note.
        #[arg(length(min = 1))]
        text: String,
    ) -> String {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut notes = self.notes.lock().unwrap();
        notes.push(text);
        notes.len().to_string()
    }

    /// Every note, quoted, and the length of the call's id as the call count.
    #[tool(name = "list-notes", set = "notes")]
    fn list(&self, #[depends(PREFIX)] prefix: String, ctx: &ToolContext) -> Self {
        let notes = self.notes.lock().unwrap().iter().map(|n| format!("{prefix}{n}")).collect();
        Self { notes: Mutex::new(notes), calls: AtomicUsize::new(ctx.call_id().map_or(0, str::len)) }
    }

    /// Count the notes on the blocking pool.
    #[tool(blocking, sequential, timeout_ms = 5000)]
    fn count(&self) -> usize {
        self.notes.lock().unwrap().len()
    }

    /// Not a tool: an ordinary method stays as written.
    fn first(&self) -> Option<String> {
        self.notes.lock().unwrap().first().cloned()
    }
}

/// The notes and the call count, as `list-notes` sends them.
impl serde::Serialize for NotesServer {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("notes", &*self.notes.lock().unwrap())?;
        map.serialize_entry("calls", &self.calls.load(Ordering::SeqCst))?;
        map.end()
    }
}

async fn call(registry: &Registry, name: &str, arguments: &str) -> ToolMessage {
    registry.call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn two_calls_of_a_method_tool_see_the_state_of_one_instance() {
    let server = Arc::new(NotesServer::default());
    let registry = Registry::builder().tools_of(server.clone()).build().unwrap();
    assert_eq!(call(&registry, "add", r#"{"text":"milk"}"#).await.text(), "1");
    assert_eq!(call(&registry, "add", r#"{"text":"eggs"}"#).await.text(), "2");
    assert_eq!(server.calls.load(Ordering::SeqCst), 2);
    assert_eq!(server.first().as_deref(), Some("milk"));
}

#[tokio::test]
async fn a_method_takes_dependencies_the_context_and_returns_json() {
    let server = Arc::new(NotesServer::default());
    server.notes.lock().unwrap().push("milk".to_owned());
    let registry = Registry::builder().tools_of(server).build().unwrap();
    assert_eq!(call(&registry, "list-notes", "{}").await.text(), r#"{"notes":["> milk"],"calls":6}"#);
}

#[tokio::test]
async fn a_blocking_method_runs_on_the_instance_too() {
    let server = Arc::new(NotesServer::default());
    server.notes.lock().unwrap().extend(["a".to_owned(), "b".to_owned()]);
    let registry = Registry::builder().tools_of(server).build().unwrap();
    assert_eq!(call(&registry, "count", "{}").await.text(), "2");
}

#[tokio::test]
async fn a_method_tool_decodes_and_checks_its_arguments_like_a_function() {
    let registry = Registry::builder().tools_of(Arc::new(NotesServer::default())).build().unwrap();
    let message = call(&registry, "add", r#"{"text":""}"#).await;
    assert!(message.is_error);
    assert_eq!(message.text(), "invalid arguments for `add`: `text`: must be at least 1 character; got 0");
    let message = call(&registry, "add", "{}").await;
    assert_eq!(message.text(), "invalid arguments for `add`: missing field `text`");
}

#[test]
fn every_option_of_a_method_is_in_its_spec() {
    let [add, list, count] = NotesServer::tools() else { panic!("three tools") };
    assert_eq!((add.name(), add.set(), add.meta().tags), ("add", Some("notes"), &["idempotent"][..]));
    assert_eq!(add.definition().description, "Add a note; returns how many notes there are.");
    assert_eq!(
        add.definition().input_schema,
        serde_json::json!({
            "type": "object",
            "properties": {"text": {"type": "string", "minLength": 1, "description": "The note."}},
            "required": ["text"],
            "additionalProperties": false
        })
    );
    assert_eq!((list.name(), list.set()), ("list-notes", Some("notes")));
    assert_eq!((count.meta().blocking, count.meta().sequential, count.meta().timeout_ms), (true, true, Some(5000)));
}

#[test]
fn a_method_tool_is_defined_at_its_method() {
    let origin = NotesServer::tools()[0].origin();
    assert_eq!((origin.file, origin.line), (Some("tool-runtime/tests/methods.rs"), 26));
}

#[test]
fn the_instance_key_is_named_after_the_type() {
    assert_eq!(NotesServer::instance_key().id(), "methods::NotesServer");
    assert_eq!(NotesServer::instance_key().scope(), Scope::Provided);
}

#[test]
fn discovery_never_finds_method_tools() {
    let names: Vec<String> = Registry::discover().unwrap().names().map(str::to_owned).collect();
    assert_eq!(names, ["standalone"]);
}

/// A free tool beside the methods, so that discovery finds something.
#[tool]
fn standalone() -> &'static str {
    "free"
}

#[test]
fn a_method_tool_added_without_its_instance_fails_to_build_naming_the_instance() {
    let error = Registry::builder().tool(NotesServer::tools()[0]).build().unwrap_err();
    assert_eq!(
        error,
        RegistryError::MissingDependencies {
            missing: vec![MissingDependency { key: "methods::NotesServer".to_owned(), tools: vec!["add".to_owned()] }]
        }
    );
}

#[tokio::test]
async fn a_second_instance_of_one_type_replaces_the_first() {
    let (first, second) = (Arc::new(NotesServer::default()), Arc::new(NotesServer::default()));
    let registry = Registry::builder().tools_of(first.clone()).tools_of(second.clone()).build().unwrap();
    assert_eq!(registry.names().count(), 3);
    assert_eq!(call(&registry, "add", r#"{"text":"x"}"#).await.text(), "1");
    assert_eq!((first.notes.lock().unwrap().len(), second.notes.lock().unwrap().len()), (0, 1));
}

/// What to look up.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The key.
    key: String,
}

/// A result with a schema.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Entry {
    key: String,
    value: usize,
}

mod runtime {
    pub(crate) use tool_runtime as rt;
}

/// A second type with tools: `#[input]`, defaults, `strict`, `output_schema` and `crate = path`.
struct Catalog {
    base: usize,
}

#[tools(crate = crate::runtime::rt)]
impl Catalog {
    /// Look a key up.
    #[tool(strict, output_schema)]
    fn look_up(&self, #[input] lookup: Lookup) -> Entry {
        Entry { value: self.base + lookup.key.len(), key: lookup.key }
    }

    /// Add to the base.
    #[tool(strict = false)]
    async fn offset(&self, #[arg(default = 10)] by: usize) -> String {
        (self.base + by).to_string()
    }
}

#[tokio::test]
async fn input_defaults_strict_and_output_schema_work_on_methods() {
    let registry = Registry::builder().tools_of(Arc::new(Catalog { base: 100 })).build().unwrap();
    let message = call(&registry, "look_up", r#"{"key":"abc"}"#).await;
    assert_eq!(message.text(), r#"{"key":"abc","value":103}"#);
    assert_eq!(message.structured_content, Some(serde_json::json!({"key": "abc", "value": 103})));
    assert_eq!(call(&registry, "offset", "{}").await.text(), "110");
    assert_eq!(call(&registry, "offset", r#"{"by":1}"#).await.text(), "101");
    let [look_up, offset] = Catalog::tools() else { panic!("two tools") };
    assert_eq!((look_up.meta().strict, offset.meta().strict), (Some(true), Some(false)));
    assert!(look_up.definition().output_schema.is_some());
}
