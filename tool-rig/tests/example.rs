//! The example runs offline as its docs say: both tools in one turn, then the answer.

#[test]
fn the_example_runs_offline_to_its_answer() {
    assert_eq!(
        provider_mock::run_example("rig_agent", &["OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"]),
        "21 °C is 69.8 °F, and 2028 is a leap year.\n"
    );
}
