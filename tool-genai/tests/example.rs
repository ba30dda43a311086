//! The example runs offline as its docs say: both tools in one turn, then the answer.

#[test]
fn the_example_runs_offline_to_its_answer() {
    assert_eq!(
        provider_mock::run_example("genai_agent", &["GENAI_MODEL"]),
        "tool reverse -> desserts\ntool count_vowels -> 2\n'stressed' reversed is 'desserts'; it has 2 vowels.\n"
    );
}
