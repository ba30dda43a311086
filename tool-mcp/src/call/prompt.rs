//! `prompts/get`, run as a call is.

use rmcp::model::{GetPromptRequestParams, GetPromptResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use crate::call_id::next_call_id;
use crate::server::{CallRequest, McpServer, http_parts};
use crate::talk;

impl McpServer {
    /// `prompts/get`: the prompt's handler run as a call is (the context hook, the client channel,
    /// cancellation by the client, input-required results).
    pub(crate) async fn prompt(
        &self,
        request: GetPromptRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let inner = &self.inner;
        let mut request = request;
        let http = context.extensions.get::<::http::request::Parts>();
        let channel = self.request_channel(
            context,
            context.client_capabilities(),
            request.request_state.take(),
            request.input_responses.take(),
        );
        let token = inner.stop.child_token();
        // The context hook runs for a prompt as for a tool call (its principal, its refusal),
        // with the prompt's name as `tool`.
        let call_id = next_call_id();
        let builder = self
            .call_context(&CallRequest { tool: &request.name, call_id: &call_id, http })
            .map_err(|message| ErrorData::invalid_request(message, None))?;
        let ctx = builder.cancellation(token.clone()).client_arc(channel.clone()).build();
        let arguments = request.arguments.as_ref().map(|a| Value::Object(a.clone()).to_string()).unwrap_or_default();
        let binding = talk::binding(&format!("prompts/get {}", request.name), &arguments, ctx.principal());
        channel.open(inner.codec.as_ref(), || binding.clone())?;
        let answered = tokio::select! {
            answer = inner.catalog.get_prompt(request, http_parts(context), ctx) => Some(answer),
            () = channel.asked() => None,
            () = context.ct.cancelled() => {
                token.cancel();
                // Dropped by rmcp unanswered, as for a cancelled tool call (an `Err` would be
                // logged as a warning).
                return Ok(GetPromptResponse::Complete(rmcp::model::GetPromptResult::new(Vec::new())));
            }
        };
        channel.flush().await;
        match answered {
            Some(Ok(result)) => Ok(result.into()),
            // A handler that failed after its client could not answer gets MCP's error for that.
            Some(Err(error)) => Err(channel.refusal().unwrap_or(error)),
            None => {
                token.cancel();
                channel.input_required(inner.codec.as_ref(), &binding).map(GetPromptResponse::InputRequired)
            }
        }
    }
}
