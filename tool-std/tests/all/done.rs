//! done: the final message of a run.

use tool_runtime::{MessageContent, ToolCall, ToolContext, TurnStop};

fn registry() -> tool_runtime::Registry {
    tool_std::registry_builder().sets(["control"]).build().unwrap()
}

#[tokio::test]
async fn done_returns_the_final_message_as_a_successful_result() {
    let message = registry()
        .call(
            &ToolCall::new("call_9", "done", r#"{"message":"Fixed the parser; all tests pass."}"#),
            &ToolContext::new(),
        )
        .await;

    assert!(!message.is_error);
    assert!(message.done);
    assert_eq!(message.tool_name, "done");
    assert_eq!(message.content, MessageContent::Text("Fixed the parser; all tests pass.".to_owned()));
}

#[tokio::test]
async fn a_turn_with_done_reports_the_completion_signal_after_every_call_of_the_turn_ran() {
    let registry = tool_std::registry_builder().sets(["control", "todo"]).build().unwrap();
    let calls =
        [ToolCall::new("call_1", "todo_read", "{}"), ToolCall::new("call_2", "done", r#"{"message":"All done."}"#)];

    let batch = registry.call_batch(&calls, &ToolContext::new()).await;

    assert_eq!(batch.stop, Some(TurnStop::Done { tool_call_id: "call_2".to_owned(), message: "All done.".to_owned() }));
    assert_eq!(batch.messages[0].text(), "No todos yet. Use todo_new to write a plan.");
}

#[tokio::test]
async fn an_empty_message_is_refused() {
    let message = registry().call(&ToolCall::new("call_9", "done", r#"{"message":"  "}"#), &ToolContext::new()).await;

    assert!(message.is_error);
    assert_eq!(message.text(), "message is empty; give the final answer or a summary of what was done");
}

#[tokio::test]
async fn a_missing_message_is_refused() {
    let message = registry().call(&ToolCall::new("call_9", "done", "{}"), &ToolContext::new()).await;

    assert!(message.is_error);
    assert_eq!(message.text(), "invalid arguments for `done`: missing field `message`");
}

#[test]
fn done_runs_alone_in_the_control_set() {
    let registry = registry();
    let done = registry.get("done").unwrap();

    assert_eq!(done.set(), Some("control"));
    assert!(done.sequential());
}
