//! Runnable examples: `cargo run -p examples --example quickstart`.
