//! The fuzz targets' checks (the crate `tool-std-patch-checks`, `tool-std/patch-checks`) run in
//! the normal suite: on the committed fuzz corpus, and on seeded random inputs from proptest.

use patch_checks as harness;

use std::path::Path;

use proptest::prelude::*;

fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

#[test]
fn the_parse_corpus_passes_the_parse_checks() {
    let inputs = corpus("parse");
    assert!(!inputs.is_empty());
    for input in inputs {
        harness::parse_target(&input);
    }
}

#[test]
fn the_apply_corpus_passes_the_apply_checks() {
    let inputs = corpus("apply");
    assert!(!inputs.is_empty());
    for input in inputs {
        harness::apply_target(&input);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_text_passes_the_parse_checks(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        harness::parse_target(&data);
    }

    #[test]
    fn random_cases_pass_the_apply_checks(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        harness::apply_target(&data);
    }

    #[test]
    fn generated_patches_pass_the_parse_checks(data in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut u = harness::Unstructured::new(&data);
        if let Ok((_, text)) = harness::build_case(&mut u) {
            harness::parse_target(text.as_bytes());
        }
    }
}

/// The seeded inputs are not vacuous: a good share of the generated patches apply (the others
/// check the refusals).
#[test]
fn at_least_a_tenth_of_the_generated_patches_apply() {
    let mut state: u64 = 7;
    let (mut built, mut applied) = (0, 0);
    for _ in 0..2000 {
        let data: Vec<u8> = (0..600)
            .map(|_| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (state >> 33) as u8
            })
            .collect();
        let Ok((files, text)) = harness::build_case(&mut harness::Unstructured::new(&data)) else { continue };
        built += 1;
        if tool_std::patch::apply_to_memory(&mut files.clone(), &text).is_ok() {
            applied += 1;
        }
        harness::check_apply(&files, &text);
    }
    assert!(applied * 10 >= built, "{applied} of {built} applied");
}
