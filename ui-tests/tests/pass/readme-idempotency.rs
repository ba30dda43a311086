//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, run.

use tool_runtime::idempotency::{Idempotency, MemoryIdempotencyStore};
use tool_runtime::prelude::*;

/// Send a payment.
#[tool]
fn pay(
    /// The amount in cents.
    cents: u64,
) -> String {
    format!("paid {cents} cents")
}

async fn pay_twice() {
    let registry = Registry::builder()
        .tool(pay::TOOL)
        .idempotency(Idempotency::new(MemoryIdempotencyStore::new()))
        .build()
        .unwrap();
    let ctx = ToolContext::new();
    let order = |id: &str| ToolCall::new(id, "pay", r#"{"cents":500}"#).with_idempotency_key("order-17");
    let first = registry.call(&order("c1"), &ctx).await;
    let retry = registry.call(&order("c2"), &ctx).await;
    assert_eq!(retry.text(), first.text()); // the payment ran once
}

fn main() {
    tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(pay_twice());
}
