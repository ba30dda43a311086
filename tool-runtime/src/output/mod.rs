//! The output layer: what the model sees of tool output, with nothing lost.
//!
//! Tool output is what fills an agent's context window. This module decides how much of it the model
//! sees, and keeps the rest reachable by ref id:
//!
//! - [`truncate_head`] / [`truncate_tail`]: per-call caps (2000 lines / 50 KiB, env `TOOL_MAX_LINES`,
//!   `TOOL_MAX_BYTES`), whole lines, never a split character.
//! - [`apply_turn_budget`]: the text results of one turn share 64 KiB (env `TOOL_MAX_TURN_BYTES`) by
//!   max-min fairness; a cut result keeps a head and a tail around a marker.
//! - [`store_stream`] / [`stream_result`]: a result too large for a `String`, read from a stream
//!   into the store as it arrives, with only the head and tail of its preview in memory.
//! - [`OutputStore`]: the output cache ([`MemoryStore`], `FileStore` with the cargo feature
//!   `file-store`), behind the registry-scoped dependency [`OUTPUT_STORE`]; [`open_lines`] and
//!   `grep_stored` (cargo feature `grep`) stream over it. Every store is
//!   bounded ([`StoreLimits`]: 24 hours since last use, 256 MiB, env `TOOL_OUTPUT_TTL_SECS`,
//!   `TOOL_OUTPUT_MAX_BYTES`; least recently used first out, kept by a [`UsageIndex`]).
//! - Ref ids: minted by the layer ([`mint_ref_id`]: 22 characters, 128 unguessable bits), never a
//!   provider's call id, and good only in the [`OutputScope`] (session, principal) that made them:
//!   a reader goes through a [`ScopedStore`], to which a ref of another scope reads exactly as an
//!   unknown one. A ref has one name wherever a model or a client meets it: `ref_id`, the cache
//!   tools' parameter, is also [`ToolMessage::ref_id`], MCP's `_meta` key, the `ref_id=ID` of the
//!   markers and the field of a tool result that names its own cached part (a cut diff).
//! - [`trim_context`](crate::provider::trim_context) (in [`provider`](crate::provider), which knows
//!   the history shapes): the oldest tool outputs of a history become
//!   `[tool output trimmed; ref_id=ID]`.
//! - `parse_page`, `page_rows`, `offset_token` (cargo feature `paging`); [`is_binary`], [`detect_image_mime`];
//!   [`split_lines`], [`truncate_text`].
//!
//! The dispatcher applies an [`OutputLayer`] when the registry is built with one
//! (`Registry::builder().output(OutputLayer::from_env()?)`): every message is stored under a new
//! ref id in its call's scope and gets it as `ref_id`, a message over the per-message cap keeps whole lines and ends with
//! `[tool output truncated; ref_id=ID]`, and the messages of a batch share the turn budget.

mod budget;
#[cfg(feature = "paging")]
mod paging;
pub(crate) mod scope;
#[cfg(feature = "grep")]
mod search;
mod sniff;
pub(crate) mod store;
mod stream;
mod truncate;
mod usage;

use std::sync::Arc;

pub use budget::{
    DEFAULT_TURN_BYTES, MAX_TURN_BYTES_ENV, TurnBudgetResult, TurnOutput, apply_turn_budget, fair_shares,
    turn_bytes_from_env,
};
#[cfg(feature = "paging")]
pub use paging::{PageError, offset_token, page_rows, parse_page};
pub use scope::OutputScope;
#[cfg(feature = "grep")]
pub use search::{GrepError, GrepHits, GrepLine, GrepQuery, MAX_SEARCH_LINE_BYTES, grep_matcher, grep_stored};
pub use sniff::{SNIFF_BYTES, binary_reason, detect_image_mime, is_binary};
pub use store::ScopedStore;
pub use store::{
    CHECKPOINT_LINES, DEFAULT_OUTPUT_LIMITS, DEFAULT_OUTPUT_MAX_BYTES, DEFAULT_OUTPUT_TTL, FILE_ENTRY_OVERHEAD,
    LineCursor, LinePrefix, MAX_REF_ID_LEN, MEMORY_ENTRY_OVERHEAD, MemoryStore, OUTPUT_MAX_BYTES_ENV, OUTPUT_STORE,
    OUTPUT_TTL_ENV, OutputStore, StoreError, StoredInfo, limits_from_env, open_lines, output_limits_from_env, put_text,
    validate_ref_id,
};
#[cfg(feature = "file-store")]
pub use store::{FileStore, default_cache_dir};
pub use stream::{STREAM_PREVIEW_BYTES, StreamedOutput, store_stream, stream_result};
pub use truncate::{
    MAX_BYTES_ENV, MAX_LINES_ENV, OutputLimits, TruncatedBy, Truncation, split_lines, truncate_head, truncate_tail,
    truncate_text,
};
pub use usage::{Dropped, Expiry, Lookup, REMEMBERED_EXPIRIES, StoreLimits, UsageIndex};

use crate::context::ToolContext;
pub use crate::ref_id::{REF_ID_LEN, mint_ref_id};
use crate::result::{ContentPart, MessageContent, ToolMessage};

/// The names of the tools that read the output cache. Their messages are not stored again (their
/// text is already in the cache under the ref they read) and not capped per message (they page
/// themselves); they get no `ref_id`.
pub const CACHE_TOOLS: [&str; 3] = ["tool_output_cache", "tool_output_cache_grep", "tool_output_cache_line"];

/// The marker that ends a message cut by the per-message cap.
pub fn truncated_marker(ref_id: &str) -> String {
    format!("[tool output truncated; ref_id={ref_id}]")
}

/// The output policy the dispatcher applies to every message and every batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLayer {
    limits: OutputLimits,
    turn_bytes: usize,
    exempt: Vec<String>,
    /// The cache tools of the registry the layer serves (set when the registry is built).
    readers: budget::Readers,
}

impl Default for OutputLayer {
    /// Caps 2000 lines / 50 KiB per message, a turn budget of 64 KiB, the [`CACHE_TOOLS`] exempt.
    fn default() -> Self {
        Self {
            limits: OutputLimits::default(),
            turn_bytes: DEFAULT_TURN_BYTES,
            exempt: CACHE_TOOLS.iter().map(|s| (*s).to_owned()).collect(),
            readers: budget::Readers::BOTH,
        }
    }
}

impl OutputLayer {
    /// The defaults (see [`OutputLayer::default`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The defaults with `TOOL_MAX_LINES`, `TOOL_MAX_BYTES` and `TOOL_MAX_TURN_BYTES` applied.
    ///
    /// # Errors
    /// A message naming the variable when one is set but not a positive integer.
    pub fn from_env() -> Result<Self, String> {
        Ok(Self { limits: OutputLimits::from_env()?, turn_bytes: turn_bytes_from_env()?, ..Self::default() })
    }

    /// Sets the per-message caps.
    #[must_use]
    pub fn limits(mut self, limits: OutputLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the turn budget, in bytes.
    #[must_use]
    pub fn turn_bytes(mut self, bytes: usize) -> Self {
        self.turn_bytes = bytes;
        self
    }

    /// This layer for a registry of the tools `names`: its turn-budget markers name only the
    /// cache tools among them.
    pub(crate) fn for_tools<'a>(&self, mut names: impl Iterator<Item = &'a str> + Clone) -> Option<Self> {
        let readers = budget::Readers {
            read: names.clone().any(|n| n == CACHE_TOOLS[0]),
            grep: names.any(|n| n == CACHE_TOOLS[1]),
        };
        (readers != self.readers).then(|| Self { readers, ..self.clone() })
    }

    /// Adds a tool whose messages are left alone (not stored, not capped), like [`CACHE_TOOLS`].
    #[must_use]
    pub fn exempt(mut self, tool_name: impl Into<String>) -> Self {
        self.exempt.push(tool_name.into());
        self
    }

    /// The per-message caps.
    pub fn output_limits(&self) -> OutputLimits {
        self.limits
    }

    /// The turn budget in bytes.
    pub fn turn_budget(&self) -> usize {
        self.turn_bytes
    }

    /// `true` for a tool whose messages are left alone ([`OutputLayer::exempt`]).
    pub(crate) fn is_exempt(&self, tool_name: &str) -> bool {
        self.exempt.iter().any(|n| n == tool_name)
    }

    /// [`OutputLayer::finish_message`] with `store`, in the scope of `ctx` ([`OutputScope::of`]),
    /// on the calling thread for a store that does not [block](OutputStore::blocks), else on
    /// tokio's blocking pool (on the calling thread outside a tokio runtime). When the runtime
    /// shuts down before the blocking pool ran it, the message is returned whole, without
    /// `ref_id`; a panic of the store goes on unwinding here, as it would inline.
    pub(crate) async fn finish_in(
        self: &Arc<Self>,
        message: ToolMessage,
        store: Arc<dyn OutputStore>,
        ctx: &ToolContext,
    ) -> ToolMessage {
        if !store.blocks() {
            return self.finish_message(message, &*store, OutputScope::of(ctx));
        }
        // Kept for a runtime that shuts down: the disk's work dwarfs the copy.
        let whole = message.clone();
        let layer = Arc::clone(self);
        let (session, principal) = (ctx.session_id().map(str::to_owned), ctx.principal().map(str::to_owned));
        let finish = move || {
            let scope = OutputScope { session: session.as_deref(), principal: principal.as_deref() };
            layer.finish_message(message, &*store, scope)
        };
        crate::off_worker(finish).await.unwrap_or(whole)
    }

    /// Stores the message's text projection and typed parts under a new ref id ([`mint_ref_id`]),
    /// made in `scope` (the call's session and principal, [`OutputScope::of`] its context), sets
    /// `ref_id`, and applies the per-message cap: over the cap, the
    /// text keeps whole lines up to it and ends with [`truncated_marker`], and `trimmed` is set.
    /// An embedded text resource's text is capped as a text part is; images, audio, binary
    /// resources and resource links stay in place. When the first line alone is over the byte cap, its longest prefix
    /// within the cap (cut at a character boundary) is kept instead, so the model sees something.
    ///
    /// A message of a [`ToolResult::Stored`](crate::ToolResult::Stored) result is in the store
    /// already: it keeps its `ref_id` and is only capped.
    ///
    /// Nothing is lost: when the message cannot be stored (no ref id could be minted, store
    /// failure) it is returned whole, without `ref_id`. Messages of exempt tools are returned
    /// unchanged.
    pub fn finish_message(
        &self,
        mut message: ToolMessage,
        store: &dyn OutputStore,
        scope: OutputScope<'_>,
    ) -> ToolMessage {
        if self.is_exempt(&message.tool_name) {
            return message;
        }
        let ref_id = match message.ref_id.take() {
            // Stored already, as it was streamed (`ToolResult::Stored`).
            Some(ref_id) => ref_id,
            None => {
                let Ok(ref_id) = mint_ref_id() else { return message };
                let parts: Vec<ContentPart> = match &message.content {
                    MessageContent::Text(_) => Vec::new(),
                    MessageContent::Parts(parts) => {
                        // The text parts are in the stored text already.
                        parts.iter().filter(|p| p.capped_text().is_none()).cloned().collect()
                    }
                };
                if store.put_scoped(scope, &ref_id, &mut message.text().as_bytes(), &parts).is_err() {
                    return message;
                }
                ref_id
            }
        };
        // Made only for a cut: most messages fit.
        let marker = || truncated_marker(&ref_id);
        let mut left = self.limits;
        let mut cut = false;
        let mut cap = |text: &mut String| {
            if cut {
                text.clear();
                return;
            }
            let t = truncate_head(text, left);
            if !t.truncated() {
                left.max_bytes = left.max_bytes.saturating_sub(text.len() + 1);
                left.max_lines = left.max_lines.saturating_sub(t.total_lines);
                return;
            }
            let kept = if t.first_line_exceeds_limit {
                let first = text.split('\n').next().unwrap_or_default();
                truncate_text(first, left.max_bytes).0
            } else {
                t.content
            };
            *text = if kept.is_empty() { marker() } else { format!("{kept}\n{}", marker()) };
            cut = true;
        };
        match &mut message.content {
            MessageContent::Text(text) => cap(text),
            MessageContent::Parts(parts) => {
                for text in parts.iter_mut().filter_map(ContentPart::capped_text_mut) {
                    cap(text);
                }
                parts.retain(|p| p.capped_text() != Some(""));
            }
        }
        if cut {
            message.trimmed = true;
        }
        message.ref_id = Some(ref_id);
        message
    }

    /// Applies the turn budget to the messages of one batch, in call order: every text (a text
    /// message, or each text part and embedded text resource of a parts message) is one entry of
    /// [`apply_turn_budget`]; images, audio, binary resources and resource links stay in place and
    /// are not counted. A cut message gets `trimmed`; when it has a `ref_id`,
    /// its marker names it with the cache tools that read it, `tool_output_cache` and
    /// `tool_output_cache_grep`, as far as the registry has them (a layer not given to a registry
    /// names both); with neither, or no `ref_id`, the marker says to narrow the call instead.
    pub fn apply_turn(&self, messages: &mut [ToolMessage]) {
        let mut entries: Vec<(usize, Option<usize>)> = Vec::new();
        for (m, message) in messages.iter().enumerate() {
            match &message.content {
                MessageContent::Text(_) => entries.push((m, None)),
                MessageContent::Parts(parts) => entries.extend(
                    parts.iter().enumerate().filter(|(_, p)| p.capped_text().is_some()).map(|(p, _)| (m, Some(p))),
                ),
            }
        }
        fn text_of(message: &ToolMessage, part: Option<usize>) -> &str {
            match (&message.content, part) {
                (MessageContent::Text(t), _) => t,
                (MessageContent::Parts(parts), Some(p)) => parts[p].capped_text().unwrap_or_default(),
                (MessageContent::Parts(_), None) => "",
            }
        }
        // A turn within the budget is left as it is (nothing copied).
        if entries.iter().map(|&(m, p)| text_of(&messages[m], p).len()).sum::<usize>() <= self.turn_bytes {
            return;
        }
        let outputs: Vec<TurnOutput<'_>> = entries
            .iter()
            .map(|&(m, p)| TurnOutput { text: text_of(&messages[m], p), ref_id: messages[m].ref_id.as_deref() })
            .collect();
        let results = budget::apply_turn_budget_naming(&outputs, self.turn_bytes, self.readers);
        drop(outputs);
        for ((m, p), result) in entries.into_iter().zip(results) {
            if !result.truncated {
                continue;
            }
            let message = &mut messages[m];
            match (&mut message.content, p) {
                (MessageContent::Text(t), _) => *t = result.content,
                (MessageContent::Parts(parts), Some(p)) => {
                    if let Some(text) = parts[p].capped_text_mut() {
                        *text = result.content;
                    }
                }
                (MessageContent::Parts(_), None) => {}
            }
            message.trimmed = true;
        }
    }
}

/// Shared by the registry: an optional layer.
pub(crate) type SharedLayer = Option<Arc<OutputLayer>>;
