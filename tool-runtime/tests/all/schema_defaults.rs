//! `#[arg(default = ..)]` and `#[arg(default)]` show the model their value as the argument's
//! `default`, where the provider takes the keyword; OpenAI strict mode, which does not, says it
//! in the description. A default whose type is not `Serialize` is not shown.

use serde::Deserialize;
use serde_json::json;
use tool_runtime::prelude::*;
use tool_runtime::provider::{Provider, Rendering, Strict};

/// A sort order whose default serde cannot write: it is never shown.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Order {
    #[default]
    Newest,
    Oldest,
}

/// List the latest entries.
#[tool(inline)]
fn latest(
    /// How many entries.
    #[arg(default = 10, range(min = 1, max = 50))]
    limit: u32,
    /// Include archived entries.
    #[arg(default)]
    archived: bool,
    /// The label to match.
    #[arg(default = "inbox")]
    label: String,
    /// The sort order.
    #[arg(default)]
    order: Order,
) -> String {
    format!("{limit} {archived} {label} {order:?}")
}

#[test]
fn each_serializable_default_is_the_arguments_default_in_the_canonical_schema() {
    assert_eq!(
        latest::TOOL.definition().input_schema,
        json!({
            "type": "object",
            "properties": {
                "archived": {"type": "boolean", "default": false, "description": "Include archived entries."},
                "label": {"type": "string", "default": "inbox", "description": "The label to match."},
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": 50, "default": 10,
                    "description": "How many entries."
                },
                "order": {"type": "string", "enum": ["newest", "oldest"], "description": "The sort order."}
            },
            "additionalProperties": false
        })
    );
}

#[test]
fn mcp_and_anthropic_entries_carry_the_default() {
    let definition = latest::TOOL.definition();
    let mcp = definition.mcp_entry().unwrap();
    let anthropic = Provider::Anthropic.render_tool_with(definition, Rendering::DEFAULT).unwrap();

    assert_eq!(mcp["inputSchema"]["properties"]["limit"]["default"], json!(10));
    assert_eq!(anthropic["input_schema"]["properties"]["label"]["default"], json!("inbox"));
}

#[test]
fn openai_strict_mode_says_the_default_in_the_description_and_stays_strict() {
    let entry = Provider::OpenAiChat
        .render_tool_with(latest::TOOL.definition(), Rendering::DEFAULT.strict(Strict::WherePossible))
        .unwrap();

    assert_eq!(entry["function"]["strict"], json!(true));
    assert_eq!(
        entry["function"]["parameters"]["properties"]["limit"],
        json!({"type": ["integer", "null"], "minimum": 1, "maximum": 50, "description": "How many entries. (default 10)"})
    );
    assert_eq!(
        entry["function"]["parameters"]["properties"]["label"]["description"],
        json!("The label to match. (default \"inbox\")")
    );
}

#[tokio::test]
async fn the_defaults_shown_are_the_values_an_absent_argument_gets() {
    let registry = Registry::builder().tool(latest::TOOL).build().unwrap();
    let message = registry.call(&ToolCall::new("c1", "latest", "{}"), &ToolContext::new()).await;

    assert_eq!(message.text(), "10 false inbox Newest");
}
