//! An example of tool-runtime's "Defining tools" (`tool-runtime/docs/defining-tools.md`), as
//! written there, and checks of what it defines.

use tool_runtime::prelude::*;

/// Append a line to a ledger.
#[tool(resource = "ledger")]                      // one call per ledger at a time
async fn append_entry(
    /// The ledger's id.
    ledger: String,
    /// The line to add.
    line: String,
) -> String {
    format!("{ledger}: {line}")
}

/// Send a message through a rate-limited gateway.
#[tool(concurrency(limit = 2, per = "account"))]  // at most two running per account
async fn send_message(
    /// The sending account.
    account: String,
    /// The text.
    text: String,
) -> String {
    format!("{account} sent {} bytes", text.len())
}

fn main() {
    use tool_runtime::Resource;

    assert_eq!(append_entry::TOOL.resources(), [Resource::lock("ledger", Some("ledger"))]);
    assert_eq!(
        send_message::TOOL.resources(),
        [Resource { kind: "account", argument: Some("account"), permits: 2, per_tool: true }]
    );
}
