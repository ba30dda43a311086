//! A key sent twice is refused under every repair policy, as without one: a repair never
//! re-encodes an object that holds a key twice (which would keep only the last value).

use tool_runtime::decode::RepairPolicy;
use tool_runtime::prelude::*;

/// Counts tagged things.
#[tool]
fn count(
    /// How many.
    n: u32,
    /// The tags.
    tags: Option<Vec<String>>,
) -> String {
    format!("{n} {tags:?}")
}

const TWICE: &str = "invalid arguments for `count`: `n`: the field is sent twice; send each field once";

fn policies() -> Vec<(&'static str, RepairPolicy)> {
    vec![
        ("none", RepairPolicy::none()),
        ("unwrap_string", RepairPolicy::none().unwrap_string(true)),
        ("nested_strings", RepairPolicy::none().nested_strings(true)),
        ("numbers_from_strings", RepairPolicy::none().numbers_from_strings(true)),
        ("all", RepairPolicy::all()),
    ]
}

async fn call_under_every_policy(arguments: &str) -> Vec<(&'static str, String)> {
    let mut answers = Vec::new();
    for (name, policy) in policies() {
        let registry = Registry::builder().tool(count::TOOL).repair(policy).build().unwrap();
        let answer = registry.call(&ToolCall::new("call_1", "count", arguments), &ToolContext::new()).await;
        answers.push((name, answer.text().into_owned()));
    }
    answers
}

fn every_policy_says(text: &str) -> Vec<(&'static str, String)> {
    policies().into_iter().map(|(name, _)| (name, text.to_owned())).collect()
}

#[tokio::test]
async fn a_key_sent_twice_is_refused_under_every_policy() {
    assert_eq!(call_under_every_policy(r#"{"n":1,"n":2}"#).await, every_policy_says(TWICE));
}

#[tokio::test]
async fn a_key_sent_twice_beside_a_value_a_repair_would_fix_is_refused_under_every_policy() {
    assert_eq!(call_under_every_policy(r#"{"n":"1","tags":"[\"a\"]","n":2}"#).await, every_policy_says(TWICE));
}

#[tokio::test]
async fn a_key_sent_twice_inside_a_double_encoded_object_is_refused_when_it_is_unwrapped() {
    let answers = call_under_every_policy(r#""{\"n\":1,\"n\":2}""#).await;
    let not_an_object = "invalid arguments for `count`: expected a JSON object of arguments, got a string";
    assert_eq!(
        answers,
        vec![
            ("none", not_an_object.to_owned()),
            ("unwrap_string", TWICE.to_owned()),
            ("nested_strings", not_an_object.to_owned()),
            ("numbers_from_strings", not_an_object.to_owned()),
            ("all", TWICE.to_owned()),
        ]
    );
}
