//! Arguments at the edges of decoding: maps keyed by integers, untagged unions, keys sent twice,
//! huge values in error messages, integers wider than 64 bits, recursive arguments and a byte
//! order mark.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// One item.
#[derive(Debug, Deserialize, JsonSchema)]
struct Item {
    /// The id.
    id: u32,
}

/// A file named by path or by id.
#[derive(Deserialize, JsonSchema)]
#[serde(untagged)]
enum Target {
    /// By path.
    Path {
        /// The path.
        path: String,
    },
    /// By id.
    Id {
        /// The id.
        id: u32,
    },
}

/// Takes items by number.
#[tool]
fn numbered(
    /// Items by number.
    items: BTreeMap<u32, Item>,
) -> String {
    items.iter().map(|(n, item)| format!("{n}={}", item.id)).collect::<Vec<_>>().join(",")
}

impl Target {
    fn describe(&self) -> String {
        match self {
            Self::Path { path } => format!("path {path}"),
            Self::Id { id } => format!("id {id}"),
        }
    }
}

/// Opens files.
#[tool]
fn open(
    /// The file.
    target: Option<Target>,
    /// More files.
    targets: Option<Vec<Target>>,
) -> String {
    let targets: Vec<String> = targets.iter().flatten().map(Target::describe).collect();
    format!("{} [{}]", target.as_ref().map_or("none".to_owned(), Target::describe), targets.join(", "))
}

/// Searches.
#[tool]
fn search(
    /// The query.
    query: String,
    /// At most this many.
    limit: Option<u32>,
) -> String {
    format!("{query} {limit:?}")
}

/// Takes a pair.
#[tool]
fn pair(
    /// Two numbers.
    pair: (u8, u8),
    /// A note.
    note: Option<String>,
) -> String {
    format!("{pair:?} {note:?}")
}

async fn call(name: &str, arguments: &str) -> ToolMessage {
    let registry = Registry::builder()
        .tool(numbered::TOOL)
        .tool(open::TOOL)
        .tool(search::TOOL)
        .tool(pair::TOOL)
        .tool(draw::TOOL)
        .build()
        .unwrap();
    registry.call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn a_map_keyed_by_integers_takes_number_keys() {
    assert_eq!(call("numbered", r#"{"items":{"1":{"id":7},"20":{"id":8}}}"#).await.text(), "1=7,20=8");
}

#[tokio::test]
async fn a_map_keyed_by_integers_checks_the_fields_of_its_values() {
    let message = call("numbered", r#"{"items":{"1":{"id":7,"idd":0}}}"#).await;
    assert_eq!(message.text(), "invalid arguments for `numbered`: unknown field `items.1.idd`; expected one of `id`");
}

#[tokio::test]
async fn a_map_keyed_by_integers_refuses_a_key_that_is_not_a_number() {
    let message = call("numbered", r#"{"items":{"one":{"id":7}}}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `numbered`: `items`: invalid value: expected key to be a number in quotes"
    );
}

#[tokio::test]
async fn an_untagged_union_takes_either_variant() {
    let message = call("open", r#"{"target":{"path":"a"},"targets":[{"id":2}]}"#).await;
    assert_eq!(message.text(), "path a [id 2]");
}

#[tokio::test]
async fn a_field_no_variant_of_an_untagged_union_lists_is_unknown() {
    let message = call("open", r#"{"target":{"path":"a","extra":1}}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `open`: unknown field `target.extra`; expected one of `id`, `path`"
    );
}

#[tokio::test]
async fn an_unknown_field_in_a_list_of_untagged_unions_names_its_index() {
    let message = call("open", r#"{"targets":[{"path":"a"},{"id":2,"force":true}]}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `open`: unknown field `targets[1].force`; expected one of `id`, `path`"
    );
}

#[tokio::test]
async fn a_key_sent_twice_is_an_error_naming_it() {
    let message = call("search", r#"{"query":"a","query":"b"}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `search`: `query`: the field is sent twice; send each field once"
    );
}

#[tokio::test]
async fn a_key_sent_twice_at_depth_is_an_error_naming_its_path() {
    let message = call("open", r#"{"targets":[{"path":"a"},{"id":1,"id":2}]}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `open`: `targets[1].id`: the field is sent twice; send each field once"
    );
}

#[tokio::test]
async fn a_huge_wrong_value_is_cut_in_the_middle_of_the_message() {
    let huge = "x".repeat(1_000_000);
    let message = call("search", &format!(r#"{{"query":"q","limit":"{huge}"}}"#)).await;
    let text = message.text();
    let expected_head = format!("invalid arguments for `search`: `limit`: invalid type: string \"{}", "x".repeat(178));
    assert!(text.starts_with(&expected_head), "{}", &text[..300]);
    assert!(text.contains("…[999"), "{}", &text[..400]);
    assert!(
        text.ends_with(&format!("{}\", expected an integer from 0 to 4294967295", "x".repeat(77))),
        "{}",
        &text[text.len() - 200..]
    );
    assert_eq!(
        text.len(),
        "invalid arguments for `search`: `limit`: ".len() + 200 + "…[999700 bytes cut]…".len() + 120
    );
}

#[tokio::test]
async fn a_tuple_with_an_extra_element_still_says_so_on_the_full_path() {
    let message = call("pair", r#"{"pair":[1,2,3],"note":null}"#).await;
    assert_eq!(message.text(), "invalid arguments for `pair`: `pair`: must hold at most 2 items; got 3");
}

/// What to do with a file.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "op")]
enum Op {
    /// Read it.
    Read {
        /// The path.
        path: String,
    },
    /// Count its lines.
    Count {
        /// At most this many.
        limit: u8,
    },
}

/// A choice with its content beside the tag.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "t", content = "c")]
enum Adjacent {
    /// An item.
    A(Item),
    /// A small number.
    B {
        /// The number.
        x: u8,
    },
}

/// A name.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
struct Base {
    /// The name.
    name: String,
}

/// A name and a size.
#[allow(dead_code)] // Read through `Debug`, in the tool's text.
#[derive(Debug, Deserialize, JsonSchema)]
struct Sized {
    #[serde(flatten)]
    base: Base,
    /// The size.
    size: u8,
}

/// Does things to files.
#[tool]
fn act(
    /// The operation.
    op: Option<Op>,
    /// A choice.
    adj: Option<Adjacent>,
    /// A named size.
    sized: Option<Sized>,
) -> String {
    format!("{op:?} {adj:?} {sized:?}")
}

async fn act_with(arguments: &str) -> String {
    let registry = Registry::builder().tool(act::TOOL).build().unwrap();
    registry.call(&ToolCall::new("call_1", "act", arguments), &ToolContext::new()).await.text().into_owned()
}

#[tokio::test]
async fn a_wrong_value_in_an_internally_tagged_variant_names_its_path() {
    assert_eq!(
        act_with(r#"{"op":{"op":"Read","path":5}}"#).await,
        "invalid arguments for `act`: `op.path`: invalid type: integer `5`, expected a string"
    );
}

#[tokio::test]
async fn a_value_out_of_range_in_an_internally_tagged_variant_names_its_path() {
    assert_eq!(
        act_with(r#"{"op":{"op":"Count","limit":300}}"#).await,
        "invalid arguments for `act`: `op.limit`: must be at most 255; got 300"
    );
}

#[tokio::test]
async fn a_wrong_value_in_the_content_of_an_adjacently_tagged_variant_names_its_path() {
    assert_eq!(
        act_with(r#"{"adj":{"t":"B","c":{"x":300}}}"#).await,
        "invalid arguments for `act`: `adj.c.x`: must be at most 255; got 300"
    );
}

#[tokio::test]
async fn a_wrong_value_in_a_flattened_struct_names_its_path() {
    assert_eq!(
        act_with(r#"{"sized":{"name":5,"size":1}}"#).await,
        "invalid arguments for `act`: `sized.name`: invalid type: integer `5`, expected a string"
    );
}

#[tokio::test]
async fn a_missing_field_of_a_tagged_variant_names_the_field() {
    assert_eq!(act_with(r#"{"op":{"op":"Read"}}"#).await, "invalid arguments for `act`: missing field `op.path`");
}

#[tokio::test]
async fn null_for_an_optional_argument_of_a_flat_schema_is_none_as_in_strict_mode() {
    assert_eq!(call("search", r#"{"query":"q","limit":null}"#).await.text(), "q None");
}

#[tokio::test]
async fn null_for_a_required_argument_of_a_flat_schema_names_it() {
    assert_eq!(
        call("search", r#"{"query":null,"limit":null}"#).await.text(),
        "invalid arguments for `search`: `query`: invalid type: null, expected a string"
    );
}

/// Takes items by file name.
#[tool]
fn by_file(
    /// Items by file name.
    files: BTreeMap<String, Item>,
) -> String {
    files.keys().cloned().collect::<Vec<_>>().join(",")
}

#[tokio::test]
async fn a_key_with_a_dot_is_quoted_in_the_path_of_an_error() {
    let registry = Registry::builder().tool(by_file::TOOL).build().unwrap();
    let call = ToolCall::new("call_1", "by_file", r#"{"files":{"a.rs":{"id":1,"idd":2}}}"#);
    let message = registry.call(&call, &ToolContext::new()).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `by_file`: unknown field `files["a.rs"].idd`; expected one of `id`"#
    );
}

/// A node of a tree: its schema refers to itself.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Node {
    /// The node's name.
    name: String,
    /// Its children.
    #[serde(default)]
    children: Vec<Node>,
}

impl Node {
    fn render(&self) -> String {
        if self.children.is_empty() {
            return self.name.clone();
        }
        format!("{}({})", self.name, self.children.iter().map(Node::render).collect::<Vec<_>>().join(" "))
    }
}

/// Draws a tree.
#[tool]
fn draw(
    /// The root.
    tree: Node,
) -> String {
    tree.render()
}

#[tokio::test]
async fn a_recursive_argument_decodes_at_every_depth() {
    let arguments = r#"{"tree":{"name":"a","children":[{"name":"b","children":[{"name":"c"}]},{"name":"d"}]}}"#;
    assert_eq!(call("draw", arguments).await.text(), "a(b(c) d)");
}

#[tokio::test]
async fn an_unknown_field_deep_in_a_recursive_argument_names_its_path() {
    let arguments = r#"{"tree":{"name":"a","children":[{"name":"b","children":[{"name":"c","colour":"red"}]}]}}"#;
    assert_eq!(
        call("draw", arguments).await.text(),
        "invalid arguments for `draw`: unknown field `tree.children[0].children[0].colour`; expected one of `children`, `name`"
    );
}

#[tokio::test]
async fn a_leading_byte_order_mark_is_ignored_and_one_anywhere_else_is_not() {
    let leading = call("draw", "\u{feff}{\"tree\":{\"name\":\"a\"}}").await;
    assert_eq!(leading.text(), "a");
    let inside = call("draw", "{\u{feff}\"tree\":{\"name\":\"a\"}}").await;
    assert_eq!(
        inside.text(),
        "invalid arguments for `draw`: not valid JSON: key must be a string at line 1 column 2; send one JSON object"
    );
}
