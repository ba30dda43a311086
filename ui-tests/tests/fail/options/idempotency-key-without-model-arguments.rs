use tool_runtime::prelude::*;

/// Starts the next job once per call.
#[tool(idempotency_key = "request_id")]
fn next_job(ctx: &ToolContext) -> String {
    format!("{:?}", ctx.session_id())
}

fn main() {}
