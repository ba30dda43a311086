use tool_runtime::prelude::*;

/// Says hello.
#[tool]
fn __tool_invoke() -> String {
    "hello".to_owned()
}

/// Says hello.
#[tool(name = "__tool_fns")]
async fn __tool_fns(
    /// Who.
    name: String,
) -> String {
    format!("hello {name}")
}

fn main() {}
