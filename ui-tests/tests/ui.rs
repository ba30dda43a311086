//! Compile tests of `#[tool]`: each file in `tests/pass` compiles and runs; each file in
//! `tests/fail/<topic>/` holds one mistake and fails with the error in its `.stderr` snapshot.
//!
//! Refresh the snapshots after a deliberate change of a message with
//! `TRYBUILD=overwrite cargo test -p ui-tests --test ui`, then review the diff.

#[test]
fn every_supported_form_compiles_and_runs() {
    trybuild::TestCases::new().pass("tests/pass/*.rs");
}

#[test]
fn every_mistake_is_one_clear_error_on_the_token_at_fault() {
    trybuild::TestCases::new().compile_fail("tests/fail/*/*.rs");
}
