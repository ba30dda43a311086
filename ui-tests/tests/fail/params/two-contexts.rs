use tool_runtime::prelude::*;

/// Reads the call id.
#[tool]
fn id(first: &ToolContext, second: &ToolContext) -> String {
    let _ = second;
    first.call_id().unwrap_or_default().to_owned()
}

fn main() {}
