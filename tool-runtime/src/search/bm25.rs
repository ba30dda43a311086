//! The words of a tool and their BM25 weights (see [`super`] for the rules).

use std::collections::HashMap;

use serde_json::Value;

use crate::ToolDefinition;

/// BM25's term-frequency saturation.
pub(super) const K1: f32 = 1.2;
/// BM25's length normalisation.
pub(super) const B: f32 = 0.75;

/// The weight of a word by the field it comes from (BM25F-style: a word counts this many times).
const NAME_WEIGHT: f32 = 3.0;
const PARAMETER_NAME_WEIGHT: f32 = 2.0;
const DESCRIPTION_WEIGHT: f32 = 1.0;

/// Words that say nothing about what a tool does, left out of documents and queries.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "into", "is", "it", "its", "of", "on", "or",
    "that", "the", "this", "to", "with",
];

/// The words of `text`, in order: split at every character that is not alphanumeric and where a
/// lowercase letter or digit is followed by an uppercase letter (`readFile` is `read file`),
/// lowercased, stop words left out, and a plural `s` taken off (see [`stem`]).
pub(super) fn tokenize(text: &str, mut word: impl FnMut(String)) {
    for piece in text.split(|c: char| !c.is_alphanumeric()) {
        let mut start = 0;
        let mut previous: Option<char> = None;
        for (i, c) in piece.char_indices() {
            if c.is_uppercase() && previous.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit()) {
                emit(&piece[start..i], &mut word);
                start = i;
            }
            previous = Some(c);
        }
        emit(&piece[start..], &mut word);
    }
}

fn emit(piece: &str, word: &mut impl FnMut(String)) {
    if piece.is_empty() {
        return;
    }
    let lower = piece.to_lowercase();
    if STOP_WORDS.contains(&lower.as_str()) {
        return;
    }
    word(stem(lower));
}

/// English plurals to their singular, by two rules on words of at least four characters:
/// `-ies` becomes `-y` (`entries`: `entry`), and a final `s` goes unless the word ends in `ss`,
/// `us` or `is` (`files`: `file`; `status`, `access`, `analysis` stay).
pub(super) fn stem(mut word: String) -> String {
    if word.chars().count() < 4 {
        return word;
    }
    if word.ends_with("ies") {
        word.truncate(word.len() - 3);
        word.push('y');
    } else if word.ends_with('s') && !(word.ends_with("ss") || word.ends_with("us") || word.ends_with("is")) {
        word.pop();
    }
    word
}

/// The texts of a definition, each with the weight of its field: the name, the description, and
/// the names and descriptions of every property of the input schema, at any depth.
pub(super) fn fields(definition: &ToolDefinition, mut field: impl FnMut(&str, f32)) {
    field(&definition.name, NAME_WEIGHT);
    field(&definition.description, DESCRIPTION_WEIGHT);
    properties(&definition.input_schema, &mut field, 0);
}

/// How deep [`properties`] goes into nested schemas (a recursive `$ref` is not followed anyway).
const MAX_DEPTH: usize = 8;

fn properties(schema: &Value, field: &mut impl FnMut(&str, f32), depth: usize) {
    let Value::Object(map) = schema else { return };
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(Value::Object(properties)) = map.get("properties") {
        for (name, property) in properties {
            field(name, PARAMETER_NAME_WEIGHT);
            if let Some(Value::String(description)) = property.get("description") {
                field(description, DESCRIPTION_WEIGHT);
            }
            properties_of_children(property, field, depth);
        }
    }
}

fn properties_of_children(property: &Value, field: &mut impl FnMut(&str, f32), depth: usize) {
    properties(property, field, depth + 1);
    if let Some(items) = property.get("items") {
        properties(items, field, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = property.get(key) {
            for branch in branches {
                properties(branch, field, depth + 1);
            }
        }
    }
}

/// A BM25 index: for each word, the documents holding it with the word's weighted count there.
#[derive(Debug, Default)]
pub(super) struct Bm25 {
    words: HashMap<String, u32, foldhash::fast::RandomState>,
    /// `postings[word]`: `(document, weighted count)`, by document.
    postings: Vec<Vec<(u32, f32)>>,
    /// The weighted word count of each document.
    lengths: Vec<f32>,
    average_length: f32,
}

impl Bm25 {
    /// The index of these documents, each given as its fields ([`fields`]).
    pub(super) fn new<'a>(definitions: impl Iterator<Item = &'a ToolDefinition>) -> Self {
        let mut index = Bm25::default();
        let mut counts: HashMap<u32, f32, foldhash::fast::RandomState> = HashMap::default();
        for (document, definition) in definitions.enumerate() {
            let document = u32::try_from(document).unwrap_or(u32::MAX);
            counts.clear();
            let mut length = 0.0;
            fields(definition, |text, weight| {
                tokenize(text, |word| {
                    let next = u32::try_from(index.words.len()).unwrap_or(u32::MAX);
                    let id = *index.words.entry(word).or_insert(next);
                    if id as usize == index.postings.len() {
                        index.postings.push(Vec::new());
                    }
                    *counts.entry(id).or_insert(0.0) += weight;
                    length += weight;
                });
            });
            for (&word, &count) in &counts {
                index.postings[word as usize].push((document, count));
            }
            index.lengths.push(length);
        }
        let total: f32 = index.lengths.iter().sum();
        index.average_length = if index.lengths.is_empty() { 0.0 } else { total / index.lengths.len() as f32 };
        index
    }

    /// Adds each document's BM25 score for `query`'s words (each distinct word once) to
    /// `scores` (one slot per document).
    pub(super) fn score(&self, query: &[String], scores: &mut [f32]) {
        let documents = self.lengths.len() as f32;
        let mut seen: Vec<u32> = Vec::with_capacity(query.len());
        for word in query {
            let Some(&id) = self.words.get(word.as_str()) else { continue };
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            let postings = &self.postings[id as usize];
            let holding = postings.len() as f32;
            // Lucene's IDF: never negative, even for a word most documents hold.
            let idf = (1.0 + (documents - holding + 0.5) / (holding + 0.5)).ln();
            for &(document, count) in postings {
                let length = self.lengths[document as usize];
                let norm = K1 * (1.0 - B + B * length / self.average_length.max(f32::MIN_POSITIVE));
                scores[document as usize] += idf * count * (K1 + 1.0) / (count + norm);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        tokenize(text, |w| out.push(w));
        out
    }

    #[test]
    fn words_split_at_punctuation_and_case_changes_and_lose_stop_words_and_plurals() {
        assert_eq!(
            words("Read the readFile_entries of a JSON2Csv list"),
            ["read", "read", "file", "entry", "json2", "csv", "list"]
        );
    }

    #[test]
    fn short_words_and_words_ending_in_ss_us_is_keep_their_s() {
        assert_eq!(words("gas status access analysis files"), ["gas", "status", "access", "analysis", "file"]);
    }
}
