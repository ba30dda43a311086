//! The MCP content mapping, both ways: a tool definition as a `tools/list` entry, a tool's
//! message as a `tools/call` result and a content part as a content block (serving), and a
//! `tools/call` result of another server as a tool result (importing, [`crate::import`]).
//! A leaf: it knows no server.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
#[cfg(feature = "client")]
use tool_runtime::{ApprovalProblem, ApprovalRequest, ToolError, ToolResult};
use tool_runtime::{ContentPart, MessageContent, ResourceContents, ToolDefinition, ToolMessage};

/// The MCP tool entry of a definition.
///
/// - `name`, `description`; `inputSchema` is the canonical schema unchanged (MCP takes plain
///   JSON Schema); a hand-written tool whose schema is not an object gets `{"type":"object"}` and
///   a warning in the log.
/// - `annotations` from the tags, as `tool_runtime::provider::mcp_annotations` gives them
///   (`read_only` → `readOnlyHint`, `destructive` → `destructiveHint`, `false` for a tool that
///   is neither; `idempotent` → `idempotentHint`; `openWorldHint` always, `true` exactly for
///   tools tagged `external` (`tool_runtime::EXTERNAL_TAG`), which the default permission policy relies on).
/// - `outputSchema`: the definition's output schema, for a tool that declares one
///   (`#[tool(output_schema)]`) and whose schema is an object schema (`"type": "object"`, as MCP
///   requires); otherwise left out, with a warning in the log for a non-object one.
pub fn tool_entry(definition: &ToolDefinition) -> Tool {
    let schema: JsonObject = match &definition.input_schema {
        Value::Object(schema) => schema.clone(),
        other => {
            tracing::warn!(tool = %definition.name, schema = %other, "the input schema is not an object; serving {{\"type\":\"object\"}}");
            JsonObject::from_iter([("type".to_owned(), Value::from("object"))])
        }
    };
    // The one mapping of tags to hints, shared with `ToolDefinition::mcp_entry`.
    let annotations: ToolAnnotations =
        serde_json::from_value(Value::Object(tool_runtime::provider::mcp_annotations(definition)))
            .expect("the hints are booleans under the names `ToolAnnotations` reads");
    let tool = Tool::new(definition.name.clone(), definition.description.clone(), Arc::new(schema))
        .with_annotations(annotations);
    match &definition.output_schema {
        Some(Value::Object(output)) if output.get("type").and_then(Value::as_str) == Some("object") => {
            tool.with_raw_output_schema(Arc::new(output.clone()))
        }
        Some(other) => {
            tracing::warn!(tool = %definition.name, schema = %other, "the output schema is not an object schema; serving none");
            tool
        }
        None => tool,
    }
}

/// The MCP content block of one part.
pub(crate) fn content_block(part: &ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text.clone()),
        ContentPart::Image { data, media_type, .. } => ContentBlock::image(data.clone(), media_type.clone()),
        ContentPart::Audio { data, media_type } => ContentBlock::audio(data.clone(), media_type.clone()),
        ContentPart::Resource { uri, media_type, contents } => ContentBlock::resource(match contents {
            ResourceContents::Text(text) => rmcp::model::ResourceContents::TextResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                text: text.clone(),
                meta: None,
            },
            ResourceContents::Blob(blob) => rmcp::model::ResourceContents::BlobResourceContents {
                uri: uri.clone(),
                mime_type: media_type.clone(),
                blob: blob.clone(),
                meta: None,
            },
        }),
        ContentPart::ResourceLink { uri, name, title, description, media_type } => {
            let mut link = rmcp::model::Resource::new(uri.clone(), name.clone());
            link.title = title.clone();
            link.description = description.clone();
            link.mime_type = media_type.clone();
            ContentBlock::resource_link(link)
        }
    }
}

/// The `tools/call` result of a message.
///
/// - Text becomes one text block; parts become blocks of their kind in order: text, image
///   (an image part's `detail` has no MCP equivalent and is left out), audio, embedded resource
///   (`resource`, text or blob contents) and resource link (`resource_link`).
/// - `isError` is the message's `is_error`.
/// - `_meta` carries `ref_id` (the ref id of the full output in the output cache),
///   `trimmed: true` when the output layer shortened the text, and the message's approval request
///   for the host under [`APPROVAL_META`](crate::APPROVAL_META) (the token, never in `content`;
///   `servers` only when the request came from another server), and `true` under
///   [`UNAVAILABLE_META`](crate::UNAVAILABLE_META) on an error of kind
///   [`Unavailable`](tool_runtime::ToolErrorKind::Unavailable); left out when none applies.
/// - `structured`: the tool declares an output schema; then a successful message's JSON object
///   value is also given as `structuredContent`, beside the text (the same value as JSON text),
///   for clients that read only `content`.
pub fn call_result(message: &ToolMessage, structured: bool) -> CallToolResult {
    let content = match &message.content {
        MessageContent::Text(text) => vec![ContentBlock::text(text.clone())],
        MessageContent::Parts(parts) => parts.iter().map(content_block).collect(),
    };
    let mut result = if message.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    let mut meta = JsonObject::new();
    if let Some(ref_id) = &message.ref_id {
        meta.insert("ref_id".to_owned(), Value::from(ref_id.clone()));
    }
    if message.trimmed {
        meta.insert("trimmed".to_owned(), Value::Bool(true));
    }
    if let Some(request) = &message.approval {
        let mut approval = serde_json::json!({
            "tool": request.tool,
            "preview": request.preview,
            "token": request.token,
            "expiresAt": request.expires_at,
        });
        if !request.servers.is_empty() {
            approval["servers"] = Value::from(request.servers.clone());
        }
        meta.insert(crate::protocol::APPROVAL_META.to_owned(), approval);
    }
    if message.is_error && message.error_kind == Some(tool_runtime::ToolErrorKind::Unavailable) {
        meta.insert(crate::protocol::UNAVAILABLE_META.to_owned(), Value::Bool(true));
    }
    if !meta.is_empty() {
        result.meta = Some(meta.into());
    }
    if structured && !message.is_error {
        result.structured_content = message.structured_content.clone().filter(Value::is_object);
    }
    result
}

/// The registry result of a `tools/call` result (as JSON): an error result (`isError: true`) is
/// [`ToolError::Unavailable`] when its `_meta` holds `true` under
/// [`UNAVAILABLE_META`](crate::UNAVAILABLE_META), else [`ToolError::Failed`], with its text.
#[cfg(feature = "client")]
pub(crate) fn to_result(server: &str, tool: &str, result: &Value) -> Result<ToolResult, ToolError> {
    let blocks = result.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    let parts: Vec<ContentPart> = blocks.iter().map(content_part).collect();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let text: Vec<String> = parts
            .iter()
            .map(|part| match part {
                ContentPart::Image { media_type, .. } => format!("[an image, {media_type}]"),
                ContentPart::Audio { media_type, .. } => format!("[audio, {media_type}]"),
                other => other.as_text().into_owned(),
            })
            .collect();
        let text = if text.is_empty() {
            format!("MCP server `{server}` says the call of `{tool}` failed")
        } else {
            text.join("\n")
        };
        let unavailable = result.get("_meta").and_then(|meta| meta.get(crate::protocol::UNAVAILABLE_META));
        return Err(if unavailable == Some(&Value::Bool(true)) {
            ToolError::Unavailable(text)
        } else {
            ToolError::Failed(text)
        });
    }
    if let Some(value @ Value::Object(_)) = result.get("structuredContent") {
        return Ok(ToolResult::Structured { content: parts, value: value.clone() });
    }
    Ok(match parts.as_slice() {
        [] => ToolResult::Text(String::new()),
        [ContentPart::Text { text }] => ToolResult::Text(text.clone()),
        _ => ToolResult::Parts(parts),
    })
}

/// The outcome of an upstream's `tools/call` result (`outcome`, from [`to_result`]) with the
/// approval request its refusal carried (`approval`: the result's
/// `_meta["tool-framework/approval"]`, [`APPROVAL_META`](crate::APPROVAL_META)), for the call of
/// the remote tool `remote` of `server`, registered here as `local`, at `now_secs` (seconds since
/// the Unix epoch):
///
/// - on a success the approval is ignored (an approval only comes with a refusal);
/// - on a refusal, an approval that [decodes](decode_approval) becomes
///   [`ToolError::Approval`] with [`ApprovalProblem::Missing`]: the model reads this registry's
///   text of the refusal (the preview, never the token; the upstream's own text is not used),
///   and the host gets the preview and the token as the message's
///   [`approval`](tool_runtime::ToolMessage::approval), for `local`, valid for the seconds left
///   to `expiresAt` (0 when past), with `server` first in its
///   [`servers`](tool_runtime::ApprovalRequest::servers) (the upstream's own list after it);
/// - one that does not decode, or that was refused before (`Err(why)`, the import's check of a
///   cached preview), is dropped: the refusal stays the upstream's text with a line saying why
///   its approval is not passed on, and the host gets no approval.
#[cfg(feature = "client")]
pub(crate) fn with_approval(
    outcome: Result<ToolResult, ToolError>,
    approval: Option<Result<&Value, &str>>,
    server: &str,
    (remote, local): (&str, &str),
    now_secs: u64,
) -> Result<ToolResult, ToolError> {
    let (Err(ToolError::Failed(text)), Some(approval)) = (&outcome, approval) else { return outcome };
    match approval.map_err(str::to_owned).and_then(|approval| decode_approval(approval, remote, now_secs)) {
        Ok(request) => {
            let valid_secs = request.expires_at.saturating_sub(now_secs);
            let servers = std::iter::once(server.to_owned()).chain(request.servers).collect();
            let request = ApprovalRequest { tool: local.to_owned(), servers, ..request };
            Err(ToolError::Approval {
                tool: local.to_owned(),
                problem: ApprovalProblem::Missing { request: Box::new(request), valid_secs },
            })
        }
        Err(why) => Err(ToolError::Failed(format!(
            "{text}\n[MCP server `{server}` asked for the user's approval with a request this registry does not pass \
             on ({why}); the call cannot be approved through this registry]"
        ))),
    }
}

/// An upstream's approval request for the call of its tool `remote`, decoded strictly: an object
/// of exactly `tool` (which must be `remote`), `preview` (a string of at most
/// [`MAX_APPROVAL_PREVIEW_BYTES`](crate::limits::MAX_APPROVAL_PREVIEW_BYTES) bytes, also once its
/// control, bidirectional and zero-width characters are written out as `⟦U+XXXX⟧`
/// ([`visible_text`](tool_runtime::talk::visible_text), as this registry's own previews are),
/// which is the preview passed on and must not hold the token), `token` (1 to
/// [`MAX_APPROVAL_TOKEN_BYTES`](crate::limits::MAX_APPROVAL_TOKEN_BYTES) visible ASCII characters)
/// and `expiresAt` (seconds since the Unix epoch, an unsigned integer, at most
/// [`MAX_APPROVAL_TTL`](tool_runtime::approvals::MAX_APPROVAL_TTL), 366 days, after `now_secs`:
/// no approval token of this framework lives longer, and the model reads the seconds left), and
/// optionally `servers` (the servers a gateway upstream passed the request on from: an array of
/// at most [`MAX_APPROVAL_SERVERS`](crate::limits::MAX_APPROVAL_SERVERS) names of 1 to
/// [`MAX_APPROVAL_SERVER_NAME_BYTES`](crate::limits::MAX_APPROVAL_SERVER_NAME_BYTES) bytes with
/// no control, bidirectional or zero-width character), as [`call_result`] writes it.
///
/// # Errors
/// Why it is refused, naming the field at fault and quoting nothing the upstream sent (a token
/// among it would reach the model).
#[cfg(feature = "client")]
pub(crate) fn decode_approval(approval: &Value, remote: &str, now_secs: u64) -> Result<ApprovalRequest, String> {
    use crate::limits::{MAX_APPROVAL_PREVIEW_BYTES, MAX_APPROVAL_TOKEN_BYTES};
    use tool_runtime::approvals::MAX_APPROVAL_TTL;

    const FIELDS: [&str; 5] = ["tool", "preview", "token", "expiresAt", "servers"];
    let Value::Object(fields) = approval else {
        return Err("it is not an object of `tool`, `preview`, `token` and `expiresAt`".to_owned());
    };
    if fields.keys().any(|key| !FIELDS.contains(&key.as_str())) {
        return Err("it has a field other than `tool`, `preview`, `token`, `expiresAt` and `servers`".to_owned());
    }
    let text = |key: &str| match fields.get(key) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("its `{key}` is not a string")),
        None => Err(format!("it has no `{key}`")),
    };
    let expires_at = match fields.get("expiresAt") {
        Some(value) => value.as_u64().ok_or("its `expiresAt` is not a whole number of seconds (0 or more)")?,
        None => return Err("it has no `expiresAt`".to_owned()),
    };
    if expires_at > now_secs.saturating_add(MAX_APPROVAL_TTL.as_secs()) {
        return Err(format!(
            "its `expiresAt` is more than {} days away, longer than any approval token lives",
            MAX_APPROVAL_TTL.as_secs() / 86_400
        ));
    }
    let servers = match fields.get("servers") {
        None => Vec::new(),
        Some(servers) => decode_servers(servers)?,
    };
    let mut request =
        ApprovalRequest { tool: text("tool")?, preview: text("preview")?, token: text("token")?, expires_at, servers };
    if request.tool != remote {
        return Err(format!("it is for another tool than `{remote}`"));
    }
    if request.preview.len() > MAX_APPROVAL_PREVIEW_BYTES {
        return Err(format!(
            "its preview is {} bytes, over the {MAX_APPROVAL_PREVIEW_BYTES} passed on",
            request.preview.len()
        ));
    }
    // Shown as this registry's own previews are: what the person reads is what runs.
    request.preview = tool_runtime::talk::visible_text(&request.preview);
    if request.preview.len() > MAX_APPROVAL_PREVIEW_BYTES {
        return Err(format!(
            "its preview is {} bytes with its control, bidirectional and zero-width characters written out, over \
             the {MAX_APPROVAL_PREVIEW_BYTES} passed on",
            request.preview.len()
        ));
    }
    let visible = request.token.bytes().all(|b| b.is_ascii_graphic());
    if request.token.is_empty() || request.token.len() > MAX_APPROVAL_TOKEN_BYTES || !visible {
        return Err(format!("its token is not 1 to {MAX_APPROVAL_TOKEN_BYTES} visible ASCII characters"));
    }
    if request.preview.contains(&request.token) {
        return Err("its preview holds its token, which the model would read".to_owned());
    }
    Ok(request)
}

/// The `servers` of an upstream's approval request ([`decode_approval`]).
#[cfg(feature = "client")]
fn decode_servers(servers: &Value) -> Result<Vec<String>, String> {
    use crate::limits::{MAX_APPROVAL_SERVER_NAME_BYTES, MAX_APPROVAL_SERVERS};
    let refused = || {
        format!(
            "its `servers` is not a list of at most {MAX_APPROVAL_SERVERS} names of 1 to \
             {MAX_APPROVAL_SERVER_NAME_BYTES} bytes without control, bidirectional or zero-width characters"
        )
    };
    let Value::Array(names) = servers else { return Err(refused()) };
    if names.len() > MAX_APPROVAL_SERVERS {
        return Err(refused());
    }
    names
        .iter()
        .map(|name| match name {
            Value::String(name) if is_server_name(name) => Ok(name.clone()),
            _ => Err(refused()),
        })
        .collect()
}

/// `true` for a name an approval request's `servers` may hold: 1 to
/// [`MAX_APPROVAL_SERVER_NAME_BYTES`](crate::limits::MAX_APPROVAL_SERVER_NAME_BYTES) bytes
/// without control, bidirectional or zero-width characters. An upstream's names are decoded by
/// it ([`decode_approval`]), and an import's own name must keep it (`McpImport::connect`).
#[cfg(feature = "client")]
pub(crate) fn is_server_name(name: &str) -> bool {
    (1..=crate::limits::MAX_APPROVAL_SERVER_NAME_BYTES).contains(&name.len())
        && !name.chars().any(char::is_control)
        && tool_runtime::talk::visible_text(name) == name
}

/// One content block: text, an image, audio, an embedded resource (text or blob), a resource
/// link, or any other block (or one missing a required field) as its JSON text.
#[cfg(feature = "client")]
fn content_part(block: &Value) -> ContentPart {
    let field = |key: &str| block.get(key).and_then(Value::as_str);
    let owned = |key: &str| field(key).map(str::to_owned);
    match field("type") {
        Some("text") => ContentPart::text(field("text").unwrap_or_default()),
        Some("image") => ContentPart::Image {
            data: field("data").unwrap_or_default().to_owned(),
            media_type: field("mimeType").unwrap_or("application/octet-stream").to_owned(),
            detail: None,
        },
        Some("audio") => ContentPart::Audio {
            data: field("data").unwrap_or_default().to_owned(),
            media_type: field("mimeType").unwrap_or("application/octet-stream").to_owned(),
        },
        Some("resource") => {
            let inner = |key: &str| block.get("resource").and_then(|r| r.get(key)).and_then(Value::as_str);
            let media_type = inner("mimeType").map(str::to_owned);
            match (inner("uri"), inner("text"), inner("blob")) {
                (Some(uri), Some(text), _) => ContentPart::resource_text(uri, media_type, text),
                (Some(uri), None, Some(blob)) => ContentPart::resource_blob(uri, media_type, blob),
                (None, Some(text), _) => ContentPart::text(text),
                _ => ContentPart::text(block.to_string()),
            }
        }
        Some("resource_link") => match (field("uri"), field("name")) {
            (Some(uri), Some(name)) => ContentPart::ResourceLink {
                uri: uri.to_owned(),
                name: name.to_owned(),
                title: owned("title"),
                description: owned("description"),
                media_type: owned("mimeType"),
            },
            _ => ContentPart::text(block.to_string()),
        },
        _ => ContentPart::text(block.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_unavailable_error_result_carries_the_marker_and_no_other_result_does() {
        let meta = |message: &ToolMessage| serde_json::to_value(call_result(message, false)).unwrap()["_meta"].clone();
        let busy = ToolMessage::error("c1", "pay", "busy").with_error_kind(tool_runtime::ToolErrorKind::Unavailable);
        let failed = ToolMessage::error("c1", "pay", "declined");
        let fine = ToolMessage::success("c1", "pay", tool_runtime::ToolResult::text("paid"));
        assert_eq!(meta(&busy), json!({crate::UNAVAILABLE_META: true}));
        assert_eq!((meta(&failed), meta(&fine)), (Value::Null, Value::Null));
    }

    #[cfg(feature = "client")]
    #[test]
    fn an_upstream_error_marked_true_is_unavailable_and_any_other_marker_is_a_failure() {
        let result = |marker: Value| {
            to_result(
                "up",
                "pay",
                &json!({"content": [{"type": "text", "text": "busy"}], "isError": true, "_meta": {crate::UNAVAILABLE_META: marker}}),
            )
        };
        assert_eq!(result(json!(true)), Err(ToolError::Unavailable("busy".to_owned())));
        assert_eq!(result(json!("true")), Err(ToolError::Failed("busy".to_owned())));
        assert_eq!(result(json!(1)), Err(ToolError::Failed("busy".to_owned())));
        assert_eq!(result(json!(false)), Err(ToolError::Failed("busy".to_owned())));
    }

    #[cfg(feature = "client")]
    #[test]
    fn the_marker_on_a_successful_result_is_ignored() {
        let answer = json!({"content": [{"type": "text", "text": "paid"}], "isError": false, "_meta": {crate::UNAVAILABLE_META: true}});
        assert_eq!(to_result("up", "pay", &answer), Ok(ToolResult::Text("paid".to_owned())));
    }

    fn definition(tags: &[&str]) -> ToolDefinition {
        ToolDefinition {
            name: "edit".to_owned(),
            description: "Edit a file.".to_owned(),
            input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
            set: Some("fs".to_owned()),
            tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            strict: None,
            output_schema: None,
            callers: tool_runtime::Callers::Direct,
        }
    }

    #[test]
    fn a_tool_entry_keeps_the_canonical_schema_and_says_it_is_closed_world() {
        assert_eq!(
            serde_json::to_value(tool_entry(&definition(&[]))).unwrap(),
            json!({
                "name": "edit",
                "description": "Edit a file.",
                "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
                "annotations": {"destructiveHint": false, "openWorldHint": false}
            })
        );
    }

    #[test]
    fn tags_become_annotations() {
        let entry = tool_entry(&definition(&["read_only", "destructive", "idempotent", "external", "other"]));
        assert_eq!(
            serde_json::to_value(entry.annotations).unwrap(),
            json!({"readOnlyHint": true, "destructiveHint": true, "idempotentHint": true, "openWorldHint": true})
        );
    }

    #[test]
    fn an_object_output_schema_is_served_as_output_schema_and_another_is_left_out() {
        let mut with = definition(&[]);
        with.output_schema = Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        assert_eq!(
            serde_json::to_value(tool_entry(&with).output_schema).unwrap(),
            json!({"type": "object", "properties": {"n": {"type": "integer"}}})
        );
        with.output_schema = Some(json!({"type": "array"}));
        assert_eq!(tool_entry(&with).output_schema, None);
    }

    #[test]
    fn a_json_result_of_a_tool_with_an_output_schema_is_structured_content_beside_its_text() {
        let message = ToolMessage::success("c1", "write", tool_runtime::ToolResult::Json(json!({"created": true})));
        assert_eq!(
            serde_json::to_value(call_result(&message, true)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "{\"created\":true}"}],
                "structuredContent": {"created": true},
                "isError": false
            })
        );
        assert_eq!(serde_json::to_value(call_result(&message, false)).unwrap().get("structuredContent"), None);
    }

    #[test]
    fn parts_become_text_and_image_blocks_in_order() {
        let message = ToolMessage::success(
            "c1",
            "view_image",
            tool_runtime::ToolResult::Parts(vec![
                ContentPart::text("a.png (1x1)"),
                ContentPart::Image {
                    data: "iVBORw0KGgo=".to_owned(),
                    media_type: "image/png".to_owned(),
                    detail: None,
                },
            ]),
        );
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [
                    {"type": "text", "text": "a.png (1x1)"},
                    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
                ],
                "isError": false
            })
        );
    }

    #[test]
    fn the_ref_id_and_trimmed_flag_go_in_meta() {
        let mut message =
            ToolMessage::success("c1", "grep", tool_runtime::ToolResult::text("a\n[tool output trimmed; ref_id=c1]"));
        message.ref_id = Some("c1".to_owned());
        message.trimmed = true;
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "a\n[tool output trimmed; ref_id=c1]"}],
                "isError": false,
                "_meta": {"ref_id": "c1", "trimmed": true}
            })
        );
    }

    #[test]
    fn an_error_message_is_an_is_error_result() {
        let message = ToolMessage::error("c1", "read", "File not found: a.txt");
        assert_eq!(
            serde_json::to_value(call_result(&message, false)).unwrap(),
            json!({"resultType": "complete", "content": [{"type": "text", "text": "File not found: a.txt"}], "isError": true})
        );
    }

    /// A well-formed approval request of `t0`, its `key` set to `value` (`null`: left out).
    #[cfg(feature = "client")]
    fn approval_with(key: &str, value: Value) -> Value {
        let mut approval = json!({"tool": "t0", "preview": "call `t0`", "token": "ap1.9.ab.cd", "expiresAt": 9});
        match value {
            Value::Null => approval.as_object_mut().unwrap().remove(key),
            value => approval.as_object_mut().unwrap().insert(key.to_owned(), value),
        };
        approval
    }

    #[cfg(feature = "client")]
    #[test]
    fn a_well_formed_approval_request_decodes_to_its_four_fields() {
        let request = decode_approval(&approval_with("tool", json!("t0")), "t0", 0).unwrap();
        assert_eq!(
            (request.tool.as_str(), request.preview.as_str(), request.token.as_str(), request.expires_at),
            ("t0", "call `t0`", "ap1.9.ab.cd", 9)
        );
    }

    #[cfg(feature = "client")]
    #[test]
    fn each_malformed_approval_request_is_refused_saying_which_field_without_quoting_it() {
        let cases = [
            (json!(["ap1.9.ab.cd"]), "it is not an object of `tool`, `preview`, `token` and `expiresAt`"),
            (
                approval_with("ap1.9.ab.cd", json!(1)),
                "it has a field other than `tool`, `preview`, `token`, `expiresAt` and `servers`",
            ),
            (approval_with("tool", Value::Null), "it has no `tool`"),
            (approval_with("preview", json!(7)), "its `preview` is not a string"),
            (approval_with("token", json!({"t": "ap1.9.ab.cd"})), "its `token` is not a string"),
            (approval_with("expiresAt", json!("9")), "its `expiresAt` is not a whole number of seconds (0 or more)"),
            (approval_with("expiresAt", json!(-1)), "its `expiresAt` is not a whole number of seconds (0 or more)"),
            (approval_with("expiresAt", Value::Null), "it has no `expiresAt`"),
            (
                approval_with("expiresAt", json!(366 * 86_400 + 1)),
                "its `expiresAt` is more than 366 days away, longer than any approval token lives",
            ),
            (
                approval_with("expiresAt", json!(u64::MAX)),
                "its `expiresAt` is more than 366 days away, longer than any approval token lives",
            ),
            (approval_with("tool", json!("t1")), "it is for another tool than `t0`"),
            (approval_with("token", json!("")), "its token is not 1 to 1024 visible ASCII characters"),
            (approval_with("token", json!("ap1 9")), "its token is not 1 to 1024 visible ASCII characters"),
            (approval_with("token", json!("ap1.é")), "its token is not 1 to 1024 visible ASCII characters"),
            (approval_with("token", json!("a".repeat(1025))), "its token is not 1 to 1024 visible ASCII characters"),
            (
                approval_with("preview", json!("send ap1.9.ab.cd")),
                "its preview holds its token, which the model would read",
            ),
            (
                approval_with("preview", json!("x".repeat(65_537))),
                "its preview is 65537 bytes, over the 65536 passed on",
            ),
            (
                approval_with("preview", json!("\u{1}".repeat(6_000))),
                "its preview is 72000 bytes with its control, bidirectional and zero-width characters written out, \
                 over the 65536 passed on",
            ),
        ];
        for (approval, why) in cases {
            assert_eq!(decode_approval(&approval, "t0", 0).map(|r| r.token), Err(why.to_owned()), "{approval}");
        }
    }

    #[cfg(feature = "client")]
    #[test]
    fn each_malformed_list_of_servers_is_refused_without_quoting_it() {
        let why = "its `servers` is not a list of at most 32 names of 1 to 128 bytes without control, bidirectional \
                   or zero-width characters";
        let cases = [
            json!("edge"),
            json!([""]),
            json!([7]),
            json!(["x".repeat(129)]),
            json!(["ed\nge"]),
            json!(["ed\u{202E}ge"]),
            json!(["ed\u{200B}ge"]),
            Value::from(vec!["s"; 33]),
        ];
        for servers in cases {
            let approval = approval_with("servers", servers.clone());
            assert_eq!(decode_approval(&approval, "t0", 0).map(|r| r.token), Err(why.to_owned()), "{servers}");
        }
    }

    #[cfg(feature = "client")]
    #[test]
    fn the_longest_list_of_servers_is_passed_on_after_the_name_of_the_import() {
        let mut servers = vec!["x".repeat(128)];
        servers.extend(std::iter::repeat_n("mid".to_owned(), 31));
        let approval = approval_with("servers", json!(servers));
        let refused = Err(ToolError::Failed("refused".to_owned()));
        match with_approval(refused, Some(Ok(&approval)), "up", ("t0", "gw_t0"), 0) {
            Err(ToolError::Approval { problem: ApprovalProblem::Missing { request, .. }, .. }) => {
                assert_eq!(request.servers[..2], ["up".to_owned(), "x".repeat(128)]);
                assert_eq!(request.servers.len(), 33);
            }
            other => panic!("not an approval: {other:?}"),
        }
    }

    #[test]
    fn an_approval_requests_servers_go_in_meta_only_when_it_came_from_another_server() {
        let request = |servers: Vec<String>| tool_runtime::ApprovalRequest {
            tool: "t0".to_owned(),
            preview: "call `t0`".to_owned(),
            token: "ap1.9.ab.cd".to_owned(),
            expires_at: 9,
            servers,
        };
        let meta = |servers| {
            let message =
                ToolMessage { approval: Some(Box::new(request(servers))), ..ToolMessage::error("c1", "t0", "refused") };
            serde_json::to_value(call_result(&message, false)).unwrap()["_meta"][crate::APPROVAL_META].clone()
        };
        assert_eq!(
            meta(Vec::new()),
            json!({"tool": "t0", "preview": "call `t0`", "token": "ap1.9.ab.cd", "expiresAt": 9})
        );
        assert_eq!(
            meta(vec!["edge".to_owned(), "origin".to_owned()]),
            json!({"tool": "t0", "preview": "call `t0`", "token": "ap1.9.ab.cd", "expiresAt": 9, "servers": ["edge", "origin"]})
        );
    }

    #[cfg(feature = "client")]
    #[test]
    fn an_expiry_366_days_after_now_is_passed_on_and_one_second_more_is_not() {
        let now = 1_785_229_501;
        let at = |expires_at: u64| decode_approval(&approval_with("expiresAt", json!(expires_at)), "t0", now);
        assert_eq!(at(now + 366 * 86_400).map(|r| r.expires_at), Ok(now + 366 * 86_400));
        assert_eq!(
            at(now + 366 * 86_400 + 1).map(|r| r.expires_at),
            Err("its `expiresAt` is more than 366 days away, longer than any approval token lives".to_owned())
        );
    }

    #[cfg(feature = "client")]
    #[test]
    fn the_longest_preview_and_token_are_passed_on() {
        let mut approval = approval_with("preview", json!("x".repeat(65_536)));
        approval["token"] = json!("a".repeat(1024));
        assert_eq!(decode_approval(&approval, "t0", 0).map(|r| (r.preview.len(), r.token.len())), Ok((65_536, 1024)));
    }

    #[cfg(feature = "client")]
    #[test]
    fn an_approval_with_a_success_is_ignored_and_with_a_refusal_becomes_the_hosts_request() {
        let approval = approval_with("expiresAt", json!(100));
        let ignored = with_approval(Ok(ToolResult::text("done")), Some(Ok(&approval)), "up", ("t0", "gw_t0"), 40);
        assert_eq!(ignored.unwrap(), ToolResult::text("done"));
        let refused = Err(ToolError::Failed("refused".to_owned()));
        match with_approval(refused, Some(Ok(&approval)), "up", ("t0", "gw_t0"), 40) {
            Err(ToolError::Approval { tool, problem: ApprovalProblem::Missing { request, valid_secs } }) => {
                assert_eq!((tool.as_str(), request.tool.as_str(), valid_secs), ("gw_t0", "gw_t0", 60));
            }
            other => panic!("not an approval: {other:?}"),
        }
    }
}
