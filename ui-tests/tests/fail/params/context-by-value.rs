use tool_runtime::prelude::*;

/// Reads the call id.
#[tool]
fn id(ctx: ToolContext) -> String {
    ctx.call_id().unwrap_or_default().to_owned()
}

fn main() {}
