//! Peak memory (and time) of running a command that prints 1 GiB (1,073,741,824 bytes, lines of
//! 100 bytes), two ways, each in a process of its own (the peak resident set, `VmHWM` of
//! `/proc/self/status`, only grows):
//!
//! - `bash_tool`: the `bash` tool through a registry with the output layer and a file output
//!   cache, both with their default limits (the cache's size cap 256 MiB, `max_output_bytes`
//!   1 GiB): the output streams into the cache as it arrives (head and tail kept in memory), and
//!   the cache keeps it whole, as the one entry larger than its cap.
//! - `collect_in_memory`: `std::process::Command::output()` on the same command, which keeps the
//!   whole output in memory (what a tool that reads the output to a `String` does).
//!
//! Prints one table row per way and the ratio. Memory is not a criterion measure, so this bench
//! has its own harness.
//!
//! ```text
//! cargo bench -p tool-std --bench exec_output
//! ```

use std::sync::Arc;
use std::time::Instant;

use tool_runtime::output::{DEFAULT_OUTPUT_LIMITS, FileStore, OUTPUT_STORE, OutputLayer, OutputStore};
use tool_runtime::{DefaultPolicy, SystemClock, ToolCall, ToolContext};
use tool_std::exec::{EXEC_CONFIG, ExecConfig};
use tool_std::sandbox::{SANDBOX, Sandbox};

/// 1 GiB of 100-byte lines (99 characters and a newline).
const COMMAND: &str = "yes 'the quick brown fox jumps over the lazy dog 0123456789 the quick brown fox jumps over the \
                       lazy dog' | head -c 1073741824";

const MODE: &str = "TOOL_EXEC_BENCH_MODE";

fn main() {
    match std::env::var(MODE).as_deref() {
        Ok("bash_tool") => report(bash_tool()),
        Ok("collect_in_memory") => report(collect_in_memory()),
        _ => compare(),
    }
}

/// Runs each way in a child process and prints the table.
fn compare() {
    let exe = std::env::current_exe().unwrap();
    let run = |mode: &str| -> (u64, u64, u64) {
        let output = std::process::Command::new(&exe).env(MODE, mode).output().unwrap();
        assert!(output.status.success(), "{mode}: {}", String::from_utf8_lossy(&output.stderr));
        let text = String::from_utf8(output.stdout).unwrap();
        let fields: Vec<u64> = text.split_whitespace().map(|f| f.parse().unwrap()).collect();
        (fields[0], fields[1], fields[2])
    };
    let (tool_kib, tool_ms, tool_bytes) = run("bash_tool");
    let (collect_kib, collect_ms, collect_bytes) = run("collect_in_memory");
    assert_eq!(tool_bytes, collect_bytes);
    println!("| way | output bytes | peak RSS (MiB) | time (ms) |");
    println!("| --- | ---: | ---: | ---: |");
    println!("| bash_tool | {tool_bytes} | {:.1} | {tool_ms} |", tool_kib as f64 / 1024.0);
    println!("| collect_in_memory | {collect_bytes} | {:.1} | {collect_ms} |", collect_kib as f64 / 1024.0);
    println!(
        "bash_tool / collect_in_memory: memory {:.3}x, time {:.2}x",
        tool_kib as f64 / collect_kib as f64,
        tool_ms as f64 / collect_ms as f64
    );
}

/// Prints `peak_kib elapsed_ms output_bytes`.
fn report((elapsed_ms, bytes): (u64, u64)) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap();
    let kib: u64 = peak.trim().trim_end_matches("kB").trim().parse().unwrap();
    println!("{kib} {elapsed_ms} {bytes}");
}

fn bash_tool() -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let (root, temp, cache) = (dir.path().join("ws"), dir.path().join("tmp"), dir.path().join("cache"));
    for d in [&root, &temp] {
        std::fs::create_dir(d).unwrap();
    }
    let store: Arc<dyn OutputStore> =
        Arc::new(FileStore::open(&cache, DEFAULT_OUTPUT_LIMITS, Arc::new(SystemClock)).unwrap());
    let registry = tool_std::registry_builder()
        .sets(["exec"])
        .policy(DefaultPolicy::new().allow_all_exec())
        .output(OutputLayer::new())
        .override_dependency(&SANDBOX, Sandbox::new(&root).unwrap())
        .override_dependency(&EXEC_CONFIG, ExecConfig { temp_root: temp, ..ExecConfig::default() })
        .override_dependency(&OUTPUT_STORE, store.clone())
        .build()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let arguments = serde_json::json!({ "command": COMMAND }).to_string();
    let start = Instant::now();
    let message = runtime.block_on(registry.call(&ToolCall::new("bench", "bash", arguments), &ToolContext::new()));
    let elapsed = u64::try_from(start.elapsed().as_millis()).unwrap();
    assert!(!message.is_error, "{}", message.text());
    let ref_id = message.ref_id.as_deref().unwrap();
    assert!(message.text().contains(&format!("the whole output (1073741824 bytes) as ref_id `{ref_id}`")));
    // The next result stored beside it leaves it in the cache.
    let after = runtime
        .block_on(registry.call(&ToolCall::new("next", "bash", r#"{"command":"echo next"}"#), &ToolContext::new()));
    assert!(!after.is_error, "{}", after.text());
    let stored = store.info(ref_id).unwrap();
    (elapsed, stored.bytes)
}

fn collect_in_memory() -> (u64, u64) {
    let start = Instant::now();
    let output = std::process::Command::new("bash").arg("-c").arg(COMMAND).output().unwrap();
    let elapsed = u64::try_from(start.elapsed().as_millis()).unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    (elapsed, text.len() as u64)
}
