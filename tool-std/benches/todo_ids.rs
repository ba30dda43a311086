//! `todo_new` of 100,000 identical items (each slugged to `run-tests`, so every id after the first
//! is a duplicate): decode, ids made unique, the in_progress check, the save to an in-memory
//! session store and the plan text, through the registry on a current-thread runtime.
//!
//! ```text
//! cargo bench -p tool-std --bench todo_ids -- --warm-up-time 1 --measurement-time 10
//! ```

#![allow(missing_docs)] // `criterion_group!` defines an undocumented public function

use std::sync::Arc;

use criterion::Criterion;
use tool_runtime::{ToolCall, ToolContext};
use tool_std::session::{MemorySessionStore, SESSION_STORE, SessionStore};

fn bench(c: &mut Criterion) {
    let items = vec![serde_json::json!({"content": "Run tests", "status": "pending"}); 100_000];
    let call = ToolCall::new("c1", "todo_new", serde_json::json!({ "todos": items }).to_string());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut group = c.benchmark_group("todo_ids");
    group.sample_size(10);
    group.bench_function("todo_new_100000_identical", |b| {
        b.iter(|| {
            // A fresh store per call: the plan is replaced, and the store's size cap never counts
            // an old plan.
            let store: Arc<dyn SessionStore> = Arc::new(MemorySessionStore::new());
            let registry =
                tool_std::registry_builder().sets(["todo"]).override_dependency(&SESSION_STORE, store).build().unwrap();
            let message = runtime.block_on(registry.call(&call, &ToolContext::builder().session_id("s").build()));
            assert!(!message.is_error, "{}", message.text());
            message
        });
    });
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
