//! Peak memory of reading and searching a 1 GB stored output (Linux only: reads `/proc/self`).
//!
//! Stores 1 GB (10^9 bytes) of generated lines in a `FileStore` in a temp dir (streaming), resets
//! the peak-RSS counter (`/proc/self/clear_refs`), then greps the output (literal and regex) and
//! reads one line near its end, and prints the peak RSS (`VmHWM`) of that phase and of the whole run.
//!
//! Run: `cargo bench -p tool-runtime --bench grep_memory`

use std::time::Instant;

use tool_runtime::output::{FileStore, OutputStore};

#[path = "common/lines.rs"]
mod lines;
use lines::Lines;

#[path = "common/search_memory.rs"]
mod search_memory;
use search_memory::{search_and_report, status_kib};

fn main() {
    // `cargo bench` passes `--bench`; a filter that does not name this bench skips it.
    if std::env::args().skip(1).any(|a| !a.starts_with('-') && !"grep_memory".contains(a.as_str())) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = FileStore::new(dir.path()).unwrap();
    let started = Instant::now();
    let info = store.put("huge", &mut Lines::new(1_000_000_000, 5_000_000), &[]).unwrap();
    println!(
        "stored {} bytes, {} lines in {:.1?}; peak RSS so far {} KiB",
        info.bytes,
        info.lines,
        started.elapsed(),
        status_kib("VmHWM:")
    );

    search_and_report(&store, "huge", info);
}
