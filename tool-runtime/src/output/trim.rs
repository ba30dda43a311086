//! Context trimming: the oldest tool outputs of a message history give way to a placeholder.

use serde_json::Value;

/// The message-history shape [`trim_context`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HistoryShape {
    /// OpenAI Chat Completions: an `assistant` message with `tool_calls[].id`, answered by
    /// `{"role":"tool","tool_call_id":..,"content":..}` messages; `content` is a string or an array
    /// of parts (`{"type":"text","text":..}`, `{"type":"image_url",..}`).
    OpenAiChat,
    /// Anthropic Messages: an `assistant` message with `{"type":"tool_use","id":..}` blocks, answered
    /// by `{"type":"tool_result","tool_use_id":..,"content":..}` blocks in a `user` message;
    /// `content` is a string or an array of `text` / `image` blocks.
    Anthropic,
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

/// The placeholder a trimmed output becomes: `[tool output trimmed; ref=ID]` with the output's ref
/// id (its message's `output_ref`), or `[tool output trimmed]` for an output that has none.
pub fn trimmed_placeholder(output_ref: Option<&str>) -> String {
    match output_ref {
        Some(ref_id) => format!("[tool output trimmed; ref={ref_id}]"),
        None => "[tool output trimmed]".to_owned(),
    }
}

/// Where one tool result sits in the history.
struct Slot {
    message: usize,
    block: Option<usize>,
    call_id: String,
    tokens: usize,
}

/// Trims the oldest tool outputs of `history` until the estimate of all tool-output tokens is at
/// most `budget_tokens` (or nothing is left to trim). `output_ref` gives the ref id of a tool call
/// id's output (the `output_ref` of the message that answered it; the output layer mints ref ids,
/// they are not the call ids), `None` when it has none.
///
/// A trimmed result keeps its place, its call id and its error flag; its whole content (text and
/// images) becomes [`trimmed_placeholder`], a string. The tool call that asked for it is not
/// touched, so a call and its result stay together: no result without its call, no call without a
/// result. Results that are already placeholders, or that have no text, are skipped. Results whose
/// call is not in `history` are trimmed like the others (their pair is already elsewhere).
pub fn trim_context(
    history: &mut [Value],
    shape: HistoryShape,
    budget_tokens: usize,
    output_ref: &dyn Fn(&str) -> Option<String>,
) -> TrimReport {
    let mut slots = Vec::new();
    for (m, message) in history.iter().enumerate() {
        match shape {
            HistoryShape::OpenAiChat => {
                if message.get("role").and_then(Value::as_str) == Some("tool") {
                    let call_id = message.get("tool_call_id").and_then(Value::as_str).unwrap_or_default();
                    let tokens = estimate_tokens(text_bytes(message.get("content")));
                    slots.push(Slot { message: m, block: None, call_id: call_id.to_owned(), tokens });
                }
            }
            HistoryShape::Anthropic => {
                let Some(blocks) = message.get("content").and_then(Value::as_array) else { continue };
                for (b, block) in blocks.iter().enumerate() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_result") {
                        let call_id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or_default();
                        let tokens = estimate_tokens(text_bytes(block.get("content")));
                        slots.push(Slot { message: m, block: Some(b), call_id: call_id.to_owned(), tokens });
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
        let placeholder = trimmed_placeholder(output_ref(&slot.call_id).as_deref());
        let target = match slot.block {
            None => &mut history[slot.message],
            Some(b) => &mut history[slot.message]["content"][b],
        };
        if slot.tokens == 0 || target.get("content").and_then(Value::as_str) == Some(placeholder.as_str()) {
            continue;
        }
        let new_tokens = estimate_tokens(placeholder.len());
        if new_tokens >= slot.tokens {
            continue;
        }
        target["content"] = Value::String(placeholder);
        total = total - slot.tokens + new_tokens;
        report.trimmed.push(slot.call_id.clone());
    }
    report.tokens_after = total;
    report
}

/// Bytes of text in a result's content: a string, or the `text` of its text parts.
fn text_bytes(content: Option<&Value>) -> usize {
    match content {
        Some(Value::String(s)) => s.len(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .map(str::len)
            .sum(),
        _ => 0,
    }
}
