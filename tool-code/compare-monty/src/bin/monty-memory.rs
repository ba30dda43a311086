//! Monty's memory limit, which counts the bytes of the whole process through Monty's own global
//! allocator: a binary of its own so that the timed comparison runs on the system allocator.
//!
//! `target/compare-monty/release/monty-memory`

use std::time::Duration;

use monty::{MontyRun, RunProgress};
use monty_types::{CompileOptions, PrintWriter, ResourceLimits, ResourceTracker};

#[global_allocator]
static ALLOCATOR: monty_alloc::LimitedAllocator = monty_alloc::LimitedAllocator;

const LIMIT: usize = 8 << 20;

fn main() {
    // The soft limit is the process's bytes now plus the budget; the hard one 4 MiB above it.
    monty_alloc::set_limit(Some(LIMIT), false).expect("monty-alloc is the global allocator");
    let grow = "a = []\nwhile True:\n    a.append('x' * 1000 + str(len(a)))\n";
    let caught = "a = []\ntry:\n    while True:\n        a.append('x' * 1000 + str(len(a)))\nexcept MemoryError:\n    a = []\n'caught'\n";
    for (name, source) in [("growing list", grow), ("growing list inside try/except MemoryError", caught)] {
        let limits = ResourceLimits::default().max_duration(Duration::from_secs(10)).max_memory(LIMIT);
        let runner = MontyRun::new(source.to_owned(), "program.py", vec![], CompileOptions::default()).unwrap();
        let outcome = match runner.start(vec![], ResourceTracker::new(limits), PrintWriter::Disabled) {
            Ok(RunProgress::Complete(value)) => format!("no error, returned {value:?}"),
            Ok(_) => "suspended".to_owned(),
            Err(e) => e.to_string().trim().replace('\n', " / "),
        };
        println!("- Monty memory (8 MiB, {name}): {outcome}");
    }
}
