//! `prompts/get`, run as a call is.

use rmcp::model::{GetPromptRequestParams, GetPromptResponse};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;

use super::Ended;
use crate::server::{McpServer, http_parts};
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
        // The context hook runs for a prompt as for a tool call (its principal, its refusal),
        // with the prompt's name as `tool`.
        let prepared = self.prepare(&request.name, http, channel, None, None, None)?;
        let channel = &prepared.channel;
        let arguments = request.arguments.as_ref().map(|a| Value::Object(a.clone()).to_string()).unwrap_or_default();
        let binding = talk::binding(&format!("prompts/get {}", request.name), &arguments, prepared.ctx.principal());
        channel.open(inner.codec.as_ref(), inner.tasks.now_ms(), inner.max_input_response_bytes, || binding.clone())?;
        let work = inner.catalog.get_prompt(request, http_parts(context), prepared.ctx.clone());
        let ended = prepared.run(self, work, context.ct.cancelled(), None).await;
        prepared.finish(&ended).await;
        match ended {
            Ended::Done(Ok(result)) => Ok(result.into()),
            // A handler that failed after its client could not answer gets MCP's error for that.
            Ended::Done(Err(error)) => Err(channel.refusal().unwrap_or(error)),
            Ended::Asked => channel
                .input_required(inner.codec.as_ref(), inner.tasks.now_ms(), &binding)
                .map(GetPromptResponse::InputRequired),
            // Dropped by rmcp unanswered, as for a cancelled tool call (an `Err` would be logged as
            // a warning).
            Ended::Cancelled | Ended::Expired => {
                Ok(GetPromptResponse::Complete(rmcp::model::GetPromptResult::new(Vec::new())))
            }
        }
    }
}
