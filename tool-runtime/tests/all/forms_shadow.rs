//! A parameter may share its function's name.

use tool_runtime::prelude::*;

fn make_pipe(_ctx: &ToolContext) -> Result<String, DependencyError> {
    Ok("pipe".to_owned())
}

/// The pipe.
static PIPE: DependencyKey<String> = DependencyKey::per_call("pipe", make_pipe);

/// Reads from the pipe.
#[tool]
fn pipe(#[depends(PIPE)] pipe: String) -> String {
    pipe
}

/// Echoes its argument of the same name.
#[tool]
fn echo(
    /// The text.
    echo: String,
) -> String {
    echo
}

#[tokio::test]
async fn a_parameter_named_like_its_function_is_passed_to_the_function() {
    let registry = Registry::builder().tool(pipe::TOOL).tool(echo::TOOL).build().unwrap();
    let ctx = ToolContext::new();
    assert_eq!(registry.call(&ToolCall::new("c1", "pipe", "{}"), &ctx).await.text(), "pipe");
    assert_eq!(registry.call(&ToolCall::new("c2", "echo", r#"{"echo":"hi"}"#), &ctx).await.text(), "hi");
}
