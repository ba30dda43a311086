//! Context trimming: the oldest tool outputs of a message history give way to a placeholder.

use serde_json::Value;

use super::Provider;

/// The message-history shape [`trim_context`] reads: the four the [provider
/// module](crate::provider) renders results in ([`Provider::render_tool_results`]), one per
/// [`Provider`] (`HistoryShape::from(provider)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryShape {
    /// OpenAI Chat Completions: an `assistant` message with `tool_calls[].id`, answered by
    /// `{"role":"tool","tool_call_id":..,"content":..}` messages; `content` is a string or an array
    /// of parts (`{"type":"text","text":..}`, `{"type":"image_url",..}`).
    OpenAiChat,
    /// OpenAI Responses: `input` items `{"type":"function_call","call_id":..}`, answered by
    /// `{"type":"function_call_output","call_id":..,"output":..}` items; `output` is a string or an
    /// array of parts (`{"type":"input_text","text":..}`, `{"type":"input_image",..}`).
    OpenAiResponses,
    /// Anthropic Messages: an `assistant` message with `{"type":"tool_use","id":..}` blocks, answered
    /// by `{"type":"tool_result","tool_use_id":..,"content":..}` blocks in a `user` message;
    /// `content` is a string or an array of `text` / `image` / `document` blocks (a `document`
    /// with a plain-text source counts as text).
    Anthropic,
    /// Gemini `contents`: a `model` content with `{"functionCall":{..}}` parts, answered by
    /// `{"functionResponse":{"name":..,"id"?:..,"response":{"output":..},"parts"?:[..]}}` parts in a
    /// `user` content (`"error"` instead of `"output"` for an error). The result is the value of
    /// `output` (or `error`); a `response` with neither counts and is trimmed as a whole. The
    /// media `parts` count 0 and are removed with the text when the result is trimmed.
    Gemini,
}

impl From<Provider> for HistoryShape {
    fn from(provider: Provider) -> Self {
        match provider {
            Provider::OpenAiChat => Self::OpenAiChat,
            Provider::OpenAiResponses => Self::OpenAiResponses,
            Provider::Anthropic => Self::Anthropic,
            Provider::Gemini => Self::Gemini,
        }
    }
}

/// What [`trim_context`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TrimReport {
    /// The tool call ids whose outputs were replaced, oldest first.
    pub trimmed: Vec<String>,
    /// The estimate of tool-output tokens before trimming.
    pub tokens_before: usize,
    /// The estimate after trimming.
    pub tokens_after: usize,
}

/// The token estimate of tool output: UTF-8 bytes / 4, rounded up (the rule of `tools-spec.md`).
/// Images count 0: providers bill them by pixels, not by their base64 text.
pub fn estimate_tokens(bytes: usize) -> usize {
    bytes.div_ceil(4)
}

/// The placeholder a trimmed output becomes: `[tool output trimmed; ref_id=ID]` with the output's ref
/// id (its message's `ref_id`), or `[tool output trimmed]` for an output that has none.
pub fn trimmed_placeholder(ref_id: Option<&str>) -> String {
    match ref_id {
        Some(ref_id) => format!("[tool output trimmed; ref_id={ref_id}]"),
        None => "[tool output trimmed]".to_owned(),
    }
}

/// Where one tool result sits in the history.
struct Slot {
    message: usize,
    /// The JSON Pointer, from the message, of the value the placeholder replaces.
    pointer: String,
    /// The call id; `None` for a Gemini result without `id`.
    call_id: Option<String>,
    /// What the report names: the call id, or a Gemini result's function name.
    label: String,
    /// A Gemini `response` with neither `output` nor `error`: it becomes `{"output": placeholder}`.
    whole_response: bool,
    /// For a Gemini result, the JSON Pointer of its `functionResponse`, whose media `parts` go
    /// with the text when it is trimmed.
    media_holder: Option<String>,
    tokens: usize,
}

/// Trims the oldest tool outputs of `history` until the estimate of all tool-output tokens is at
/// most `budget_tokens` (or nothing is left to trim). `ref_of` gives the ref id of a tool call
/// id's output (the `ref_id` of the message that answered it; the output layer mints ref ids,
/// they are not the call ids), `None` when it has none.
///
/// A trimmed result keeps its place, its call id and its error flag (Anthropic's `is_error`,
/// Gemini's `error` key); its whole content (text, images and documents; a Gemini result's media
/// `parts` are removed) becomes [`trimmed_placeholder`], a string. The tool call that asked for it is not touched, so a call and its result stay together:
/// no result without its call, no call without a result. Results that are already placeholders,
/// or that have no text, are skipped. Results whose call is not in `history` are trimmed like the
/// others (their pair is already elsewhere).
///
/// A Gemini result without `id` ([`Provider::render_tool_results`] leaves out the ids it did not
/// get from the model) cannot be matched to its call id: its placeholder is
/// `[tool output trimmed]`, and [`TrimReport::trimmed`] names it by its function name.
pub fn trim_context(
    history: &mut [Value],
    shape: HistoryShape,
    budget_tokens: usize,
    ref_of: &dyn Fn(&str) -> Option<String>,
) -> TrimReport {
    let mut slots = Vec::new();
    for (m, message) in history.iter().enumerate() {
        match shape {
            HistoryShape::OpenAiChat => {
                if message.get("role").and_then(Value::as_str) == Some("tool") {
                    slots.push(Slot::of(m, "/content".to_owned(), message, "tool_call_id", message.get("content")));
                }
            }
            HistoryShape::OpenAiResponses => {
                if message.get("type").and_then(Value::as_str) == Some("function_call_output") {
                    slots.push(Slot::of(m, "/output".to_owned(), message, "call_id", message.get("output")));
                }
            }
            HistoryShape::Anthropic => {
                let Some(blocks) = message.get("content").and_then(Value::as_array) else { continue };
                for (b, block) in blocks.iter().enumerate() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        slots.push(Slot::of(
                            m,
                            format!("/content/{b}/content"),
                            block,
                            "tool_use_id",
                            block.get("content"),
                        ));
                    }
                }
            }
            HistoryShape::Gemini => {
                let Some(parts) = message.get("parts").and_then(Value::as_array) else { continue };
                for (p, part) in parts.iter().enumerate() {
                    if let Some(slot) = Slot::gemini(m, p, part) {
                        slots.push(slot);
                    }
                }
            }
        }
    }
    let before: usize = slots.iter().map(|s| s.tokens).sum();
    let mut total = before;
    let mut report = TrimReport { tokens_before: before, ..TrimReport::default() };
    for slot in &slots {
        if total <= budget_tokens {
            break;
        }
        let placeholder = trimmed_placeholder(slot.call_id.as_deref().and_then(ref_of).as_deref());
        let Some(target) = history[slot.message].pointer_mut(&slot.pointer) else { continue };
        let trimmed = if slot.whole_response {
            serde_json::json!({"output": placeholder})
        } else {
            Value::String(placeholder.clone())
        };
        if slot.tokens == 0 || *target == trimmed {
            continue;
        }
        let new_tokens = estimate_tokens(placeholder.len());
        if new_tokens >= slot.tokens {
            continue;
        }
        *target = trimmed;
        if let Some(holder) = &slot.media_holder
            && let Some(Value::Object(response)) = history[slot.message].pointer_mut(holder)
        {
            response.remove("parts");
        }
        total = total - slot.tokens + new_tokens;
        report.trimmed.push(slot.label.clone());
    }
    report.tokens_after = total;
    report
}

impl Slot {
    /// The result at `pointer` of message `message`, whose call id is `holder[id_key]`, its
    /// content `content`.
    fn of(message: usize, pointer: String, holder: &Value, id_key: &str, content: Option<&Value>) -> Self {
        let call_id = holder.get(id_key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let tokens = estimate_tokens(text_bytes(content));
        Self {
            message,
            pointer,
            label: call_id.clone(),
            call_id: Some(call_id),
            whole_response: false,
            media_holder: None,
            tokens,
        }
    }

    /// The result of the Gemini part `parts[part]` of message `message`, when it is a
    /// `functionResponse`.
    fn gemini(message: usize, part: usize, value: &Value) -> Option<Self> {
        let response = value.get("functionResponse")?;
        let call_id = response.get("id").and_then(Value::as_str).map(str::to_owned);
        let label = call_id
            .clone()
            .unwrap_or_else(|| response.get("name").and_then(Value::as_str).unwrap_or_default().to_owned());
        let body = response.get("response");
        let key = ["output", "error"].into_iter().find(|k| body.and_then(|b| b.get(k)).is_some());
        let (pointer, content) = match key {
            Some(key) => (format!("/parts/{part}/functionResponse/response/{key}"), body.and_then(|b| b.get(key))),
            None => (format!("/parts/{part}/functionResponse/response"), body),
        };
        let bytes = match content {
            Some(Value::String(text)) => text.len(),
            Some(other) => serde_json::to_string(other).map_or(0, |text| text.len()),
            None => 0,
        };
        Some(Self {
            message,
            pointer,
            call_id,
            label,
            whole_response: key.is_none(),
            media_holder: Some(format!("/parts/{part}/functionResponse")),
            tokens: estimate_tokens(bytes),
        })
    }
}

/// Bytes of text in a result's content: a string, or the text of its text parts (the `text` of
/// `text` and OpenAI Responses' `input_text` parts, the `source.data` of an Anthropic `document`
/// with a plain-text source).
fn text_bytes(content: Option<&Value>) -> usize {
    match content {
        Some(Value::String(s)) => s.len(),
        Some(Value::Array(parts)) => parts.iter().filter_map(part_text).map(str::len).sum(),
        _ => 0,
    }
}

/// The text of one part of a result's content, for [`text_bytes`]; `None` for media.
fn part_text(part: &Value) -> Option<&str> {
    match part.get("type").and_then(Value::as_str)? {
        "text" | "input_text" => part.get("text").and_then(Value::as_str),
        "document" => {
            let source = part.get("source")?;
            (source.get("type").and_then(Value::as_str) == Some("text"))
                .then(|| source.get("data").and_then(Value::as_str))
                .flatten()
        }
        _ => None,
    }
}
