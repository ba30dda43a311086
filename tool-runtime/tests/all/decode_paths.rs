//! Where decoding errors point, and the unknown fields found at every depth of the schema: in
//! map values, tuple positions and the payload of an externally tagged enum variant; and the
//! fast path for flat arguments agreeing with the full path.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// One item.
#[derive(Deserialize, JsonSchema)]
struct Item {
    /// The id.
    id: u32,
}

/// A shape.
#[derive(Deserialize, JsonSchema)]
enum Shape {
    /// A circle.
    Circle {
        /// The radius.
        radius: f64,
    },
    /// A square.
    Square(f64),
}

/// Takes items by name.
#[tool]
fn by_name(
    /// Items by name.
    items: BTreeMap<String, Item>,
) -> String {
    items.iter().map(|(name, item)| format!("{name}={}", item.id)).collect::<Vec<_>>().join(",")
}

/// Takes a pair of an item and a count.
#[tool]
fn pair(
    /// The item and how many.
    pair: (Item, u8),
) -> String {
    format!("{}x{}", pair.0.id, pair.1)
}

/// Draws a shape.
#[tool]
fn draw(
    /// The shape.
    shape: Shape,
) -> String {
    match shape {
        Shape::Circle { radius } => format!("circle {radius}"),
        Shape::Square(side) => format!("square {side}"),
    }
}

/// Counts items.
#[tool]
fn count(
    /// The items.
    items: Vec<Item>,
    /// A note.
    note: Option<String>,
) -> String {
    format!("{} {note:?}", items.len())
}

/// Lists results.
#[tool]
fn list(
    /// How many (default 5).
    #[arg(default = 5)]
    limit: u32,
    /// The query.
    query: String,
) -> String {
    format!("{query} {limit}")
}

async fn call(name: &str, arguments: &str) -> ToolMessage {
    let registry = Registry::builder()
        .tool(by_name::TOOL)
        .tool(pair::TOOL)
        .tool(draw::TOOL)
        .tool(count::TOOL)
        .tool(list::TOOL)
        .build()
        .unwrap();
    registry.call(&ToolCall::new("call_1", name, arguments), &ToolContext::new()).await
}

#[tokio::test]
async fn an_unknown_field_in_a_map_value_names_its_path() {
    let message = call("by_name", r#"{"items":{"a":{"id":1},"b":{"id":2,"nope":0}}}"#).await;
    assert_eq!(message.text(), "invalid arguments for `by_name`: unknown field `items.b.nope`; expected one of `id`");
}

#[tokio::test]
async fn a_wrong_value_in_a_map_value_names_its_path() {
    let message = call("by_name", r#"{"items":{"a":{"id":"one"}}}"#).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `by_name`: `items.a.id`: invalid type: string "one", expected an integer from 0 to 4294967295"#
    );
}

#[tokio::test]
async fn an_unknown_field_in_a_tuple_position_names_its_path() {
    let message = call("pair", r#"{"pair":[{"id":1,"idd":2},3]}"#).await;
    assert_eq!(message.text(), "invalid arguments for `pair`: unknown field `pair[0].idd`; expected one of `id`");
}

#[tokio::test]
async fn a_tuple_with_an_extra_element_names_the_tuple_and_its_length() {
    let message = call("pair", r#"{"pair":[{"id":1},3,4]}"#).await;
    assert_eq!(message.text(), "invalid arguments for `pair`: `pair`: must hold at most 2 items; got 3");
}

#[tokio::test]
async fn a_tuple_with_a_missing_element_names_the_tuple() {
    let message = call("pair", r#"{"pair":[{"id":1}]}"#).await;
    assert_eq!(message.text(), "invalid arguments for `pair`: `pair`: must hold at least 2 items; got 1");
}

#[tokio::test]
async fn an_unknown_field_in_an_externally_tagged_variant_names_its_path() {
    let message = call("draw", r#"{"shape":{"Circle":{"radius":2.0,"color":"red"}}}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `draw`: unknown field `shape.Circle.color`; expected one of `radius`"
    );
}

#[tokio::test]
async fn a_wrong_value_in_an_externally_tagged_variant_names_the_whole_path() {
    let message = call("draw", r#"{"shape":{"Circle":{"radius":"big"}}}"#).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `draw`: `shape.Circle.radius`: invalid type: string "big", expected a number"#
    );
}

#[tokio::test]
async fn an_unknown_variant_is_an_unknown_field_listing_the_variants() {
    let message = call("draw", r#"{"shape":{"Triangle":3.0}}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `draw`: unknown field `shape.Triangle`; expected one of `Circle`, `Square`"
    );
}

#[tokio::test]
async fn a_wrong_value_deep_in_a_list_names_its_index_on_the_full_path() {
    // The `null` sends the call down the full path, whose error names the path.
    let message = call("count", r#"{"items":[{"id":1},{"id":true}],"note":null}"#).await;
    assert_eq!(
        message.text(),
        "invalid arguments for `count`: `items[1].id`: invalid type: boolean `true`, expected an integer from 0 to 4294967295"
    );
}

#[tokio::test]
async fn a_missing_field_in_a_list_item_names_the_item() {
    let message = call("count", r#"{"items":[{"id":1},{}]}"#).await;
    assert_eq!(message.text(), "invalid arguments for `count`: missing field `items[1].id`");
}

#[tokio::test]
async fn strings_with_escapes_and_line_breaks_keep_the_error_on_their_value() {
    let message = call("count", r#"{"note":"a\nb\"c","items":[{"id":"x\ny"}]}"#).await;
    assert_eq!(
        message.text(),
        r#"invalid arguments for `count`: `items[0].id`: invalid type: string "x\ny", expected an integer from 0 to 4294967295"#
    );
}

#[tokio::test]
async fn null_for_an_argument_with_a_default_is_the_default_on_a_flat_schema() {
    assert_eq!(call("list", r#"{"query":"q","limit":null}"#).await.text(), "q 5");
    assert_eq!(call("list", r#"{"query":"q"}"#).await.text(), "q 5");
    assert_eq!(call("list", r#"{"query":"q","limit":2}"#).await.text(), "q 2");
}

#[tokio::test]
async fn an_unknown_field_of_a_flat_schema_names_the_accepted_fields() {
    let message = call("list", r#"{"query":"q","limt":2}"#).await;
    assert_eq!(message.text(), "invalid arguments for `list`: unknown field `limt`; expected one of `limit`, `query`");
}

#[tokio::test]
async fn an_array_for_a_flat_schema_is_refused() {
    let message = call("list", r#"["q"]"#).await;
    assert_eq!(message.text(), "invalid arguments for `list`: expected a JSON object of arguments, got an array");
}

#[tokio::test]
async fn a_duplicate_field_is_refused_so_that_no_value_is_lost() {
    assert_eq!(
        call("list", r#"{"query":"a","query":"b"}"#).await.text(),
        "invalid arguments for `list`: `query`: the field is sent twice; send each field once"
    );
}
