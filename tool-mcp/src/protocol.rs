//! The protocol version the stateless path is built on. A leaf: it knows no server.

use rmcp::model::ProtocolVersion;

/// MCP 2026-07-28, the version of stateless Streamable HTTP: the version a request must name to
/// be answered by the direct path, and the version its shared peer is stamped with. Its readers,
/// each relying on a peer of this version never being sent a message before a response:
///
/// - `http/direct.rs`: admits only requests whose `MCP-Protocol-Version` header and `_meta`
///   name it ([`STATELESS_PROTOCOL_TEXT`]), and stamps the shared peer of the requests it
///   answers with it;
/// - `talk.rs` (`McpChannel::new`): a request of this version or later asks the client in
///   rounds (input-required results), never with a server-to-client request;
/// - rmcp 3.11.0 (pinned exactly in `Cargo.toml`): refuses server-to-client requests (sampling,
///   elicitation, roots) to a peer of this version, so none reaches the shared peer's sink;
/// - `stdio.rs`: a client of an earlier version gets `notifications/tools/list_changed`
///   unscoped.
pub(crate) const STATELESS_PROTOCOL: ProtocolVersion = ProtocolVersion::V_2026_07_28;

/// [`STATELESS_PROTOCOL`] as its text, as headers and `_meta` carry it.
pub(crate) const STATELESS_PROTOCOL_TEXT: &str = "2026-07-28";

/// The `_meta` key of a `tools/call` request that carries the client's idempotency key:
/// `tool-framework/idempotency-key`, a string of 1 to 256 bytes (a UUID). A retry with the same
/// key and arguments gets the first call's result without the tool running again, in a server
/// whose registry has idempotency on (`RegistryBuilder::idempotency`; the rules:
/// `tool_runtime::idempotency`). MCP names no such key (the proposal of an `idempotencyKey`,
/// SEP-3182, was closed) and reserves the `io.modelcontextprotocol/` prefix for the
/// specification, so the key carries this project's own prefix. A value that is not a string is
/// refused with -32602. A call that becomes a task ignores it (the task is the retry handle).
/// An imported tool sends upstream under this key not the client's key but one derived from it,
/// the caller's principal, the tool and the upstream under the registry's idempotency server key
/// (`ToolContext::idempotency_key_for`): at the upstream every client of a gateway is one
/// principal, so the client's own key would let two clients share one result (`import`,
/// "Idempotency keys through a gateway").
pub const IDEMPOTENCY_KEY_META: &str = "tool-framework/idempotency-key";

/// The `_meta` key of a `tools/call` request that carries an approval token:
/// `tool-framework/approval-token`, a string. In a server whose registry binds approvals to the
/// call (`RegistryBuilder::approval_tokens`; the rules: `tool_runtime::approvals`), a call of a
/// tool that needs approval runs without asking when the token was minted for that tool, those
/// arguments and that principal, is unexpired and unused; a call without one whose client cannot
/// be asked gets an error result whose `_meta` holds the preview and a token ([`APPROVAL_META`]).
/// Same prefix as [`IDEMPOTENCY_KEY_META`], for the same reason. A value that is not a string is
/// refused with -32602. A call that becomes a task carries its token into the task's first run
/// (never into the task record); a run started again later has none. An imported tool sends the
/// token of its call upstream under this key (`import`, "Approvals through a gateway").
pub const APPROVAL_TOKEN_META: &str = "tool-framework/approval-token";

/// The `_meta` key of a `tools/call` result that asks the client's host for the user's approval:
/// `tool-framework/approval`, an object `{"tool", "preview", "token", "expiresAt"}` (the tool's
/// registered name, what the call would do, the approval token for exactly this call, and its
/// expiry in seconds since the Unix epoch; `tool_runtime::ApprovalRequest`), with `"servers"`
/// (an array of names, nearest first) when the request came from another server through an
/// import (`ApprovalRequest::servers`). Present only on the
/// error result of a call refused for want of an approval token; the token is never in `content`
/// or `structuredContent`, which the model reads. The client shows the preview to its user and,
/// once they approve, sends the same call again with the token under [`APPROVAL_TOKEN_META`];
/// it must not hand the token to the model. A task record stores the token sealed
/// (`docs/tasks.md`, "Approval tokens"). An import decodes an upstream's request strictly and
/// passes it on as its own tool's (`import`, "Approvals through a gateway").
pub const APPROVAL_META: &str = "tool-framework/approval";

/// The `_meta` key of a `tools/call` error result that has no outcome of its own:
/// `tool-framework/unavailable`, `true`. Set exactly on an error result of kind
/// `tool_runtime::ToolErrorKind::Unavailable` (`ToolError::Unavailable`): the server refused a
/// retry because the first call with its idempotency key still runs, or the tool (an imported
/// one) did not reach the service it runs its effect through, or got no answer from it. Such a
/// result may be retried with the same idempotency key; an import reads the marker (the value
/// `true` only, and only on an error result; any other value leaves the error an ordinary
/// failure) as `ToolError::Unavailable`, so that a gateway with idempotency on releases the
/// key instead of keeping the error for it (`import`, "Idempotency keys through a gateway").
/// Same prefix as [`IDEMPOTENCY_KEY_META`], for the same reason.
pub const UNAVAILABLE_META: &str = "tool-framework/unavailable";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_the_versions() {
        assert_eq!(STATELESS_PROTOCOL.as_str(), STATELESS_PROTOCOL_TEXT);
    }
}
