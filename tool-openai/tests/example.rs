//! The example runs offline as its docs say: both tools in one turn, then the answer.

#[test]
fn the_example_runs_offline_to_its_answer() {
    assert_eq!(
        provider_mock::run_example("openai_agent", &["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"]),
        "tool add -> 42\ntool length -> 9\n17 + 25 = 42, and 'ownership' has 9 letters.\n"
    );
}
