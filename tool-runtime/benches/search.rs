//! Tool search over the generated 1,000-tool registry (`fixtures/tool-search/words.txt`): one
//! BM25 query (the 50 written queries in turn), one regex query, and, side by side, the
//! alternative a registry without an index has: scanning every definition's name and
//! description for the query's words. Building the index is measured apart.
//!
//! `cargo bench -p tool-runtime --bench search`

// `criterion_group!` generates an undocumented public function.
#![allow(missing_docs)]

#[path = "../tests/support/tool_search_corpus.rs"]
mod corpus;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tool_runtime::ToolDefinition;
use tool_runtime::search::{SearchQuery, ToolIndex};

/// The alternative without an index: the tools whose lowercased name or description holds the
/// most of the query's lowercased words, best first, ties by name.
fn scan<'a>(definitions: &'a [ToolDefinition], query: &str, limit: usize) -> Vec<&'a str> {
    let words: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
    let mut hits: Vec<(usize, &str)> = definitions
        .iter()
        .map(|d| {
            let text = format!("{} {}", d.name, d.description).to_lowercase();
            (words.iter().filter(|w| text.contains(w.as_str())).count(), d.name.as_str())
        })
        .filter(|(count, _)| *count > 0)
        .collect();
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    hits.truncate(limit);
    hits.into_iter().map(|(_, name)| name).collect()
}

fn search(c: &mut Criterion) {
    let registry = corpus::builder().build().expect("the generated registry");
    let definitions = registry.definitions();
    assert_eq!(definitions.len(), 1000);
    let queries: Vec<SearchQuery> =
        corpus::queries().into_iter().map(|(_, q)| SearchQuery::words(q).limit(3)).collect();
    // The index is built by the first search, outside the measurement.
    assert!(!registry.search(&queries[0]).expect("a query").is_empty());
    let mut group = c.benchmark_group("search_1000");
    let mut next = 0;
    group.bench_function("bm25", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            registry.search(black_box(&queries[next])).expect("a query").len()
        });
    });
    let regex = SearchQuery::regex("(?i)archive.*invoice|invoice.*archive").limit(3);
    group.bench_function("regex", |b| b.iter(|| registry.search(black_box(&regex)).expect("a pattern").len()));
    let mut next = 0;
    group.bench_function("scan_without_index", |b| {
        b.iter(|| {
            next = (next + 1) % queries.len();
            scan(definitions, black_box(&queries[next].text), 3).len()
        });
    });
    group.finish();
    let mut group = c.benchmark_group("index_1000");
    group.bench_function("build", |b| b.iter(|| ToolIndex::new(black_box(definitions)).len()));
    group.finish();
}

criterion_group!(benches, search);
criterion_main!(benches);
