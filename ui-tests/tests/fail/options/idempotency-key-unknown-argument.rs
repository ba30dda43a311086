use tool_runtime::prelude::*;

/// Pays an amount once per request.
#[tool(idempotency_key = "request")]
fn pay(request_id: String, cents: u64) -> String {
    format!("{request_id}: {cents}")
}

fn main() {}
