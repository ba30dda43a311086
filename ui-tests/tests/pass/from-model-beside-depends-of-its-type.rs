//! In a `#[tools]` block, a model argument of the type a `#[depends(KEY)]` parameter of the block
//! has is refused as a forgotten `#[depends]`; `#[arg(from_model)]` says the model does send it.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tool_runtime::prelude::*;

/// How a label is written.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
struct Style {
    /// The text before the label.
    prefix: String,
}

fn house_style(_: &ToolContext) -> Result<Style, DependencyError> {
    Ok(Style { prefix: "#".to_owned() })
}

static HOUSE_STYLE: DependencyKey<Style> = DependencyKey::shared("house_style", house_style);

struct Labels;

#[tools]
impl Labels {
    /// A label in the house style.
    #[tool]
    fn house_label(&self, /** The label's text. */ text: String, #[depends(HOUSE_STYLE)] style: Style) -> String {
        format!("{}{text}", style.prefix)
    }

    /// A label in the style the model chooses.
    #[tool]
    fn styled_label(
        &self,
        /// The label's text.
        text: String,
        /// The style to write it in.
        #[arg(from_model)]
        style: Style,
    ) -> String {
        format!("{}{text}", style.prefix)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::builder().tools_of(Arc::new(Labels)).build().expect("tool names are unique");
    let ctx = ToolContext::new();
    let house = registry.call(&ToolCall::new("1", "house_label", r#"{"text":"a"}"#), &ctx).await;
    let styled =
        registry.call(&ToolCall::new("2", "styled_label", r#"{"text":"b","style":{"prefix":"> "}}"#), &ctx).await;
    assert_eq!([house.text(), styled.text()], ["#a", "> b"]);
}
