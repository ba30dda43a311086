//! The tool call a model asks for.

/// One tool call as a model emitted it: the provider's call id, the tool name and the raw arguments.
///
/// `arguments` is the JSON text of the arguments object exactly as the provider sent it (OpenAI sends
/// a string; for Anthropic and Gemini, which send an object, it is that object serialised). Decoding
/// happens in [`Registry::call`](crate::Registry::call), so that every decoding failure becomes an
/// error result the model can act on.
#[derive(Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The provider's id for this call (`call_...`, `toolu_...`), echoed in the tool result.
    pub id: String,
    /// The tool name the model asked for.
    pub name: String,
    /// The arguments as raw JSON text; `""` or whitespace means "no arguments" (`{}`).
    pub arguments: String,
    /// The program that made the call, for a call from code (programmatic tool calling): the
    /// provider's id of it (Anthropic's `caller.tool_id`, the `server_tool_use` id of its code
    /// execution; OpenAI Responses' `caller.caller_id`, the call id of its program item).
    /// `None` for a call the model made directly. The registry runs both alike; the result is
    /// answered by [`id`](ToolCall::id) as any other.
    pub caller: Option<String>,
    /// The client's idempotency key for this call, when it sent one: a retry with the same key
    /// and the same arguments gets the first call's result without the tool running again, in a
    /// registry with [idempotency](crate::RegistryBuilder::idempotency) (see
    /// [`crate::idempotency`]); `None` runs the call as any other. MCP clients send it as
    /// `params._meta["tool-framework/idempotency-key"]` (`tool-mcp`'s `IDEMPOTENCY_KEY_META`).
    /// Never printed by `Debug`.
    pub idempotency_key: Option<String>,
    /// The approval token of this exact call, when the client sends one: in a registry with
    /// [approval tokens](crate::RegistryBuilder::approval_tokens), a call of a tool that needs
    /// approval runs without asking when the token redeems for it (see [`crate::approvals`]).
    /// A token this registry does not redeem itself is handed to the running tool
    /// ([`ToolContext::approval_token`](crate::ToolContext::approval_token)), so that a tool
    /// imported from another server passes it on with this call. MCP clients send it as
    /// `params._meta["tool-framework/approval-token"]` (`tool-mcp`'s `APPROVAL_TOKEN_META`).
    /// Never printed by `Debug`.
    pub approval_token: Option<String>,
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("caller", &self.caller)
            .field("idempotency_key", &self.idempotency_key.as_ref().map(|_| "[redacted]"))
            .field("approval_token", &self.approval_token.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

impl ToolCall {
    /// A tool call from its id, tool name and raw JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
            caller: None,
            idempotency_key: None,
            approval_token: None,
        }
    }

    /// This call, with the client's idempotency key `key` (see [`ToolCall::idempotency_key`]).
    #[must_use]
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// This call, with the approval token `token` (see [`ToolCall::approval_token`]).
    #[must_use]
    pub fn with_approval_token(mut self, token: impl Into<String>) -> Self {
        self.approval_token = Some(token.into());
        self
    }

    /// This call, made by the program `caller` (see [`ToolCall::caller`]).
    #[must_use]
    pub fn with_caller(mut self, caller: impl Into<String>) -> Self {
        self.caller = Some(caller.into());
        self
    }
}
