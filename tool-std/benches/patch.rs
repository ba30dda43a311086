//! How apply_patch scales: 100 chunks on a 10,000-line file against 1,000 chunks on a
//! 100,000-line file, beside `git apply` of the same change as a unified diff.
//!
//! Run with `cargo bench -p tool-std --bench patch`. Needs `git` on the PATH for the
//! `git_apply` rows.

#![allow(missing_docs)] // `criterion_group!` defines an undocumented public function

use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use tool_std::patch::{MemoryFiles, apply_patch_in, parse_patch, plan_patch};
use tool_std::sandbox::Sandbox;

/// One benchmark case: a file, the change as a codex patch, and as a unified diff.
struct Case {
    label: String,
    original: String,
    patch: String,
    unified: String,
}

/// A file of `lines` distinct lines and a change of `hunks` one-line replacements spread evenly
/// over it, each with 3 lines of context on both sides.
fn case(lines: usize, hunks: usize) -> Case {
    let line = |i: usize| {
        format!("line {i:06}: let value_{i} = compute({}, \"{:08x}\");", i % 97, i.wrapping_mul(2_654_435_761))
    };
    let original: String = (0..lines).map(|i| line(i) + "\n").collect();
    let spacing = lines / hunks;
    let mut patch = String::from("*** Begin Patch\n*** Update File: f.txt\n");
    let mut unified = String::from("--- a/f.txt\n+++ b/f.txt\n");
    for h in 0..hunks {
        let target = h * spacing + spacing / 2;
        let mut body = String::new();
        for i in target - 3..target {
            body.push_str(&format!(" {}\n", line(i)));
        }
        body.push_str(&format!("-{}\n+{} // changed\n", line(target), line(target)));
        for i in target + 1..target + 4 {
            body.push_str(&format!(" {}\n", line(i)));
        }
        patch.push_str("@@\n");
        patch.push_str(&body);
        unified.push_str(&format!("@@ -{0},7 +{0},7 @@\n", target - 2));
        unified.push_str(&body);
    }
    patch.push_str("*** End Patch\n");
    Case { label: format!("{hunks} hunks, {lines} lines"), original, patch, unified }
}

fn scaling(c: &mut Criterion) {
    let cases = [case(10_000, 100), case(100_000, 1_000)];
    let mut group = c.benchmark_group("patch_scaling");
    group.sample_size(20).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));

    for case in &cases {
        let mut files = MemoryFiles::new();
        files.insert("f.txt", case.original.as_str()).unwrap();

        // Parse, match every chunk and build the new file, in memory (no preview, no disk).
        group.bench_with_input(BenchmarkId::new("core_in_memory", &case.label), case, |b, case| {
            b.iter_batched(
                || files.clone(),
                |mut files| {
                    let patch = parse_patch(&case.patch).unwrap();
                    let plan = plan_patch(&patch, &files).unwrap();
                    files.apply(plan);
                    black_box(files)
                },
                BatchSize::LargeInput,
            );
        });

        // The whole tool on a real directory: read, match, diff preview, stage, rename.
        let dir = tempfile::tempdir().unwrap();
        let sandbox = Sandbox::new(dir.path()).unwrap();
        let file = dir.path().join("f.txt");
        group.bench_with_input(BenchmarkId::new("apply_patch_on_disk", &case.label), case, |b, case| {
            b.iter_batched(
                || std::fs::write(&file, &case.original).unwrap(),
                |()| black_box(apply_patch_in(&sandbox, &case.patch, false).unwrap()),
                BatchSize::PerIteration,
            );
        });

        // git apply of the same change as a unified diff (process start included).
        let git_dir = tempfile::tempdir().unwrap();
        let diff_path = git_dir.path().join("change.diff");
        std::fs::write(&diff_path, &case.unified).unwrap();
        let git_file = git_dir.path().join("f.txt");
        std::fs::write(&git_file, &case.original).unwrap();
        git_apply(git_dir.path(), &diff_path);
        let expected = std::fs::read_to_string(&git_file).unwrap();
        std::fs::write(&file, &case.original).unwrap();
        apply_patch_in(&sandbox, &case.patch, false).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), expected, "both tools make the same change");
        group.bench_with_input(BenchmarkId::new("git_apply", &case.label), case, |b, case| {
            b.iter_batched(
                || std::fs::write(&git_file, &case.original).unwrap(),
                |()| git_apply(git_dir.path(), &diff_path),
                BatchSize::PerIteration,
            );
        });
    }
    group.finish();
}

fn git_apply(dir: &Path, diff: &Path) {
    let status = Command::new("git").arg("apply").arg(diff).current_dir(dir).status().expect("git is on the PATH");
    assert!(status.success(), "git apply failed");
}

criterion_group!(benches, scaling);
criterion_main!(benches);
