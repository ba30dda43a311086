//! A `#[tool]` parameter that lacks its `#[depends(KEY)]`: the registry refuses a model argument
//! whose type is the value type of a dependency key (one a tool asks for, or one the program
//! provides), since its schema would ask the model for the program's state.

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;
use tool_runtime::{KeyTypedArgument, RegistryError};

/// The notes the program keeps; data a model could send too, so only the registry can tell.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct Notebook {
    /// The titles.
    pub titles: Vec<String>,
}

/// The same type under a second name.
type Book = Notebook;

static NOTEBOOK: DependencyKey<Notebook> = DependencyKey::provided("notebook");
static SPARE_NOTEBOOK: DependencyKey<Notebook> = DependencyKey::provided("spare_notebook");
static HOSTS: DependencyKey<Vec<String>> = DependencyKey::provided("hosts");

/// List the notes.
#[tool]
async fn list_notes(#[depends(NOTEBOOK)] book: Notebook) -> String {
    book.titles.join(",")
}

/// Add a note (its notebook lacks `#[depends(NOTEBOOK)]`).
#[tool]
async fn add_note(
    /// The title.
    title: String,
    /// The notebook.
    book: Book,
) -> String {
    format!("{title} beside {}", book.titles.len())
}

/// Count the notes (its notebook lacks `#[depends(NOTEBOOK)]`, and is optional).
#[tool]
async fn count_notes(
    /// The notebook.
    book: Option<Notebook>,
) -> String {
    book.map_or(0, |b| b.titles.len()).to_string()
}

/// Import a notebook the model sends.
#[tool]
async fn import_notes(
    /// The notebook to import.
    #[arg(from_model)]
    book: Notebook,
) -> String {
    book.titles.len().to_string()
}

/// Ping the configured hosts.
#[tool]
async fn ping_hosts(#[depends(HOSTS)] hosts: Vec<String>) -> String {
    hosts.join(",")
}

/// Check the hosts the model names.
#[tool]
async fn check_hosts(
    /// The hosts.
    hosts: Vec<String>,
) -> String {
    hosts.join(",")
}

fn argument(tool: &str, argument: &str, type_name: &str, keys: &[&str]) -> KeyTypedArgument {
    KeyTypedArgument {
        tool: tool.to_owned(),
        argument: argument.to_owned(),
        type_name: type_name.to_owned(),
        keys: keys.iter().map(|&k| k.to_owned()).collect(),
    }
}

const NOTEBOOK_TYPE: &str = "all::forgotten_depends::Notebook";

#[test]
fn an_argument_of_the_type_of_a_key_another_tool_asks_for_is_refused_naming_tool_argument_type_and_key() {
    let error = Registry::builder()
        .tool(list_notes::TOOL)
        .tool(add_note::TOOL)
        .provide(&NOTEBOOK, Notebook::default())
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        RegistryError::ArgumentsOfKeyTypes {
            arguments: vec![argument("add_note", "book", NOTEBOOK_TYPE, &["NOTEBOOK"])]
        }
    );
    assert_eq!(
        error.to_string(),
        "the tool `add_note` asks the model for `book`, a `all::forgotten_depends::Notebook`, the value type of the dependency key `NOTEBOOK`: mark the parameter `#[depends(NOTEBOOK)]` (the schema asks the model for the program's state), or add `#[arg(from_model)]` if the model does send it"
    );
}

#[test]
fn a_key_only_provided_by_the_program_is_compared_too_and_every_argument_is_reported_at_once() {
    let error = Registry::builder()
        .tool(count_notes::TOOL)
        .tool(add_note::TOOL)
        .provide(&SPARE_NOTEBOOK, Notebook::default())
        .override_dependency(&NOTEBOOK, Notebook::default())
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        RegistryError::ArgumentsOfKeyTypes {
            arguments: vec![
                argument("add_note", "book", NOTEBOOK_TYPE, &["notebook", "spare_notebook"]),
                argument(
                    "count_notes",
                    "book",
                    "core::option::Option<all::forgotten_depends::Notebook>",
                    &["notebook", "spare_notebook"]
                ),
            ]
        }
    );
    assert_eq!(
        error.to_string(),
        "the tool `add_note` asks the model for `book`, a `all::forgotten_depends::Notebook`, the value type of the dependency keys `notebook`, `spare_notebook`; the tool `count_notes` asks the model for `book`, a `core::option::Option<all::forgotten_depends::Notebook>`, the value type of the dependency keys `notebook`, `spare_notebook`: mark each parameter `#[depends(KEY)]` with its key (the schema asks the model for the program's state), or add `#[arg(from_model)]` if the model does send it"
    );
}

#[tokio::test]
async fn from_model_and_types_of_the_standard_library_alone_are_not_compared() {
    let registry = Registry::builder()
        .tool(list_notes::TOOL)
        .tool(import_notes::TOOL)
        .tool(ping_hosts::TOOL)
        .tool(check_hosts::TOOL)
        .provide(&NOTEBOOK, Notebook::default())
        .provide(&HOSTS, vec!["a".to_owned()])
        .build()
        .unwrap();
    let call = ToolCall::new("c", "import_notes", r#"{"book":{"titles":["x","y"]}}"#);
    assert_eq!(registry.call(&call, &ToolContext::new()).await.text(), "2");
    let call = ToolCall::new("c", "check_hosts", r#"{"hosts":["b"]}"#);
    assert_eq!(registry.call(&call, &ToolContext::new()).await.text(), "b");
}

/// A type of the program's own named like plain data.
pub mod own {
    /// A path of the program's, not `std::path::PathBuf`.
    #[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
    pub struct PathBuf {
        /// The root.
        pub root: String,
    }
}

static ROOT: DependencyKey<own::PathBuf> = DependencyKey::provided("root");

/// Open a path (its type is named like `std::path::PathBuf`, so it is taken for data).
#[tool]
async fn open_path(
    /// The path.
    path: own::PathBuf,
) -> String {
    path.root
}

/// The input of `import_book`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImportInput {
    /// The notebook.
    pub book: Notebook,
}

/// Import a notebook given as an `#[input]` struct's field.
#[tool]
async fn import_book(#[input] input: ImportInput) -> String {
    input.book.titles.len().to_string()
}

#[test]
fn arguments_named_like_plain_data_and_the_fields_of_an_input_struct_are_not_compared() {
    let registry = Registry::builder()
        .tool(open_path::TOOL)
        .tool(import_book::TOOL)
        .provide(&ROOT, own::PathBuf::default())
        .provide(&NOTEBOOK, Notebook::default())
        .build()
        .unwrap();
    assert_eq!(registry.len(), 2);
}

#[test]
fn without_a_key_of_its_type_the_argument_is_data() {
    let registry = Registry::builder().tool(add_note::TOOL).tool(count_notes::TOOL).build().unwrap();
    assert_eq!(registry.len(), 2);
}
