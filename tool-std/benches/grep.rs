//! `grep` over a large real source tree, side by side with ripgrep (`rg`) on the same tree and
//! pattern.
//!
//! The tree is `$GREP_BENCH_TREE`, else the cargo registry sources (`~/.cargo/registry/src`).
//! ripgrep runs twice: with `--sort path` (one thread, the same output order as `grep`) and with
//! its default parallel walk. Both get `--hidden` (grep searches hidden files) and `-n`.
//!
//! ```text
//! cargo bench -p tool-std --bench grep
//! ```

use std::path::PathBuf;
use std::process::Command;

use criterion::Criterion;
use tool_runtime::ToolContext;
use tool_std::fs::{FsLimits, grep};
use tool_std::sandbox::Sandbox;

fn tree() -> PathBuf {
    if let Ok(tree) = std::env::var("GREP_BENCH_TREE") {
        return PathBuf::from(tree);
    }
    let home = std::env::var("HOME").expect("HOME is not set; set GREP_BENCH_TREE to a source tree");
    PathBuf::from(home).join(".cargo/registry/src")
}

/// (name, pattern, regex?)
const PATTERNS: &[(&str, &str, bool)] = &[("literal", "unsafe impl", false), ("regex", r"fn [a-z_]+_with\(", true)];

fn bench(c: &mut Criterion) {
    let tree = tree();
    let sandbox = Sandbox::new(&tree).expect("the benchmark tree must exist");
    let mut group = c.benchmark_group("grep");
    group.sample_size(10);
    for &(name, pattern, regex) in PATTERNS {
        // Sanity check once: both find the same number of matching lines.
        let ours = grep(
            pattern.to_owned(),
            None,
            Some(regex),
            None,
            None,
            None,
            None,
            Some(1),
            None,
            sandbox.clone(),
            FsLimits::default(),
            &ToolContext::new(),
        )
        .unwrap();
        let rg_output = rg(&tree, pattern, regex, true);
        eprintln!("{name}: grep footer: {:?}; rg lines: {}", ours.lines().last(), rg_output.lines().count());

        group.bench_function(format!("{name}/tool_std_grep"), |b| {
            b.iter(|| {
                grep(
                    pattern.to_owned(),
                    None,
                    Some(regex),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    sandbox.clone(),
                    FsLimits::default(),
                    &ToolContext::new(),
                )
                .unwrap()
            })
        });
        group.bench_function(format!("{name}/rg_sort_path"), |b| b.iter(|| rg(&tree, pattern, regex, true)));
        group.bench_function(format!("{name}/rg_parallel"), |b| b.iter(|| rg(&tree, pattern, regex, false)));
    }
    group.finish();
}

fn rg(tree: &PathBuf, pattern: &str, regex: bool, sorted: bool) -> String {
    let mut command = Command::new("rg");
    command.args(["-n", "--hidden", "--no-messages"]);
    if !regex {
        command.arg("-F");
    }
    if sorted {
        command.args(["--sort", "path"]);
    }
    command.arg("-e").arg(pattern).arg(tree);
    let output = command.output().expect("rg must be installed (apt-get install ripgrep)");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
}
