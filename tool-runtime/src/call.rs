//! The tool call a model asks for.

/// One tool call as a model emitted it: the provider's call id, the tool name and the raw arguments.
///
/// `arguments` is the JSON text of the arguments object exactly as the provider sent it (OpenAI sends
/// a string; for Anthropic and Gemini, which send an object, it is that object serialised). Decoding
/// happens in [`Registry::call`](crate::Registry::call), so that every decoding failure becomes an
/// error result the model can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

impl ToolCall {
    /// A tool call from its id, tool name and raw JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        Self { id: id.into(), name: name.into(), arguments: arguments.into(), caller: None }
    }

    /// This call, made by the program `caller` (see [`ToolCall::caller`]).
    #[must_use]
    pub fn with_caller(mut self, caller: impl Into<String>) -> Self {
        self.caller = Some(caller.into());
        self
    }
}
