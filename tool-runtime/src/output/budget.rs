//! The turn budget: the text results of one model turn share a byte budget by max-min fairness.

/// The environment variable that sets the turn budget (a positive integer, bytes).
pub const MAX_TURN_BYTES_ENV: &str = "TOOL_MAX_TURN_BYTES";

/// The default turn budget: 64 KiB (65536 bytes).
pub const DEFAULT_TURN_BYTES: usize = 64 * 1024;

/// The turn budget from `TOOL_MAX_TURN_BYTES`, or [`DEFAULT_TURN_BYTES`] when unset.
///
/// # Errors
/// A message naming the variable when it is set but not a positive integer.
pub fn turn_bytes_from_env() -> Result<usize, String> {
    Ok(super::truncate::env_positive(MAX_TURN_BYTES_ENV, "bytes")?.unwrap_or(DEFAULT_TURN_BYTES))
}

/// One text result of a turn, in call order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnOutput<'a> {
    /// The text (bytes are what the budget counts).
    pub text: &'a str,
    /// The output cache ref id holding the whole text, named in the marker when set.
    pub ref_id: Option<&'a str>,
}

/// One result after the turn budget: whole, or a head and a tail around a marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnBudgetResult {
    /// What the model sees: the whole text, or `head + marker + tail`.
    pub content: String,
    /// The kept beginning (the whole text when not cut).
    pub head: String,
    /// The kept end (empty when not cut).
    pub tail: String,
    /// The marker between head and tail (empty when not cut), e.g.
    /// `\n[... 120000 bytes omitted by the turn output budget; read them with tool_output_cache {"ref_id":"call_1"}]\n`.
    pub marker: String,
    /// `true` when the text was cut.
    pub truncated: bool,
    /// Bytes of the text that are not in `head` or `tail`.
    pub omitted_bytes: usize,
}

/// The max-min fair shares of `budget` bytes for results of the given sizes (water-filling): results
/// at or under the fair level keep their size; the rest share what is left equally, and the
/// remainder bytes go one each to the earliest of them in call order. `share[i] <= sizes[i]`, and
/// the shares sum to `min(budget, sum(sizes))`.
pub fn fair_shares(sizes: &[usize], budget: usize) -> Vec<usize> {
    let mut shares = sizes.to_vec();
    if sizes.iter().sum::<usize>() <= budget {
        return shares;
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| (sizes[i], i));
    let mut left = budget;
    let mut remaining = sizes.len();
    let mut first_capped = order.len();
    for (rank, &i) in order.iter().enumerate() {
        let level = left / remaining;
        if sizes[i] <= level {
            left -= sizes[i];
            remaining -= 1;
        } else {
            first_capped = rank;
            break;
        }
    }
    let mut capped: Vec<usize> = order[first_capped..].to_vec();
    capped.sort_unstable();
    let level = left / capped.len();
    let extra = left % capped.len();
    for (n, &i) in capped.iter().enumerate() {
        shares[i] = level + usize::from(n < extra);
    }
    shares
}

/// The cache tools a marker may name: those of the registry ([`OutputLayer::apply_turn`]).
///
/// [`OutputLayer::apply_turn`]: super::OutputLayer::apply_turn
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Readers {
    /// `tool_output_cache` is registered.
    pub(crate) read: bool,
    /// `tool_output_cache_grep` is registered.
    pub(crate) grep: bool,
}

impl Readers {
    /// Both cache tools.
    pub(crate) const BOTH: Self = Self { read: true, grep: true };
}

/// The marker of a cut result: how to read what it omits with the cache tools `readers` has, or,
/// with none of them (or no ref id), to narrow the call.
fn marker(omitted: usize, ref_id: Option<&str>, readers: Readers) -> String {
    let id = |id: &str| serde_json::Value::String(id.to_owned());
    let how = match (ref_id, readers.read, readers.grep) {
        (Some(ref_id), true, true) => format!(
            "read them with tool_output_cache {{\"ref_id\":{}}} or search with tool_output_cache_grep",
            id(ref_id)
        ),
        (Some(ref_id), true, false) => format!("read them with tool_output_cache {{\"ref_id\":{}}}", id(ref_id)),
        (Some(ref_id), false, true) => {
            format!("search them with tool_output_cache_grep {{\"ref_id\":{}}}", id(ref_id))
        }
        _ => "narrow the call (a smaller limit or a more specific pattern) to see them".to_owned(),
    };
    format!("\n[... {omitted} bytes omitted by the turn output budget; {how}]\n")
}

/// Applies a turn budget of `budget` bytes to the text results of one turn, by max-min fairness
/// ([`fair_shares`]). A result within its share is kept whole. A cut result keeps a head (the larger
/// half of what its share leaves after the marker) and a tail (the rest), both cut at UTF-8
/// character boundaries, around a marker saying how many bytes were omitted and how to read them.
///
/// Every cut result keeps its whole marker, even when the budget is too small to hold it: a cut
/// result takes `max(share, marker)` bytes, so the total is at most `budget` plus the markers.
/// Source: the Go seed's `ApplyTurnOutputBudget`; the marker wording is ours.
///
/// The marker names the cache tools `tool_output_cache` and `tool_output_cache_grep`; a
/// registry without them gets [`OutputLayer::apply_turn`](super::OutputLayer::apply_turn)'s
/// marker, which names only those it has.
pub fn apply_turn_budget(outputs: &[TurnOutput<'_>], budget: usize) -> Vec<TurnBudgetResult> {
    apply_turn_budget_naming(outputs, budget, Readers::BOTH)
}

/// [`apply_turn_budget`] with markers that name only the cache tools of `readers`.
pub(crate) fn apply_turn_budget_naming(
    outputs: &[TurnOutput<'_>],
    budget: usize,
    readers: Readers,
) -> Vec<TurnBudgetResult> {
    let sizes: Vec<usize> = outputs.iter().map(|o| o.text.len()).collect();
    let shares = fair_shares(&sizes, budget);
    outputs
        .iter()
        .zip(shares)
        .map(|(output, share)| {
            let text = output.text;
            if share >= text.len() {
                return TurnBudgetResult {
                    content: text.to_owned(),
                    head: text.to_owned(),
                    tail: String::new(),
                    marker: String::new(),
                    truncated: false,
                    omitted_bytes: 0,
                };
            }
            // The marker for the most bytes that could be omitted is at least as long as the real one.
            let room = share.saturating_sub(marker(text.len(), output.ref_id, readers).len());
            let mut head_end = room - room / 2;
            while !text.is_char_boundary(head_end) {
                head_end -= 1;
            }
            let mut tail_start = text.len() - room / 2;
            while !text.is_char_boundary(tail_start) {
                tail_start += 1;
            }
            let (head, tail) = (&text[..head_end], &text[tail_start..]);
            let omitted = text.len() - head.len() - tail.len();
            let marker = marker(omitted, output.ref_id, readers);
            TurnBudgetResult {
                content: format!("{head}{marker}{tail}"),
                head: head.to_owned(),
                tail: tail.to_owned(),
                marker,
                truncated: true,
                omitted_bytes: omitted,
            }
        })
        .collect()
}
