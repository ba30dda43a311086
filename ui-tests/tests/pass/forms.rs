//! Forms not shown in tool-runtime's "Defining tools": an included doc file, a tool inside a
//! function body, every text-like return type, a dependency key given by reference, several dependencies, a state-like
//! type that the model does send (`#[arg(from_model)]`).

use std::borrow::Cow;

use tool_runtime::prelude::*;

#[doc = include_str!("tool-doc.md")]
#[tool]
fn summarise(
    /// The document.
    text: String,
) -> Cow<'static, str> {
    Cow::Owned(text)
}

fn open_prefix(_: &ToolContext) -> Result<String, DependencyError> {
    Ok("> ".to_owned())
}

fn open_width(_: &ToolContext) -> Result<usize, DependencyError> {
    Ok(80)
}

static PREFIX: DependencyKey<String> = DependencyKey::per_call("prefix", open_prefix);
static WIDTH: DependencyKey<usize> = DependencyKey::per_call("width", open_width);

/// Quote a text.
#[tool]
async fn quote(
    #[depends(&PREFIX)] prefix: String,
    /// The text.
    text: String,
    #[depends(WIDTH)] width: usize,
) -> Result<ToolResult, ToolError> {
    Ok(ToolResult::text(format!("{prefix}{}", &text[..text.len().min(width)])))
}

/// Return a static text.
#[tool]
fn fixed() -> &'static str {
    "fixed"
}

/// Fail with a text.
#[tool]
fn refuse() -> Result<(), String> {
    Err("refused".to_owned())
}

/// Start a tally at a number.
#[tool]
fn tally(
    /// Where to start.
    #[arg(from_model)]
    start: std::cell::Cell<u32>,
) -> String {
    (start.get() + 1).to_string()
}

fn main() {
    assert_eq!(
        summarise::TOOL.definition().description,
        "Summarise a document.\n\nThe summary keeps **headings** and drops code blocks."
    );

    /// Double a number.
    #[tool]
    fn double(
        /// The number.
        n: i64,
    ) -> String {
        (n * 2).to_string()
    }
    assert_eq!(double(2), "4");
    assert_eq!(double::TOOL.name(), "double");
    assert_eq!(quote::TOOL.definition().input_schema["required"], serde_json::json!(["text"]));
    assert_eq!(fixed(), "fixed");
    assert_eq!(refuse(), Err("refused".to_owned()));
    assert_eq!(tally::TOOL.definition().input_schema["properties"]["start"]["type"], "integer");
}
