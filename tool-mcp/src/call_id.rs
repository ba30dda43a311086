//! Call ids: the id a tool sees ([`ToolContext::call_id`](tool_runtime::ToolContext::call_id)),
//! as the [crate docs](crate) describe it. A leaf: it knows no server.

use std::sync::atomic::{AtomicU64, Ordering};

/// A new call id: `mcp_`, the process's tag, `_` and the next number of the process's sequence.
pub(crate) fn next_call_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("mcp_{}_{}", process_tag(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// 8 hex digits drawn once per process (from the standard library's randomly keyed hasher, over
/// the start time and the process id).
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        use std::hash::BuildHasher;
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let hash = std::hash::RandomState::new().hash_one((nanos, std::process::id()));
        format!("{:08x}", hash & 0xffff_ffff)
    })
}
