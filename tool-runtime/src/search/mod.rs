//! Tool search over a registry's definitions, for registries too large to send whole.
//!
//! [`Registry::search`](crate::Registry::search) finds tools by what they do, in one of two
//! [modes](SearchMode):
//!
//! - **BM25** (the default): the query's distinct words (a word given twice counts once, at most
//!   1,000 characters of query) are scored against each tool's words with Okapi
//!   BM25, `k1 = 1.2`, `b = 0.75`, and Lucene's IDF `ln(1 + (N - n + 0.5) / (n + 0.5))` (`N`
//!   tools, `n` of them holding the word), so a word most tools hold still counts a little.
//!   A tool's words come from four fields, each word counted with its field's weight (BM25F
//!   style; the weighted count is also the document length): the name ×3, parameter names ×2,
//!   the description and parameter descriptions ×1. Parameters are the input schema's
//!   `properties` at every depth (also inside `items` and `anyOf`/`oneOf`/`allOf`, down to 8
//!   levels).
//! - **Regex**: a pattern (at most [`MAX_PATTERN_CHARS`] characters, as Anthropic's regex tool
//!   search allows) searched, unanchored, in the same fields; the `regex-lite` crate's syntax,
//!   which is Python's `re` without look-around or back-references, `\d`, `\w`, `\s` and `\b`
//!   ASCII and no `\p{..}` classes; case-sensitive unless the pattern says `(?i)` (ASCII case). A tool's score is the sum of the weights of the fields that match.
//!
//! The tokenizer (queries and tools alike): split at every character that is not alphanumeric
//! (Unicode) and inside camelCase words (`readFile`: `read`, `file`); lowercased; the stop words
//! `a an and are as at be by for from in into is it its of on or that the this to with` left
//! out; plurals made singular on words of four characters or more (`-ies` to `-y`, a final `s`
//! dropped unless the word ends in `ss`, `us` or `is`).
//!
//! Results come in score order, best first, ties broken by name; a tool that scores 0 (no
//! word in common, no field matching) is not a result. At most [`SearchQuery::limit`] results
//! ([`DEFAULT_LIMIT`] unless set, at most [`MAX_LIMIT`]).
//!
//! How a model reaches the search depends on its provider: see [`crate::provider::Deferral`].

mod bm25;
pub(crate) mod meta;

use regex_lite::RegexBuilder;
use serde::{Deserialize, Serialize};

use crate::ToolDefinition;

pub use meta::{CALL_TOOL, SEARCH_TOOL, meta_tool_definitions};

/// The longest regex pattern accepted, in characters (Anthropic's limit for its regex tool
/// search, `tool_search_tool_regex_20251119`).
pub const MAX_PATTERN_CHARS: usize = 200;

/// The number of results of a query that does not set [`SearchQuery::limit`].
pub const DEFAULT_LIMIT: usize = 5;

/// The largest [`SearchQuery::limit`] accepted.
pub const MAX_LIMIT: usize = 50;

/// The longest BM25 query accepted, in characters.
pub const MAX_QUERY_CHARS: usize = 1_000;

/// How a query is matched (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SearchMode {
    /// Words scored with BM25. The default.
    #[default]
    Bm25,
    /// A regular expression searched in the tool's fields.
    Regex,
}

/// One search: the text, how it is matched, how many results at most.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchQuery {
    /// Words (BM25) or a pattern (regex).
    pub text: String,
    /// How `text` is matched (default BM25).
    pub mode: SearchMode,
    /// The most results to give, 1 to [`MAX_LIMIT`] (default [`DEFAULT_LIMIT`]).
    pub limit: usize,
    /// Search only the registry's deferred tools (default `false`: every tool). The provider
    /// answers set it when the registry defers tools, so that a search loads only what the first
    /// request left out.
    pub deferred_only: bool,
}

impl SearchQuery {
    /// A BM25 search for `words`, [`DEFAULT_LIMIT`] results, over every tool.
    pub fn words(words: impl Into<String>) -> Self {
        Self { text: words.into(), mode: SearchMode::Bm25, limit: DEFAULT_LIMIT, deferred_only: false }
    }

    /// A regex search for `pattern`, [`DEFAULT_LIMIT`] results, over every tool.
    pub fn regex(pattern: impl Into<String>) -> Self {
        Self { mode: SearchMode::Regex, ..Self::words(pattern) }
    }

    /// This query with at most `limit` results.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// This query over the deferred tools only, or over every tool.
    #[must_use]
    pub fn deferred_only(mut self, deferred_only: bool) -> Self {
        self.deferred_only = deferred_only;
        self
    }
}

/// One tool a search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The tool name.
    pub name: String,
    /// The score: BM25's (a positive number, larger is better) or, for regex, the sum of the
    /// weights of the matching fields (name 3, parameter names 2, descriptions 1).
    pub score: f32,
}

/// Why a search could not run: each says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The query has no word to search for (empty, only punctuation or stop words), or the
    /// pattern is empty.
    #[error("the query `{query}` has no words to search for; give words that say what the tool does")]
    EmptyQuery {
        /// The query as given.
        query: String,
    },
    /// A BM25 query longer than [`MAX_QUERY_CHARS`].
    #[error("the query is {chars} characters long; give at most {max} characters")]
    QueryTooLong {
        /// The query's length in characters.
        chars: usize,
        /// [`MAX_QUERY_CHARS`].
        max: usize,
    },
    /// A regex pattern longer than [`MAX_PATTERN_CHARS`].
    #[error("the pattern is {chars} characters long; give a pattern of at most {max} characters")]
    PatternTooLong {
        /// The pattern's length in characters.
        chars: usize,
        /// [`MAX_PATTERN_CHARS`].
        max: usize,
    },
    /// The pattern is not a regular expression this crate reads.
    #[error("the pattern `{pattern}` is not a valid regular expression: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// What the `regex-lite` crate says, on one line.
        reason: String,
    },
    /// A limit of 0 or over [`MAX_LIMIT`].
    #[error("`limit` is {limit}; give a limit from 1 to {max}")]
    BadLimit {
        /// The limit as given.
        limit: usize,
        /// [`MAX_LIMIT`].
        max: usize,
    },
}

/// The search index of a list of definitions: built once, searched many times.
#[derive(Debug)]
pub struct ToolIndex {
    names: Vec<String>,
    bm25: bm25::Bm25,
    /// The weighted texts of each tool, for the regex mode.
    texts: Vec<Vec<(String, f32)>>,
}

impl ToolIndex {
    /// The index of `definitions` (their order is the index's: result ties are broken by name
    /// whatever it is).
    pub fn new(definitions: &[ToolDefinition]) -> Self {
        let names = definitions.iter().map(|d| d.name.clone()).collect();
        let bm25 = bm25::Bm25::new(definitions.iter());
        let texts = definitions
            .iter()
            .map(|d| {
                let mut texts = Vec::new();
                bm25::fields(d, |text, weight| texts.push((text.to_owned(), weight)));
                texts
            })
            .collect();
        Self { names, bm25, texts }
    }

    /// The number of tools indexed.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// `true` when no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The tools matching `query` among those `include` keeps (by index in the definitions given
    /// to [`ToolIndex::new`]), best first (see the [module docs](self)).
    ///
    /// # Errors
    /// [`SearchError`]: a limit of 0 or over [`MAX_LIMIT`]; a query without words or over
    /// [`MAX_QUERY_CHARS`]; a pattern that is empty, over [`MAX_PATTERN_CHARS`] or invalid.
    pub fn search(&self, query: &SearchQuery, include: impl Fn(usize) -> bool) -> Result<Vec<SearchHit>, SearchError> {
        if query.limit == 0 || query.limit > MAX_LIMIT {
            return Err(SearchError::BadLimit { limit: query.limit, max: MAX_LIMIT });
        }
        let mut scores = vec![0.0_f32; self.names.len()];
        match query.mode {
            SearchMode::Bm25 => {
                let chars = query.text.chars().count();
                if chars > MAX_QUERY_CHARS {
                    return Err(SearchError::QueryTooLong { chars, max: MAX_QUERY_CHARS });
                }
                let mut words = Vec::new();
                bm25::tokenize(&query.text, |w| words.push(w));
                if words.is_empty() {
                    return Err(SearchError::EmptyQuery { query: query.text.clone() });
                }
                self.bm25.score(&words, &mut scores);
            }
            SearchMode::Regex => {
                let chars = query.text.chars().count();
                if chars > MAX_PATTERN_CHARS {
                    return Err(SearchError::PatternTooLong { chars, max: MAX_PATTERN_CHARS });
                }
                if query.text.is_empty() {
                    return Err(SearchError::EmptyQuery { query: String::new() });
                }
                let regex = RegexBuilder::new(&query.text).size_limit(1 << 20).build().map_err(|e| {
                    SearchError::InvalidPattern {
                        pattern: query.text.clone(),
                        reason: e.to_string().lines().rfind(|l| !l.trim().is_empty()).unwrap_or("").trim().to_owned(),
                    }
                })?;
                for (score, texts) in scores.iter_mut().zip(&self.texts) {
                    *score = texts.iter().filter(|(text, _)| regex.is_match(text)).map(|(_, weight)| weight).sum();
                }
            }
        }
        let mut hits: Vec<(usize, f32)> =
            scores.into_iter().enumerate().filter(|&(i, score)| score > 0.0 && include(i)).collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| self.names[a.0].cmp(&self.names[b.0])));
        hits.truncate(query.limit);
        Ok(hits.into_iter().map(|(i, score)| SearchHit { name: self.names[i].clone(), score }).collect())
    }
}
